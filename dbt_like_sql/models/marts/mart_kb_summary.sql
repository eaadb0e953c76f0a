-- Every metric averaged over questions, per knowledge base, retrieval mode and depth k.
SELECT
    domain, kb, mode, k, metric,
    count(*) AS n_questions,
    avg(value) AS mean,
    stddev_samp(value) AS std,
    median(value) AS median
FROM {{ ref('stg_question_metrics') }}
WHERE domain = {{ domain }}
GROUP BY ALL
