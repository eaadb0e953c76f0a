"""The warehouse's tables in one place: every table's columns, the one way to create or migrate them, and the one
way to write rows into them by column name.

Table names, column names, types and order are contracts other tools read (see the README), so they are declared
here once and nowhere else; stage modules ask `ensure_tables(conn, "opinions", ...)` for the tables they touch.
Rows go in through `insert_rows` / `replace_rows`, which register a DataFrame or an Arrow table (or a list of dicts
or dataclasses, turned into one) and run `INSERT INTO t BY NAME SELECT * FROM it`: a column is matched by its name,
never by its position, so neither the order of a dataclass's fields nor that of the table's columns can shift a
value into the wrong column, and a misspelt or unknown column is an error naming it.

This module imports no stage module (stages import it), and loads no library beyond DuckDB and pyarrow.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import duckdb
import pyarrow as pa

TABLES: dict[str, str] = {
    # ingest (ingest/store.py)
    "raw_documents": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, text VARCHAR NOT NULL, title VARCHAR, entity_scope VARCHAR,
        author_id VARCHAR, created_at TIMESTAMP, rating DOUBLE, author_attributes JSON, extra JSON,
        content_hash VARCHAR NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
        first_ingest_id INTEGER NOT NULL, changed_ingest_id INTEGER NOT NULL
    """,
    "quarantined_rows": """
        domain VARCHAR NOT NULL, ingest_id INTEGER NOT NULL, file VARCHAR NOT NULL, row_number BIGINT NOT NULL,
        reason VARCHAR NOT NULL, detail VARCHAR, raw_content VARCHAR
    """,
    "ingest_files": """
        domain VARCHAR NOT NULL, ingest_id INTEGER NOT NULL, file VARCHAR NOT NULL, size_bytes BIGINT NOT NULL,
        sha256 VARCHAR NOT NULL, rows_read BIGINT NOT NULL, accepted BIGINT NOT NULL, quarantined BIGINT NOT NULL,
        duplicates BIGINT NOT NULL
    """,
    "ingest_runs": """
        domain VARCHAR NOT NULL, ingest_id INTEGER NOT NULL, run_id VARCHAR, finished_at TIMESTAMP NOT NULL,
        files INTEGER NOT NULL, rows_read BIGINT NOT NULL, accepted BIGINT NOT NULL, quarantined BIGINT NOT NULL,
        duplicates BIGINT NOT NULL, new_docs BIGINT NOT NULL, changed_docs BIGINT NOT NULL,
        unchanged_docs BIGINT NOT NULL, removed_docs BIGINT NOT NULL
    """,
    "document_changes": """
        domain VARCHAR NOT NULL, ingest_id INTEGER NOT NULL, doc_id VARCHAR NOT NULL, change VARCHAR NOT NULL,
        content_hash VARCHAR
    """,
    # registry (registry/store.py, registry/assets.py)
    "extraction_sample": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, stratum VARCHAR NOT NULL, sample_rank INTEGER NOT NULL
    """,
    "entity_candidates": """
        domain VARCHAR NOT NULL, candidate_key VARCHAR NOT NULL, name VARCHAR NOT NULL, aliases JSON NOT NULL,
        doc_frequency INTEGER NOT NULL
    """,
    "entity_registry": """
        domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, name VARCHAR NOT NULL, tier1_id VARCHAR NOT NULL,
        tier1_name VARCHAR NOT NULL, tier2_id VARCHAR NOT NULL, tier2_name VARCHAR NOT NULL,
        aliases VARCHAR[] NOT NULL, alias_counts JSON NOT NULL, centroid FLOAT[] NOT NULL, status VARCHAR NOT NULL,
        merged_into VARCHAR, registry_version INTEGER NOT NULL
    """,
    "entity_registry_unmapped": """
        domain VARCHAR NOT NULL, candidate_key VARCHAR NOT NULL, doc_frequency INTEGER NOT NULL
    """,
    "entity_registry_versions": """
        domain VARCHAR NOT NULL, registry_version INTEGER NOT NULL, created_at TIMESTAMP NOT NULL,
        entities_created INTEGER NOT NULL, candidates_mapped INTEGER NOT NULL, unmapped_pool INTEGER NOT NULL,
        overrides_hash VARCHAR
    """,
    # enrich (enrich/store.py, enrich/assets.py, enrich/authors.py, enrich/ratings.py)
    "extraction_cache": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, content_hash VARCHAR NOT NULL,
        registry_version INTEGER NOT NULL, extractor VARCHAR NOT NULL, extractor_version VARCHAR NOT NULL,
        status VARCHAR NOT NULL, failure_reason VARCHAR, opinion_count INTEGER NOT NULL, input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL, run_id VARCHAR, extracted_at TIMESTAMP NOT NULL
    """,
    "extraction_cache_opinions": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, content_hash VARCHAR NOT NULL,
        registry_version INTEGER NOT NULL, extractor VARCHAR NOT NULL, extractor_version VARCHAR NOT NULL,
        entity_id VARCHAR, entity_name VARCHAR NOT NULL, sentiment VARCHAR NOT NULL, intensity VARCHAR NOT NULL,
        impact VARCHAR NOT NULL, emotions VARCHAR[] NOT NULL, evidence_type VARCHAR NOT NULL,
        sentiment_intensity INTEGER NOT NULL, confidence DOUBLE NOT NULL, evidence_text VARCHAR, span_start INTEGER,
        span_end INTEGER, grounded BOOLEAN NOT NULL, proposed BOOLEAN NOT NULL
    """,
    "opinions": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, entity_name VARCHAR NOT NULL,
        tier1_name VARCHAR, tier2_name VARCHAR, sentiment VARCHAR NOT NULL, intensity VARCHAR NOT NULL,
        impact VARCHAR NOT NULL, emotions VARCHAR[] NOT NULL, evidence_type VARCHAR NOT NULL,
        sentiment_intensity INTEGER NOT NULL, impact_score INTEGER NOT NULL, confidence DOUBLE NOT NULL,
        evidence_text VARCHAR, span_start INTEGER, span_end INTEGER, entity_scope VARCHAR, created_at TIMESTAMP,
        extractor VARCHAR NOT NULL, extractor_version VARCHAR NOT NULL, registry_version INTEGER NOT NULL
    """,
    "opinion_review_queue": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, entity_id VARCHAR, entity_name VARCHAR NOT NULL,
        reason VARCHAR NOT NULL, sentiment VARCHAR, evidence_text VARCHAR, extractor VARCHAR NOT NULL
    """,
    "author_attributes": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, attribute VARCHAR NOT NULL, value VARCHAR NOT NULL,
        source VARCHAR NOT NULL
    """,
    "entity_opinion_stats": """
        domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, entity_name VARCHAR NOT NULL, tier1_name VARCHAR,
        tier2_name VARCHAR, mentions INTEGER NOT NULL, positive INTEGER NOT NULL, neutral INTEGER NOT NULL,
        negative INTEGER NOT NULL, entropy_bits DOUBLE NOT NULL, mean_sentiment_intensity DOUBLE,
        std_sentiment_intensity DOUBLE
    """,
    "enriched_entity_docs": """
        domain VARCHAR NOT NULL, point_key VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL,
        entity_name VARCHAR NOT NULL, tier1_name VARCHAR, tier2_name VARCHAR, sentiment VARCHAR NOT NULL,
        intensity VARCHAR NOT NULL, impact VARCHAR NOT NULL, emotions VARCHAR[] NOT NULL,
        evidence_type VARCHAR NOT NULL, sentiment_intensity INTEGER NOT NULL, author_attributes JSON,
        entity_scope VARCHAR, created_at TIMESTAMP, relevant_text VARCHAR NOT NULL, text VARCHAR NOT NULL
    """,
    "entity_split_docs": """
        domain VARCHAR NOT NULL, point_key VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL,
        entity_scope VARCHAR, created_at TIMESTAMP, text VARCHAR NOT NULL
    """,
    "extractor_adaptations": """
        domain VARCHAR NOT NULL, registry_version INTEGER NOT NULL, extractor VARCHAR NOT NULL,
        base_version VARCHAR NOT NULL, adapted_version VARCHAR NOT NULL, method VARCHAR NOT NULL,
        offsets JSON, sample_size INTEGER NOT NULL, label_counts JSON NOT NULL, source_counts JSON NOT NULL,
        run_id VARCHAR, fitted_at TIMESTAMP NOT NULL, residual_head JSON, intensity_source VARCHAR,
        intensity_calibration JSON, intensity_opinions INTEGER
    """,
    # index (index/assets.py)
    "raw_chunks": """
        domain VARCHAR NOT NULL, point_key VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, chunk_index INTEGER NOT NULL,
        char_start INTEGER NOT NULL, char_end INTEGER NOT NULL, entity_scope VARCHAR, text VARCHAR NOT NULL
    """,
    # evaluate (evaluate/assets.py)
    "evaluation_entities": """
        domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, entity_name VARCHAR NOT NULL, tier1_name VARCHAR,
        tier2_name VARCHAR, aliases VARCHAR[] NOT NULL, mentions INTEGER NOT NULL, entropy_bits DOUBLE NOT NULL,
        comparison_id VARCHAR, comparison_name VARCHAR
    """,
    "evaluation_questions": """
        domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL,
        question_type VARCHAR NOT NULL, variant INTEGER NOT NULL, template_id VARCHAR NOT NULL,
        entity_phrase VARCHAR NOT NULL, text VARCHAR NOT NULL, generator VARCHAR NOT NULL
    """,
    "retrieval_runs": """
        domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, kb VARCHAR NOT NULL, mode VARCHAR NOT NULL,
        k INTEGER NOT NULL, rank INTEGER NOT NULL, score DOUBLE NOT NULL, point_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL, hit_entity_id VARCHAR, char_start INTEGER, char_end INTEGER
    """,
    "gold_opinions": """
        domain VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, sentiment VARCHAR NOT NULL,
        sentiment_intensity INTEGER NOT NULL, span_start INTEGER, span_end INTEGER, source VARCHAR NOT NULL
    """,
    "question_metrics": """
        domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, kb VARCHAR NOT NULL, mode VARCHAR NOT NULL,
        k INTEGER NOT NULL, metric VARCHAR NOT NULL, value DOUBLE NOT NULL
    """,
    "metric_significance": """
        domain VARCHAR NOT NULL, mode VARCHAR NOT NULL, baseline_mode VARCHAR NOT NULL, k INTEGER NOT NULL,
        metric VARCHAR NOT NULL, treatment VARCHAR NOT NULL, baseline VARCHAR NOT NULL, family VARCHAR NOT NULL,
        n_entities INTEGER NOT NULL, n_questions INTEGER NOT NULL, treatment_mean DOUBLE, baseline_mean DOUBLE,
        relative_change DOUBLE, relative_change_label VARCHAR NOT NULL, mean_difference DOUBLE, ci_low DOUBLE,
        ci_high DOUBLE, wilcoxon_statistic DOUBLE, p_value DOUBLE, p_holm DOUBLE
    """,
    # generate (generate/assets.py)
    "generated_answers": """
        domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, variant VARCHAR NOT NULL,
        kb VARCHAR NOT NULL, mode VARCHAR NOT NULL, k INTEGER NOT NULL, writer VARCHAR NOT NULL,
        answer_text VARCHAR NOT NULL, answer_json JSON NOT NULL, flags VARCHAR[] NOT NULL,
        input_tokens BIGINT NOT NULL, output_tokens BIGINT NOT NULL, cost_usd DOUBLE
    """,
    "generation_metrics": """
        domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, variant VARCHAR NOT NULL, metric VARCHAR NOT NULL,
        value DOUBLE NOT NULL
    """,
    "generation_significance": """
        domain VARCHAR NOT NULL, metric VARCHAR NOT NULL, treatment VARCHAR NOT NULL, baseline VARCHAR NOT NULL,
        n_questions INTEGER NOT NULL, treatment_mean DOUBLE, baseline_mean DOUBLE, relative_change DOUBLE,
        relative_change_label VARCHAR NOT NULL, mean_difference DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
        wilcoxon_statistic DOUBLE, p_value DOUBLE, n_entities INTEGER
    """,
    "answer_preferences": """
        domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, judge VARCHAR NOT NULL,
        treatment_position VARCHAR NOT NULL, verdict VARCHAR NOT NULL, treatment_preferred DOUBLE NOT NULL,
        reason VARCHAR NOT NULL
    """,
    # analysis (analysis/assets.py, analysis/section_store.py)
    "opinion_windows": """
        domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, entity_name VARCHAR NOT NULL, window_start DATE NOT NULL,
        window_end DATE NOT NULL, n INTEGER NOT NULL, positive DOUBLE NOT NULL, neutral DOUBLE NOT NULL,
        negative DOUBLE NOT NULL, mean_sigma DOUBLE, w1_previous DOUBLE, p_adjusted DOUBLE,
        shift_flagged BOOLEAN NOT NULL
    """,
    "opinion_shifts": """
        domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, kind VARCHAR NOT NULL, shift_start DATE NOT NULL,
        shift_end DATE, w1 DOUBLE NOT NULL, mean_before DOUBLE NOT NULL, mean_after DOUBLE NOT NULL
    """,
    "source_concentration": """
        domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, entity_name VARCHAR NOT NULL,
        n_opinions INTEGER NOT NULL, n_authors INTEGER NOT NULL, top_author_share DOUBLE NOT NULL,
        effective_authors DOUBLE NOT NULL, duplicate_clusters INTEGER NOT NULL, duplicated_opinions INTEGER NOT NULL,
        votes DOUBLE NOT NULL, mean_sigma DOUBLE NOT NULL, mean_sigma_bounded DOUBLE NOT NULL,
        w1_bounded_vs_unweighted DOUBLE NOT NULL
    """,
    "source_weighted_pop": """
        domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, sentiment_intensity INTEGER NOT NULL,
        unweighted_share DOUBLE NOT NULL, bounded_share DOUBLE NOT NULL, bounded_count INTEGER NOT NULL
    """,
    "fairness_tradeoff": """
        domain VARCHAR NOT NULL, variant VARCHAR NOT NULL, group_share DOUBLE, k INTEGER NOT NULL, w1 DOUBLE NOT NULL,
        coverage_matched DOUBLE NOT NULL, questions INTEGER NOT NULL, gold BOOLEAN NOT NULL
    """,
    "analysis_sections": """
        domain VARCHAR NOT NULL, section VARCHAR NOT NULL, markdown VARCHAR NOT NULL
    """,
}
"""Every table's column definitions, in their contractual order, grouped by the stage that writes them.

`raw_documents` has no PRIMARY KEY on purpose: DuckDB's index makes the per-domain replace (delete, re-insert)
several times slower; uniqueness of (domain, doc_id) is guaranteed by the reader and checked by an asset check."""

REBUILT_ON_CHANGE = frozenset(
    {
        "evaluation_entities",
        "evaluation_questions",
        "retrieval_runs",
        "gold_opinions",
        "question_metrics",
        "metric_significance",
    }
)
"""Tables that are wholly derived and rewritten per domain by every run of their asset, so any change of their
columns drops and recreates them (as the evaluation stage always did) rather than migrating or stopping the run."""


class SchemaMismatch(RuntimeError):
    """A stored table differs from its declaration in a way `ensure_tables` will not repair on its own."""


def ddl(table: str) -> str:
    """The `CREATE TABLE IF NOT EXISTS` statement of a declared table."""
    return f"CREATE TABLE IF NOT EXISTS {table} ({' '.join(_columns_text(table).split())})"


def _columns_text(table: str) -> str:
    try:
        return TABLES[table]
    except KeyError:
        raise KeyError(f"table {table!r} is not declared in oprag_pipeline/warehouse.py") from None


@cache
def declared_columns(table: str) -> tuple[tuple[str, str, bool], ...]:
    """(name, type, nullable) of each declared column, in order, as DuckDB itself reads the declaration (a scratch
    in-memory database creates the table), so nothing here parses SQL by hand."""
    scratch = duckdb.connect(":memory:")
    try:
        scratch.execute(ddl(table))
        return _stored_columns(scratch, table)
    finally:
        scratch.close()


def _stored_columns(conn: duckdb.DuckDBPyConnection, table: str) -> tuple[tuple[str, str, bool], ...]:
    rows = conn.execute(
        """SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns
           WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position""",
        [table],
    ).fetchall()
    return tuple((name, kind, bool(nullable)) for name, kind, nullable in rows)


def ensure_tables(conn: duckdb.DuckDBPyConnection, *tables: str) -> None:
    """Create the named tables, or migrate stored ones to their declaration: the one create/migrate path.

    Migration policy, per table:
    - missing: created as declared;
    - in `REBUILT_ON_CHANGE` (wholly derived, rewritten by its asset on every run) and different from its
      declaration in any way, column order included: dropped and recreated, so it is exactly the contract;
    - a declared column missing (a warehouse made before it was added): added with `ALTER TABLE ... ADD COLUMN`, at
      the end and nullable (old rows have no value for it; DuckDB cannot add a NOT NULL column to stored rows);
      writes match columns by name, so the position does not matter to the pipeline;
    - a declared-nullable column stored NOT NULL (a constraint since relaxed): the constraint is dropped;
    - anything else (a column the declaration lacks, or of another type): `SchemaMismatch` naming the table and the
      columns, nothing changed, since its rows may be the only copy of what a run paid for (extractions, the
      registry's stable ids).
    """
    for table in tables:
        wanted = declared_columns(table)
        have = _stored_columns(conn, table)
        if not have:
            conn.execute(ddl(table))
            continue
        if table in REBUILT_ON_CHANGE:
            if have != wanted:
                conn.execute(f"DROP TABLE {table}")
                conn.execute(ddl(table))
            continue
        stored = {name: (kind, nullable) for name, kind, nullable in have}
        declared = {name for name, _, _ in wanted}
        unknown = [name for name in stored if name not in declared]
        retyped = [name for name, kind, _ in wanted if name in stored and stored[name][0] != kind]
        if unknown or retyped:
            raise SchemaMismatch(
                f"warehouse table {table}: stored columns differ from oprag_pipeline/warehouse.py "
                f"(not declared: {unknown or 'none'}; type changed: {retyped or 'none'}); migrate or rebuild it"
            )
        for name, kind, nullable in wanted:
            if name not in stored:
                conn.execute(f'ALTER TABLE {table} ADD COLUMN "{name}" {kind}')
            elif nullable and not stored[name][1]:
                conn.execute(f'ALTER TABLE {table} ALTER COLUMN "{name}" DROP NOT NULL')


Rows = Any
"""What the write helpers accept: a pandas DataFrame, a pyarrow Table, or a sequence of dicts or dataclasses."""


def as_arrow(rows: Rows) -> pa.Table | Any:
    """`rows` as something DuckDB can scan by column name: DataFrames and Arrow tables pass through; dicts and
    dataclasses (by `dataclasses.asdict`) become an Arrow table whose columns are their keys."""
    if isinstance(rows, pa.Table) or (hasattr(rows, "columns") and hasattr(rows, "dtypes")):
        return rows
    records = [dataclasses.asdict(r) if dataclasses.is_dataclass(r) else dict(r) for r in rows]
    return pa.Table.from_pylist(records)


def _count(relation: Any) -> int:
    return relation.num_rows if isinstance(relation, pa.Table) else len(relation)


def _column_names(relation: Any) -> list[str]:
    return list(relation.column_names if isinstance(relation, pa.Table) else relation.columns)


_names = itertools.count()


def insert_rows(conn: duckdb.DuckDBPyConnection, table: str, rows: Rows, **constants: object) -> int:
    """Append rows by column name (`INSERT INTO table BY NAME`); `constants` (e.g. `domain=...`) fill a column for
    every row. Columns the rows lack take their default (NULL); a column the table lacks is an error naming it.
    Runs inside the caller's transaction, if any. Returns the number of rows written."""
    relation = as_arrow(rows)
    if _count(relation) == 0:
        return 0
    name = f"_oprag_rows_{next(_names)}"
    present = set(_column_names(relation))
    replaced = [f"${key} AS {key}" for key in constants if key in present]
    added = [f"${key} AS {key}" for key in constants if key not in present]
    select = ", ".join([f"* REPLACE ({', '.join(replaced)})" if replaced else "*", *added])
    conn.complete()  # a caller's earlier `fetchone()` leaves its result open, and DuckDB then refuses `register`
    conn.register(name, relation)
    try:
        conn.execute(f"INSERT INTO {table} BY NAME SELECT {select} FROM {name}", constants or None)
    finally:
        conn.unregister(name)
    return _count(relation)


@contextmanager
def transaction(conn: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """One transaction: committed when the block ends, rolled back (and the error raised) when it fails."""
    conn.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def replace_rows(
    conn: duckdb.DuckDBPyConnection, table: str, rows: Rows, *, within: bool = False, **keys: object
) -> int:
    """The common write of a derived table: delete the rows matching `keys` (e.g. `domain=...`, plus `section=...`
    for a per-section table), then insert `rows` with those keys filled in, in one transaction (`within=True`: in
    the caller's, already open). Returns the number of rows written."""
    if not keys:
        raise ValueError(f"replace_rows({table!r}) needs the key of the rows it replaces, e.g. domain=...")
    where = " AND ".join(f"{key} = ${key}" for key in keys)
    if within:
        conn.execute(f"DELETE FROM {table} WHERE {where}", keys)
        return insert_rows(conn, table, rows, **keys)
    with transaction(conn):
        conn.execute(f"DELETE FROM {table} WHERE {where}", keys)
        return insert_rows(conn, table, rows, **keys)


def records(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The rows of an executed query as dicts keyed by column name (the Python values `fetchall` gives), for code
    that reshapes rows and should name what it reads rather than count positions."""
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def batches_of_records(cursor: duckdb.DuckDBPyConnection, size: int) -> Iterator[list[dict[str, Any]]]:
    """`records`, streamed `size` rows at a time, for results too large to hold at once."""
    names = [d[0] for d in cursor.description]
    while rows := cursor.fetchmany(size):
        yield [dict(zip(names, row, strict=True)) for row in rows]


def table_exists(conn: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the warehouse holds `table` (readers of optional tables ask before querying them)."""
    return bool(_stored_columns(conn, table))
