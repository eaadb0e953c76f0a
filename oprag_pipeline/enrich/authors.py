"""Author attributes for fairness reporting: from metadata where present, derived or inferred otherwise.

Groups (documented in the README):
- from metadata: every `author_*` column of the input, as given (source `metadata`);
- derived from the corpus itself, for any domain: `activity` — novice (1 document by this author in the domain),
  regular (2–4) or prolific (5+) — the hotel "reviewer experience" and the forum "post-count tier"; `year` of
  the document's date (year of stay / of posting); `votes` band when the input has `vote_up` (source `derived`);
- inferred from the text when metadata lacks it: `traveller_type` (business, family, couple, friends, solo) from
  explicit self-descriptions only (source `inferred`), never guessed when the text says nothing.
They are used only in aggregate (coverage of groups among retrieved documents).
"""

from __future__ import annotations

import re

TABLE = "author_attributes"
"""Declared in `oprag_pipeline/warehouse.py`; `DERIVE_SQL` yields its columns by name."""

DERIVE_SQL = """
WITH docs AS (
    SELECT doc_id, author_id, created_at, author_attributes, extra,
           count(*) OVER (PARTITION BY author_id) AS author_docs
    FROM raw_documents WHERE domain = $domain
)
SELECT $domain AS domain, doc_id, key AS attribute, CAST(value AS VARCHAR) AS value, 'metadata' AS source
FROM (SELECT doc_id, unnest(json_keys(author_attributes)) AS key, author_attributes FROM docs
      WHERE author_attributes IS NOT NULL) AS k,
     LATERAL (SELECT json_extract_string(k.author_attributes, '$."' || k.key || '"') AS value)
WHERE value IS NOT NULL
UNION ALL
SELECT $domain, doc_id, 'activity',
       CASE WHEN author_docs >= 5 THEN 'prolific' WHEN author_docs >= 2 THEN 'regular' ELSE 'novice' END, 'derived'
FROM docs WHERE author_id IS NOT NULL
UNION ALL
SELECT $domain, doc_id, 'year', CAST(year(created_at) AS VARCHAR), 'derived' FROM docs WHERE created_at IS NOT NULL
UNION ALL
SELECT $domain, doc_id, 'votes',
       CASE WHEN TRY_CAST(json_extract_string(extra, '$.vote_up') AS INTEGER) >= 5 THEN '5+'
            WHEN TRY_CAST(json_extract_string(extra, '$.vote_up') AS INTEGER) >= 1 THEN '1-4' ELSE '0' END, 'derived'
FROM docs WHERE json_extract_string(extra, '$.vote_up') IS NOT NULL
"""

_TRAVELLER_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "business",
        re.compile(r"\b(on|for) (a )?business\b|\bbusiness (trip|travel\w*)\b|\bwork trip\b|\bconference\b", re.I),
    ),
    (
        "family",
        re.compile(r"\b(our|my|the) (kids|children|son|daughter|toddler|baby|family)\b|\bwith (the )?kids\b", re.I),
    ),
    (
        "couple",
        re.compile(
            r"\b(my|our) (wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?)\b|\bhoneymoon\b|"
            r"\banniversary\b",
            re.I,
        ),
    ),
    (
        "friends",
        re.compile(r"\b(with|and) (some |a group of |two |three )?(friends|girlfriends|mates|buddies)\b", re.I),
    ),
    (
        "solo",
        re.compile(r"\b(travel(l)?ing|travel(l)?ed|stayed|was) (alone|solo|by myself|on my own)\b|\bsolo trip\b", re.I),
    ),
)


def infer_traveller_type(text: str) -> str | None:
    """The first explicit self-description found; None when the text does not say."""
    for label, pattern in _TRAVELLER_CUES:
        if pattern.search(text):
            return label
    return None
