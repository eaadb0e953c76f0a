"""Checks on `raw_documents` that read the warehouse, so the UI can execute one for a domain on its own."""

import warnings

from dagster import AssetCheckResult, AssetCheckSeverity, Failure, MetadataValue, PreviewWarning, asset_check
from dagster_duckdb import DuckDBResource

from oprag_pipeline.concurrency import WAREHOUSE_STEP
from oprag_pipeline.ingest import store
from oprag_pipeline.partitions import domain_partitions

NEEDS_PARTITION = (
    "rows_reconcile checks one domain and this run has no partition. Dagster's UI cannot yet run a partitioned check "
    "on its own: materialize raw_documents for the domain (the check runs with it), or launch the check with the "
    "domain as its partition from Python or GraphQL (as benchmarks/bench_dagster_ui.py does)."
)

# Partitioned checks (`partitions_def=` on `asset_check`) are a preview in the Dagster version we pin; they are what
# lets a check show and run against one domain's partition. The warning is silenced here only, for that one argument.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PreviewWarning)

    @asset_check(
        asset="raw_documents",
        name="rows_reconcile",
        partitions_def=domain_partitions,
        **WAREHOUSE_STEP,
        blocking=True,
        description="Per file: rows read = accepted + quarantined + exact duplicates.",
    )
    def rows_reconcile(context, warehouse: DuckDBResource) -> AssetCheckResult:
        """One domain per run. The checks tab's "Execute all" launches a run without a partition, for which
        Dagster (1.13) cannot record a partitioned check's result at all; such a run fails saying what works."""
        if not context.has_partition_key:
            raise Failure(description=NEEDS_PARTITION)
        domain = context.partition_key
        with warehouse.get_connection() as conn:
            store.ensure_tables(conn)
            balance = store.reconcile(conn, domain)
        unbalanced = [row for row in balance if not row["balanced"]]
        return AssetCheckResult(
            passed=bool(balance) and not unbalanced,
            severity=AssetCheckSeverity.ERROR,
            # a count that rarely changes: text, which the check page lists instead of plotting over time
            metadata={
                "files": MetadataValue.text(str(len(balance))),
                "unbalanced_files": MetadataValue.json(unbalanced),
            },
        )
