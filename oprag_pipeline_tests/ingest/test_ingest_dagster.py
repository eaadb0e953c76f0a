"""`raw_documents` through Dagster with the real DuckDB file: metadata, the asset check, incremental counts."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance, materialize

from oprag_pipeline.ingest import store
from oprag_pipeline.ingest.assets import raw_documents
from oprag_pipeline.ingest.checks import rows_reconcile
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
from oprag_pipeline.resources import build_resources
from oprag_pipeline_tests.conftest import write_lines


def docs(start: int, stop: int, version: str = "v1") -> list[str]:
    return [
        json.dumps({"doc_id": f"d{i}", "text": f"Review {i} ({version}): the pool was cold."})
        for i in range(start, stop)
    ]


def run_ingest(data_dir: Path, instance: DagsterInstance, domain: str = "hotels"):
    if domain not in instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME):
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, [domain])
    result = materialize(
        [raw_documents, rows_reconcile],
        partition_key=domain,
        instance=instance,
        resources=build_resources(data_dir=data_dir),
    )
    assert result.success
    materialization = result.asset_materializations_for_node("raw_documents")[0]
    checks = result.get_asset_check_evaluations()
    return {k: v.value for k, v in materialization.metadata.items()}, checks


def test_materialize_counts_quarantine_and_check(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    write_lines(data_dir / "raw/hotels/a.jsonl", [*docs(0, 5), "{broken", docs(0, 1)[0]])
    meta, checks = run_ingest(data_dir, dagster_instance)
    assert (meta["rows_read"], meta["documents"], meta["quarantined"], meta["exact_duplicates"]) == (
        7,
        5,
        1,
        1,
    )
    assert (meta["new"], meta["changed"], meta["unchanged"], meta["removed"]) == (5, 0, 0, 0)
    assert [(c.check_name, c.passed) for c in checks] == [("rows_reconcile", True)]
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM raw_documents WHERE domain = 'hotels'").fetchone()[0] == 5
        assert conn.execute("SELECT file, row_number, reason, raw_content FROM quarantined_rows").fetchall() == [
            ("a.jsonl", 6, "malformed_json", "{broken")
        ]
    assert dagster_instance.get_materialized_partitions(raw_documents.key) == {"hotels"}


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_incremental_reports_exactly_what_changed(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    write_lines(data_dir / "raw/hotels/a.jsonl", docs(0, 20))
    first, _ = run_ingest(data_dir, dagster_instance)
    assert first["new"] == 20
    # change 3 documents, remove 2, add 4 in a new file
    lines = docs(0, 18)
    for i in (1, 5, 9):
        lines[i] = docs(i, i + 1, version="v2")[0]
    write_lines(data_dir / "raw/hotels/a.jsonl", lines)
    write_lines(data_dir / "raw/hotels/b.jsonl", docs(100, 104))
    second, checks = run_ingest(data_dir, dagster_instance)
    assert (second["new"], second["changed"], second["unchanged"], second["removed"]) == (4, 3, 15, 2)
    assert all(c.passed for c in checks)
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        changes = dict(
            conn.execute(
                """SELECT change, list(doc_id ORDER BY doc_id) FROM document_changes
                   WHERE domain = 'hotels' AND ingest_id = ? GROUP BY change""",
                [second["ingest_id"]],
            ).fetchall()
        )
        first_seen = dict(conn.execute("SELECT doc_id, first_ingest_id FROM raw_documents").fetchall())
    assert changes == {
        "new": ["d100", "d101", "d102", "d103"],
        "changed": ["d1", "d5", "d9"],
        "removed": ["d18", "d19"],
    }
    assert first_seen["d1"] == first["ingest_id"] and first_seen["d100"] == second["ingest_id"]
    third, _ = run_ingest(data_dir, dagster_instance)
    assert (third["new"], third["changed"], third["unchanged"], third["removed"]) == (0, 0, 22, 0)


def test_domains_are_independent(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    write_lines(data_dir / "raw/hotels/a.jsonl", docs(0, 3))
    write_lines(data_dir / "raw/forum/a.jsonl", docs(0, 2))
    run_ingest(data_dir, dagster_instance, "hotels")
    meta, _ = run_ingest(data_dir, dagster_instance, "forum")
    assert meta["documents"] == 2
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        counts = dict(conn.execute("SELECT domain, count(*) FROM raw_documents GROUP BY 1").fetchall())
    assert counts == {"hotels": 3, "forum": 2}


def test_reconcile_detects_a_lost_row(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    write_lines(data_dir / "raw/hotels/a.jsonl", docs(0, 4))
    run_ingest(data_dir, dagster_instance)
    with duckdb.connect(str(data_dir / "warehouse.duckdb")) as conn:
        conn.execute("DELETE FROM raw_documents WHERE doc_id = 'd2'")
        balance = store.reconcile(conn, "hotels")
    assert balance == [
        {
            "file": "a.jsonl",
            "rows_read": 4,
            "accepted": 3,
            "quarantined": 0,
            "duplicates": 0,
            "balanced": False,
        }
    ]
