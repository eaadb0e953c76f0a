-- Per-question metric values with what the marts group by: question type, entity and its tier-1 category, and
-- the retrieval variant: the KB for its semantic and hybrid modes, else `<kb>_<mode>` (`enriched_balanced`,
-- `enriched_mmr`, `enriched_xquad`, `enriched_pm2`).
SELECT
    m.domain, m.question_id, q.question_type, q.entity_id, e.entity_name,
    coalesce(e.tier1_name, e.entity_name) AS entity_category,
    m.kb, m.mode,
    CASE WHEN m.mode IN ('semantic', 'hybrid') THEN m.kb ELSE m.kb || '_' || m.mode END AS variant,
    m.k, m.metric, m.value
FROM {{ source('question_metrics') }} AS m
JOIN {{ source('evaluation_questions') }} AS q ON q.domain = m.domain AND q.question_id = m.question_id
JOIN {{ source('evaluation_entities') }} AS e ON e.domain = q.domain AND e.entity_id = q.entity_id
WHERE m.domain = {{ domain }}
