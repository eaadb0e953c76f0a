"""A seeded generator of hostile input folders, with what the ingest must make of every row.

Used by the property tests (`ingest/test_ingest_hostile.py`) and `benchmarks/bench_hostile.py`. Every file is invented
here; each generated row carries its expected fate: accepted (its doc_id must be in `raw_documents`), quarantined
(with one of the closed reasons), or an exact duplicate. Good rows are plain English opinion sentences built from a
few words; hostile rows each carry one value of a known hostile class.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

WORDS = ("the", "room", "was", "clean", "but", "staff", "seemed", "slow", "and", "breakfast", "tasted", "great")

# (class name, JSON source of the hostile fragment placed in an otherwise good object, expected reason).
# JSON source rather than Python values so that non-standard tokens (Infinity, 1e400) reach the reader as written.
JSON_FIELD_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("epoch_date_1e17", '"created_at": 1e17', "date_out_of_range"),
    ("epoch_date_infinity", '"created_at": Infinity', "date_out_of_range"),
    ("epoch_date_minus_infinity", '"created_at": -Infinity', "date_out_of_range"),
    ("date_year_99999", '"created_at": "99999-01-01"', "unparsable_date"),
    ("date_ambiguous", '"created_at": "03/04/2024"', "unparsable_date"),
    ("date_is_list", '"created_at": [2024, 1, 1]', "unparsable_date"),
    ("rating_infinity", '"rating": Infinity', "rating_out_of_range"),
    ("rating_1e308", '"rating": 1e308', "rating_out_of_range"),
    ("rating_string_1e400", '"rating": "1e400"', "rating_out_of_range"),
    ("rating_string_inf", '"rating": "-inf"', "rating_out_of_range"),
    ("rating_beyond_int32", '"rating": 3000000000', "rating_out_of_range"),
    ("rating_word", '"rating": "five"', "unparsable_rating"),
    ("rating_is_object", '"rating": {"stars": 4}', "unparsable_rating"),
    ("rating_is_bool", '"rating": true', "unparsable_rating"),
    ("text_is_list", '"text": ["a", "b"]', "invalid_text_type"),
    ("text_is_object", '"text": {"body": "x"}', "invalid_text_type"),
    ("text_is_bool", '"text": false', "invalid_text_type"),
    ("text_is_number", '"text": 17', "invalid_text_type"),
    ("text_zero_width", '"text": "\\u200b\\u200c\\u200d\\u2060\\ufeff"', "missing_text"),
    ("text_blank", '"text": " \\t "', "missing_text"),
    ("text_null", '"text": null', "missing_text"),
    ("doc_id_null", '"doc_id": null', "missing_doc_id"),
    ("doc_id_bool", '"doc_id": true', "invalid_doc_id"),
    ("doc_id_float", '"doc_id": 1.5', "invalid_doc_id"),
    ("doc_id_list", '"doc_id": [1]', "invalid_doc_id"),
    ("extra_infinity", '"votes": Infinity', "unstorable_value"),
    ("extra_nested_70", '"deep": ' + "[" * 70 + "]" * 70, "json_too_deep"),
    ("extra_nested_100k", '"deep": ' + "[" * 100_000 + "]" * 100_000, "json_too_deep"),
    ("author_attribute_nan", '"author_score": NaN', "accept"),  # NaN is how writers spell "missing"
)
LINE_CLASSES: tuple[tuple[str, bytes, str], ...] = (
    ("line_not_object", b"[1, 2, 3]", "malformed_json"),
    ("line_truncated", b'{"doc_id": "x", "text": "cut', "malformed_json"),
    ("line_invalid_utf8", b'{"doc_id": "bad-utf8", "text": "caf\xe9"}', "undecodable_bytes"),
    ("line_array_100k_deep", b"[" * 100_000 + b"]" * 100_000, "json_too_deep"),
)
# Characters str.splitlines treats as line ends but CSV does not: they are text inside a field.
CSV_FIELD_SEPARATORS = ("\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


@dataclass
class Expected:
    """What the ingest must produce for one generated folder."""

    accepted: set[str] = field(default_factory=set)  # doc_ids
    texts: dict[str, str] = field(default_factory=dict)  # doc_id -> exact text for rows whose text is checked
    quarantined: dict[str, list[str]] = field(default_factory=dict)  # file -> expected reasons (any order)
    duplicates: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> a word its skip reason must contain
    classes: dict[str, str] = field(default_factory=dict)  # hostile class -> file it was written to

    def quarantine(self, file: str, reason: str) -> None:
        self.quarantined.setdefault(file, []).append(reason)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))).capitalize() + "."


def _good_object(doc_id: str, rng: random.Random) -> dict[str, object]:
    record: dict[str, object] = {"doc_id": doc_id, "text": sentence(rng)}
    if rng.random() < 0.5:
        record["rating"] = rng.randint(1, 5)
    if rng.random() < 0.5:
        record["created_at"] = f"20{rng.randint(10, 25)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
    return record


def write_hostile_domain(folder: Path, seed: int, rows: int = 40) -> Expected:
    """Write one domain folder of hostile files (JSONL, gzip, UTF-16, JSON array, CSV, files never read)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    expected = Expected()
    prefix = f"s{seed}"

    # JSON Lines: good rows interleaved with one hostile value each; some exact duplicates.
    lines: list[bytes] = []
    good_lines: list[bytes] = []
    for i in range(rows):
        doc_id = f"{prefix}-j{i}"
        roll = rng.random()
        if roll < 0.45:
            line = json.dumps(_good_object(doc_id, rng)).encode()
            lines.append(line)
            good_lines.append(line)
            expected.accepted.add(doc_id)
        elif roll < 0.85:
            name, fragment, reason = rng.choice(JSON_FIELD_CLASSES)
            base = _good_object(doc_id, rng)
            key = fragment.split('"')[1]
            base.pop(key, None)
            body = json.dumps(base)[:-1] + ", " + fragment + "}"
            lines.append(body.encode())
            expected.classes.setdefault(name, "rows.jsonl")
            if reason == "accept":
                expected.accepted.add(doc_id)
            else:
                expected.quarantine("rows.jsonl", reason)
        elif roll < 0.95:
            name, line, reason = rng.choice(LINE_CLASSES)
            lines.append(line)
            expected.classes.setdefault(name, "rows.jsonl")
            expected.quarantine("rows.jsonl", reason)
        elif good_lines:
            lines.append(rng.choice(good_lines))
            expected.duplicates["rows.jsonl"] = expected.duplicates.get("rows.jsonl", 0) + 1
    (folder / "rows.jsonl").write_bytes(b"\n".join(lines) + b"\n")

    # gzip and UTF-16 (with and without a BOM): good rows that must decode.
    for name, encode in (
        ("zipped.jsonl.gz", lambda text: gzip.compress(text.encode())),
        ("wide.jsonl", lambda text: text.encode("utf-16")),
        ("wide-le.csv", None),
    ):
        doc_id = f"{prefix}-{name.split('.')[0]}"
        record = _good_object(doc_id, rng)
        if encode is None:
            data = f"doc_id,text\n{doc_id},{record['text']}\n".encode("utf-16-le")
        else:
            data = encode(json.dumps(record, ensure_ascii=False) + "\n")
        (folder / name).write_bytes(data)
        expected.accepted.add(doc_id)
    expected.classes.setdefault("utf16_with_bom", "wide.jsonl")
    expected.classes.setdefault("utf16_without_bom", "wide-le.csv")

    # A JSON array with non-object elements and values that cannot be stored.
    items: list[object] = []
    for i in range(rng.randint(3, 8)):
        doc_id = f"{prefix}-a{i}"
        roll = rng.random()
        if roll < 0.6:
            items.append(_good_object(doc_id, rng))
            expected.accepted.add(doc_id)
        elif roll < 0.8:
            items.append({"doc_id": doc_id, "text": sentence(rng), "rating": float("inf")})
            expected.quarantine("array.json", "rating_out_of_range")
        else:
            items.append(rng.choice([[1, 2], "just a string", 42]))
            expected.quarantine("array.json", "malformed_json")
    (folder / "array.json").write_text(json.dumps(items))
    expected.classes.setdefault("json_array_mixed", "array.json")

    # CSV: record separators of other standards inside unquoted fields, one stray quote, a ragged row.
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["doc_id", "text", "rating"])
    stray_at = rng.randint(1, 6)
    csv_rows = rng.randint(8, 14)
    for i in range(csv_rows):
        doc_id = f"{prefix}-c{i}"
        if i == stray_at:
            buffer.write(f'{doc_id},"an unclosed quote swallows what follows,3\n')
            expected.quarantine("table.csv", "malformed_csv")
            continue
        if i == stray_at + 2:
            buffer.write(f"{doc_id},too,many,fields\n")
            expected.quarantine("table.csv", "malformed_csv")
            continue
        separator = rng.choice(CSV_FIELD_SEPARATORS)
        text = sentence(rng).replace(" ", separator, 1)
        rating = rng.choice(["4", "", "inf", "1e400"])
        writer.writerow([doc_id, text, rating])
        if rating in ("inf", "1e400"):
            expected.quarantine("table.csv", "rating_out_of_range")
        else:
            expected.accepted.add(doc_id)
            expected.texts[doc_id] = text
    (folder / "table.csv").write_text(buffer.getvalue(), newline="")
    expected.classes.setdefault("csv_unicode_separators", "table.csv")
    expected.classes.setdefault("csv_unclosed_quote", "table.csv")

    # A binary file under a text suffix, and files that are never read (each must be listed with a reason).
    (folder / "image.csv").write_bytes(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(rng.randrange(256) for _ in range(64))
    )
    expected.quarantine("image.csv", "unsupported_encoding")
    expected.classes.setdefault("binary_as_csv", "image.csv")
    (folder / "notes.txt").write_text("not an input\n")
    (folder / "dump.jsonl.bz2").write_bytes(b"BZh91AY&SY")
    (folder / ".partial.jsonl").write_text('{"doc_id": "hidden", "text": "x"}\n')
    (folder / "_scratch.jsonl").write_text('{"doc_id": "scratch", "text": "x"}\n')
    expected.skipped.update(
        {"notes.txt": "unsupported", "dump.jsonl.bz2": "bzip2", ".partial.jsonl": "hidden", "_scratch.jsonl": "'_'"}
    )
    for name in ("txt_file", "bz2_file", "hidden_file", "underscore_file"):
        expected.classes.setdefault(name, "skipped")
    outside = folder.parent.parent / f"outside-{seed}.jsonl"
    outside.write_text(json.dumps({"doc_id": "outside", "text": "from elsewhere"}) + "\n")
    (folder / "link-out.jsonl").symlink_to(outside)
    expected.skipped["link-out.jsonl"] = "outside"
    expected.classes.setdefault("symlink_outside_raw", "skipped")
    return expected
