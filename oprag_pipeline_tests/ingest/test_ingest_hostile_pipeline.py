"""No step after ingest fails on hostile input: a generated corpus with a random hostile folder's files mixed in,
through every asset of the pipeline (registry, opinions, both per-entity knowledge bases, the evaluation).

A rating of `inf` or `1e308` used to be accepted and `extraction_sample` failed casting it to INTEGER,
which blocked every later stage of the domain.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance

from oprag_pipeline.definitions import ALL_ASSETS
from oprag_pipeline.demo import generate_demo
from oprag_pipeline_tests.conftest import materialize_domain
from oprag_pipeline_tests.hostile import write_hostile_domain

# End-to-end: real processes or whole pipeline runs (minutes); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow


def test_every_asset_materializes_over_hostile_files(tmp_path: Path, monkeypatch) -> None:
    data_dir = tmp_path / "data"
    generate_demo(data_dir, docs=240, seed=5, domains=["hotels"])
    expected = write_hostile_domain(data_dir / "raw" / "hotels", seed=1234, rows=60)
    monkeypatch.setenv("OPRAG_DATA_DIR", str(data_dir))
    (tmp_path / "home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        metadata = materialize_domain(ALL_ASSETS, data_dir, instance, "hotels")  # asserts success and checks
    ingest = metadata["raw_documents"]
    assert set(ingest["skipped_files"]) == set(expected.skipped)
    assert ingest["quarantined"] == sum(len(r) for r in expected.quarantined.values())
    assert "evaluation_report" in metadata and "enriched_kb" in metadata
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        accepted = {
            r[0] for r in conn.execute("SELECT doc_id FROM raw_documents WHERE doc_id LIKE 's1234-%'").fetchall()
        }
        assert accepted == expected.accepted
        assert conn.execute("SELECT count(*) FROM raw_documents WHERE NOT isfinite(rating)").fetchone()[0] == 0
    assert os.environ["OPRAG_DATA_DIR"] == str(data_dir)
