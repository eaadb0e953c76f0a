"""What `oprag query` takes from the analyses: the profile balanced mode balances on (all time, since a date, or
recency-weighted) and the focus entity's opinion timeline under the hits."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import duckdb

from oprag_pipeline.analysis import drift
from oprag_pipeline.analysis.retrieval import recency_profile, windowed_profile
from oprag_pipeline.index.retrieval import OpinionProfile


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
        rows = conn.execute(
            """SELECT created_at, sentiment_intensity, entity_name FROM opinions
               WHERE domain = ? AND entity_id = ? AND created_at IS NOT NULL""",
            [domain, entity_id],
        ).fetchall()
        if not rows:
            return []
        timeline = drift.analyse_entity(entity_id, rows[0][2], [(r[0], r[1]) for r in rows], months=months)
        return drift.render_timeline(timeline)

    return footer
