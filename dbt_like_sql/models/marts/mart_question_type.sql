-- Per question type at k = 20, hybrid (and the enriched KB's other modes): which kinds of question the enrichment helps.
SELECT
    domain, question_type, variant, metric,
    count(*) AS n_questions,
    avg(value) AS mean
FROM {{ ref('stg_question_metrics') }}
WHERE domain = {{ domain }} AND mode <> 'semantic' AND k = 20
GROUP BY ALL
