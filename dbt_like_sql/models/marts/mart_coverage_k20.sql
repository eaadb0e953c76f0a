-- The reference study's main table in long form: each metric at k = 20 for every retrieval variant — each KB with
-- hybrid retrieval, and the opinion-aware and diversifying modes on the enriched KB. The report pivots it; effects
-- and their CIs come from the entity-level tests of `metric_significance`, not from these means.
SELECT
    domain, metric,
    CASE WHEN mode = 'hybrid' THEN kb ELSE kb || '_' || mode END AS variant,
    n_questions, mean
FROM {{ ref('mart_kb_summary') }}
WHERE domain = {{ domain }} AND k = 20 AND mode <> 'semantic'
