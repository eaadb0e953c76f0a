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
import numpy as np

from oprag_pipeline.enrich.documents import own_words
from oprag_pipeline.index.balancing import proportional_quotas, split_slots
from oprag_pipeline.index.diversify import DEFAULT_LAMBDA, Candidate, mmr, pm2, sigma_aspect_weights, xquad
from oprag_pipeline.index.fairness import (
    DEFAULT_FAIR_WEIGHT,
    cap_sources,
    merge_near_duplicates,
    source_cap,
    source_key,
)
from oprag_pipeline.index.sync import collection_name
from oprag_pipeline.index.vector_store import RRF_K, FilterValue, SearchHit, VectorStore
from oprag_pipeline.registry.matching import AliasMatcher
from oprag_pipeline.schema import SIGMA_SCALE
from oprag_pipeline.warehouse import records

MODES = ("semantic", "hybrid")
BALANCED = "balanced"  # opinion-balanced hybrid retrieval, enriched KB only (see index/balancing.py)
MMR, XQUAD, PM2 = "mmr", "xquad", "pm2"  # the literature's diversification baselines (see index/diversify.py)
DIVERSIFIED = (MMR, XQUAD, PM2)
OPINION_MODES = (BALANCED, XQUAD, PM2)
"""Modes that read the σ-score payload, which only the enriched KB carries."""
FAIR = "fair"  # source-fair re-ranking of the hybrid candidates, any KB (see index/fairness.py)
ALL_MODES = (*MODES, BALANCED, *DIVERSIFIED, FAIR)
MAX_ENTITIES_PER_QUESTION = 3


def candidate_pool_size(k: int) -> int:
    """Hybrid candidates a diversifier re-ranks for k slots: the depth the engine's hybrid query itself fuses from
    (each prefetch's limit, `vector_store.filters.prefetch_limit`), so a re-ranker sees what a hybrid query
    considered."""
    return max(3 * k, 50)


def deterministic_order(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Best score first, ties by point id: RRF sums tie often (a first rank in one list and none in the other
    score alike), and the engine returns tied points in no fixed order."""
    return sorted(hits, key=lambda h: (-h.score, h.id))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[SearchHit]], rrf_k: int = RRF_K) -> list[SearchHit]:
    """Fuse ranked lists the way the engine's RRF does (a hit scores the sum over lists of 1 / (rrf_k + position),
    position 0 first), in `deterministic_order`. Done here rather than in the engine because the engine cuts each
    prefetch at its limit with tied scores in no fixed order, and the position a tied point gets feeds its fused
    score: two fresh builds of the same demo index gave different hybrid lists for 187 of 200 questions on the raw
    KB (85,207 of 260,000 retrieval rows) while every semantic list was identical. Each list given here is already
    cut reproducibly (`Retriever._cut`), so the fused list is too."""
    fused: dict[str, SearchHit] = {}
    scores: dict[str, float] = {}
    for ranking in rankings:
        for position, hit in enumerate(ranking):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (rrf_k + position)
            seen = fused.get(hit.id)
            if seen is None or (seen.vector is None and hit.vector is not None):
                fused[hit.id] = hit
    return deterministic_order([SearchHit(h.id, scores[h.id], h.payload, h.vector) for h in fused.values()])


@dataclass(frozen=True)
class OpinionProfile:
    """A domain's entities as the balanced mode needs them: how to find them in a question, and the corpus count
    of their opinions per σ-level."""

    finder: AliasMatcher
    sigma_counts: Mapping[str, Mapping[int, int]]

    @classmethod
    def load(cls, conn: duckdb.DuckDBPyConnection, domain: str, scope: str | None = None) -> OpinionProfile:
        """With `scope`, the counts are of the opinions in the documents whose `entity_scope` is exactly it."""
        from oprag_pipeline.registry.store import registry_entities

        _, entities = registry_entities(conn, domain)
        counts: dict[str, dict[int, int]] = {}
        where, params = "domain = ?", [domain]
        if scope is not None:
            where, params = "domain = ? AND entity_scope = ?", [domain, scope]
        for entity_id, sigma, n in conn.execute(
            # ordered: a multi-threaded GROUP BY returns its groups in any order, and the diversifiers sum floats
            # in the order of these dicts
            f"SELECT entity_id, sentiment_intensity, count(*) FROM opinions WHERE {where} GROUP BY ALL ORDER BY 1, 2",
            params,
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

    def __init__(
        self,
        store: VectorStore,
        embedder: Any,
        profiles: Mapping[str, OpinionProfile] | None = None,
        *,
        mmr_lambda: float = DEFAULT_LAMBDA,
        aspect_lambda: float = DEFAULT_LAMBDA,
        sources: Mapping[str, Mapping[str, str]] | None = None,
        fair_weight: float = DEFAULT_FAIR_WEIGHT,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.profiles = dict(profiles or {})
        self.mmr_lambda = mmr_lambda
        self.aspect_lambda = aspect_lambda  # λ of xQuAD and PM-2
        self.sources = dict(sources or {})  # per domain, doc_id → source (`fairness.source_map`), for fair mode
        self.fair_weight = fair_weight  # fair mode's default `fair_weight`
        self._cache: dict[str, tuple[Any, Any]] = {}
        self._point_vectors: dict[tuple[str, str], np.ndarray] = {}

    def _ranked(
        self,
        name: str,
        *,
        dense: Any,
        sparse: Any,
        k: int,
        mode: str,
        filters: Mapping[str, FilterValue] | None,
        with_vectors: bool = False,
    ) -> list[SearchHit]:
        """The top k in `deterministic_order` (with their stored dense vectors when `with_vectors`). Hybrid: the
        dense and the BM25 list, each cut at the depth the engine's own hybrid query prefetches
        (`candidate_pool_size(k)`), fused by `reciprocal_rank_fusion`."""
        if mode != "hybrid":
            return self._cut(name, dense=dense, sparse=None, k=k, mode=mode, filters=filters, with_vectors=with_vectors)
        depth = candidate_pool_size(k)
        rankings = [
            self._cut(
                name, dense=dense, sparse=None, k=depth, mode="semantic", filters=filters, with_vectors=with_vectors
            ),
            self._cut(
                name, dense=None, sparse=sparse, k=depth, mode="sparse", filters=filters, with_vectors=with_vectors
            ),
        ]
        return reciprocal_rank_fusion(rankings)[:k]

    def _cut(
        self,
        name: str,
        *,
        dense: Any,
        sparse: Any,
        k: int,
        mode: str,
        filters: Mapping[str, FilterValue] | None,
        with_vectors: bool,
    ) -> list[SearchHit]:
        """One engine ranking's top k, reproducibly: the engine cuts at its limit with ties in any order, so ask for
        more than k and widen until the k-th score is strictly above the last one returned; then every point tied
        with the k-th is in hand and the cut by point id is the same in every run."""
        fetch = 2 * k
        while True:
            hits = deterministic_order(
                self.store.search(
                    name, dense=dense, sparse=sparse, k=fetch, mode=mode, filters=filters, with_vectors=with_vectors
                )
            )
            if len(hits) < fetch or hits[k - 1].score > hits[-1].score:
                return hits[:k]
            fetch *= 2

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
        fair_weight: float | None = None,
    ) -> list[RetrievedHit]:
        """The k hits of one mode; `fair_weight` (fair mode only) overrides the retriever's default."""
        if mode not in ALL_MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(ALL_MODES)}")
        if fair_weight is not None and mode != FAIR:
            raise ValueError(f"fair_weight applies to mode {FAIR!r} only, not {mode!r}")
        if mode in OPINION_MODES and kb != "enriched":
            raise ValueError(f"{mode} retrieval needs the opinion payload of the enriched KB (kb='enriched')")
        if mode == BALANCED:
            return self._balanced(domain, query, k, kb, filters)
        if mode in DIVERSIFIED:
            return self._diversified(domain, query, k, kb, mode, filters)
        if mode == FAIR:
            weight = self.fair_weight if fair_weight is None else fair_weight
            return self._source_fair(domain, query, k, kb, filters, weight)
        dense, sparse = self._vectors(query)
        hits = self._ranked(collection_name(domain, kb), dense=dense, sparse=sparse, k=k, mode=mode, filters=filters)
        return [RetrievedHit(h.id, h.score, dict(h.payload)) for h in hits]

    def _named_entities(self, domain: str, query: str) -> list[str]:
        """Registry entities the question names that have corpus opinions (at most `MAX_ENTITIES_PER_QUESTION`)."""
        if domain not in self.profiles:
            raise ValueError(
                f"opinion-aware retrieval needs the opinion profile of domain {domain!r} (Retriever profiles)"
            )
        profile = self.profiles[domain]
        return [e for e in profile.finder.entities_in(query) if profile.sigma_counts.get(e)][:MAX_ENTITIES_PER_QUESTION]

    @staticmethod
    def _unit(v: Any) -> np.ndarray:
        """`v` in float64 scaled to length 1 (a zero vector stays zero), so cosines are plain dot products."""
        v = np.asarray(v, dtype=np.float64)
        norm = np.linalg.norm(v)
        return v / norm if norm else v

    def _vectors_of(self, name: str, hits: Sequence[SearchHit]) -> list[np.ndarray]:
        """Unit dense vectors of retrieved points: the stored vector the engine returned with the hit (what it
        ranked with, and free to read), else — a backend that returns none — the point's text embedded, once per
        retriever. With the default joint embedding the two agree to float rounding, but a re-embedded vector
        shifts a little with the batch it is embedded in (cosine ~0.9999 on the demo), so MMR near-ties can fall
        differently with the order questions come in; the stored vector is the same whatever the order, and for
        points indexed with composed vectors (`index.assets`, dense="composed") it is the only exact one."""
        missing = [h for h in hits if h.vector is None and (name, h.id) not in self._point_vectors]
        if missing:
            vectors = self.embedder.embed_dense([str(h.payload.get("text", "")) for h in missing])
            for h, v in zip(missing, vectors, strict=True):
                self._point_vectors[(name, h.id)] = self._unit(v)
        return [self._unit(h.vector) if h.vector is not None else self._point_vectors[(name, h.id)] for h in hits]

    def _diversified(
        self, domain: str, query: str, k: int, kb: str, mode: str, filters: Mapping[str, FilterValue] | None
    ) -> list[RetrievedHit]:
        """Re-rank the hybrid candidates (`candidate_pool_size(k)` of them) by MMR, xQuAD or PM-2. xQuAD and PM-2
        aim at the corpus σ distribution of the entities the question names; with none named they return the plain
        hybrid list, as balanced retrieval does. Hits keep their hybrid score; their order is the re-ranker's."""
        dense, sparse = self._vectors(query)
        name = collection_name(domain, kb)
        pool = self._ranked(
            name,
            dense=dense,
            sparse=sparse,
            k=candidate_pool_size(k),
            mode="hybrid",
            filters=filters,
            with_vectors=mode == MMR,  # only MMR compares candidates with one another
        )
        by_id = {h.id: h for h in pool}
        if mode == MMR:
            q = self._unit(dense)
            candidates = [
                Candidate(h.id, float(np.dot(q, v)), vector=v)
                for h, v in zip(pool, self._vectors_of(name, pool), strict=True)
            ]
            chosen = mmr(candidates, k, lambda_=self.mmr_lambda)
        else:
            entities = self._named_entities(domain, query)
            if not entities:
                return [RetrievedHit(h.id, h.score, dict(h.payload)) for h in pool[:k]]
            weights = sigma_aspect_weights(self.profiles[domain].sigma_counts, entities)

            def aspect(h: SearchHit) -> tuple[str, int] | None:
                sigma = h.payload.get("sentiment_intensity")
                key = (h.payload.get("entity_id"), int(sigma)) if sigma is not None else None
                return key if key in weights else None

            candidates = [Candidate(h.id, h.score, aspect(h)) for h in pool]
            select = xquad if mode == XQUAD else pm2
            chosen = select(candidates, k, weights, lambda_=self.aspect_lambda)
        return [RetrievedHit(c.point_id, by_id[c.point_id].score, dict(by_id[c.point_id].payload)) for c in chosen]

    def _source_fair(
        self,
        domain: str,
        query: str,
        k: int,
        kb: str,
        filters: Mapping[str, FilterValue] | None,
        fair_weight: float,
    ) -> list[RetrievedHit]:
        """The hybrid candidates (`candidate_pool_size(k)`) with at most `fairness.source_cap(k, w)` hits per
        source (an author, merged with the authors of near-identical candidate texts); at w = 0 (no cap) exactly
        the plain hybrid list. Hits keep their hybrid score."""
        cap = source_cap(k, fair_weight)
        if cap >= k:
            return self.search(domain, query, k=k, mode="hybrid", kb=kb, filters=filters)
        if domain not in self.sources:
            raise ValueError(f"fair retrieval needs the document sources of domain {domain!r} (Retriever sources)")
        source_of = self.sources[domain]
        dense, sparse = self._vectors(query)
        name = collection_name(domain, kb)
        pool = self._ranked(name, dense=dense, sparse=sparse, k=candidate_pool_size(k), mode="hybrid", filters=filters)
        by_id = {h.id: h for h in pool}

        def source(h: SearchHit) -> str:
            doc_id = str(h.payload.get("doc_id"))
            return source_of.get(doc_id) or source_key(doc_id, None)

        def words(h: SearchHit) -> str:
            text = str(h.payload.get("text", ""))
            return own_words(text) if kb == "enriched" else text  # the metadata header is shared, not copied

        merged = merge_near_duplicates({h.id: source(h) for h in pool}, {h.id: words(h) for h in pool})
        chosen = cap_sources([Candidate(h.id, h.score, merged[h.id]) for h in pool], k, cap)
        return [RetrievedHit(c.point_id, by_id[c.point_id].score, dict(by_id[c.point_id].payload)) for c in chosen]

    def _balanced(
        self, domain: str, query: str, k: int, kb: str, filters: Mapping[str, FilterValue] | None
    ) -> list[RetrievedHit]:
        """k slots split over the entities the question names, then over each entity's σ-levels in proportion to
        the corpus; each slot filled by hybrid relevance within its level. No named entity: plain hybrid."""
        profile_counts = self.profiles[domain].sigma_counts if domain in self.profiles else {}
        entities = self._named_entities(domain, query)
        if not entities:
            return self.search(domain, query, k=k, mode="hybrid", kb=kb, filters=filters)
        dense, sparse = self._vectors(query)
        name = collection_name(domain, kb)
        chosen: dict[str, SearchHit] = {}

        def fill(limit: int, where: dict[str, FilterValue]) -> int:
            if limit <= 0:
                return 0
            hits = self._ranked(
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
            for sigma, quota in sorted(proportional_quotas(profile_counts[entity_id], slots).items()):
                got += fill(quota, {"entity_id": entity_id, **_sigma_filter(sigma)})
            got += fill(slots - got, {"entity_id": entity_id})  # a level with fewer points than its quota
        fill(k - len(chosen), {})  # an entity with fewer points than its slots: relevance fills the rest
        ranked = deterministic_order(list(chosen.values()))[:k]
        return [RetrievedHit(h.id, h.score, dict(h.payload)) for h in ranked]


def attach_opinions(conn: duckdb.DuckDBPyConnection, domain: str, kb: str, hits: Sequence[RetrievedHit]) -> None:
    """Fill `hit.opinions` and `hit.author` from the warehouse (see the module docstring for the rules)."""
    if not hits:
        return
    doc_ids = sorted({h.payload["doc_id"] for h in hits})
    rows = records(
        conn.execute(
            """SELECT doc_id, entity_id, entity_name, sentiment, intensity, sentiment_intensity, impact_score,
                      emotions, span_start, span_end
               FROM opinions WHERE domain = ? AND doc_id IN (SELECT unnest(?))""",
            [domain, doc_ids],
        )
    )
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        doc_id, span = r.pop("doc_id"), (r.pop("span_start"), r.pop("span_end"))
        by_doc.setdefault(doc_id, []).append({**r, "emotions": list(r["emotions"]), "span": span})
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
