"""Assembles the pipeline for Dagster; nothing is defined here."""

import os

from dagster import Definitions

from oprag_pipeline import concurrency, config, settings
from oprag_pipeline.analysis.assets import ANALYSIS_ASSETS
from oprag_pipeline.asset_metadata import standard_assets
from oprag_pipeline.automation import automation_sensor, nightly_reindex, with_automation
from oprag_pipeline.enrich.assets import author_attributes, enriched_entity_docs, entity_opinion_stats, opinions
from oprag_pipeline.evaluate.assets import (
    evaluation_entities,
    evaluation_questions,
    gold_opinions,
    metric_significance,
    question_metrics,
    retrieval_runs,
)
from oprag_pipeline.evaluate.sql_models import build_sql_assets
from oprag_pipeline.generate.assets import answer_preference, generated_answers, generation_fidelity
from oprag_pipeline.index.assets import enriched_kb, entity_doc_vectors, entity_split_kb, raw_kb
from oprag_pipeline.ingest.assets import raw_documents
from oprag_pipeline.ingest.checks import rows_reconcile
from oprag_pipeline.ingest.sensors import domain_files_sensor, domain_refresh_job
from oprag_pipeline.registry.assets import entity_candidates, entity_registry, extraction_sample
from oprag_pipeline.report.assets import evaluation_report
from oprag_pipeline.resources import build_resources, warehouse_resource

ALL_ASSETS = [
    raw_documents,
    extraction_sample,
    entity_candidates,
    entity_registry,
    opinions,
    author_attributes,
    entity_opinion_stats,
    enriched_entity_docs,
    raw_kb,
    entity_doc_vectors,
    entity_split_kb,
    enriched_kb,
    evaluation_entities,
    evaluation_questions,
    retrieval_runs,
    gold_opinions,
    question_metrics,
    # The metric tables: SQL models in dbt_like_sql/, run by Dagster's templated-SQL component on the run's
    # `warehouse` resource; the component's own connection is only its fallback, and building it touches no file.
    *build_sql_assets(settings.sql_models_dir(), warehouse_resource()),
    metric_significance,
    # Beyond the study: fairness trade-off, opinion timelines, source concentration (analysis/).
    *ANALYSIS_ASSETS,
    generated_answers,
    generation_fidelity,
    answer_preference,
    evaluation_report,
]

# Checks defined apart from their assets read the warehouse, so the UI can execute one for a partition on its own.
ALL_CHECKS = [rows_reconcile]


def build_definitions() -> Definitions:
    """Built on demand so resources pick up the environment of the moment (the CLI's --data-dir, tests)."""
    return Definitions(
        assets=with_automation(standard_assets(ALL_ASSETS)),
        asset_checks=ALL_CHECKS,
        jobs=[domain_refresh_job],
        sensors=[domain_files_sensor, automation_sensor, nightly_reindex],
        resources=build_resources(),
        # In process by default; with OPRAG_EXECUTOR=multiprocess a process per step, the warehouse steps one at a
        # time (the DuckDB file admits a single writer) and the extraction shards side by side; with
        # OPRAG_EXECUTOR=celery a task per step on the Celery workers of OPRAG_CELERY_BROKER (celery_app.py).
        executor=concurrency.executor(
            config.value_or_default("OPRAG_EXECUTOR"),
            os.cpu_count() or 1,
            broker=config.value_or_default("OPRAG_CELERY_BROKER"),
        ),
    )


defs = build_definitions()
