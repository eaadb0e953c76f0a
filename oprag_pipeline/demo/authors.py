"""Who wrote each demo document, and when: the author pool, planned review counts, attributes and the date range.

Author assignment is done once per domain up front (a shuffled list of author ids with planned review counts), so
`author_reviewer_experience` is *derivable* from how many reviews an author has in the corpus. That list is the only
O(docs) structure held in memory (~8 bytes per document); texts and truth are streamed to disk.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from functools import cache

from oprag_pipeline.demo import phrases as ph

START_DATE = date(2023, 1, 1)
END_DATE = date(2025, 6, 30)
AUTHOR_MISSING_SHARE = 0.20  # share of documents whose author attributes are left out of the input

Author = tuple[str, int, tuple[str, ...]]  # handle, planned review count, attribute values


@cache
def days() -> tuple[str, ...]:
    """Every date of the corpus's range, ISO-formatted (a document's date is drawn uniformly from these)."""
    span = (END_DATE - START_DATE).days + 1
    return tuple((START_DATE + timedelta(days=d)).isoformat() for d in range(span))


def make_authors(domain: str, n_docs: int, seed: int) -> tuple[list[Author], list[int]]:
    """Author pool with planned review counts, and the (shuffled) author of every document."""
    rng = random.Random(f"oprag-demo:{seed}:{domain}:authors")
    hotels = domain == "hotels"
    counts: list[int] = []
    total = 0
    while total < n_docs:
        r = rng.random()
        if hotels:
            c = 1 if r < 0.6 else rng.randint(2, 4) if r < 0.9 else rng.randint(5, 10)
        else:
            c = 1 if r < 0.35 else rng.randint(2, 5) if r < 0.75 else rng.randint(6, 25)
        c = min(c, n_docs - total)
        counts.append(c)
        total += c
    authors: list[Author] = []
    for idx, c in enumerate(counts):
        if hotels:
            handle = (
                f"{rng.choice(ph.HOTEL_FIRST_NAMES)}{rng.choice(('', '_', '.'))}"
                f"{rng.choice(ph.HOTEL_HANDLE_WORDS)}{idx + 1}"
            )
            attrs: tuple[str, ...] = (rng.choices(ph.HOTEL_TRAVELLER_TYPES, ph.HOTEL_TRAVELLER_WEIGHTS)[0],)
        else:
            handle = f"{rng.choice(ph.FORUM_HANDLE_WORDS)}{rng.choice(ph.FORUM_HANDLE_SUFFIX)}_{idx + 1}"
            attrs = (
                rng.choices(ph.FORUM_REVENUE_BANDS, ph.FORUM_REVENUE_WEIGHTS)[0],
                rng.choices(ph.FORUM_TENURES, ph.FORUM_TENURE_WEIGHTS)[0],
                rng.choices(ph.FORUM_REGIONS, ph.FORUM_REGION_WEIGHTS)[0],
            )
        authors.append((handle, c, attrs))
    doc_authors = [a for a, c in enumerate(counts) for _ in range(c)]
    rng.shuffle(doc_authors)
    return authors, doc_authors


def experience(review_count: int) -> str:
    """Reviewer experience is derivable from the corpus: how many reviews the author wrote in it."""
    return "novice" if review_count <= 1 else "regular" if review_count <= 4 else "expert"
