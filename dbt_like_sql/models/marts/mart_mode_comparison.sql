-- Semantic against hybrid retrieval at k = 20 (and opinion-balanced retrieval where the KB supports it).
SELECT
    domain, kb, metric,
    max(mean) FILTER (mode = 'semantic') AS semantic,
    max(mean) FILTER (mode = 'hybrid') AS hybrid,
    max(mean) FILTER (mode = 'balanced') AS balanced
FROM {{ ref('mart_kb_summary') }}
WHERE domain = {{ domain }} AND k = 20
GROUP BY domain, kb, metric
