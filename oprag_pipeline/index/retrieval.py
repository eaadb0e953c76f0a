"""The retrieval API shared by the evaluation and `oprag query`.

`search()` embeds the query once per mode and asks the vector store; what comes back is the point's payload.
Enriched points carry their own opinion metadata; for raw chunks and split points, `attach_opinions` maps hits
back to the opinions they contain (a raw chunk: every opinion of its document whose evidence span overlaps the
chunk), so all three knowledge bases are measured the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from oprag_pipeline.enrich.schema import SIGMA_SCALE
from oprag_pipeline.index.balancing import proportional_quotas, split_slots
from oprag_pipeline.index.sync import collection_name
from oprag_pipeline.index.vector_store import FilterValue, SearchHit, VectorStore
from oprag_pipeline.registry.matching import AliasMatcher

MODES = ("semantic", "hybrid")
BALANCED = "balanced"  # opinion-balanced hybrid retrieval, enriched KB only (see index/balancing.py)
ALL_MODES = (*MODES, BALANCED)
MAX_ENTITIES_PER_QUESTION = 3


@dataclass(frozen=True)
class OpinionProfile:
    """A domain's entities as the balanced mode needs them: how to find them in a question, and the corpus count
    of their opinions per σ-level."""

    finder: AliasMatcher
    sigma_counts: Mapping[str, Mapping[int, int]]

    @classmethod
    def load(cls, conn: duckdb.DuckDBPyConnection, domain: str) -> OpinionProfile:
        from oprag_pipeline.registry.store import registry_entities

        _, entities = registry_entities(conn, domain)
        counts: dict[str, dict[int, int]] = {}
        for entity_id, sigma, n in conn.execute(
            "SELECT entity_id, sentiment_intensity, count(*) FROM opinions WHERE domain = ? GROUP BY ALL", [domain]
        ).fetchall():
            counts.setdefault(entity_id, {})[int(sigma)] = int(n)
        return cls(AliasMatcher(entities), counts)


def _sigma_filter(sigma: int) -> dict[str, int]:
    """One σ-level as a filter on the indexed integer σ-score (one indexed condition, where sentiment AND intensity
    would make the engine check the unindexed intensity in each candidate's payload)."""
    if sigma != 0 and sigma not in SIGMA_SCALE.values():
        raise ValueError(f"{sigma} is not a point of the σ-scale")
    return {"sentiment_intensity": sigma}


@dataclass
class RetrievedHit:
    point_id: str
    score: float
    payload: dict[str, Any]
    opinions: list[dict[str, Any]] = field(default_factory=list)
    author: dict[str, str] = field(default_factory=dict)


class Retriever:
    """Holds one embedder and one store; embeddings of a query are reused across KBs and k."""

    def __init__(self, store: VectorStore, embedder: Any, profiles: Mapping[str, OpinionProfile] | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.profiles = dict(profiles or {})
        self._cache: dict[str, tuple[Any, Any]] = {}

    def _vectors(self, query: str) -> tuple[Any, Any]:
        if query not in self._cache:
            dense = self.embedder.embed_dense_query([query])[0]
            sparse = self.embedder.embed_sparse_query([query])[0]
            self._cache[query] = (dense, sparse)
        return self._cache[query]

    def search(
        self,
        domain: str,
        query: str,
        k: int = 20,
        mode: str = "hybrid",
        kb: str = "enriched",
        filters: Mapping[str, FilterValue] | None = None,
    ) -> list[RetrievedHit]:
        if mode not in ALL_MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(ALL_MODES)}")
        if mode == BALANCED:
            return self._balanced(domain, query, k, kb, filters)
        dense, sparse = self._vectors(query)
        hits = self.store.search(
            collection_name(domain, kb),
            dense=dense,
            sparse=sparse if mode == "hybrid" else None,
            k=k,
            mode=mode,
            filters=filters,
        )
        return [RetrievedHit(h.id, h.score, dict(h.payload)) for h in hits]

    def _balanced(
        self, domain: str, query: str, k: int, kb: str, filters: Mapping[str, FilterValue] | None
    ) -> list[RetrievedHit]:
        """k slots split over the entities the question names, then over each entity's σ-levels in proportion to
        the corpus; each slot filled by hybrid relevance within its level. No named entity: plain hybrid."""
        if kb != "enriched":
            raise ValueError("balanced retrieval needs the opinion payload of the enriched KB (kb='enriched')")
        if domain not in self.profiles:
            raise ValueError(f"balanced retrieval needs the opinion profile of domain {domain!r} (Retriever profiles)")
        profile = self.profiles[domain]
        entities = [e for e in profile.finder.entities_in(query) if profile.sigma_counts.get(e)][
            :MAX_ENTITIES_PER_QUESTION
        ]
        if not entities:
            return self.search(domain, query, k=k, mode="hybrid", kb=kb, filters=filters)
        dense, sparse = self._vectors(query)
        name = collection_name(domain, kb)
        chosen: dict[str, SearchHit] = {}

        def fill(limit: int, where: dict[str, FilterValue]) -> int:
            if limit <= 0:
                return 0
            hits = self.store.search(
                name,
                dense=dense,
                sparse=sparse,
                k=limit + len(chosen),
                mode="hybrid",
                filters={**(filters or {}), **where},
            )
            added = 0
            for hit in hits:
                if added == limit:
                    break
                if hit.id not in chosen:
                    chosen[hit.id] = hit
                    added += 1
            return added

        for entity_id, slots in zip(entities, split_slots(k, len(entities)), strict=True):
            got = 0
            for sigma, quota in sorted(proportional_quotas(profile.sigma_counts[entity_id], slots).items()):
                got += fill(quota, {"entity_id": entity_id, **_sigma_filter(sigma)})
            got += fill(slots - got, {"entity_id": entity_id})  # a level with fewer points than its quota
        fill(k - len(chosen), {})  # an entity with fewer points than its slots: relevance fills the rest
        ranked = sorted(chosen.values(), key=lambda h: -h.score)[:k]
        return [RetrievedHit(h.id, h.score, dict(h.payload)) for h in ranked]


def attach_opinions(conn: duckdb.DuckDBPyConnection, domain: str, kb: str, hits: Sequence[RetrievedHit]) -> None:
    """Fill `hit.opinions` and `hit.author` from the warehouse (see the module docstring for the rules)."""
    if not hits:
        return
    doc_ids = sorted({h.payload["doc_id"] for h in hits})
    rows = conn.execute(
        """SELECT doc_id, entity_id, entity_name, sentiment, intensity, sentiment_intensity, impact_score, emotions,
                  span_start, span_end
           FROM opinions WHERE domain = ? AND doc_id IN (SELECT unnest(?))""",
        [domain, doc_ids],
    ).fetchall()
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_doc.setdefault(r[0], []).append(
            {
                "entity_id": r[1],
                "entity_name": r[2],
                "sentiment": r[3],
                "intensity": r[4],
                "sentiment_intensity": r[5],
                "impact_score": r[6],
                "emotions": list(r[7]),
                "span": (r[8], r[9]),
            }
        )
    authors: dict[str, dict[str, str]] = {}
    for doc_id, attribute, value in conn.execute(
        "SELECT doc_id, attribute, value FROM author_attributes WHERE domain = ? AND doc_id IN (SELECT unnest(?))",
        [domain, doc_ids],
    ).fetchall():
        authors.setdefault(doc_id, {})[attribute] = value
    for hit in hits:
        doc_id = hit.payload["doc_id"]
        hit.author = authors.get(doc_id, {})
        opinions = by_doc.get(doc_id, [])
        if kb == "raw":
            start, end = hit.payload.get("char_start", 0), hit.payload.get("char_end", 1 << 30)
            hit.opinions = [o for o in opinions if _overlaps(o["span"], start, end)]
        else:
            hit.opinions = [o for o in opinions if o["entity_id"] == hit.payload.get("entity_id")]


def _overlaps(span: tuple[int | None, int | None], start: int, end: int) -> bool:
    lo, hi = span
    if lo is None or hi is None:
        return True  # an opinion without a span belongs to the whole document
    return lo < end and hi > start
