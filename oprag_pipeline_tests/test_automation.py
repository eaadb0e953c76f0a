"""The domain sensor, the nightly schedule, and loading the definitions the way `dagster dev` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    build_schedule_context,
    build_sensor_context,
)

from oprag_pipeline.ingest.sensors import domain_files_sensor, nightly_reindex_schedule
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
from oprag_pipeline_tests.conftest import write_lines

ROOT = Path(__file__).resolve().parents[1]


def tick(instance: DagsterInstance, cursor: str | None):
    context = build_sensor_context(instance=instance, cursor=cursor)
    result = domain_files_sensor(context)
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_sensor_registers_domains_and_reacts_to_changed_files(
    data_dir: Path, dagster_instance: DagsterInstance
) -> None:
    write_lines(data_dir / "raw/hotels/a.jsonl", ['{"doc_id": "1", "text": "x"}'])
    (data_dir / "raw/empty").mkdir()

    first = tick(dagster_instance, None)
    assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [["hotels"]]
    assert [r.partition_key for r in first.run_requests] == ["hotels"]
    assert dagster_instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME) == ["hotels"]

    idle = tick(dagster_instance, first.cursor)
    assert idle.run_requests == [] and idle.dynamic_partitions_requests == []

    # touching a file without changing its content is not a change
    path = data_dir / "raw/hotels/a.jsonl"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    touched = tick(dagster_instance, idle.cursor)
    assert touched.run_requests == []

    write_lines(data_dir / "raw/hotels/a.jsonl", ['{"doc_id": "1", "text": "y"}'])
    write_lines(data_dir / "raw/forum/posts.jsonl", ['{"doc_id": "p", "text": "z"}'])
    changed = tick(dagster_instance, touched.cursor)
    assert sorted(r.partition_key for r in changed.run_requests) == ["forum", "hotels"]
    assert [list(r.partition_keys) for r in changed.dynamic_partitions_requests] == [["forum"]]
    keys = {r.run_key for r in changed.run_requests}
    assert len(keys) == 2 and all(k.split(":")[0] in {"forum", "hotels"} for k in keys)
    cursor = json.loads(changed.cursor)
    assert set(cursor) == {"empty", "forum", "hotels"} and cursor["empty"] == {}


def test_schedule_requests_every_registered_domain(dagster_instance: DagsterInstance) -> None:
    dagster_instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["a", "b"])
    context = build_schedule_context(
        instance=dagster_instance, scheduled_execution_time=datetime(2026, 1, 2, 3, tzinfo=UTC)
    )
    requests = nightly_reindex_schedule(context)
    assert sorted(r.partition_key for r in requests) == ["a", "b"]
    assert sorted(r.run_key for r in requests) == ["nightly:a:2026-01-02", "nightly:b:2026-01-02"]


@pytest.mark.slow
def test_definitions_load_like_dagster_dev(tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "OPRAG_DATA_DIR": str(tmp_path / "data")}
    bin_dir = Path(sys.executable).parent
    validate = subprocess.run(
        [str(bin_dir / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert validate.returncode == 0, validate.stdout + validate.stderr
    listing = subprocess.run(
        [
            sys.executable,
            "-c",
            "from oprag_pipeline.definitions import defs\n"
            "g = defs.resolve_asset_graph()\n"
            "print(sorted(k.to_user_string() for k in g.get_all_asset_keys()))\n"
            "print(sorted(s.name for s in defs.sensors), sorted(s.name for s in defs.schedules))",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listing.returncode == 0, listing.stderr
    assets_line, automation_line = listing.stdout.strip().splitlines()[-2:]
    assert "raw_documents" in assets_line
    assert "domain_files_sensor" in automation_line and "nightly_reindex_schedule" in automation_line


@pytest.mark.slow
def test_dg_project_configuration_loads_the_code_location(tmp_path: Path) -> None:
    """`dg check defs` and `dg list defs` work from the repository root, under the location name pyproject gives."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "OPRAG_DATA_DIR": str(tmp_path / "data")}
    dg = str(Path(sys.executable).parent / "dg")
    check = subprocess.run(
        [dg, "check", "defs", "--use-active-venv"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "All definitions loaded successfully" in check.stdout + check.stderr
    listing = subprocess.run(
        [dg, "list", "defs", "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert listing.returncode == 0, listing.stdout + listing.stderr
    assert "raw_documents" in listing.stdout and "evaluation_report" in listing.stdout
