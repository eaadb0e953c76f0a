"""Materializing the graph in process, for the CLI and the README's main command.

This is Dagster's own job execution on the same definitions the UI loads, against a persistent instance, so every
run is recorded and visible in the UI afterwards: the steps one after another in this process by default, or with
`OPRAG_EXECUTOR=multiprocess` each step in a process of its own (the extraction shards side by side;
`concurrency.py`).

One writer at a time, by design: a run holds the data directory's writer lock (`locks.writer_lock`), and a second
run waits for it or refuses. Runs recorded as started by a process that no longer exists (killed with SIGKILL, a
power cut) are marked failed when the next run takes the lock.

A run is created as `dagster job launch` creates one: with the remote origin of the code location the UI loads
(`oprag`, pyproject's [tool.dagster] and workspace.yaml), so it carries the `.dagster/repository` tag the job page,
Overview and the code location filter runs by, and the UI can re-execute it. It then executes in this process
(`execute_run`), with the definitions' executor.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from dagster import (
    AssetSelection,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunsFilter,
    logger,
    reconstructable,
)
from dagster import Field as DagsterField
from dagster._core.execution.api import execute_run
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteInstigatorOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.scheduler.instigation import InstigatorStatus
from dagster._core.storage.tags import PARTITION_NAME_TAG
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._daemon.asset_daemon import get_auto_materialize_paused, set_auto_materialize_paused

from oprag_pipeline.locks import TAG_HOST, TAG_PID
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME

JOB_NAME = "domain_refresh_job"
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
TAG_DATA_DIR = "oprag/data_dir"
UNFINISHED = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
# The code location the UI loads: pyproject's [tool.dagster] / [tool.dg.project] and workspace.yaml say the same
# (a test holds them together).
CODE_LOCATION = "oprag"
DEFINITIONS_MODULE = "oprag_pipeline.definitions"
PROJECT_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DomainOutcome:
    domain: str
    success: bool
    run_id: str
    steps: int
    seconds: float
    failures: tuple[str, ...] = ()  # "step: message", one per failed step, for a one-line report


class _OneLineErrors(logging.Filter):
    """Dagster's console log carries the stack trace of every failed step; the CLI shows the error line only
    (`--debug` keeps Dagster's own logger). Steps skipped because an upstream one failed say nothing new."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Not executing." in message and "Dependencies for step" in message:
            return False
        if "\n" in message:
            head = message.split("\nStack Trace:")[0]
            record.msg = " ".join(part.strip() for part in head.splitlines() if part.strip())
            record.args = ()
        return True


@logger(
    config_schema={
        "log_level": DagsterField(str, is_required=False, default_value="INFO"),
        "name": DagsterField(str, is_required=False, default_value="dagster"),
    },
    description="Console logger of the CLI: one line per event, errors without their stack trace.",
)
def one_line_console_logger(init_context) -> logging.Logger:
    config = init_context.logger_config
    log = logging.Logger(config["name"], level=config["log_level"].upper())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(message)s"))
    handler.addFilter(_OneLineErrors())
    log.addHandler(handler)
    return log


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def fail_abandoned_runs(instance: DagsterInstance, data_dir: Path) -> list[str]:
    """Mark failed the runs of this data directory left unfinished by a process that died; their ids.

    Called while holding the writer lock, so no live oprag run of this directory can be among them; the pid check
    is a second guard (a run started on another host, sharing the instance, is left alone).
    """
    runs = instance.get_runs(filters=RunsFilter(statuses=UNFINISHED, tags={TAG_DATA_DIR: str(data_dir)}))
    host = socket.gethostname()
    failed = []
    for run in runs:
        pid_text, run_host = run.tags.get(TAG_PID, ""), run.tags.get(TAG_HOST, "")
        if run_host != host or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid() or _process_alive(pid):
            continue
        instance.report_run_failed(run, message=f"process {pid} that ran it is gone (killed?); marked failed by oprag")
        failed.append(run.run_id)
    return failed


def register_domains(instance: DagsterInstance, domains: Sequence[str]) -> None:
    known = set(instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME))
    missing = [d for d in domains if d not in known]
    if missing:
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, missing)


def resolve_selection(defs, selection: str) -> list:
    """Asset keys a selection string names; ValueError (listing the assets) when it is invalid or names none."""
    names = sorted(key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys())
    try:
        chosen = AssetSelection.all() if selection.strip() == "*" else AssetSelection.from_string(selection)
        asset_keys = sorted(chosen.resolve(defs.resolve_asset_graph()))
    except Exception as error:  # Dagster raises several error types for a bad selection string
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        first = first.split(". ")[0][:200]  # Dagster's messages go on with advice that does not fit one line
        raise ValueError(f"asset selection {selection!r} is invalid ({first}); assets: {', '.join(names)}") from None
    if not asset_keys:
        raise ValueError(f"asset selection {selection!r} matches no asset; assets: {', '.join(names)}")
    return asset_keys


def _step_failures(events) -> tuple[str, ...]:
    failures = []
    for event in events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            data = event.step_failure_data
            error = data.user_failure_data.description if data and data.user_failure_data else None
            if not error and data and data.error:
                cause = data.error.cause or data.error
                error = f"{cause.cls_name}: {cause.message.strip()}" if cause.cls_name else cause.message.strip()
            failures.append(f"{event.step_key}: {(error or 'failed').splitlines()[0][:500]}")
    return tuple(failures)


def materialize_domains(
    domains: Sequence[str],
    *,
    selection: str = "*",
    instance: DagsterInstance,
    data_dir: Path | None = None,
    tracebacks: bool = True,
) -> Iterator[DomainOutcome]:
    """Run the selected assets for each domain in turn, yielding as each domain finishes.

    The caller holds the writer lock (see `locks.writer_lock`); runs are tagged with this process and data directory so
    that a later run can tell an abandoned run from a live one. `tracebacks=False` logs failed steps as one line.
    """
    from oprag_pipeline import settings
    from oprag_pipeline.definitions import build_definitions

    defs = build_definitions()
    root = data_dir or settings.data_dir()
    asset_keys = resolve_selection(defs, selection)
    register_domains(instance, domains)
    show_automation_state(instance, defs)
    # the definitions' executor (in process, or a process per step): each step's process rebuilds the job from here
    recon_job = reconstructable(traced_cli_job if tracebacks else cli_job)
    job_def = recon_job.get_definition()
    origin = remote_job_origin(defs)
    tags = {
        **job_def.run_tags,
        "oprag/trigger": "cli",
        TAG_DATA_DIR: str(root),
        TAG_PID: str(os.getpid()),
        TAG_HOST: socket.gethostname(),
    }
    for domain in domains:
        started = time.perf_counter()
        run = instance.create_run_for_job(
            job_def=job_def,
            run_config=QUIET_LOGS,
            tags={**tags, PARTITION_NAME_TAG: domain},
            asset_selection=frozenset(asset_keys),
            remote_job_origin=origin,
            job_code_origin=recon_job.get_python_origin(),
        )
        result = execute_run(recon_job, run, instance, raise_on_error=False)
        success, run_id, events = result.success, result.run_id, list(result.all_events)
        steps = sum(1 for e in events if e.event_type == DagsterEventType.STEP_SUCCESS)
        yield DomainOutcome(domain, success, run_id, steps, time.perf_counter() - started, _step_failures(events))


def code_location_origin() -> ManagedGrpcPythonEnvCodeLocationOrigin:
    """The code location as `dagster dev -w workspace.yaml` and `dg dev` load it: the definitions module, run by
    this Python from the project's root, under the name the UI shows."""
    target = LoadableTargetOrigin(
        executable_path=sys.executable, module_name=DEFINITIONS_MODULE, working_directory=str(PROJECT_ROOT)
    )
    return ManagedGrpcPythonEnvCodeLocationOrigin(target, CODE_LOCATION)


def repository_origin(defs) -> RemoteRepositoryOrigin:
    return RemoteRepositoryOrigin(code_location_origin(), defs.get_repository_def().name)


def remote_job_origin(defs) -> RemoteJobOrigin:
    """The origin a run of the refresh job launched from the UI has; its label (`__repository__@oprag`) is the
    `.dagster/repository` tag by which the job page, Overview and the code location list their runs."""
    return RemoteJobOrigin(repository_origin(defs), JOB_NAME)


def show_automation_state(instance: DagsterInstance, defs) -> bool:
    """Make the UI's "Auto-materialize on/off" badge say whether eager automation runs; whether it does.

    With automation sensors (Dagster's default, `auto_materialize.use_sensors`), conditions are evaluated by the
    sensors, here `automation_sensor`, whose state the Automation page shows and toggles. The job and asset group
    headers still read the instance's older global pause flag, which no page can set in that mode and which reads
    as paused until set, so the badge said "off" while the sensor ran. It is set here to the sensor's state (its
    default, RUNNING, until someone switches it in the UI); with the older global daemon it is left to the user.
    """
    from oprag_pipeline.automation import automation_sensor

    if not instance.auto_materialize_use_sensors:
        return not get_auto_materialize_paused(instance)
    origin = RemoteInstigatorOrigin(repository_origin(defs), automation_sensor.name)
    state = instance.get_instigator_state(origin.get_id(), origin.get_selector().get_id())
    if state is None or state.status == InstigatorStatus.DECLARED_IN_CODE:
        running = automation_sensor.default_status == DefaultSensorStatus.RUNNING
    else:
        running = state.status == InstigatorStatus.RUNNING
    if get_auto_materialize_paused(instance) == running:
        set_auto_materialize_paused(instance, not running)
    return running


def traced_cli_job():
    """The refresh job with Dagster's own console logger (stack traces kept), rebuilt in each step's process."""
    from oprag_pipeline.definitions import build_definitions

    return build_definitions().resolve_job_def(JOB_NAME)


def cli_job():
    """The refresh job as the CLI runs it, failed steps logged as one line, rebuilt in each step's process."""
    return traced_cli_job().with_logger_defs({"console": one_line_console_logger})
