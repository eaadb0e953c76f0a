"""Automation: new domains become partitions and changed input files trigger an ingest, without anyone clicking.

The sensor only registers domains and notes changed files: it asks for `raw_documents` of a changed domain, and
the assets downstream follow by their own declarative condition (`AutomationCondition.eager()`, see
`oprag_pipeline.automation`). The nightly re-index is a cron condition on `raw_documents`.

The sensor's cursor remembers, per domain, every input file's size, modification time and SHA-256. A file is
re-hashed only when its size or mtime moved, so an idle poll costs one `stat` per file; a touched but identical
file produces no run because its hash did not change. What was last ingested is also recorded on each
`raw_documents` materialization (`input_fingerprint`), whoever launched it, so a domain the CLI already ingested
is not re-run by the first tick of a sensor that has never seen it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    AssetSelection,
    DagsterInstance,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    sensor,
)

from oprag_pipeline import settings
from oprag_pipeline.ingest.input_files import file_sha256, list_input_files
from oprag_pipeline.ingest.readers import FileStats
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME, domain_partitions

domain_refresh_job = define_asset_job(
    "domain_refresh_job",
    selection=AssetSelection.all(),
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


def files_fingerprint(files: Iterable[FileStats]) -> str:
    """The same fingerprint, from the file statistics an ingest gathered while reading (no second hashing pass)."""
    return fingerprint({f.file: [f.size_bytes, 0, f.sha256] for f in files})


RAW_DOCUMENTS = AssetKey("raw_documents")


def ingested_fingerprint(instance: DagsterInstance, domain: str) -> str | None:
    """`input_fingerprint` of the domain's latest `raw_documents` materialization, from any run (CLI or UI)."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=RAW_DOCUMENTS, asset_partitions=[domain]), limit=1, ascending=False
    ).records
    if not records or records[0].asset_materialization is None:
        return None
    value = records[0].asset_materialization.metadata.get("input_fingerprint")
    return None if value is None else str(value.value)


def evaluate_domains(
    raw_root: Path,
    cursor: dict[str, FileState],
    known_partitions: set[str],
    ingested: dict[str, str | None] | None = None,
):
    """Pure core of the sensor: (domains to add, run requests, new cursor).

    A domain is requested when its fingerprint differs from the cursor's (or the cursor has not seen it) and also
    from `ingested[domain]`, the fingerprint its latest ingest recorded: files already ingested need no run.
    """
    ingested = ingested or {}
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
        current = fingerprint(state)
        unseen = domain not in cursor or current != fingerprint(cursor[domain])
        if unseen and current != ingested.get(domain):
            requests.append(
                RunRequest(
                    partition_key=domain,
                    asset_selection=[RAW_DOCUMENTS],
                    # from what to what: content that returns to an earlier state is a change again
                    run_key=f"{domain}:{ingested.get(domain)}->{current}",
                    tags={"oprag/trigger": "input_files_changed"},
                )
            )
    return to_add, requests, new_cursor


@sensor(
    job=domain_refresh_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Registers new domains under data/raw/ and ingests a domain whose input files were added or changed "
    "(the assets downstream follow by their automation conditions).",
)
def domain_files_sensor(context: SensorEvaluationContext):
    raw_root = settings.raw_dir()
    if not raw_root.is_dir():
        return SkipReason(f"{raw_root} does not exist yet")
    cursor = json.loads(context.cursor) if context.cursor else {}
    for reason in settings.refused_domain_folders(raw_root.parent).values():
        context.log.warning(f"not a domain: {reason}")  # refused here, before it becomes a partition
    known = set(context.instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME))
    ingested = {domain: ingested_fingerprint(context.instance, domain) for domain in known}
    to_add, requests, new_cursor = evaluate_domains(raw_root, cursor, known, ingested)
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[domain_partitions.build_add_request(to_add)] if to_add else [],
        cursor=json.dumps(new_cursor, sort_keys=True),
    )
