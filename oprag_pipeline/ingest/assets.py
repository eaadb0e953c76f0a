"""The `raw_documents` asset: one domain's input files into the warehouse, nothing lost, changes counted."""

import time

from dagster import (
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline import settings
from oprag_pipeline.asset_metadata import table_metadata
from oprag_pipeline.ingest import readers, store
from oprag_pipeline.ingest.sensors import files_fingerprint
from oprag_pipeline.partitions import domain_partitions
from oprag_pipeline.resources import DataDirResource


class RawDocumentsConfig(Config):
    max_text_chars: int = Field(
        default=settings.max_text_chars(),
        description="Texts longer than this many characters are quarantined (reason text_too_long).",
    )


@asset(
    partitions_def=domain_partitions,
    group_name="ingest",
    kinds={"duckdb"},
    pool="warehouse",
    description=(
        "Input documents of one domain (data/raw/<domain>/: JSONL, CSV, Parquet, gzip), normalised to the "
        "input contract with a content hash. Bad rows go to `quarantined_rows`; what changed since the "
        "previous ingest goes to `document_changes`."
    ),
)
def raw_documents(
    context: AssetExecutionContext,
    config: RawDocumentsConfig,
    paths: DataDirResource,
    warehouse: DuckDBResource,
):
    domain = context.partition_key
    domain_dir = paths.domain_dir(domain)
    if not domain_dir.is_dir():
        raise FileNotFoundError(f"domain {domain!r}: input folder {domain_dir} does not exist")
    started = time.perf_counter()
    with warehouse.get_connection() as conn:
        store.ensure_tables(conn)
        store.start_staging(conn)

        def on_file(stats: readers.FileStats) -> None:
            context.log.info(
                f"{domain}/{stats.file}: {stats.rows_read:,} rows read, {stats.accepted:,} accepted, "
                f"{stats.quarantined:,} quarantined, {stats.duplicates:,} exact duplicates"
            )

        result = readers.read_domain(
            domain_dir,
            max_text_chars=config.max_text_chars,
            on_batch=lambda batch: store.stage_batch(conn, batch),
            on_file=on_file,
        )
        summary = store.commit_domain(conn, domain, result, run_id=context.run_id)
        table_facts = table_metadata(conn, "raw_documents", domain)
        reasons = dict(
            conn.execute(
                "SELECT reason, count(*) FROM quarantined_rows WHERE domain = ? GROUP BY reason ORDER BY reason",
                [domain],
            ).fetchall()
        )
    elapsed = time.perf_counter() - started
    for row in result.quarantined[:20]:
        context.log.warning(f"quarantined {domain}/{row.file} row {row.row_number}: {row.reason}: {row.detail}")
    if len(result.quarantined) > 20:
        context.log.warning(f"... and {len(result.quarantined) - 20:,} more rows in quarantined_rows")
    yield MaterializeResult(
        metadata={
            "ingest_id": summary.ingest_id,
            "files": len(result.files),
            "rows_read": result.rows_read,
            "documents": result.accepted,
            "quarantined": len(result.quarantined),
            "exact_duplicates": result.duplicates,
            "new": summary.new,
            "changed": summary.changed,
            "unchanged": summary.unchanged,
            "removed": summary.removed,
            "quarantine_reasons": MetadataValue.json(reasons),
            "docs_per_second": round(result.rows_read / elapsed, 1) if elapsed else 0.0,
            "table": "raw_documents",
            # what the domain sensor compares with, so a domain ingested by any run is not requested again
            "input_fingerprint": files_fingerprint(result.files),
            **table_facts,
        }
    )
