-- Each retrieved hit mapped back to the opinions it carries. A per-entity point (entity-split or enriched)
-- carries the opinion of its own (document, entity); a raw chunk carries every opinion of its document whose
-- evidence span overlaps the chunk (an opinion without a span belongs to the whole document).
-- Hits that carry no opinion keep one row with a null entity_id, so hit counts survive the join.
SELECT
    r.domain, r.question_id, r.kb, r.mode, r.k, r.rank, r.point_id, r.doc_id,
    o.entity_id, o.sentiment, o.sentiment_intensity, o.impact_score, o.emotions
FROM {{ source('retrieval_runs') }} AS r
LEFT JOIN {{ source('opinions') }} AS o
  ON o.domain = r.domain
 AND o.doc_id = r.doc_id
 AND CASE
         WHEN r.kb = 'raw' THEN o.span_start IS NULL OR o.span_end IS NULL
                                OR (o.span_start < r.char_end AND o.span_end > r.char_start)
         ELSE o.entity_id = r.hit_entity_id
     END
WHERE r.domain = {{ domain }}
