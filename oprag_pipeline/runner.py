"""Materializing the graph in process, for the CLI and the README's main command.

This is Dagster's own job execution (`execute_in_process`) on the same definitions the UI loads, against a
persistent instance, so every run is recorded and visible in the UI afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from dagster import AssetSelection, DagsterEventType, DagsterInstance

from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME

JOB_NAME = "domain_refresh_job"
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


@dataclass(frozen=True)
class DomainOutcome:
    domain: str
    success: bool
    run_id: str
    steps: int
    seconds: float


def register_domains(instance: DagsterInstance, domains: Sequence[str]) -> None:
    known = set(instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME))
    missing = [d for d in domains if d not in known]
    if missing:
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, missing)


def materialize_domains(
    domains: Sequence[str], *, selection: str = "*", instance: DagsterInstance
) -> Iterator[DomainOutcome]:
    """Run the selected assets for each domain in turn, yielding as each domain finishes."""
    from oprag_pipeline.definitions import build_definitions

    defs = build_definitions()

    register_domains(instance, domains)
    job = defs.resolve_job_def(JOB_NAME)
    chosen = AssetSelection.all() if selection.strip() == "*" else AssetSelection.from_string(selection)
    asset_keys = sorted(chosen.resolve(defs.resolve_asset_graph()))
    if not asset_keys:
        raise ValueError(f"asset selection {selection!r} matches no asset")
    for domain in domains:
        started = time.perf_counter()
        result = job.execute_in_process(
            instance=instance,
            partition_key=domain,
            asset_selection=asset_keys,
            run_config=QUIET_LOGS,
            raise_on_error=False,
            tags={"oprag/trigger": "cli"},
        )
        steps = sum(1 for e in result.all_events if e.event_type == DagsterEventType.STEP_SUCCESS)
        yield DomainOutcome(domain, result.success, result.run_id, steps, time.perf_counter() - started)
