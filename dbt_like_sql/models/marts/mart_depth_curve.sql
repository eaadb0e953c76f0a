-- Retrieval-depth curves: how entity match, spread and W1 evolve with k, per knowledge base and mode.
SELECT domain, kb, mode, k, metric, n_questions, mean
FROM {{ ref('mart_kb_summary') }}
WHERE domain = {{ domain }}
  AND metric IN ('entity_match_rate', 'sentiment_intensity_std', 'distinct_emotions', 'w1', 'w1_gold')
