"""The domain sensor, the automation conditions (eager downstream, nightly cron), and loading the definitions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from dagster import (
    AssetKey,
    DagsterInstance,
    DefaultSensorStatus,
    build_sensor_context,
    evaluate_automation_conditions,
)

from oprag_pipeline.cli import main
from oprag_pipeline.definitions import build_definitions
from oprag_pipeline.demo import generate_demo
from oprag_pipeline.ingest.sensors import domain_files_sensor
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
from oprag_pipeline_tests.conftest import write_lines

ROOT = Path(__file__).resolve().parents[2]


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
    # the sensor asks for the ingest only; the rest follows by the assets' own automation conditions
    assert [r.asset_selection for r in first.run_requests] == [[AssetKey("raw_documents")]]
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


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_nightly_cron_requests_every_registered_domain(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    """The re-index is a cron condition on `raw_documents`: nothing before 03:00 UTC, every domain after it."""
    dagster_instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["a", "b"])
    defs = build_definitions()
    assert defs.resolve_sensor_def("nightly_reindex").default_status == DefaultSensorStatus.STOPPED
    before = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, evaluation_time=datetime(2026, 1, 2, 2, 59, tzinfo=UTC)
    )
    assert before.get_requested_partitions(AssetKey("raw_documents")) == set()
    after = evaluate_automation_conditions(
        defs=defs,
        instance=dagster_instance,
        cursor=before.cursor,
        evaluation_time=datetime(2026, 1, 2, 3, 1, tzinfo=UTC),
    )
    assert after.get_requested_partitions(AssetKey("raw_documents")) == {"a", "b"}
    # the eager assets downstream follow the new ingest, and only the domains it covers
    assert after.get_requested_partitions(AssetKey("opinions")) == {"a", "b"}
    assert before.get_requested_partitions(AssetKey("opinions")) == set()


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_first_sensor_tick_after_a_cli_run_requests_nothing(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`./scripts/main.sh`, then `dagster dev`: the sensor has no cursor yet, but the CLI's ingest is on record."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    write_lines(data_dir / "raw/shop/a.jsonl", ['{"doc_id": "1", "text": "Sturdy lid."}'])
    run = CliRunner().invoke(main, ["run", "--select", "raw_documents"])
    assert run.exit_code == 0, run.output
    instance = DagsterInstance.get()
    first = tick(instance, None)
    assert first.run_requests == []
    # a real change after that is still seen, by a sensor that never had a cursor as by one that has
    write_lines(data_dir / "raw/shop/a.jsonl", ['{"doc_id": "1", "text": "Flimsy lid."}'])
    assert [r.partition_key for r in tick(instance, None).run_requests] == ["shop"]
    assert [r.partition_key for r in tick(instance, first.cursor).run_requests] == ["shop"]


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
            "print(sorted(s.name for s in defs.sensors), list(defs.schedules or []))",
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
    assert all(name in automation_line for name in ("domain_files_sensor", "automation_sensor", "nightly_reindex"))


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


@pytest.mark.slow
def test_nothing_runs_after_a_full_cli_run(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the whole chain ran from the CLI, neither the sensor nor the eager conditions request anything."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    generate_demo(data_dir, docs=60, seed=5, domains=("hotels",))
    run = CliRunner().invoke(main, ["run"])
    assert run.exit_code == 0, run.output
    instance = DagsterInstance.get()
    assert tick(instance, None).run_requests == []
    evaluation = evaluate_automation_conditions(defs=build_definitions(), instance=instance)
    assert evaluation.total_requested == 0
