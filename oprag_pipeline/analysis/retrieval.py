"""Retrieval variants the analyses add on top of `index/retrieval.Retriever`, and the profiles they balance on.

- `fair_search`: the fairness-aware multi-objective mode (`fairness.select_fair`) over each named entity's most
  relevant points, found with the Retriever's own entity finder, query vectors and filtered store search.
- `windowed_profile` / `recency_profile`: balanced retrieval's σ counts taken from a recent window (`--since`) or
  with opinions weighted by age (a half-life), instead of all time.
- `bounded_profile`: σ counts from the flood-resistant P_pop (each source's weight bounded).

Each profile is an ordinary `OpinionProfile`, so balanced retrieval itself is unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import date
from typing import Any

import duckdb

from oprag_pipeline.analysis.drift import recency_weighted_counts
from oprag_pipeline.analysis.fairness import (
    DEFAULT_POOL_FACTOR,
    Candidate,
    FairnessTargets,
    select_fair,
    shares,
)
from oprag_pipeline.index.balancing import split_slots
from oprag_pipeline.index.retrieval import MAX_ENTITIES_PER_QUESTION, OpinionProfile, RetrievedHit, Retriever
from oprag_pipeline.index.sync import collection_name

AUTHOR_PREFIX = "author_"  # how the enriched KB's payload names author attributes (index/assets.py)


def author_group_shares(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[str, dict[str, dict[str, float]]]:
    """Per entity, per author attribute: the share of each group among the authors of the entity's opinions."""
    counts: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for entity_id, attribute, value, n in conn.execute(
        """SELECT o.entity_id, a.attribute, a.value, count(*) FROM opinions o
           JOIN author_attributes a ON a.domain = o.domain AND a.doc_id = o.doc_id
           WHERE o.domain = ? GROUP BY ALL""",
        [domain],
    ).fetchall():
        counts[entity_id][attribute][value] = float(n)
    return {e: {a: shares(groups) for a, groups in by_attr.items()} for e, by_attr in counts.items()}


def _candidate(hit: Any) -> Candidate:
    payload = hit.payload
    groups = {k[len(AUTHOR_PREFIX) :]: str(v) for k, v in payload.items() if k.startswith(AUTHOR_PREFIX) and v}
    return Candidate(hit.id, int(payload["sentiment_intensity"]), groups)


def fair_search(
    retriever: Retriever,
    domain: str,
    query: str,
    *,
    k: int,
    group_shares: Mapping[str, Mapping[str, Mapping[str, float]]],
    sigma_weight: float,
    group_weight: float,
    pool_factor: int = DEFAULT_POOL_FACTOR,
) -> list[RetrievedHit]:
    """k hits from the enriched KB: per named entity, `select_fair` over its pool_factor × slots most relevant
    points; slots an entity cannot fill go to plain hybrid relevance. No named entity: plain hybrid."""
    profile = retriever.profiles.get(domain)
    if profile is None:
        raise ValueError(f"fair retrieval needs the opinion profile of domain {domain!r} (Retriever profiles)")
    entities = [e for e in profile.finder.entities_in(query) if profile.sigma_counts.get(e)][:MAX_ENTITIES_PER_QUESTION]
    if not entities:
        return retriever.search(domain, query, k=k, mode="hybrid", kb="enriched")
    dense, sparse = retriever._vectors(query)  # the Retriever's cached query vectors, shared with its modes
    name = collection_name(domain, "enriched")
    chosen: dict[str, Any] = {}
    for entity_id, slots in zip(entities, split_slots(k, len(entities)), strict=True):
        pool = retriever.store.search(
            name, dense=dense, sparse=sparse, k=pool_factor * slots, mode="hybrid", filters={"entity_id": entity_id}
        )
        pool = [h for h in pool if h.id not in chosen]
        targets = FairnessTargets(shares(profile.sigma_counts[entity_id]), group_shares.get(entity_id, {}))
        by_key = {h.id: h for h in pool}
        for c in select_fair(
            [_candidate(h) for h in pool], slots, targets, sigma_weight=sigma_weight, group_weight=group_weight
        ):
            chosen[c.key] = by_key[c.key]
    if len(chosen) < k:
        extra = retriever.store.search(name, dense=dense, sparse=sparse, k=k + len(chosen), mode="hybrid")
        for hit in extra:
            if len(chosen) == k:
                break
            chosen.setdefault(hit.id, hit)
    ranked = sorted(chosen.values(), key=lambda h: -h.score)[:k]
    return [RetrievedHit(h.id, h.score, dict(h.payload)) for h in ranked]


def dated_scores(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[str, list[tuple[date, int]]]:
    by_entity: dict[str, list[tuple[date, int]]] = defaultdict(list)
    for entity_id, created, sigma in conn.execute(
        "SELECT entity_id, created_at, sentiment_intensity FROM opinions WHERE domain = ? AND created_at IS NOT NULL",
        [domain],
    ).fetchall():
        by_entity[entity_id].append((created.date() if hasattr(created, "date") else created, int(sigma)))
    return by_entity


def windowed_profile(conn: duckdb.DuckDBPyConnection, domain: str, since: date) -> OpinionProfile:
    """Balanced retrieval's σ counts from opinions dated on or after `since` (undated opinions are left out)."""
    base = OpinionProfile.load(conn, domain)
    counts: dict[str, dict[int, int]] = defaultdict(dict)
    for entity_id, sigma, n in conn.execute(
        """SELECT entity_id, sentiment_intensity, count(*) FROM opinions
           WHERE domain = ? AND created_at >= ? GROUP BY ALL""",
        [domain, since],
    ).fetchall():
        counts[entity_id][int(sigma)] = int(n)
    return OpinionProfile(base.finder, dict(counts))


def recency_profile(conn: duckdb.DuckDBPyConnection, domain: str, half_life_days: float) -> OpinionProfile:
    """Balanced retrieval's σ counts with each opinion weighted by its age (half-life in days, counted back from
    the domain's latest date, so an old corpus is not treated as entirely stale)."""
    base = OpinionProfile.load(conn, domain)
    dated = dated_scores(conn, domain)
    latest = max((d for scores in dated.values() for d, _ in scores), default=None)
    if latest is None:
        raise ValueError(f"domain {domain!r} has no dated opinions to weight by recency")
    counts = {e: recency_weighted_counts(s, now=latest, half_life_days=half_life_days) for e, s in dated.items()}
    return OpinionProfile(base.finder, counts)


def bounded_profile(conn: duckdb.DuckDBPyConnection, domain: str) -> OpinionProfile:
    """Balanced retrieval's σ counts from the `source_weighted_pop` table (flood-resistant P_pop); entities the
    flooding analysis did not cover keep their plain counts."""
    base = OpinionProfile.load(conn, domain)
    counts = {e: dict(c) for e, c in base.sigma_counts.items()}
    rows = conn.execute(
        "SELECT entity_id, sentiment_intensity, bounded_count FROM source_weighted_pop WHERE domain = ?", [domain]
    ).fetchall()
    bounded: dict[str, dict[int, int]] = defaultdict(dict)
    for entity_id, sigma, n in rows:
        if n > 0:
            bounded[entity_id][int(sigma)] = int(n)
    counts.update(bounded)
    return OpinionProfile(base.finder, counts)
