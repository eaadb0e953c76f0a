"""The report's figures, read from the marts and `metric_significance` (this is `metrics.json`), and the rows the
verdict and the sections pick from them. Everything is read from the warehouse, so the report shows exactly what
the SQL models and tests computed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from oprag_pipeline.evaluate.grid import FAMILY
from oprag_pipeline.report.labels import PLAIN_RAG, variant
from oprag_pipeline.warehouse import records, table_exists


def _query(conn: duckdb.DuckDBPyConnection, sql: str, domain: str) -> list[dict[str, Any]]:
    return records(conn.execute(sql, [domain]))


extra_queries: dict[str, str] = {}
"""More tables for sections added later: name → SQL with one `?` for the domain; the rows land in `data[name]`
(an empty list when the query's table does not exist yet)."""


def collect(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[str, Any]:
    """Every figure of the report as plain data (this is `metrics.json`)."""
    needed = ["mart_coverage_k20", "metric_significance", "evaluation_questions", "mart_depth_curve"]
    missing = [t for t in needed if not table_exists(conn, t)]
    if missing:
        raise LookupError(f"{domain}: the evaluation has not run yet (missing tables: {', '.join(missing)})")
    q = lambda sql: _query(conn, sql, domain)  # noqa: E731
    data = {
        "domain": domain,
        "questions": conn.execute("SELECT count(*) FROM evaluation_questions WHERE domain = ?", [domain]).fetchone()[0],
        "entities": q(
            """SELECT entity_id, entity_name, tier1_name, mentions, round(entropy_bits, 4) AS entropy_bits,
                      comparison_name FROM evaluation_entities WHERE domain = ? ORDER BY entropy_bits DESC"""
        ),
        "coverage_k20": q("SELECT * EXCLUDE (domain) FROM mart_coverage_k20 WHERE domain = ? ORDER BY metric, variant"),
        # the declared family first, then the exploratory rest; within each, by metric, k and comparison
        "significance": q(
            """SELECT * EXCLUDE (domain) FROM metric_significance WHERE domain = ?
               ORDER BY family <> 'headline', metric, k, treatment, mode, baseline, baseline_mode"""
        ),
        "w1_by_entity": q(
            "SELECT * EXCLUDE (domain) FROM mart_w1_by_entity WHERE domain = ? ORDER BY metric, entity_name, variant"
        ),
        "depth_curve": q(
            "SELECT * EXCLUDE (domain) FROM mart_depth_curve WHERE domain = ? ORDER BY metric, kb, mode, k"
        ),
        "mode_comparison": q(
            "SELECT * EXCLUDE (domain) FROM mart_mode_comparison WHERE domain = ? ORDER BY metric, kb"
        ),
        "question_type": q(
            "SELECT * EXCLUDE (domain) FROM mart_question_type WHERE domain = ? ORDER BY metric, question_type, variant"
        ),
        "fairness": q("SELECT * EXCLUDE (domain) FROM mart_fairness WHERE domain = ? ORDER BY attribute, variant"),
        "extraction_vs_gold": q(
            "SELECT * EXCLUDE (domain) FROM mart_extraction_vs_gold WHERE domain = ? ORDER BY source"
        ),
    }
    for name, sql in extra_queries.items():
        try:
            data[name] = q(sql)
        except duckdb.CatalogException:
            data[name] = []
    family = [r for r in data["significance"] if r["family"] == "headline"]
    data["primary_metric"] = family[0]["metric"] if family else None
    return data


def coverage_means(data: Mapping[str, Any]) -> dict[tuple[str, str], float | None]:
    return {(r["metric"], r["variant"]): r["mean"] for r in data["coverage_k20"]}


def family_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The headline comparisons in the order they were declared (`grid.FAMILY`)."""
    order = {pair: i for i, pair in enumerate(FAMILY)}

    def position(r: Mapping[str, Any]) -> int:
        return order.get(((r["treatment"], r["mode"]), (r["baseline"], r["baseline_mode"])), len(order))

    return sorted((r for r in data["significance"] if r["family"] == "headline"), key=position)


def closest_against_plain_rag(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The family's comparison against plain RAG of the closest retrieval: the lowest mean over all its questions
    that found opinions (the summary table's figure); its effect is then the paired, entity-level comparison."""
    metric = data.get("primary_metric")
    coverage = coverage_means(data)
    against_raw = [r for r in family_rows(data) if (r["baseline"], r["baseline_mode"]) == (PLAIN_RAG, "hybrid")]

    def closeness(r: Mapping[str, Any]) -> tuple:
        mean = coverage.get((metric, variant(r["treatment"], r["mode"])))
        return (r["treatment_mean"] if mean is None else mean, r["treatment"], r["mode"])

    return min(against_raw, key=closeness) if against_raw and metric is not None else None
