"""The warehouse's tables are contracts (names, columns, order, types, constraints): created the one way, from
`oprag_pipeline/warehouse.py`, they must match the schema recorded in `fixtures/warehouse_schema.json`, which was
taken from the DDL the stages held before it moved there. Also: every table the code writes is declared, nothing
writes by position, and an old warehouse is migrated by the one migration path."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from oprag_pipeline import warehouse

REPO = Path(__file__).resolve().parents[2]
CONTRACT = json.loads((Path(__file__).parents[1] / "fixtures" / "warehouse_schema.json").read_text(encoding="utf-8"))


def _columns(conn: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Each table's columns as "name TYPE[ NOT NULL]", in order, as DuckDB reports them."""
    out: dict[str, list[str]] = {}
    for table, column, kind, nullable in conn.execute(
        """SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
           WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"""
    ).fetchall():
        out.setdefault(table, []).append(f"{column} {kind}" + ("" if nullable == "YES" else " NOT NULL"))
    return out


def test_the_schema_created_from_the_module_is_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as conn:
        warehouse.ensure_tables(conn, *warehouse.TABLES)
    with duckdb.connect(str(path), read_only=True) as conn:  # reopened: what a reader of the file sees
        assert _columns(conn) == CONTRACT
        constraints = conn.execute(
            """SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints()
               WHERE schema_name = 'main'"""
        ).fetchall()
    kinds = {kind for _, kind, _ in constraints}
    assert kinds == {"NOT NULL"}, f"keys or checks appeared that the contract does not have: {kinds}"
    not_null = {(table, columns[0]) for table, _, columns in constraints}
    expected = {(t, c.split()[0]) for t, cols in CONTRACT.items() for c in cols if c.endswith(" NOT NULL")}
    assert not_null == expected


def test_ensure_tables_is_idempotent_and_creates_only_what_it_is_asked(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "w.duckdb")) as conn:
        warehouse.ensure_tables(conn, "opinions", "raw_documents")
        warehouse.ensure_tables(conn, "opinions", "raw_documents")
        assert set(_columns(conn)) == {"opinions", "raw_documents"}
        assert _columns(conn)["opinions"] == CONTRACT["opinions"]
        with pytest.raises(KeyError, match="not declared"):
            warehouse.ensure_tables(conn, "opinion")


_SOURCES = sorted((REPO / "oprag_pipeline").rglob("*.py"))
_WRITTEN = re.compile(
    r"INSERT INTO\s+(\w+)|(?:insert_rows|replace_rows|ensure_tables)\(\s*conn,\s*\"(\w+)\"", re.MULTILINE
)
_TABLE_TUPLES = re.compile(r"^(?:TABLES|OPINION_TABLES) = \(([^)]*)\)", re.MULTILINE)
_TABLE_NAMES = re.compile(r"^(?:TABLE|ADAPTATION_TABLE) = \"(\w+)\"", re.MULTILINE)


def test_every_table_the_stages_write_is_declared_and_none_is_written_by_position() -> None:
    written: dict[str, set[str]] = {}
    positional, created = [], []
    for path in _SOURCES:
        if path.name == "warehouse.py":
            continue
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(REPO))
        for match in _WRITTEN.finditer(text):
            written.setdefault(match.group(1) or match.group(2), set()).add(where)
        for match in _TABLE_TUPLES.finditer(text):
            for name in re.findall(r"\"(\w+)\"", match.group(1)):
                written.setdefault(name, set()).add(where)
        for name in _TABLE_NAMES.findall(text):
            written.setdefault(name, set()).add(where)
        positional += [
            f"{where}: {m.group(0)}" for m in re.finditer(r"INSERT INTO\s+[\w{}]+\s+(?:VALUES|SELECT)", text)
        ]
        created += [f"{where}: {m.group(0)}" for m in re.finditer(r"CREATE TABLE\s+(?:IF NOT EXISTS\s+)?\w+", text)]
    assert len(written) >= 30, f"the scan found too few tables to be looking at the stages: {sorted(written)}"
    undeclared = {t: sorted(w) for t, w in written.items() if t not in warehouse.TABLES}
    assert not undeclared, f"tables written but not declared in oprag_pipeline/warehouse.py: {undeclared}"
    assert not positional, f"inserts by position (use BY NAME / warehouse.insert_rows): {positional}"
    assert not created, f"CREATE TABLE outside oprag_pipeline/warehouse.py: {created}"
    assert set(warehouse.TABLES) <= set(written), f"declared but never written: {set(warehouse.TABLES) - set(written)}"


def _old_table(conn: duckdb.DuckDBPyConnection, table: str, *, drop: str, not_null: str | None = None) -> None:
    """`table` as a warehouse made before column `drop` was added (and, optionally, with `not_null` NOT NULL)."""
    columns = [
        f'"{name}" {kind}' + ("" if nullable and name != not_null else " NOT NULL")
        for name, kind, nullable in warehouse.declared_columns(table)
        if name != drop
    ]
    conn.execute(f"CREATE TABLE {table} ({', '.join(columns)})")


def test_an_old_warehouse_is_migrated_by_the_one_path_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as conn:
        _old_table(conn, "author_attributes", drop="source")
        conn.execute("INSERT INTO author_attributes VALUES ('d', 'doc1', 'year', '2019')")
        # the historical case: cost_usd was NOT NULL before a writer's price could be unknown
        _old_table(conn, "generated_answers", drop="flags", not_null="cost_usd")
    with duckdb.connect(str(path)) as conn:
        warehouse.ensure_tables(conn, "author_attributes", "generated_answers")
        columns = _columns(conn)
        assert columns["author_attributes"][-1] == "source VARCHAR"  # added at the end, nullable for old rows
        assert sorted(columns["author_attributes"][:-1]) == sorted(
            c for c in CONTRACT["author_attributes"] if not c.startswith("source ")
        )
        assert "cost_usd DOUBLE" in columns["generated_answers"]
        assert "flags VARCHAR[]" in columns["generated_answers"]
        assert conn.execute("SELECT doc_id, source FROM author_attributes").fetchall() == [("doc1", None)]
        # writes go by name, so the migrated column order does not matter to them
        warehouse.insert_rows(
            conn,
            "author_attributes",
            [{"doc_id": "doc2", "attribute": "year", "value": "2020", "source": "derived"}],
            domain="d",
        )
        assert conn.execute("SELECT source FROM author_attributes WHERE doc_id = 'doc2'").fetchone() == ("derived",)
        warehouse.ensure_tables(conn, "author_attributes")  # a second pass has nothing left to do
        assert _columns(conn)["author_attributes"] == columns["author_attributes"]


def test_a_table_changed_beyond_missing_columns_is_rebuilt_if_derived_else_refused(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "w.duckdb")) as conn:
        conn.execute("CREATE TABLE question_metrics (domain VARCHAR, question_id VARCHAR, stale DOUBLE)")
        conn.execute("INSERT INTO question_metrics VALUES ('d', 'q', 1.0)")
        conn.execute("CREATE TABLE raw_documents (domain VARCHAR, doc_id VARCHAR, legacy INTEGER)")
        warehouse.ensure_tables(conn, "question_metrics")
        assert _columns(conn)["question_metrics"] == CONTRACT["question_metrics"]
        assert conn.execute("SELECT count(*) FROM question_metrics").fetchone() == (0,)
        with pytest.raises(warehouse.SchemaMismatch, match=r"raw_documents.*legacy"):
            warehouse.ensure_tables(conn, "raw_documents")
        assert _columns(conn)["raw_documents"] == ["domain VARCHAR", "doc_id VARCHAR", "legacy INTEGER"]  # untouched
        # a derived table merely missing a column is rebuilt too, so it keeps the contract's order and NOT NULLs
        _old_table(conn, "retrieval_runs", drop="score")
        warehouse.ensure_tables(conn, "retrieval_runs")
        assert _columns(conn)["retrieval_runs"] == CONTRACT["retrieval_runs"]


@dataclass
class _Row:
    question_id: str
    variant: str
    metric: str
    value: float


def test_writes_match_columns_by_name_from_dicts_dataclasses_and_frames(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "w.duckdb")) as conn:
        warehouse.ensure_tables(conn, "generation_metrics")
        # field order unlike the table's: by name, every value still lands in its column
        frame = pd.DataFrame({"value": [0.5], "metric": ["w1"], "variant": ["plain"], "question_id": ["q1"]})
        warehouse.insert_rows(conn, "generation_metrics", frame, domain="a")
        warehouse.insert_rows(conn, "generation_metrics", [_Row("q2", "plain", "w1", 0.25)], domain="b")
        warehouse.replace_rows(
            conn,
            "generation_metrics",
            [{"metric": "w1", "value": 0.75, "variant": "opinion_aware", "question_id": "q3"}],
            domain="b",
        )
        assert conn.execute("SELECT * FROM generation_metrics ORDER BY domain").fetchall() == [
            ("a", "q1", "plain", "w1", 0.5),
            ("b", "q3", "opinion_aware", "w1", 0.75),
        ]
        with pytest.raises(duckdb.BinderException, match="metirc"):
            warehouse.insert_rows(conn, "generation_metrics", [{"question_id": "q", "metirc": "w1"}], domain="a")
        with pytest.raises(duckdb.ConstraintException):  # a NOT NULL column the rows lack
            warehouse.insert_rows(conn, "generation_metrics", [{"question_id": "q", "metric": "w1"}], domain="a")
        with pytest.raises(ValueError, match="needs the key"):
            warehouse.replace_rows(conn, "generation_metrics", [])
