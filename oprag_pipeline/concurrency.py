"""Which steps may run side by side: every step that opens the warehouse runs alone, the rest in parallel.

DuckDB admits one writing process per file. Such steps carry the `warehouse` pool, which Dagster's instance counts
per run (the CLI's instance config), and a tag the multiprocess executor counts per step (`executor`), so under
`OPRAG_EXECUTOR=multiprocess` the warehouse steps of a run still take turns while the steps that only read and
write Parquet, the extraction shards, run on every core. Under `OPRAG_EXECUTOR=celery` (dagster-celery, whose
executor has no tag limits) the warehouse steps carry a queue tag instead: they go to `oprag-warehouse`, which one
worker process serves where the warehouse file is, and every other step goes to the `dagster` queue any worker
serves (`celery_app.py`). On Kubernetes, dagster-k8s's `k8s_job_executor` takes the same tag limit.
"""

from __future__ import annotations

import warnings
from typing import Any, get_args

from dagster import ExecutorDefinition, in_process_executor, multiprocess_executor

from oprag_pipeline import config

WAREHOUSE_POOL = "warehouse"
WAREHOUSE_TAG = "oprag/warehouse"
WAREHOUSE_QUEUE = "oprag-warehouse"
"""The Celery queue of the warehouse steps (dagster-celery's `dagster-celery/queue` step tag); other steps go to
dagster-celery's default queue, `dagster`."""
_STEP_TAGS = {WAREHOUSE_TAG: "1", "dagster-celery/queue": WAREHOUSE_QUEUE}
WAREHOUSE_STEP: dict[str, Any] = {"pool": WAREHOUSE_POOL, "op_tags": _STEP_TAGS}
"""Keyword arguments of `@asset`, `@multi_asset` and `@asset_check` for a step that opens the warehouse."""
WAREHOUSE_OP: dict[str, Any] = {"pool": WAREHOUSE_POOL, "tags": _STEP_TAGS}
"""The same for `@op` (whose tags argument has another name)."""

EXECUTORS: tuple[str, ...] = get_args(config.ExecutorKind)


def celery_config(broker: str) -> dict[str, Any]:
    """dagster-celery's executor config, shared by the run (`executor`) and its workers (`celery_app.py`).

    The broker (Redis) is also the result backend. A step's message is acknowledged once the step has finished
    (`task_acks_late`) and put back on the queue when the worker process running it dies (`task_reject_on_worker_lost`),
    so another worker runs the step again: the shard steps resume from the Parquet parts they committed, and the
    warehouse steps replace what they write. A worker prefetches one message at a time.
    """
    return {
        "broker": broker,
        "backend": broker,
        "config_source": {
            "task_acks_late": True,
            "task_reject_on_worker_lost": True,
            "worker_prefetch_multiplier": 1,
            "broker_connection_retry_on_startup": True,
        },
    }


def executor(kind: str, max_concurrent: int, *, broker: str | None = None) -> ExecutorDefinition:
    """The run executor: one process (the default; a run's steps one after another), a process per step with at
    most `max_concurrent` at once and one warehouse step at a time, or a Celery task per step on the workers of
    `broker` (the warehouse steps on the `oprag-warehouse` queue)."""
    if kind == "in_process":
        return in_process_executor
    if kind == "celery":
        from dagster_celery import celery_executor

        # dagster-celery registers its step task again for every step it submits; celery warns each time
        warnings.filterwarnings("ignore", message="Task name 'execute_plan' is already registered")

        if not broker:
            raise ValueError("the celery executor needs a broker URL (OPRAG_CELERY_BROKER)")
        return celery_executor.configured(celery_config(broker))
    if kind != "multiprocess":
        config.choice("OPRAG_EXECUTOR", kind)
    return multiprocess_executor.configured(
        {
            "max_concurrent": max_concurrent,
            "tag_concurrency_limits": [{"key": WAREHOUSE_TAG, "limit": 1}],
            # each step's process forks from a server that has imported Dagster and the pipeline once
            "start_method": {"forkserver": {"preload_modules": ["oprag_pipeline.definitions"]}},
        }
    )
