"""Materializing the graph in process, for the CLI and the README's main command.

This is Dagster's own job execution on the same definitions the UI loads, against a persistent instance, so every
run is recorded and visible in the UI afterwards: the steps one after another in this process by default, or with
`OPRAG_EXECUTOR=multiprocess` each step in a process of its own (the extraction shards side by side;
`concurrency.py`).

One writer at a time, by design: the DuckDB warehouse and the embedded vector shards each admit a single writing
process, so a run holds an exclusive file lock on the data directory (`<data>/.oprag-run.lock`, an OS lock that
dies with its process, so a killed run never leaves it stuck); a step's process whose ancestor holds it (the
multiprocess executor's children) runs under that hold. A second run waits for it, or refuses, and says who
holds it; a query probes it to tell "busy" from "broken". Runs recorded as started by a process that no longer
exists (killed with SIGKILL, a power cut) are marked failed when the next run takes the lock.

A run is created as `dagster job launch` creates one: with the remote origin of the code location the UI loads
(`oprag`, pyproject's [tool.dagster] and workspace.yaml), so it carries the `.dagster/repository` tag the job page,
Overview and the code location filter runs by, and the UI can re-execute it. It then executes in this process
(`execute_run`), with the definitions' executor.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
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
from filelock import FileLock, Timeout

from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME

JOB_NAME = "domain_refresh_job"
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
LOCK_FILE = ".oprag-run.lock"
HOLDER_FILE = ".oprag-run.holder.json"  # who holds the lock, for the message a waiting process prints
TAG_DATA_DIR = "oprag/data_dir"
TAG_PID = "oprag/pid"
TAG_HOST = "oprag/host"
UNFINISHED = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
# The code location the UI loads: pyproject's [tool.dagster] / [tool.dg.project] and workspace.yaml say the same
# (a test holds them together).
CODE_LOCATION = "oprag"
DEFINITIONS_MODULE = "oprag_pipeline.definitions"
PROJECT_ROOT = Path(__file__).resolve().parents[1]


class WriterBusyError(RuntimeError):
    """Another process is writing this data directory and the caller chose not to wait."""


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


def _holder(data_dir: Path) -> str:
    try:
        info = json.loads((data_dir / HOLDER_FILE).read_text())
        return f"pid {info['pid']} on {info['host']}, since {info['since']}"
    except (OSError, ValueError, KeyError):
        return "holder unknown"


def writer_busy(data_dir: Path) -> str | None:
    """Who is writing `data_dir` right now (a description), or None when nobody is; takes no lasting lock."""
    lock_path = data_dir / LOCK_FILE
    if not lock_path.exists():
        return None
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return _holder(data_dir)
    lock.release()
    return None


_HELD: dict[str, int] = {}  # data directories whose writer lock this process holds -> nesting depth


@contextmanager
def writer_lock(
    data_dir: Path,
    *,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
    run_tags: dict[str, str] | None = None,
) -> Iterator[None]:
    """Hold the data directory's writer lock; wait for it (telling `on_wait` once) or raise WriterBusyError.

    Re-entrant within a process: the CLI takes it around a run, and the run's data-directory resource takes it
    again (which is how runs launched by `dagster dev` wait for a CLI run and the other way round). A step of a run
    whose launching process holds it (`run_tags`: the CLI's pid and host) runs under that hold, wherever the
    step's process is: a child of the run's process (multiprocess) or a Celery worker's.
    """
    key = str(data_dir.resolve())
    if _HELD.get(key):
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(data_dir / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if _held_by_ancestor(data_dir) or _held_by_launcher(data_dir, run_tags or {}):
            # a step process of a run whose process holds the lock (the multiprocess executor's children, a Celery
            # worker's): the run holds it
            yield
            return
        holder = _holder(data_dir)
        if not wait:
            raise WriterBusyError(
                f"another oprag run is writing {data_dir} ({holder}); try again when it has finished"
            ) from None
        if on_wait is not None:
            on_wait(f"another oprag run is writing {data_dir} ({holder}); waiting for it to finish (Ctrl-C to stop)")
        lock.acquire()
    _HELD[key] = 1
    try:
        since = datetime.now(UTC).isoformat(timespec="seconds")
        (data_dir / HOLDER_FILE).write_text(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since})
        )
        yield
    finally:
        _HELD.pop(key, None)
        (data_dir / HOLDER_FILE).unlink(missing_ok=True)
        lock.release()


def _ancestors() -> Iterator[int]:
    """This process's parent, its parent, and so on (Linux's /proc; elsewhere the parent alone)."""
    pid = os.getppid()
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        yield pid
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        pid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), 0)


def _held_by_ancestor(data_dir: Path) -> bool:
    """Whether the writer lock's holder is an ancestor of this process on this host."""
    try:
        info = json.loads((data_dir / HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return False
    if info.get("host") != socket.gethostname():
        return False
    return int(info.get("pid", 0)) in set(_ancestors())


def _held_by_launcher(data_dir: Path, run_tags: dict[str, str]) -> bool:
    """Whether the writer lock's holder is the process that launched the run with these tags (`oprag run`)."""
    if not run_tags.get(TAG_PID):
        return False
    try:
        info = json.loads((data_dir / HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return False
    return str(info.get("pid")) == run_tags[TAG_PID] and info.get("host") == run_tags.get(TAG_HOST)


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

    The caller holds the writer lock (see `writer_lock`); runs are tagged with this process and data directory so
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
