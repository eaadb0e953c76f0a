-- Demographic coverage per author attribute at k = 20, hybrid: over all hits and among entity-matched hits.
WITH coverage AS (
    SELECT
        domain, variant, metric, value,
        CASE WHEN metric LIKE 'coverage_matched_%' THEN 'matched' ELSE 'overall' END AS scope,
        regexp_replace(metric, '^coverage_(matched_)?', '') AS attribute
    FROM {{ ref('stg_question_metrics') }}
    WHERE domain = {{ domain }} AND mode <> 'semantic' AND k = 20 AND metric LIKE 'coverage_%'
)
SELECT
    domain, variant, attribute,
    avg(value) FILTER (scope = 'overall') AS overall,
    avg(value) FILTER (scope = 'matched') AS matched
FROM coverage
GROUP BY domain, variant, attribute
