"""Checks on `raw_documents` that read the warehouse, so the UI can execute one for a domain on its own."""

import warnings

from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue, PreviewWarning, asset_check
from dagster_duckdb import DuckDBResource

from oprag_pipeline.ingest import store
from oprag_pipeline.partitions import domain_partitions

# Partitioned checks (`partitions_def=` on `asset_check`) are a preview in the Dagster version we pin; they are what
# lets a check show and run against one domain's partition. The warning is silenced here only, for that one argument.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PreviewWarning)

    @asset_check(
        asset="raw_documents",
        name="rows_reconcile",
        partitions_def=domain_partitions,
        pool="warehouse",
        blocking=True,
        description="Per file: rows read = accepted + quarantined + exact duplicates.",
    )
    def rows_reconcile(context, warehouse: DuckDBResource) -> AssetCheckResult:
        domain = context.partition_key
        with warehouse.get_connection() as conn:
            store.ensure_tables(conn)
            balance = store.reconcile(conn, domain)
        unbalanced = [row for row in balance if not row["balanced"]]
        return AssetCheckResult(
            passed=bool(balance) and not unbalanced,
            severity=AssetCheckSeverity.ERROR,
            metadata={"files": len(balance), "unbalanced_files": MetadataValue.json(unbalanced)},
        )
