"""Declarative automation: what makes each asset run, stated on the asset rather than in a job.

`raw_documents` runs when the domain sensor asks (its files changed) and nightly, on a cron condition (the
re-index: ingest is incremental, so an unchanged domain re-extracts nothing). Every other asset is eager: it runs
for a domain once something upstream of it has new data there, and not otherwise. The conditions are evaluated by
`automation_sensor` (downstream, on by default) and `nightly_reindex` (the cron, off by default). A CLI run
materializes the whole chain in order, so after it nothing upstream is newer than what is downstream and the first
evaluation requests nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
)

# 03:00 UTC: the nightly re-index runs while nobody is likely to be querying the indexes it rewrites.
NIGHTLY_CRON = "0 3 * * *"
ROOT_ASSET = AssetKey("raw_documents")


def condition_for(key: AssetKey) -> AutomationCondition:
    return AutomationCondition.on_cron(NIGHTLY_CRON) if key == ROOT_ASSET else AutomationCondition.eager()


def with_automation(assets: Sequence[AssetsDefinition]) -> list[Any]:
    """Every asset with its automation condition (the root on the nightly cron, the rest eager)."""
    return [
        assets_def.map_asset_specs(lambda spec: spec.replace_attributes(automation_condition=condition_for(spec.key)))
        for assets_def in assets
    ]


# Two evaluators, because their defaults differ. Downstream assets follow new data from the start; the nightly
# re-index is opt-in (switch `nightly_reindex` on in the UI), as re-running every domain's chain each night costs
# compute, and LLM calls where an LLM extractor is configured.
automation_sensor = AutomationConditionSensorDefinition(
    "automation_sensor",
    target=AssetSelection.all() - AssetSelection.assets(ROOT_ASSET),
    default_status=DefaultSensorStatus.RUNNING,
    # the same cadence as the domain sensor: a change is followed downstream within a minute
    minimum_interval_seconds=30,
    description="Runs each asset eagerly for a domain once something upstream of it has new data there.",
)
nightly_reindex = AutomationConditionSensorDefinition(
    "nightly_reindex",
    target=AssetSelection.assets(ROOT_ASSET),
    default_status=DefaultSensorStatus.STOPPED,
    description=f"Re-ingests every domain on the cron `{NIGHTLY_CRON}` (UTC); the eager assets downstream follow.",
)
