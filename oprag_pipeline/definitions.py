"""Assembles the pipeline for Dagster; nothing is defined here."""

from dagster import Definitions, in_process_executor

from oprag_pipeline.enrich.assets import author_attributes, enriched_entity_docs, entity_opinion_stats, opinions
from oprag_pipeline.index.assets import enriched_kb, entity_split_kb, raw_kb
from oprag_pipeline.ingest.assets import raw_documents
from oprag_pipeline.ingest.sensors import domain_files_sensor, domain_refresh_job, nightly_reindex_schedule
from oprag_pipeline.registry.assets import entity_candidates, entity_registry, extraction_sample
from oprag_pipeline.resources import build_resources

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
    entity_split_kb,
    enriched_kb,
]


def build_definitions() -> Definitions:
    """Built on demand so resources pick up the environment of the moment (the CLI's --data-dir, tests)."""
    return Definitions(
        assets=ALL_ASSETS,
        jobs=[domain_refresh_job],
        sensors=[domain_files_sensor],
        schedules=[nightly_reindex_schedule],
        resources=build_resources(),
        # One process per run: the DuckDB file and the on-disk vector shards admit a single writer.
        executor=in_process_executor,
    )


defs = build_definitions()
