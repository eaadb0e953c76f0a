"""The `raw_documents` asset: one domain's input files into the warehouse, nothing lost, changes counted."""

import time

from dagster import (
    AssetExecutionContext,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
)
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline import settings
from oprag_pipeline.asset_decorators import domain_asset
from oprag_pipeline.asset_metadata import table_metadata
from oprag_pipeline.ingest import input_files, readers, store
from oprag_pipeline.ingest.sensors import files_fingerprint
from oprag_pipeline.resources import DataDirResource, run_config_default


def _default_max_text_chars() -> int:
    """The environment's limit, or the built-in one when it is invalid: definitions must still load (for the UI);
    the CLI refuses the bad value before any run with a one-line message."""
    return run_config_default("OPRAG_MAX_TEXT_CHARS")


class RawDocumentsConfig(Config):
    max_text_chars: int = Field(
        default=_default_max_text_chars(),
        ge=1,
        description="Texts longer than this many characters are quarantined (reason text_too_long).",
    )


@domain_asset(
    group_name="ingest",
    kinds={"duckdb"},
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
    try:
        domain_dir = settings.domain_dir(domain, paths.root)
    except settings.ConfigError as error:
        raise Failure(description=str(error), allow_retries=False) from None
    if not domain_dir.is_dir():
        raise Failure(description=f"domain {domain!r}: input folder {domain_dir} does not exist", allow_retries=False)
    inputs, skipped = input_files.scan_input_files(domain_dir)
    for item in skipped:
        context.log.warning(f"{domain}/{item.file}: not read: {item.reason}")
    if not inputs:
        raise Failure(
            description=f"domain {domain!r} has no input files in {domain_dir} "
            f"({len(skipped)} other files, not read); inputs are {', '.join(input_files.SUPPORTED_SUFFIXES)}",
            metadata={"skipped_files": MetadataValue.json({s.file: s.reason for s in skipped})},
            allow_retries=False,
        )
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
        if result.accepted == 0:
            # Replacing a good ingest with nothing would empty every later stage; say why instead.
            conn.execute(f"DROP TABLE IF EXISTS {store.STAGING}")
            counts: dict[str, int] = {}
            for row in result.quarantined:
                counts[row.reason] = counts.get(row.reason, 0) + 1
            first = result.quarantined[0] if result.quarantined else None
            example = f"; first: {first.file} row {first.row_number}: {first.detail}" if first else ""
            raise Failure(
                description=f"domain {domain!r}: no document accepted from {result.rows_read:,} rows in "
                f"{len(result.files)} files (quarantined: {counts or 'none'}){example}; the previous ingest is kept",
                allow_retries=False,
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
            "skipped_files": MetadataValue.json({item.file: item.reason for item in result.skipped_files}),
            "docs_per_second": round(result.rows_read / elapsed, 1) if elapsed else 0.0,
            "table": "raw_documents",
            # what the domain sensor compares with, so a domain ingested by any run is not requested again
            "input_fingerprint": files_fingerprint(result.files),
            **table_facts,
        }
    )
