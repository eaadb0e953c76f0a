"""Every quarantine reason, every input format, and the rows-in = rows-out invariant, on our own fixtures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oprag_pipeline.ingest import contract, input_files, readers
from oprag_pipeline_tests.conftest import write_lines


def read(domain_dir: Path, max_text_chars: int = 1000):
    batches: list[pa.Table] = []
    result = readers.read_domain(domain_dir, max_text_chars=max_text_chars, batch_size=2, on_batch=batches.append)
    table = pa.concat_tables(batches) if batches else None
    rows = table.to_pylist() if table is not None else []
    for stats in result.files:
        assert stats.rows_read == stats.accepted + stats.quarantined + stats.duplicates, stats
    return rows, result


def reasons(result: readers.DomainReadResult) -> list[tuple[str, int, str]]:
    return [(q.file, q.row_number, q.reason) for q in result.quarantined]


def doc(doc_id: str | None, text: str | None, **extra: object) -> str:
    return json.dumps({"doc_id": doc_id, "text": text, **extra})


def test_jsonl_every_row_level_reason(tmp_path: Path) -> None:
    domain = tmp_path / "shop"
    write_lines(
        domain / "reviews.jsonl",
        [
            doc("r1", "The kettle boils fast.", created_at="2024-03-01", author_tier="gold", rating=4),
            doc(None, "no id here"),
            doc("  ", "blank id"),
            doc("r2", "   "),
            json.dumps({"doc_id": "r3"}),
            '{"doc_id": "r4", "text": "unterminated',
            "[1, 2, 3]",
            b'{"doc_id": "r5", "text": "caf\xe9 latin-1 byte"}',
            doc("r6", "x" * 1001),
            doc("r7", "Lid broke.", created_at="03/04/2024"),
            doc("r8", "Lid broke.", rating="five"),
            doc("r1", "The kettle boils fast.", created_at="2024-03-01", author_tier="gold", rating=4),
            doc("r1", "A different text under the same id."),
            '{"doc_id": "r9", "text": "escaped lone surrogate \\udc80 here"}',
            "",
        ],
    )
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == ["r1"]
    assert reasons(result) == [
        ("reviews.jsonl", 2, "missing_doc_id"),
        ("reviews.jsonl", 3, "missing_doc_id"),
        ("reviews.jsonl", 4, "missing_text"),
        ("reviews.jsonl", 5, "missing_text"),
        ("reviews.jsonl", 6, "malformed_json"),
        ("reviews.jsonl", 7, "malformed_json"),
        ("reviews.jsonl", 8, "undecodable_bytes"),
        ("reviews.jsonl", 9, "text_too_long"),
        ("reviews.jsonl", 10, "unparsable_date"),
        ("reviews.jsonl", 11, "unparsable_rating"),
        ("reviews.jsonl", 13, "conflicting_doc_id"),
        ("reviews.jsonl", 14, "undecodable_bytes"),
    ]
    stats = result.files[0]
    assert (stats.rows_read, stats.accepted, stats.quarantined, stats.duplicates) == (14, 1, 12, 1)
    # the raw content is kept verbatim (decoded as far as possible) so the row can be repaired
    malformed = next(q for q in result.quarantined if q.row_number == 6)
    assert malformed.raw == '{"doc_id": "r4", "text": "unterminated'
    undecodable = next(q for q in result.quarantined if q.row_number == 8)
    assert "caf" in undecodable.raw and "latin-1 byte" in undecodable.raw
    conflict = next(q for q in result.quarantined if q.row_number == 13)
    assert "reviews.jsonl row 1" in conflict.detail
    accepted = rows[0]
    assert json.loads(accepted["author_attributes"]) == {"tier": "gold"}
    assert accepted["rating"] == 4.0 and accepted["created_at"].year == 2024
    assert accepted["source_file"] == "reviews.jsonl" and accepted["source_row"] == 1


def test_bom_gzip_and_extra_columns(tmp_path: Path) -> None:
    domain = tmp_path / "d"
    domain.mkdir()
    payload = "\ufeff" + doc("g1", "Zipped review", gold_opinions=[{"target": "zip", "polarity": "positive"}]) + "\n"
    with gzip.open(domain / "part.jsonl.gz", "wb") as handle:
        handle.write(payload.encode("utf-8"))
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == ["g1"]
    assert json.loads(rows[0]["extra"]) == {"gold_opinions": [{"target": "zip", "polarity": "positive"}]}
    assert result.quarantined == []


def test_csv_quarantine_and_multiline_records(tmp_path: Path) -> None:
    domain = tmp_path / "forum"
    write_lines(
        domain / "posts.csv",
        [
            "\ufeffdoc_id,text,created_at,author_region",
            'p1,"Fees went up, again.",2024-01-05,EU',
            'p2,"A post that spans',
            'two lines",2024-01-06,NA',
            "p3,too,many,fields,here",
            b"p4,bad \xff byte,2024-01-07,EU",
            ",no id,2024-01-08,EU",
            'p5,"never closed,2024-01-09,EU',
        ],
    )
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == ["p1", "p2"]
    assert rows[1]["text"] == "A post that spans\ntwo lines"
    assert json.loads(rows[0]["author_attributes"]) == {"region": "EU"}
    assert reasons(result) == [
        ("posts.csv", 5, "malformed_csv"),
        ("posts.csv", 6, "undecodable_bytes"),
        ("posts.csv", 7, "missing_doc_id"),
        ("posts.csv", 8, "malformed_csv"),
    ]


def test_tsv_parquet_and_json_array(tmp_path: Path) -> None:
    domain = tmp_path / "mixed"
    write_lines(domain / "a.tsv", ["doc_id\ttext", "t1\tTab separated"])
    pq.write_table(
        pa.table({"doc_id": ["q1", "q2"], "text": ["From parquet", None], "rating": [5, None]}),
        domain / "b.parquet",
    )
    (domain / "c.json").write_text(json.dumps([{"doc_id": "j1", "text": "From an array"}, "oops"]))
    rows, result = read(domain)
    assert sorted(r["doc_id"] for r in rows) == ["j1", "q1", "t1"]
    assert reasons(result) == [("b.parquet", 2, "missing_text"), ("c.json", 2, "malformed_json")]


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    domain = tmp_path / "broken"
    domain.mkdir()
    body = "".join(doc(f"z{i}", f"review number {i}") + "\n" for i in range(200)).encode()
    compressed = gzip.compress(body)
    (domain / "cut.jsonl.gz").write_bytes(compressed[: len(compressed) // 2])
    rows, result = read(domain)
    assert 0 < len(rows) < 200
    assert result.quarantined[-1].reason == "unreadable_file"


def test_conflicts_across_files_keep_the_first_in_file_order(tmp_path: Path) -> None:
    domain = tmp_path / "two"
    write_lines(domain / "a.jsonl", [doc("x", "first version")])
    write_lines(domain / "b.jsonl", [doc("x", "second version"), doc("x", "first version")])
    rows, result = read(domain)
    assert [(r["doc_id"], r["text"]) for r in rows] == [("x", "first version")]
    assert reasons(result) == [("b.jsonl", 1, "conflicting_doc_id")]
    assert result.files[1].duplicates == 1


def test_hidden_and_unsupported_files_are_not_inputs(tmp_path: Path) -> None:
    domain = tmp_path / "d"
    write_lines(domain / "ok.jsonl", [doc("a", "fine")])
    write_lines(domain / ".partial.jsonl", [doc("b", "in progress")])
    write_lines(domain / "notes.txt", ["not an input"])
    assert [p.name for p in input_files.list_input_files(domain)] == ["ok.jsonl"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-02-29", "2024-02-29T00:00:00"),
        ("2024-02-29T10:30:00Z", "2024-02-29T10:30:00"),
        ("2024-02-29T12:30:00+02:00", "2024-02-29T10:30:00"),
        ("Dec 23, 2008", "2008-12-23T00:00:00"),
        (1700000000, "2023-11-14T22:13:20"),
        (None, None),
    ],
)
def test_parse_date(value: object, expected: str | None) -> None:
    parsed = contract.parse_date(value)
    assert (parsed.isoformat() if parsed else None) == expected


def test_content_hash_sees_metadata_changes() -> None:
    base = contract.normalise_record({"doc_id": "a", "text": "same"}, max_text_chars=100)
    with_author = contract.normalise_record({"doc_id": "a", "text": "same", "author_id": "u1"}, max_text_chars=100)
    again = contract.normalise_record({"doc_id": "a", "text": " same "}, max_text_chars=100)
    assert base["content_hash"] != with_author["content_hash"]
    assert base["content_hash"] == again["content_hash"]
