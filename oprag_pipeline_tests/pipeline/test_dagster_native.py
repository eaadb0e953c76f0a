"""Dagster-native operation: the instance's concurrency settings, the warehouse pool, standalone asset checks."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner
from dagster import AssetCheckKey, AssetKey, DagsterInstance, DagsterRunStatus, RunsFilter, materialize
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteInstigatorOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.scheduler.instigation import InstigatorState, InstigatorStatus, InstigatorType
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._daemon.asset_daemon import get_auto_materialize_paused

from oprag_pipeline.asset_metadata import OWNERS
from oprag_pipeline.automation import automation_sensor
from oprag_pipeline.cli import dagster_instance, main
from oprag_pipeline.definitions import build_definitions
from oprag_pipeline.ingest.assets import raw_documents
from oprag_pipeline.ingest.checks import NEEDS_PARTITION
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME, domain_partitions
from oprag_pipeline.resources import build_resources
from oprag_pipeline.runner import CODE_LOCATION, DEFINITIONS_MODULE, show_automation_state
from oprag_pipeline_tests.conftest import write_lines

ROOT = Path(__file__).resolve().parents[2]
SQL_LAYERS = ("stg_", "mart_")  # the SQL models' name prefixes (dbt_like_sql/)


def test_cli_instance_uses_current_concurrency_settings(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dagster.yaml the CLI writes loads with one run at a time and a limit of 1 on every pool."""
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    home.mkdir()
    # A file an older oprag wrote, with the legacy key, is brought up to date; a user's own file is left alone.
    (home / "dagster.yaml").write_text("# Written by oprag.\nrun_queue:\n  max_concurrent_runs: 1\n")
    config = dagster_instance().get_concurrency_config()
    assert "run_queue" not in (home / "dagster.yaml").read_text()
    assert config.run_queue_config.max_concurrent_runs == 1
    assert config.pool_config.default_pool_limit == 1
    own = "concurrency:\n  runs:\n    max_concurrent_runs: 3\n"
    (home / "dagster.yaml").write_text(own)
    assert dagster_instance().get_concurrency_config().run_queue_config.max_concurrent_runs == 3


def test_every_asset_is_in_the_warehouse_pool(data_dir: Path) -> None:
    """Each asset opens the single-writer DuckDB file, so each one queues on the `warehouse` pool."""
    graph = build_definitions().resolve_asset_graph()
    outside = sorted(k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).pools != {"warehouse"})
    assert outside == []


def check_only(instance: DagsterInstance, domain: str | None):
    """What the UI's "Execute" on a check launches: the domain job cut down to that check, for one partition (None:
    no partition, as the checks tab's "Execute all" launches it)."""
    job = build_definitions().resolve_job_def("domain_refresh_job")
    check = AssetCheckKey(raw_documents.key, "rows_reconcile")
    subset = job.get_subset(asset_selection=set(), asset_check_selection={check})
    return subset.execute_in_process(instance=instance, partition_key=domain, raise_on_error=False)


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_rows_reconcile_runs_on_its_own_for_one_partition(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    """The check is recorded against the domain it checked, and runs without re-materializing the asset."""
    write_lines(data_dir / "raw/hotels/a.jsonl", [json.dumps({"doc_id": "h1", "text": "The lift was slow."})])
    write_lines(data_dir / "raw/forum/b.jsonl", [json.dumps({"doc_id": "f1", "text": "Shipping was quick."}), "{"])
    dagster_instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["hotels", "forum"])
    resources = build_resources(data_dir=data_dir)
    for domain in ("hotels", "forum"):
        assert materialize(
            [raw_documents], partition_key=domain, instance=dagster_instance, resources=resources
        ).success

    result = check_only(dagster_instance, "forum")
    assert result.success
    assert result.asset_materializations_for_node("raw_documents") == []
    [evaluation] = result.get_asset_check_evaluations()
    assert (evaluation.check_name, evaluation.passed, evaluation.partition) == ("rows_reconcile", True, "forum")
    assert evaluation.metadata["files"].value == "1"  # text: listed on the check page, not plotted


def test_rows_reconcile_fails_when_rows_go_missing(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    """A row deleted behind the pipeline's back makes the check fail for that domain only."""
    write_lines(data_dir / "raw/hotels/a.jsonl", [json.dumps({"doc_id": f"h{i}", "text": "Fine."}) for i in range(3)])
    dagster_instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["hotels"])
    resources = build_resources(data_dir=data_dir)
    assert materialize([raw_documents], partition_key="hotels", instance=dagster_instance, resources=resources).success
    with duckdb.connect(str(data_dir / "warehouse.duckdb")) as conn:
        conn.execute("DELETE FROM raw_documents WHERE doc_id = 'h1'")
    result = check_only(dagster_instance, "hotels")
    [evaluation] = result.get_asset_check_evaluations()
    assert (evaluation.passed, evaluation.partition) == (False, "hotels")


def test_rows_reconcile_without_a_partition_fails_saying_what_works(dagster_instance: DagsterInstance) -> None:
    """The checks tab's "Execute all" sends no partition; the run then fails with the check's own explanation, not
    Dagster's "Cannot access partition_key for a non-partitioned run"."""
    result = check_only(dagster_instance, None)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    error = failure.step_failure_data.user_failure_data
    assert error is not None and error.description == NEEDS_PARTITION


def test_assets_carry_standard_metadata(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    """Owners, a code version and code references on every asset; row count and columns on a warehouse table."""
    graph = build_definitions().resolve_asset_graph()
    nodes = [graph.get(key) for key in graph.get_all_asset_keys()]
    assert all(node.owners == OWNERS and node.code_version for node in nodes)
    assert all("dagster/code_references" in node.metadata for node in nodes)
    # Different computations have different versions (a shared one would hide which code changed).
    assert graph.get(raw_documents.key).code_version != graph.get(AssetKey("opinions")).code_version

    write_lines(data_dir / "raw/hotels/a.jsonl", [json.dumps({"doc_id": f"h{i}", "text": "Fine."}) for i in range(3)])
    dagster_instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["hotels"])
    resources = build_resources(data_dir=data_dir)
    result = materialize([raw_documents], partition_key="hotels", instance=dagster_instance, resources=resources)
    metadata = result.asset_materializations_for_node("raw_documents")[0].metadata
    assert metadata["dagster/row_count"].value == 3
    columns = {column.name: column.type for column in metadata["dagster/column_schema"].value.columns}
    assert {"domain", "doc_id", "text", "content_hash"} <= set(columns)
    assert columns["text"] == "VARCHAR"


def test_python_asset_checks_are_partitioned_by_domain(data_dir: Path) -> None:
    """A check's result is recorded against the domain it checked, not beside every domain's materialization.

    The SQL models' data tests (the templated-SQL component's checks) are not covered yet.
    """
    graph = build_definitions().resolve_asset_graph()
    python_checks = [key for key in graph.asset_check_keys if not key.asset_key.to_user_string().startswith(SQL_LAYERS)]
    names = sorted(f"{key.asset_key.to_user_string()}:{key.name}" for key in python_checks)
    assert names == [
        "enriched_kb:points_match_source",
        "entity_split_kb:points_match_source",
        "opinion_timelines:latest_window_matches_all_time",
        "raw_documents:rows_reconcile",
        "raw_kb:points_match_source",
    ]
    assert all(graph.get_check_spec(key).partitions_def == domain_partitions for key in python_checks)


def test_the_cli_runs_in_the_code_location_the_ui_loads() -> None:
    """CLI runs are recorded with the origin of the code location pyproject and workspace.yaml declare."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["tool"]["dagster"] == {"module_name": DEFINITIONS_MODULE, "code_location_name": CODE_LOCATION}
    project = pyproject["tool"]["dg"]["project"]
    assert (project["code_location_target_module"], project["code_location_name"]) == (
        DEFINITIONS_MODULE,
        CODE_LOCATION,
    )
    [entry] = yaml.safe_load((ROOT / "workspace.yaml").read_text())["load_from"]
    assert entry["python_module"]["module_name"] == DEFINITIONS_MODULE
    assert entry["python_module"]["location_name"] == CODE_LOCATION


@pytest.mark.slow  # a CLI run and a look at the instance afterwards
def test_a_cli_run_is_listed_on_the_job_page(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`oprag run` records its run with the code location's origin: the UI's job page, Overview and the code
    location list runs by the `.dagster/repository` tag that origin gives, and can re-execute the run. The eager
    automation is shown on (the job header's badge reads the instance's pause flag)."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    write_lines(data_dir / "raw/shop/a.jsonl", [json.dumps({"doc_id": "1", "text": "Sturdy lid."})])
    run = CliRunner().invoke(main, ["run", "--select", "raw_documents"])
    assert run.exit_code == 0, run.output
    with DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        [cli_run] = instance.get_runs()
        origin = cli_run.remote_job_origin
        assert origin is not None
        assert (origin.location_name, origin.repository_origin.repository_name, origin.job_name) == (
            CODE_LOCATION,
            "__repository__",
            "domain_refresh_job",
        )
        # the filter of the job page (JobMetadata.tsx) and of Overview's per-location rows
        label = {REPOSITORY_LABEL_TAG: f"__repository__@{CODE_LOCATION}"}
        listed = instance.get_runs(RunsFilter(job_name="domain_refresh_job", tags=label))
        assert [r.run_id for r in listed] == [cli_run.run_id]
        assert cli_run.status == DagsterRunStatus.SUCCESS
        assert cli_run.tags["dagster/partition"] == "shop" and cli_run.tags["oprag/trigger"] == "cli"
        assert cli_run.asset_selection == {raw_documents.key}
        assert not get_auto_materialize_paused(instance)


def test_the_automation_badge_follows_the_automation_sensor(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    """On by default (the sensor's default status); off once the sensor is stopped in the UI, whose stored state
    carries the webserver's own origin (another working directory here): found by the sensor's name and location."""
    defs = build_definitions()
    assert get_auto_materialize_paused(dagster_instance)  # a fresh instance reads as paused
    assert show_automation_state(dagster_instance, defs)
    assert not get_auto_materialize_paused(dagster_instance)

    target = LoadableTargetOrigin(module_name=DEFINITIONS_MODULE, working_directory="/elsewhere")
    location = ManagedGrpcPythonEnvCodeLocationOrigin(target, CODE_LOCATION)
    origin = RemoteInstigatorOrigin(RemoteRepositoryOrigin(location, "__repository__"), automation_sensor.name)
    dagster_instance.add_instigator_state(InstigatorState(origin, InstigatorType.SENSOR, InstigatorStatus.STOPPED))
    assert not show_automation_state(dagster_instance, defs)
    assert get_auto_materialize_paused(dagster_instance)
