-- W1 to the corpus distribution per entity category (the taxonomy's top tier), k = 20, hybrid (and balanced).
SELECT
    domain, entity_category, variant, metric,
    count(DISTINCT entity_id) AS entities,
    count(*) AS n_questions,
    avg(value) AS mean
FROM {{ ref('stg_question_metrics') }}
WHERE domain = {{ domain }} AND mode IN ('hybrid', 'balanced') AND k = 20 AND metric IN ('w1', 'w1_gold')
GROUP BY ALL
