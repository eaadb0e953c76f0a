-- Extraction against gold labels, per gold source: how often the extracted sentiment agrees with the label on
-- the same (document, entity), and how far the σ-scores are apart. Empty for domains without gold.
SELECT
    g.domain, g.source,
    count(*) AS gold_labels,
    count(o.entity_id) AS extracted,
    count(o.entity_id) / count(*) AS recall,
    avg((o.sentiment = g.sentiment)::INTEGER) FILTER (o.entity_id IS NOT NULL) AS sentiment_agreement,
    avg(abs(o.sentiment_intensity - g.sentiment_intensity)) FILTER (o.entity_id IS NOT NULL) AS mean_abs_sigma_error,
    corr(o.sentiment_intensity, g.sentiment_intensity) AS pearson_sigma
FROM {{ source('gold_opinions') }} AS g
LEFT JOIN {{ source('opinions') }} AS o
  ON o.domain = g.domain AND o.doc_id = g.doc_id AND o.entity_id = g.entity_id
WHERE g.domain = {{ domain }}
GROUP BY g.domain, g.source
