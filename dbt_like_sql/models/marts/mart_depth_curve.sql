-- Retrieval-depth curves: how entity match, spread, W1, the miss rate and relevance evolve with k, per KB and mode.
SELECT domain, kb, mode, k, metric, n_questions, mean
FROM {{ ref('mart_kb_summary') }}
WHERE domain = {{ domain }}
  AND metric IN ('entity_match_rate', 'sentiment_intensity_std', 'distinct_emotions', 'w1', 'w1_gold', 'w1_miss',
                 'w1_gold_miss', 'relevance_hybrid_rank', 'relevance_in_hybrid_top')
