"""The decorator every stage's warehouse step shares: one domain partition, the `warehouse` pool and its step tags.

An asset written as `@domain_asset(group_name=..., deps=[...], ...)` is `@asset(partitions_def=domain_partitions,
**WAREHOUSE_STEP, ...)`: partitioned by domain (`partitions.py`) and run as a step that opens the warehouse, so it
takes its turn with the other warehouse steps (`concurrency.py`). `domain_multi_asset` is the same for `@multi_asset`.
"""

from __future__ import annotations

from typing import Any

from dagster import asset, multi_asset

from oprag_pipeline.concurrency import WAREHOUSE_STEP
from oprag_pipeline.partitions import domain_partitions


def domain_asset(**kwargs: Any) -> Any:
    """`@asset` partitioned by domain, for a step that opens the warehouse; `kwargs` are the asset's own arguments."""
    return asset(partitions_def=domain_partitions, **WAREHOUSE_STEP, **kwargs)


def domain_multi_asset(**kwargs: Any) -> Any:
    """`@multi_asset` partitioned by domain, for a step that opens the warehouse."""
    return multi_asset(partitions_def=domain_partitions, **WAREHOUSE_STEP, **kwargs)
