"""Automation: new domains become partitions and changed input files trigger a run, without anyone clicking.

The sensor's cursor remembers, per domain, every input file's size, modification time and SHA-256. A file is
re-hashed only when its size or mtime moved, so an idle poll costs one `stat` per file; a touched but identical
file produces no run because its hash did not change.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    schedule,
    sensor,
)

from oprag_pipeline import settings
from oprag_pipeline.ingest.readers import file_sha256, list_input_files
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME, domain_partitions

domain_refresh_job = define_asset_job(
    "domain_refresh_job",
    selection=AssetSelection.all(),
    partitions_def=domain_partitions,
    description="Materialize every asset of one domain, from raw documents to the report.",
)

FileState = dict[str, list]  # relative path -> [size, mtime_ns, sha256]


def scan_domain(domain_dir: Path, previous: FileState) -> FileState:
    """File states of a domain, re-hashing only files whose size or mtime changed since `previous`."""
    state: FileState = {}
    for path in list_input_files(domain_dir):
        stat = path.stat()
        relative = str(path.relative_to(domain_dir))
        known = previous.get(relative)
        if known and known[0] == stat.st_size and known[1] == stat.st_mtime_ns:
            state[relative] = known
        else:
            state[relative] = [stat.st_size, stat.st_mtime_ns, file_sha256(path)]
    return state


def fingerprint(state: FileState) -> str:
    """What identifies a domain's content: file names, sizes and hashes (not mtimes)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        size, _mtime, sha = state[name]
        digest.update(f"{name}\0{size}\0{sha}\n".encode())
    return digest.hexdigest()[:16]


def evaluate_domains(raw_root: Path, cursor: dict[str, FileState], known_partitions: set[str]):
    """Pure core of the sensor: (domains to add, run requests, new cursor)."""
    new_cursor: dict[str, FileState] = {}
    to_add: list[str] = []
    requests: list[RunRequest] = []
    for domain in settings.list_domains(raw_root.parent):
        state = scan_domain(raw_root / domain, cursor.get(domain, {}))
        new_cursor[domain] = state
        if not state:
            continue  # an empty folder is not a domain yet
        if domain not in known_partitions:
            to_add.append(domain)
        if domain not in cursor or fingerprint(state) != fingerprint(cursor[domain]):
            requests.append(
                RunRequest(
                    partition_key=domain,
                    run_key=f"{domain}:{fingerprint(state)}",
                    tags={"oprag/trigger": "input_files_changed"},
                )
            )
    return to_add, requests, new_cursor


@sensor(
    job=domain_refresh_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Registers new domains under data/raw/ and runs a domain whose input files were added or changed.",
)
def domain_files_sensor(context: SensorEvaluationContext):
    raw_root = settings.raw_dir()
    if not raw_root.is_dir():
        return SkipReason(f"{raw_root} does not exist yet")
    cursor = json.loads(context.cursor) if context.cursor else {}
    for reason in settings.refused_domain_folders(raw_root.parent).values():
        context.log.warning(f"not a domain: {reason}")  # refused here, before it becomes a partition
    known = set(context.instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME))
    to_add, requests, new_cursor = evaluate_domains(raw_root, cursor, known)
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[domain_partitions.build_add_request(to_add)] if to_add else [],
        cursor=json.dumps(new_cursor, sort_keys=True),
    )


@schedule(
    job=domain_refresh_job,
    cron_schedule="0 3 * * *",
    default_status=DefaultScheduleStatus.STOPPED,
    description="Nightly re-indexing of every domain (incremental: unchanged documents are not re-extracted).",
)
def nightly_reindex_schedule(context: ScheduleEvaluationContext):
    domains = context.instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME)
    if not domains:
        return SkipReason("no domain registered yet")
    stamp = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [RunRequest(partition_key=d, run_key=f"nightly:{d}:{stamp}") for d in domains]
