"""Source-fair retrieval: no single author (or other source) may fill most of the k slots.

Why: relevance ranks texts, not voices. An author who posts the same complaint twenty times, or a prolific
reviewer whose wording happens to match the question, can hold most of the top k, and the reader then meets one
person's view as if it were the crowd's. The flood analysis (`analysis/flooding.py`) measures that concentration in
the corpus and bounds each source's weight in P_pop; this module does the same for what retrieval returns.

A *source* of a hit is its document's author (`raw_documents.author_id`); a document without an author is its own
source (nothing says it came from anyone else), named `doc:<doc_id>` as in the flood analysis. As there, texts that
are near-identical (word 3-shingle Jaccard ≥ 0.6, `sources.near_duplicate_clusters`) join one source with every
hit of their authors: a complaint pasted from five accounts is one voice. Near duplicates are looked for among the
candidates only (a few dozen texts per query), not the whole corpus.

The selection: with `fair_weight` w in [0, 1], each source may hold at most

    cap(k, w) = ⌊k^(1 − w)⌋ of the k hits   (at least 1)

so w = 0 is the plain ranking (cap = k), w = 1 is one hit per source (the "one vote per source" of the bounded
P_pop), and w = 0.5 allows about √k. The exponent makes the knob act evenly on a log scale: at k = 20 the caps for
w = 0, 0.25, 0.5, 0.75, 1 are 20, 9, 4, 2, 1. The hybrid candidates are walked best first; a candidate whose source
already holds `cap` hits is skipped. When the candidates run out of distinct sources before k hits, the skipped
ones fill the remaining slots in relevance order after the others (k hits are still returned, so a cap is a
preference the corpus may be unable to meet; `concentration` shows whether it was).

Pure functions here; `retrieval.Retriever` does the querying (`mode="fair"`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import duckdb

from oprag_pipeline.index.diversify import Candidate, relevance_order
from oprag_pipeline.sources import (
    DEFAULT_TOP_AUTHORS,
    SourcedOpinion,
    effective_sources,
    near_duplicate_clusters,
    source_key,
    sources,
    top_author_share,
)

DEFAULT_FAIR_WEIGHT = 0.5
"""The knob's midpoint (about √k hits per source); not tuned on any corpus."""
FAIR_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def source_map(conn: duckdb.DuckDBPyConnection, domain: str, doc_ids: Sequence[str] | None = None) -> dict[str, str]:
    """doc_id → source for the domain's documents (all of them, or only `doc_ids`), from
    `raw_documents.author_id`."""
    sql = "SELECT doc_id, author_id FROM raw_documents WHERE domain = ?"
    params: list = [domain]
    if doc_ids is not None:
        sql += " AND doc_id IN (SELECT unnest(?))"
        params.append(sorted(set(doc_ids)))
    return {doc_id: source_key(doc_id, author_id) for doc_id, author_id in conn.execute(sql, params).fetchall()}


def merge_near_duplicates(source_of: Mapping[str, str], texts: Mapping[str, str]) -> dict[str, str]:
    """key → source, where keys whose texts are near-identical share one source with every key of their sources
    (the flood analysis's `sources` rule: connected groups linked by author or by near-duplicate text). A source
    is then named by its smallest member key, so the result does not depend on the order of the keys."""
    clusters = near_duplicate_clusters({key: texts[key] for key in source_of if key in texts})
    return sources([SourcedOpinion(key, author, 0) for key, author in source_of.items()], clusters)


@dataclass(frozen=True)
class Concentration:
    """How concentrated a list of hits (or opinions) is on its sources."""

    items: int
    sources: int
    max_share: float  # of the single largest source
    top_share: float  # of the `top` largest sources
    effective: float  # inverse Herfindahl
    top: int = DEFAULT_TOP_AUTHORS

    def describe(self, unit: str = "sources") -> str:
        """One line for `oprag query`; `unit` names what was counted (sources, authors)."""
        one = unit.removesuffix("s")
        return (
            f"{self.items} hits from {self.sources} {unit}: largest {one} {self.max_share:.0%}, "
            f"top-{self.top} {unit} {self.top_share:.0%}, effective {unit} {self.effective:.1f}"
        )


def concentration(source_ids: Sequence[str], top: int = DEFAULT_TOP_AUTHORS) -> Concentration:
    """Concentration of the given sources (one entry per hit)."""
    if top < 1:
        raise ValueError("the top-authors figure needs at least one author")
    counts = Counter(source_ids)
    total = len(source_ids)
    return Concentration(
        total,
        len(counts),
        max(counts.values()) / total if total else 0.0,
        top_author_share(counts, top),
        effective_sources(list(counts.values())),
        top,
    )


def source_cap(k: int, fair_weight: float) -> int:
    """Most hits one source may hold among k: ⌊k^(1 − w)⌋, at least 1 (see the module docstring)."""
    if not 0.0 <= fair_weight <= 1.0:
        raise ValueError(f"fair_weight must lie in [0, 1], not {fair_weight}")
    if k <= 0:
        return 0
    return max(1, math.floor(k ** (1.0 - fair_weight) + 1e-9))


def cap_sources(candidates: Sequence[Candidate], k: int, cap: int) -> list[Candidate]:
    """Up to k candidates, best first, at most `cap` per source (`Candidate.aspect`; None: its own source), the
    skipped ones filling any slots left over in relevance order. Deterministic: ties by point id."""
    if cap < 1:
        raise ValueError("a source cap is at least one hit")
    taken: list[Candidate] = []
    skipped: list[Candidate] = []
    held: Counter = Counter()
    for c in relevance_order(candidates):
        if len(taken) == k:
            break
        source = c.aspect if c.aspect is not None else ("point", c.point_id)
        if held[source] < cap:
            taken.append(c)
            held[source] += 1
        else:
            skipped.append(c)
    return taken + skipped[: max(0, k - len(taken))]
