-- The reference study's main table: each metric at k = 20 with hybrid retrieval, one column per knowledge base,
-- plus opinion-balanced retrieval on the enriched KB, and the relative changes over the raw KB.
WITH cells AS (
    SELECT domain, metric, n_questions, mean,
           CASE WHEN mode = 'balanced' THEN 'enriched_balanced' ELSE kb END AS variant
    FROM {{ ref('mart_kb_summary') }}
    WHERE domain = {{ domain }} AND k = 20 AND (mode = 'hybrid' OR (mode = 'balanced' AND kb = 'enriched'))
)
SELECT
    domain, metric,
    any_value(n_questions) AS n_questions,
    max(mean) FILTER (variant = 'raw') AS raw,
    max(mean) FILTER (variant = 'entity_split') AS entity_split,
    max(mean) FILTER (variant = 'enriched') AS enriched,
    max(mean) FILTER (variant = 'enriched_balanced') AS enriched_balanced,
    CASE WHEN max(mean) FILTER (variant = 'raw') <> 0
         THEN (max(mean) FILTER (variant = 'enriched') - max(mean) FILTER (variant = 'raw'))
              / abs(max(mean) FILTER (variant = 'raw'))
    END AS enriched_vs_raw,
    CASE WHEN max(mean) FILTER (variant = 'raw') <> 0
         THEN (max(mean) FILTER (variant = 'enriched_balanced') - max(mean) FILTER (variant = 'raw'))
              / abs(max(mean) FILTER (variant = 'raw'))
    END AS balanced_vs_raw
FROM cells
GROUP BY domain, metric
