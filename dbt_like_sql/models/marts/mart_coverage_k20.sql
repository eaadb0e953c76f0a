-- The reference study's main table: each metric at k = 20 with hybrid retrieval, one column per knowledge base,
-- and the relative change of the enriched KB over the raw one.
SELECT
    domain, metric,
    any_value(n_questions) AS n_questions,
    max(mean) FILTER (kb = 'raw') AS raw,
    max(mean) FILTER (kb = 'entity_split') AS entity_split,
    max(mean) FILTER (kb = 'enriched') AS enriched,
    CASE WHEN max(mean) FILTER (kb = 'raw') <> 0
         THEN (max(mean) FILTER (kb = 'enriched') - max(mean) FILTER (kb = 'raw'))
              / abs(max(mean) FILTER (kb = 'raw'))
    END AS enriched_vs_raw
FROM {{ ref('mart_kb_summary') }}
WHERE domain = {{ domain }} AND mode = 'hybrid' AND k = 20
GROUP BY domain, metric
