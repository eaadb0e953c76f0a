"""The Celery app that `OPRAG_EXECUTOR=celery` runs' workers serve: dagster-celery's step task, configured from
the same settings as the run's executor (`OPRAG_CELERY_BROKER`; `concurrency.celery_config`).

    celery -A oprag_pipeline.celery_app worker -Q dagster -c 1                      # shard workers, any number
    celery -A oprag_pipeline.celery_app worker -Q oprag-warehouse,dagster -c 1      # exactly one, by the warehouse

A worker runs each step of a run in a process of its own, rebuilding the job from its module, so it needs the
run's settings in its environment (`OPRAG_DATA_DIR` or `OPRAG_WAREHOUSE`, `OPRAG_SHARD_URI`, `QDRANT_URL`...) and
access to the run's Dagster instance storage (the task carries a reference to it).
"""

from __future__ import annotations

from dagster_celery.executor import CeleryExecutor
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_task

from oprag_pipeline import concurrency, config

app = make_app(
    CeleryExecutor.for_cli(**concurrency.celery_config(config.value_or_default("OPRAG_CELERY_BROKER"))).app_args()
)
execute_plan = create_task(app)
