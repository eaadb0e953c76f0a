"""`oprag status`: what is materialized per domain, read from the Dagster instance and the warehouse."""

from __future__ import annotations

from typing import Any

import duckdb
from dagster import DagsterInstance

from oprag_pipeline import settings
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME

# Tables whose per-domain row counts are worth showing, in pipeline order; absent ones are skipped.
COUNTED_TABLES = ("raw_documents", "quarantined_rows", "opinions", "enriched_entity_docs", "entity_registry")


def _table_counts(conn: duckdb.DuckDBPyConnection) -> dict[str, dict[str, int]]:
    present = {row[0] for row in conn.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    counts: dict[str, dict[str, int]] = {}
    for table in COUNTED_TABLES:
        if table in present:
            for domain, n in conn.execute(f"SELECT domain, count(*) FROM {table} GROUP BY domain").fetchall():
                counts.setdefault(domain, {})[table] = int(n)
    return counts


def collect_status(instance: DagsterInstance) -> dict[str, Any]:
    from oprag_pipeline.definitions import defs

    domains = sorted(set(settings.list_domains()) | set(instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME)))
    asset_keys = sorted(defs.resolve_asset_graph().get_all_asset_keys())
    materialized: dict[str, list[str]] = {d: [] for d in domains}
    for key in asset_keys:
        for partition in instance.get_materialized_partitions(key):
            materialized.setdefault(partition, []).append(key.to_user_string())
    warehouse = settings.warehouse_path()
    counts: dict[str, dict[str, int]] = {}
    reasons: dict[str, dict[str, int]] = {}
    warehouse_note = None
    if warehouse.exists():
        try:
            conn = duckdb.connect(str(warehouse), read_only=True)
        except duckdb.Error as error:
            if "lock" not in str(error).lower():
                raise settings.ConfigError(
                    f"warehouse {warehouse} is not a readable DuckDB database ({str(error).splitlines()[0]}); move "
                    f"it aside to start afresh, or point {settings.WAREHOUSE_ENV} at another file"
                ) from None
            # a run is writing it: the Dagster side of the status is still worth showing
            warehouse_note = "busy: a run is writing it, row counts are shown once it has finished"
        else:
            with conn:
                counts = _table_counts(conn)
                if "quarantined_rows" in {r[0] for r in conn.execute("SHOW TABLES").fetchall()}:
                    for domain, reason, n in conn.execute(
                        "SELECT domain, reason, count(*) FROM quarantined_rows GROUP BY ALL ORDER BY ALL"
                    ).fetchall():
                        reasons.setdefault(domain, {})[reason] = int(n)
    return {
        "data_dir": str(settings.data_dir()),
        "warehouse": str(warehouse),
        "warehouse_note": warehouse_note,
        "refused_domain_folders": settings.refused_domain_folders(),
        "assets": [k.to_user_string() for k in asset_keys],
        "domains": {
            d: {
                "materialized": sorted(materialized.get(d, [])),
                "rows": counts.get(d, {}),
                "quarantine_reasons": reasons.get(d, {}),
            }
            for d in sorted(materialized)
        },
    }


def render_status(report: dict[str, Any]) -> str:
    lines = [f"data: {report['data_dir']}", f"warehouse: {report['warehouse']}"]
    if report.get("warehouse_note"):
        lines.append(f"  ({report['warehouse_note']})")
    for reason in report.get("refused_domain_folders", {}).values():
        lines.append(f"not a domain: {reason}")
    if not report["domains"]:
        lines.append("no domains yet: run `oprag generate-demo` or `oprag import`, then `oprag run`")
    total_assets = len(report["assets"])
    for domain, info in report["domains"].items():
        lines.append(f"\n{domain}: {len(info['materialized'])}/{total_assets} assets materialized")
        missing = sorted(set(report["assets"]) - set(info["materialized"]))
        if missing:
            lines.append(f"  not materialized: {', '.join(missing)}")
        for table, n in info["rows"].items():
            lines.append(f"  {table:<24} {n:>12,}")
        for reason, n in info["quarantine_reasons"].items():
            lines.append(f"    quarantined for {reason:<20} {n:>8,}")
    return "\n".join(lines)
