"""Which steps may run side by side: every step that opens the warehouse runs alone, the rest in parallel.

DuckDB admits one writing process per file. Such steps carry the `warehouse` pool, which Dagster's instance counts
per run (the CLI's instance config), and a tag the multiprocess executor counts per step (`executor`), so under
`OPRAG_EXECUTOR=multiprocess` the warehouse steps of a run still take turns while the steps that only read and
write Parquet, the extraction shards, run on every core. On a cluster the same tag limit applies to the k8s,
celery or docker executor's config.
"""

from __future__ import annotations

from typing import Any

from dagster import ExecutorDefinition, in_process_executor, multiprocess_executor

WAREHOUSE_POOL = "warehouse"
WAREHOUSE_TAG = "oprag/warehouse"
WAREHOUSE_STEP: dict[str, Any] = {"pool": WAREHOUSE_POOL, "op_tags": {WAREHOUSE_TAG: "1"}}
"""Keyword arguments of `@asset`, `@multi_asset` and `@asset_check` for a step that opens the warehouse."""
WAREHOUSE_OP: dict[str, Any] = {"pool": WAREHOUSE_POOL, "tags": {WAREHOUSE_TAG: "1"}}
"""The same for `@op` (whose tags argument has another name)."""

EXECUTORS = ("in_process", "multiprocess")


def executor(kind: str, max_concurrent: int) -> ExecutorDefinition:
    """The run executor: one process (the default; a run's steps one after another), or a process per step with at
    most `max_concurrent` at once and one warehouse step at a time."""
    if kind == "in_process":
        return in_process_executor
    if kind != "multiprocess":
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, not {kind!r}")
    return multiprocess_executor.configured(
        {
            "max_concurrent": max_concurrent,
            "tag_concurrency_limits": [{"key": WAREHOUSE_TAG, "limit": 1}],
            # each step's process forks from a server that has imported Dagster and the pipeline once
            "start_method": {"forkserver": {"preload_modules": ["oprag_pipeline.definitions"]}},
        }
    )
