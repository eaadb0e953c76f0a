-- W1 per entity (the reference study's table 3 form) at k = 20 for every retrieval variant: W1 over the questions
-- whose retrieval found opinions on the entity, the miss rate, and the old combined figure (a miss counted as 60).
SELECT
    domain, entity_id, entity_name, variant, metric,
    count(*) AS n_questions,
    avg(value) AS mean
FROM {{ ref('stg_question_metrics') }}
WHERE domain = {{ domain }} AND k = 20 AND mode <> 'semantic'
  AND regexp_matches(metric, '^w1(_gold)?(_miss|_incl_miss)?$')
GROUP BY ALL
