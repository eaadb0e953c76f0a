"""Warehouse tables of the ingest stage and the incremental diff against the previous ingest.

`raw_documents` has no PRIMARY KEY on purpose: DuckDB's index makes the per-domain replace (delete, re-insert)
several times slower, and uniqueness of (domain, doc_id) is already guaranteed by the reader, which collapses
or quarantines repeated ids, and checked by the `rows_reconcile` asset check.

Later stages ask `changed_doc_ids()` what to redo instead of re-deriving it; the diff is computed once here,
in SQL, where both versions of the domain are side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import pyarrow as pa

from oprag_pipeline.ingest.readers import ACCEPTED_SCHEMA, DomainReadResult, QuarantinedRow

DDL = """
CREATE TABLE IF NOT EXISTS raw_documents (
    domain VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    text VARCHAR NOT NULL,
    title VARCHAR,
    entity_scope VARCHAR,
    author_id VARCHAR,
    created_at TIMESTAMP,
    rating DOUBLE,
    author_attributes JSON,
    extra JSON,
    content_hash VARCHAR NOT NULL,
    source_file VARCHAR NOT NULL,
    source_row BIGINT NOT NULL,
    first_ingest_id INTEGER NOT NULL,
    changed_ingest_id INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS quarantined_rows (
    domain VARCHAR NOT NULL,
    ingest_id INTEGER NOT NULL,
    file VARCHAR NOT NULL,
    row_number BIGINT NOT NULL,
    reason VARCHAR NOT NULL,
    detail VARCHAR,
    raw_content VARCHAR
);
CREATE TABLE IF NOT EXISTS ingest_files (
    domain VARCHAR NOT NULL,
    ingest_id INTEGER NOT NULL,
    file VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL,
    sha256 VARCHAR NOT NULL,
    rows_read BIGINT NOT NULL,
    accepted BIGINT NOT NULL,
    quarantined BIGINT NOT NULL,
    duplicates BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS ingest_runs (
    domain VARCHAR NOT NULL,
    ingest_id INTEGER NOT NULL,
    run_id VARCHAR,
    finished_at TIMESTAMP NOT NULL,
    files INTEGER NOT NULL,
    rows_read BIGINT NOT NULL,
    accepted BIGINT NOT NULL,
    quarantined BIGINT NOT NULL,
    duplicates BIGINT NOT NULL,
    new_docs BIGINT NOT NULL,
    changed_docs BIGINT NOT NULL,
    unchanged_docs BIGINT NOT NULL,
    removed_docs BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS document_changes (
    domain VARCHAR NOT NULL,
    ingest_id INTEGER NOT NULL,
    doc_id VARCHAR NOT NULL,
    change VARCHAR NOT NULL,
    content_hash VARCHAR
);
"""

STAGING = "_staging_raw_documents"


@dataclass(frozen=True)
class IngestSummary:
    ingest_id: int
    new: int
    changed: int
    unchanged: int
    removed: int


def ensure_tables(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute(DDL)


def start_staging(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {STAGING}")
    conn.register("_empty_batch", pa.table({n: [] for n in ACCEPTED_SCHEMA.names}, schema=ACCEPTED_SCHEMA))
    conn.execute(f"CREATE TEMP TABLE {STAGING} AS SELECT * FROM _empty_batch")
    conn.unregister("_empty_batch")


def stage_batch(conn: duckdb.DuckDBPyConnection, batch: pa.Table) -> None:
    conn.register("_batch", batch)
    conn.execute(f"INSERT INTO {STAGING} SELECT * FROM _batch")
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
            INSERT INTO raw_documents
            SELECT $domain, s.doc_id, s.text, s.title, s.entity_scope, s.author_id, s.created_at, s.rating,
                   s.author_attributes, s.extra, s.content_hash, s.source_file, s.source_row,
                   coalesce(d.first_ingest_id, $ingest_id),
                   CASE WHEN d.change = 'unchanged' THEN d.changed_ingest_id ELSE $ingest_id END
            FROM {STAGING} s JOIN _diff d USING (doc_id)
            """,
            {"domain": domain, "ingest_id": ingest_id},
        )
        conn.execute(
            """
            INSERT INTO document_changes
            SELECT $domain, $ingest_id, doc_id, change, content_hash FROM _diff WHERE change <> 'unchanged'
            """,
            {"domain": domain, "ingest_id": ingest_id},
        )
        conn.execute("DELETE FROM quarantined_rows WHERE domain = ?", [domain])
        _insert_quarantine(conn, domain, ingest_id, result.quarantined)
        conn.execute("DELETE FROM ingest_files WHERE domain = ?", [domain])
        if result.files:
            conn.executemany(
                "INSERT INTO ingest_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        domain,
                        ingest_id,
                        f.file,
                        f.size_bytes,
                        f.sha256,
                        f.rows_read,
                        f.accepted,
                        f.quarantined,
                        f.duplicates,
                    ]
                    for f in result.files
                ],
            )
        summary = IngestSummary(
            ingest_id=ingest_id,
            new=int(counts.get("new", 0)),
            changed=int(counts.get("changed", 0)),
            unchanged=int(counts.get("unchanged", 0)),
            removed=int(counts.get("removed", 0)),
        )
        conn.execute(
            "INSERT INTO ingest_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                domain,
                ingest_id,
                run_id,
                datetime.now(UTC).replace(tzinfo=None),
                len(result.files),
                result.rows_read,
                result.accepted,
                len(result.quarantined),
                result.duplicates,
                summary.new,
                summary.changed,
                summary.unchanged,
                summary.removed,
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
    if not rows:
        return
    table = pa.table(
        {
            "domain": [domain] * len(rows),
            "ingest_id": [ingest_id] * len(rows),
            "file": [r.file for r in rows],
            "row_number": [r.row_number for r in rows],
            "reason": [r.reason for r in rows],
            "detail": [r.detail for r in rows],
            "raw_content": [r.raw for r in rows],
        }
    )
    conn.register("_quarantine", table)
    conn.execute("INSERT INTO quarantined_rows SELECT * FROM _quarantine")
    conn.unregister("_quarantine")


def changed_doc_ids(conn: duckdb.DuckDBPyConnection, domain: str, since_ingest_id: int = 0) -> dict[str, list[str]]:
    """Documents new, changed or removed after `since_ingest_id` (0: since the beginning), for later stages."""
    rows = conn.execute(
        """
        SELECT change, list(DISTINCT doc_id ORDER BY doc_id) FROM (
            SELECT doc_id, arg_max(change, ingest_id) AS change
            FROM document_changes WHERE domain = ? AND ingest_id > ? GROUP BY doc_id)
        GROUP BY change
        """,
        [domain, since_ingest_id],
    ).fetchall()
    return {change: list(ids) for change, ids in rows}


def reconcile(conn: duckdb.DuckDBPyConnection, domain: str) -> list[dict[str, object]]:
    """Per file: rows read against what the tables hold. Any row of the result with `balanced` false is a loss."""
    rows = conn.execute(
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
    ).fetchall()
    keys = ("file", "rows_read", "accepted", "quarantined", "duplicates", "balanced")
    return [dict(zip(keys, row, strict=True)) for row in rows]
