-- Semantic against hybrid retrieval at k = 20.
SELECT
    domain, kb, metric,
    max(mean) FILTER (mode = 'semantic') AS semantic,
    max(mean) FILTER (mode = 'hybrid') AS hybrid
FROM {{ ref('mart_kb_summary') }}
WHERE domain = {{ domain }} AND k = 20
GROUP BY domain, kb, metric
