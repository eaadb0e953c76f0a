"""What `oprag query` takes from the analyses: the profile balanced mode balances on (all time, since a date, or
recency-weighted), the group-fair retrieval mode, and the focus entity's opinion timeline under the hits."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import duckdb

from oprag_pipeline.analysis import drift
from oprag_pipeline.analysis.fairness import weights_for
from oprag_pipeline.analysis.retrieval import author_group_shares, fair_search, recency_profile, windowed_profile
from oprag_pipeline.index.retrieval import OpinionProfile, RetrievedHit, Retriever
from oprag_pipeline.warehouse import records

DEFAULT_GROUP_WEIGHT = 0.5
"""The middle of the `fairness_tradeoff` curve: σ mix and author-group coverage weighed alike (no weight won on
both objectives on the demo, README)."""


def profile_builder(
    domain: str, *, since: date | None, half_life_days: float | None
) -> Callable[[duckdb.DuckDBPyConnection], OpinionProfile] | None:
    """None (all time) unless a window or a half-life is asked for; both at once is a usage error."""
    if since is not None and half_life_days is not None:
        raise ValueError("choose --since or --half-life, not both")
    if since is not None:
        return lambda conn: windowed_profile(conn, domain, since)
    if half_life_days is not None:
        return lambda conn: recency_profile(conn, domain, half_life_days)
    return None


def timeline_footer(domain: str, months: int) -> Callable[[duckdb.DuckDBPyConnection, str], list[str]]:
    """Lines of the entity's timeline (windows, shifts, latest window vs all time); none for undated opinions."""

    def footer(conn: duckdb.DuckDBPyConnection, entity_id: str) -> list[str]:
        rows = records(
            conn.execute(
                """SELECT created_at, sentiment_intensity, entity_name FROM opinions
                   WHERE domain = ? AND entity_id = ? AND created_at IS NOT NULL""",
                [domain, entity_id],
            )
        )
        if not rows:
            return []
        dated = [(r["created_at"], r["sentiment_intensity"]) for r in rows]
        timeline = drift.analyse_entity(entity_id, rows[0]["entity_name"], dated, months=months)
        return drift.render_timeline(timeline)

    return footer


def group_fair_searcher(
    domain: str, query: str, *, k: int, group_weight: float = DEFAULT_GROUP_WEIGHT
) -> Callable[[duckdb.DuckDBPyConnection, Retriever], list[RetrievedHit]]:
    """`oprag query --mode groups`: the `fairness_tradeoff` asset's retrieval at one weight, k slots matching the
    corpus's σ mix and the author groups holding opinions on each named entity (enriched KB)."""
    sigma_weight, weight = weights_for(group_weight)

    def search(conn: duckdb.DuckDBPyConnection, retriever: Retriever) -> list[RetrievedHit]:
        return fair_search(
            retriever,
            domain,
            query,
            k=k,
            group_shares=author_group_shares(conn, domain),
            sigma_weight=sigma_weight,
            group_weight=weight,
        )

    return search
