"""Warehouse tables of the ingest stage and the incremental diff against the previous ingest.

The tables are declared in `oprag_pipeline/warehouse.py`. `raw_documents` has no PRIMARY KEY on purpose: DuckDB's
index makes the per-domain replace (delete, re-insert) several times slower, and uniqueness of (domain, doc_id) is
already guaranteed by the reader, which collapses or quarantines repeated ids, and checked by the `rows_reconcile`
asset check.

The diff against the previous ingest is computed once here, in SQL, where both versions of the domain are side by
side, and recorded in `document_changes` (one row per new, changed or removed document and ingest).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import pyarrow as pa

from oprag_pipeline import warehouse
from oprag_pipeline.ingest.contract import ACCEPTED_SCHEMA, QuarantinedRow
from oprag_pipeline.ingest.readers import DomainReadResult

TABLES = ("raw_documents", "quarantined_rows", "ingest_files", "ingest_runs", "document_changes")
"""The ingest stage's tables, declared in `oprag_pipeline/warehouse.py`."""

STAGING = "_staging_raw_documents"


@dataclass(frozen=True)
class IngestSummary:
    ingest_id: int
    new: int
    changed: int
    unchanged: int
    removed: int


def ensure_tables(conn: duckdb.DuckDBPyConnection) -> None:
    warehouse.ensure_tables(conn, *TABLES)


def start_staging(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {STAGING}")
    conn.register("_empty_batch", pa.table({n: [] for n in ACCEPTED_SCHEMA.names}, schema=ACCEPTED_SCHEMA))
    conn.execute(f"CREATE TEMP TABLE {STAGING} AS SELECT * FROM _empty_batch")
    conn.unregister("_empty_batch")


def stage_batch(conn: duckdb.DuckDBPyConnection, batch: pa.Table) -> None:
    conn.register("_batch", batch)
    conn.execute(f"INSERT INTO {STAGING} BY NAME SELECT * FROM _batch")
    conn.unregister("_batch")


def next_ingest_id(conn: duckdb.DuckDBPyConnection, domain: str) -> int:
    row = conn.execute("SELECT coalesce(max(ingest_id), 0) + 1 FROM ingest_runs WHERE domain = ?", [domain]).fetchone()
    return int(row[0]) if row else 1


def commit_domain(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    result: DomainReadResult,
    *,
    run_id: str | None,
) -> IngestSummary:
    """Replace the domain's rows with the staged ones in one transaction and record what changed."""
    ingest_id = next_ingest_id(conn, domain)
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE _diff AS
            SELECT coalesce(s.doc_id, o.doc_id) AS doc_id,
                   CASE WHEN o.doc_id IS NULL THEN 'new'
                        WHEN s.doc_id IS NULL THEN 'removed'
                        WHEN o.content_hash <> s.content_hash THEN 'changed'
                        ELSE 'unchanged' END AS change,
                   coalesce(s.content_hash, o.content_hash) AS content_hash,
                   o.first_ingest_id, o.changed_ingest_id
            FROM {STAGING} s
            FULL OUTER JOIN (SELECT doc_id, content_hash, first_ingest_id, changed_ingest_id
                             FROM raw_documents WHERE domain = $domain) o
              ON s.doc_id = o.doc_id
            """,
            {"domain": domain},
        )
        counts = dict(conn.execute("SELECT change, count(*) FROM _diff GROUP BY change").fetchall())
        conn.execute("DELETE FROM raw_documents WHERE domain = ?", [domain])
        conn.execute(
            f"""
            INSERT INTO raw_documents BY NAME
            SELECT $domain AS domain, s.doc_id, s.text, s.title, s.entity_scope, s.author_id, s.created_at, s.rating,
                   s.author_attributes, s.extra, s.content_hash, s.source_file, s.source_row,
                   coalesce(d.first_ingest_id, $ingest_id) AS first_ingest_id,
                   CASE WHEN d.change = 'unchanged' THEN d.changed_ingest_id ELSE $ingest_id END AS changed_ingest_id
            FROM {STAGING} s JOIN _diff d USING (doc_id)
            """,
            {"domain": domain, "ingest_id": ingest_id},
        )
        conn.execute(
            """
            INSERT INTO document_changes BY NAME
            SELECT $domain AS domain, $ingest_id AS ingest_id, doc_id, change, content_hash
            FROM _diff WHERE change <> 'unchanged'
            """,
            {"domain": domain, "ingest_id": ingest_id},
        )
        conn.execute("DELETE FROM quarantined_rows WHERE domain = ?", [domain])
        _insert_quarantine(conn, domain, ingest_id, result.quarantined)
        conn.execute("DELETE FROM ingest_files WHERE domain = ?", [domain])
        warehouse.insert_rows(
            conn,
            "ingest_files",
            [
                {
                    "file": f.file,
                    "size_bytes": f.size_bytes,
                    "sha256": f.sha256,
                    "rows_read": f.rows_read,
                    "accepted": f.accepted,
                    "quarantined": f.quarantined,
                    "duplicates": f.duplicates,
                }
                for f in result.files
            ],
            domain=domain,
            ingest_id=ingest_id,
        )
        summary = IngestSummary(
            ingest_id=ingest_id,
            new=int(counts.get("new", 0)),
            changed=int(counts.get("changed", 0)),
            unchanged=int(counts.get("unchanged", 0)),
            removed=int(counts.get("removed", 0)),
        )
        warehouse.insert_rows(
            conn,
            "ingest_runs",
            [
                {
                    "domain": domain,
                    "ingest_id": ingest_id,
                    "run_id": run_id,
                    "finished_at": datetime.now(UTC).replace(tzinfo=None),
                    "files": len(result.files),
                    "rows_read": result.rows_read,
                    "accepted": result.accepted,
                    "quarantined": len(result.quarantined),
                    "duplicates": result.duplicates,
                    "new_docs": summary.new,
                    "changed_docs": summary.changed,
                    "unchanged_docs": summary.unchanged,
                    "removed_docs": summary.removed,
                }
            ],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {STAGING}")
        conn.execute("DROP TABLE IF EXISTS _diff")
    return summary


def _insert_quarantine(
    conn: duckdb.DuckDBPyConnection, domain: str, ingest_id: int, rows: list[QuarantinedRow]
) -> None:
    warehouse.insert_rows(
        conn,
        "quarantined_rows",
        [
            {"file": r.file, "row_number": r.row_number, "reason": r.reason, "detail": r.detail, "raw_content": r.raw}
            for r in rows
        ],
        domain=domain,
        ingest_id=ingest_id,
    )


def reconcile(conn: duckdb.DuckDBPyConnection, domain: str) -> list[dict[str, object]]:
    """Per file: rows read against what the tables hold. Any row of the result with `balanced` false is a loss."""
    cursor = conn.execute(
        """
        SELECT f.file, f.rows_read,
               coalesce(a.n, 0) AS accepted, coalesce(q.n, 0) AS quarantined, f.duplicates,
               f.rows_read = coalesce(a.n, 0) + coalesce(q.n, 0) + f.duplicates AS balanced
        FROM ingest_files f
        LEFT JOIN (SELECT source_file, count(*) n FROM raw_documents WHERE domain = $d GROUP BY 1) a
               ON a.source_file = f.file
        LEFT JOIN (SELECT file, count(*) n FROM quarantined_rows WHERE domain = $d GROUP BY 1) q ON q.file = f.file
        WHERE f.domain = $d ORDER BY f.file
        """,
        {"d": domain},
    )
    return warehouse.records(cursor)
