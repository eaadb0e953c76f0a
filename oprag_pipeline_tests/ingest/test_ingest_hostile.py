"""Hostile input: one bad value costs its row only, with its true row number and a named reason; nothing is lost.

Each test below failed on the earlier code (a whole file lost to one date, a RecursionError, a CSV field cut
at U+2028, a folded CSV, UTF-16 read as garbage, files ignored without a word, a symlink followed out of data/raw).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from oprag_pipeline import settings
from oprag_pipeline.ingest import contract, json_array, readers, store
from oprag_pipeline_tests.conftest import write_lines
from oprag_pipeline_tests.hostile import CSV_FIELD_SEPARATORS, JSON_FIELD_CLASSES, write_hostile_domain


def read(domain: Path) -> tuple[list[dict], readers.DomainReadResult]:
    batches: list[pa.Table] = []
    result = readers.read_domain(domain, max_text_chars=1000, on_batch=batches.append)
    rows = [row for batch in batches for row in batch.to_pylist()]
    return rows, result


def reasons(result: readers.DomainReadResult) -> list[tuple[str, int, str]]:
    return [(q.file, q.row_number, q.reason) for q in result.quarantined]


GOOD = json.dumps({"doc_id": "after", "text": "The lid still fits."})


@pytest.mark.parametrize(("name", "fragment", "reason"), [c for c in JSON_FIELD_CLASSES if c[2] != "accept"])
def test_one_bad_value_quarantines_its_row_and_reading_goes_on(
    tmp_path: Path, name: str, fragment: str, reason: str
) -> None:
    key = fragment.split('"')[1]
    base = {"doc_id": "bad", "text": "Kettle boils fast."}
    base.pop(key, None)
    hostile = json.dumps(base)[:-1] + ", " + fragment + "}"
    domain = tmp_path / "raw" / "d"
    write_lines(domain / "a.jsonl", [json.dumps({"doc_id": "before", "text": "Fine."}), hostile, GOOD])
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == ["before", "after"], name
    assert reasons(result) == [("a.jsonl", 2, reason)], name
    assert result.quarantined[0].detail  # a sentence saying why, not just the code


def test_created_at_1e17_no_longer_loses_the_rest_of_the_file(tmp_path: Path) -> None:
    domain = tmp_path / "raw" / "d"
    lines = [json.dumps({"doc_id": f"r{i}", "text": f"Review {i}."}) for i in range(1, 6)]
    lines[1] = '{"doc_id": "r2", "text": "x", "created_at": 1e17}'
    write_lines(domain / "a.jsonl", lines)
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == ["r1", "r3", "r4", "r5"]
    assert reasons(result) == [("a.jsonl", 2, "date_out_of_range")]
    assert "years 1..9999" in result.quarantined[0].detail


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_json_nested_100k_deep_is_refused_not_a_recursion_error(tmp_path: Path, suffix: str) -> None:
    domain = tmp_path / "raw" / "d"
    domain.mkdir(parents=True)
    deep = "[" * 100_000 + "]" * 100_000
    if suffix == ".jsonl":
        (domain / "a.jsonl").write_text(deep + "\n" + GOOD + "\n")
    else:
        (domain / "a.json").write_text(deep)
    rows, result = read(domain)
    assert [q.reason for q in result.quarantined] == ["json_too_deep"]
    assert [r["doc_id"] for r in rows] == (["after"] if suffix == ".jsonl" else [])


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_json_array_is_read_record_by_record(tmp_path: Path, encoding: str) -> None:
    """A good record next to one nested 100,000 levels: the good one is accepted, the deep one quarantined by its
    number, and rows read = accepted + quarantined (the whole file was one quarantined row before)."""
    domain = tmp_path / "raw" / "d"
    domain.mkdir(parents=True)
    deep = '{"doc_id": "deep", "text": "x", "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    content = (
        "[\n  " + GOOD + ",\n  " + deep + ",\n  " + json.dumps({"doc_id": "last", "text": "Lid ] fits {"}) + "\n]\n"
    )
    (domain / "a.json").write_bytes(content.encode(encoding))
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == ["after", "last"]
    assert reasons(result) == [("a.json", 2, "json_too_deep")]
    assert "100,001 levels" in result.quarantined[0].detail
    (stats,) = result.files
    assert stats.rows_read == 3 == stats.accepted + stats.quarantined + stats.duplicates


@pytest.mark.parametrize(
    ("content", "accepted", "quarantined"),
    [
        ('[{"doc_id": "a", "text": "A."}, 7, {"doc_id": "b", "text": "B."}]', ["a", "b"], [(2, "malformed_json")]),
        ('[{"doc_id": "a", "text": "A."}, {"doc_id": "b", "text": "B.\\"}]', ["a"], [(2, "malformed_json")]),
        (
            '[{"doc_id": "a", "text": "A."},, {"doc_id": "b", "text": "B."},]',
            ["a", "b"],
            [(2, "malformed_json"), (4, "malformed_json")],
        ),
        ('[{"doc_id": "a", "text": "A."}, {"doc_id": "b", "text": "B."}', ["a", "b"], [(3, "malformed_json")]),
        ('[{"doc_id": "a", "text": "A."}, {"doc_id": "b", "te', ["a"], [(2, "malformed_json")]),
        (
            '[{"doc_id": "a", "text": "A."}, {"doc_id": ["b"}, {"doc_id": "c", "text": "C."}]',
            ["a"],
            [(2, "malformed_json")],
        ),
        ('[{"doc_id": "a", "text": "A."}] trailing', ["a"], [(2, "malformed_json")]),
        ("[]", [], []),
    ],
)
def test_json_array_problems_cost_their_element_only(
    tmp_path: Path, content: str, accepted: list[str], quarantined: list[tuple[int, str]]
) -> None:
    domain = tmp_path / "raw" / "d"
    domain.mkdir(parents=True)
    (domain / "a.json").write_text(content)
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == accepted
    assert [(q.row_number, q.reason) for q in result.quarantined] == quarantined
    (stats,) = result.files
    assert stats.rows_read == stats.accepted + stats.quarantined


def test_json_array_split_over_any_chunking_matches_the_parser() -> None:
    items = [{"doc_id": f"d{i}", "text": 'a "quoted" ] } , [ { \\ é', "extra": [[i], {"k": None}]} for i in range(5)]
    data = b"\xef\xbb\xbf " + json.dumps(items, indent=1).encode() + b"\n"
    for size in (1, 2, 3, 7, 64, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        split = list(json_array.split_json_array(chunks))
        assert [problem for _, _, problem in split] == [None] * 5, size
        assert [json.loads(element) for _, element, _ in split] == items, size


@pytest.mark.parametrize("separator", CSV_FIELD_SEPARATORS)
def test_csv_splits_records_only_on_line_ends(tmp_path: Path, separator: str) -> None:
    domain = tmp_path / "raw" / "d"
    text = f"before{separator}after the character"
    write_lines(domain / "a.csv", ["doc_id,text", f"c1,{text}", "c2,next row"])
    rows, result = read(domain)
    assert [(r["doc_id"], r["text"]) for r in rows] == [("c1", text), ("c2", "next row")]
    assert result.quarantined == []


def test_unclosed_csv_quote_costs_one_row_not_the_rest(tmp_path: Path) -> None:
    domain = tmp_path / "raw" / "d"
    write_lines(
        domain / "a.csv",
        ["doc_id,text", "c1,first", 'c2,"an unclosed quote', "c3,third", "c4,fourth", "c5,fifth", "c6,sixth"],
    )
    rows, result = read(domain)
    assert [r["doc_id"] for r in rows] == ["c1", "c3", "c4", "c5", "c6"]
    assert reasons(result) == [("a.csv", 3, "malformed_csv")]
    assert "unclosed quote" in result.quarantined[0].detail
    assert result.files[0].rows_read == 6


def test_legitimate_multiline_quoted_field_is_kept_whole(tmp_path: Path) -> None:
    domain = tmp_path / "raw" / "d"
    write_lines(domain / "a.csv", ["doc_id,text", 'c1,"line one', 'line two, with a comma"', "c2,after"])
    rows, result = read(domain)
    assert [(r["doc_id"], r["text"]) for r in rows] == [("c1", "line one\nline two, with a comma"), ("c2", "after")]
    assert result.quarantined == []


@pytest.mark.parametrize(
    ("name", "encode"),
    [
        ("bom.jsonl", lambda s: s.encode("utf-16")),
        ("le.jsonl", lambda s: s.encode("utf-16-le")),
        ("be.csv", lambda s: s.encode("utf-16-be")),
        ("bom32.csv", lambda s: s.encode("utf-32")),
    ],
)
def test_utf16_and_utf32_are_detected(tmp_path: Path, name: str, encode) -> None:
    domain = tmp_path / "raw" / "d"
    domain.mkdir(parents=True)
    text = "Café crème was lukewarm — «meh»."
    body = (
        f"doc_id,text\nu1,{text}\n"
        if name.endswith(".csv")
        else json.dumps({"doc_id": "u1", "text": text}, ensure_ascii=False) + "\n"
    )
    (domain / name).write_bytes(encode(body))
    rows, result = read(domain)
    assert [(r["doc_id"], r["text"]) for r in rows] == [("u1", text)]
    assert result.quarantined == []


def test_binary_file_is_refused_as_unsupported_encoding(tmp_path: Path) -> None:
    domain = tmp_path / "raw" / "d"
    domain.mkdir(parents=True)
    (domain / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")
    (domain / "image.jsonl").write_bytes(b"\x00\x01\x02\x03\xff\x00\x10")
    _, result = read(domain)
    assert sorted(reasons(result)) == [
        ("image.csv", 1, "unsupported_encoding"),
        ("image.jsonl", 1, "unsupported_encoding"),
    ]


def test_every_file_is_read_or_listed_with_its_reason(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    domain = raw / "d"
    write_lines(domain / "ok.jsonl", [GOOD])
    write_lines(domain / "notes.txt", ["x"])
    (domain / "old.jsonl.bz2").write_bytes(b"BZh91AY")
    write_lines(domain / ".partial.jsonl", [GOOD])
    write_lines(domain / "_scratch.csv", ["doc_id,text"])
    write_lines(domain / "sub" / "nested.csv", ["doc_id,text", "n1,nested"])
    write_lines(domain / ".git" / "config.jsonl", [GOOD])
    outside = write_lines(tmp_path / "elsewhere.jsonl", [json.dumps({"doc_id": "out", "text": "outside"})])
    (domain / "link.jsonl").symlink_to(outside)
    inside = write_lines(raw / "other" / "shared.jsonl", [json.dumps({"doc_id": "in", "text": "inside raw"})])
    (domain / "inside-link.jsonl").symlink_to(inside)
    rows, result = read(domain)
    assert sorted(r["doc_id"] for r in rows) == ["after", "in", "n1"]
    skipped = {s.file: s.reason for s in result.skipped_files}
    assert set(skipped) == {"notes.txt", "old.jsonl.bz2", ".partial.jsonl", "_scratch.csv", ".git/", "link.jsonl"}
    assert "unsupported file type '.txt'" in skipped["notes.txt"]
    assert "bzip2" in skipped["old.jsonl.bz2"] and "gzip" in skipped["old.jsonl.bz2"]
    assert "hidden" in skipped[".partial.jsonl"] and "'_'" in skipped["_scratch.csv"]
    assert "outside data/raw" in skipped["link.jsonl"]


def test_domain_folder_linking_outside_raw_is_refused(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    elsewhere = tmp_path / "elsewhere"
    write_lines(elsewhere / "a.jsonl", [GOOD])
    (tmp_path / "raw" / "linked").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(settings.ConfigError, match="outside"):
        settings.domain_dir("linked", tmp_path)
    assert settings.list_domains(tmp_path) == []
    assert "linked" in settings.refused_domain_folders(tmp_path)


@pytest.mark.parametrize("name", ["with space", "hôtel-ü", "日本語", "-dash", "..", "../outside", "a/b", "", "x" * 65])
def test_unsafe_domain_names_are_refused_saying_what_is_allowed(name: str) -> None:
    with pytest.raises(settings.ConfigError, match="ASCII letters, digits, '-' and '_'"):
        settings.check_domain_name(name)


@pytest.mark.parametrize("name", ["hotels", "seller_forum", "Shop-2", "9lives"])
def test_safe_domain_names_are_kept_as_they_are(name: str) -> None:
    assert settings.check_domain_name(name) == name


def test_unsafe_domain_folders_are_listed_not_ingested(tmp_path: Path) -> None:
    for name in ("good", "with space", "日本語"):
        write_lines(tmp_path / "raw" / name / "a.jsonl", [GOOD])
    assert settings.list_domains(tmp_path) == ["good"]
    assert set(settings.refused_domain_folders(tmp_path)) == {"with space", "日本語"}


# --------------------------------------------------------------------------------------------------------------
# Property: random hostile folders, many seeds: every row accounted for, and what is accepted can be stored


@pytest.mark.parametrize("seed", range(30))
def test_random_hostile_folders_lose_nothing(tmp_path: Path, seed: int) -> None:
    domain = tmp_path / "raw" / "d"
    expected = write_hostile_domain(domain, seed)
    rows, result = read(domain)

    for stats in result.files:  # rows read = accepted + quarantined + duplicates, per file
        assert stats.rows_read == stats.accepted + stats.quarantined + stats.duplicates, stats
    assert {r["doc_id"] for r in rows} == expected.accepted
    for doc_id, text in expected.texts.items():
        assert next(r["text"] for r in rows if r["doc_id"] == doc_id) == text
    got = Counter((q.file, q.reason) for q in result.quarantined)
    want = Counter((file, reason) for file, reasons_ in expected.quarantined.items() for reason in reasons_)
    assert got == want
    assert all(q.reason in contract.QUARANTINE_REASONS and q.detail for q in result.quarantined)
    assert {f.file: f.duplicates for f in result.files if f.duplicates} == expected.duplicates
    skipped = {s.file: s.reason for s in result.skipped_files}
    assert set(skipped) == set(expected.skipped)
    for file, word in expected.skipped.items():
        assert word in skipped[file]

    # Everything accepted is storable: the warehouse takes it and later stages' casts hold.
    with duckdb.connect(str(tmp_path / "w.duckdb")) as conn:
        store.ensure_tables(conn)
        store.start_staging(conn)
        store.stage_batch(conn, pa.Table.from_pylist(rows, schema=contract.ACCEPTED_SCHEMA))
        store.commit_domain(conn, "d", result, run_id=None)
        assert all(row["balanced"] for row in store.reconcile(conn, "d"))
        conn.execute("SELECT CAST(round(rating) AS INTEGER), CAST(extra AS JSON) FROM raw_documents").fetchall()
        conn.execute("SELECT CAST(author_attributes AS JSON), year(created_at) FROM raw_documents").fetchall()


def test_sensor_registers_only_safe_domain_folders(tmp_path: Path) -> None:
    from oprag_pipeline.ingest.sensors import evaluate_domains

    for name in ("good", "with space", "-dash"):
        write_lines(tmp_path / "raw" / name / "a.jsonl", [GOOD])
    to_add, requests, cursor = evaluate_domains(tmp_path / "raw", {}, set())
    assert to_add == ["good"] and [r.partition_key for r in requests] == ["good"] and list(cursor) == ["good"]
