"""Warehouse side of enrichment: the extraction cache (the unit of resume) and the tables derived from it.

Every batch of extractions is committed before the next starts, keyed by (document, content hash, registry
version, extractor, extractor version). A run that dies loses at most the batch in flight; the next run asks
`pending_doc_ids` and continues from there. Derived tables (`opinions`, stats, per-entity documents) are
rebuilt from the cache in SQL, so they always reflect exactly the current documents.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import pyarrow as pa

from oprag_pipeline import warehouse
from oprag_pipeline.schema import DocumentInput, ExtractionOutcome

TABLES = ("extraction_cache", "extraction_cache_opinions")
"""The extraction cache's tables; `OPINION_TABLES` are rebuilt from it. Both are declared in
`oprag_pipeline/warehouse.py`."""
OPINION_TABLES = ("opinions", "opinion_review_queue")


@dataclass(frozen=True)
class CacheKey:
    registry_version: int
    extractor: str
    extractor_version: str


def ensure_tables(conn: duckdb.DuckDBPyConnection) -> None:
    warehouse.ensure_tables(conn, *TABLES)


def pending_doc_ids(conn: duckdb.DuckDBPyConnection, domain: str, key: CacheKey) -> list[str]:
    """Documents without a successful extraction under this key (new, changed, failed or never finished)."""
    rows = conn.execute(
        """
        SELECT d.doc_id FROM raw_documents d
        WHERE d.domain = $domain AND NOT EXISTS (
            SELECT 1 FROM extraction_cache c
            WHERE c.domain = d.domain AND c.doc_id = d.doc_id AND c.content_hash = d.content_hash
              AND c.registry_version = $rv AND c.extractor = $ex AND c.extractor_version = $ev AND c.status = 'ok')
        ORDER BY d.doc_id
        """,
        {"domain": domain, "rv": key.registry_version, "ex": key.extractor, "ev": key.extractor_version},
    ).fetchall()
    return [r[0] for r in rows]


def fetch_documents(conn: duckdb.DuckDBPyConnection, domain: str, doc_ids: Sequence[str]) -> list[DocumentInput]:
    """The documents to extract, as the extractors take them (columns named as `DocumentInput`'s fields)."""
    cursor = conn.execute(
        """SELECT doc_id, text, content_hash, title, entity_scope FROM raw_documents
           WHERE domain = ? AND doc_id IN (SELECT unnest(?)) ORDER BY doc_id""",
        [domain, list(doc_ids)],
    )
    return [DocumentInput(**r) for r in warehouse.records(cursor)]


def commit_batch(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    key: CacheKey,
    outcomes: Sequence[ExtractionOutcome],
    run_id: str | None,
) -> None:
    """Write one batch atomically; re-writing a document under the same key replaces, never duplicates."""
    commit_tables(conn, *batch_tables(domain, key, outcomes, run_id))


def batch_tables(
    domain: str, key: CacheKey, outcomes: Sequence[ExtractionOutcome], run_id: str | None
) -> tuple[pa.Table, pa.Table]:
    """One batch as the cache's two tables (header per document, detail per opinion), with the tables' columns: a
    shard writes them to Parquet where it cannot reach the warehouse, and `commit_tables` loads them either way."""
    now = datetime.now(UTC).replace(tzinfo=None)
    header = pa.table(
        {
            "domain": [domain] * len(outcomes),
            "doc_id": [o.doc_id for o in outcomes],
            "content_hash": [o.content_hash for o in outcomes],
            "registry_version": [key.registry_version] * len(outcomes),
            "extractor": [key.extractor] * len(outcomes),
            "extractor_version": [key.extractor_version] * len(outcomes),
            "status": ["failed" if o.failed else "ok" for o in outcomes],
            "failure_reason": [o.failure_reason for o in outcomes],
            "opinion_count": [0 if o.failed else len(o.opinions) for o in outcomes],
            "input_tokens": [o.input_tokens for o in outcomes],
            "output_tokens": [o.output_tokens for o in outcomes],
            "run_id": [run_id] * len(outcomes),
            "extracted_at": [now] * len(outcomes),
        }
    )
    rows = [(o, op) for o in outcomes if not o.failed for op in o.opinions]
    detail = pa.table(
        {
            "domain": [domain] * len(rows),
            "doc_id": [o.doc_id for o, _ in rows],
            "content_hash": [o.content_hash for o, _ in rows],
            "registry_version": [key.registry_version] * len(rows),
            "extractor": [key.extractor] * len(rows),
            "extractor_version": [key.extractor_version] * len(rows),
            "entity_id": [op.entity_id for _, op in rows],
            "entity_name": [op.entity_name for _, op in rows],
            "sentiment": [op.sentiment for _, op in rows],
            "intensity": [op.intensity for _, op in rows],
            "impact": [op.impact for _, op in rows],
            "emotions": pa.array([list(op.emotions) for _, op in rows], type=pa.list_(pa.string())),
            "evidence_type": [op.evidence_type for _, op in rows],
            "sentiment_intensity": [op.sentiment_intensity for _, op in rows],
            "confidence": [float(op.confidence) for _, op in rows],
            "evidence_text": [op.evidence_text for _, op in rows],
            "span_start": pa.array([op.span_start for _, op in rows], type=pa.int32()),
            "span_end": pa.array([op.span_end for _, op in rows], type=pa.int32()),
            "grounded": [bool(op.grounded) for _, op in rows],
            "proposed": [bool(op.proposed) for _, op in rows],
        }
    )
    return header, detail


def commit_tables(conn: duckdb.DuckDBPyConnection, header: pa.Table, detail: pa.Table) -> None:
    """Load a batch's tables (`batch_tables`) into the cache in one transaction, replacing the same keys."""
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.register("_batch_header", header)
        conn.register("_batch_detail", detail)
        for table in ("extraction_cache", "extraction_cache_opinions"):
            conn.execute(
                f"""DELETE FROM {table} t USING _batch_header b
                    WHERE t.domain = b.domain AND t.doc_id = b.doc_id AND t.content_hash = b.content_hash
                      AND t.registry_version = b.registry_version AND t.extractor = b.extractor
                      AND t.extractor_version = b.extractor_version"""
            )
        conn.execute("INSERT INTO extraction_cache BY NAME SELECT * FROM _batch_header")
        conn.execute("INSERT INTO extraction_cache_opinions BY NAME SELECT * FROM _batch_detail")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.unregister("_batch_header")
        conn.unregister("_batch_detail")


def entropy_bits(counts: Sequence[int]) -> float:
    """Shannon entropy in bits of a sentiment distribution: 0 when unanimous, log2(3) ≈ 1.585 when evenly split."""
    total = sum(counts)
    if total == 0:
        return 0.0
    return -sum((c / total) * math.log2(c / total) for c in counts if c)


def rebuild_opinions(conn: duckdb.DuckDBPyConnection, domain: str, key: CacheKey) -> dict[str, int]:
    """`opinions` from the cache for the current documents; ungrounded or proposed ones go to the review queue."""
    warehouse.ensure_tables(conn, *OPINION_TABLES)
    params = {"domain": domain, "rv": key.registry_version, "ex": key.extractor, "ev": key.extractor_version}
    source = """
        FROM raw_documents d
        JOIN extraction_cache_opinions o
          ON o.domain = d.domain AND o.doc_id = d.doc_id AND o.content_hash = d.content_hash
         AND o.registry_version = $rv AND o.extractor = $ex AND o.extractor_version = $ev
        LEFT JOIN entity_registry r ON r.domain = d.domain AND r.entity_id = o.entity_id
        WHERE d.domain = $domain
    """
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM opinions WHERE domain = ?", [domain])
        conn.execute("DELETE FROM opinion_review_queue WHERE domain = ?", [domain])
        conn.execute(
            f"""
            INSERT INTO opinions BY NAME
            SELECT d.domain, d.doc_id, o.entity_id, coalesce(r.name, o.entity_name) AS entity_name, r.tier1_name,
                   r.tier2_name, o.sentiment, o.intensity, o.impact, o.emotions, o.evidence_type,
                   o.sentiment_intensity, CASE o.impact WHEN 'high' THEN 30 WHEN 'medium' THEN 20 ELSE 10 END
                   AS impact_score, o.confidence, o.evidence_text, o.span_start, o.span_end, d.entity_scope,
                   d.created_at, o.extractor, o.extractor_version, o.registry_version
            {source} AND o.grounded AND NOT o.proposed AND o.entity_id IS NOT NULL AND r.status = 'active'
            """,
            params,
        )
        conn.execute(
            f"""
            INSERT INTO opinion_review_queue BY NAME
            SELECT d.domain, d.doc_id, o.entity_id, o.entity_name,
                   CASE WHEN NOT o.grounded THEN 'not_grounded_in_text'
                        WHEN o.proposed OR o.entity_id IS NULL THEN 'proposed_new_entity'
                        ELSE 'entity_not_active' END AS reason,
                   o.sentiment, o.evidence_text, o.extractor
            {source} AND NOT (o.grounded AND NOT o.proposed AND o.entity_id IS NOT NULL
                              AND coalesce(r.status, '') = 'active')
            """,
            params,
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    opinions = conn.execute("SELECT count(*) FROM opinions WHERE domain = ?", [domain]).fetchone()[0]
    queued = conn.execute("SELECT count(*) FROM opinion_review_queue WHERE domain = ?", [domain]).fetchone()[0]
    return {"opinions": int(opinions), "review_queue": int(queued)}
