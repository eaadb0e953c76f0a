"""Any table of texts -> the input contract, with an explicit column mapping.

Sources: CSV / TSV (`.csv`, `.tsv`, optionally `.gz`), JSON lines (`.jsonl` / `.ndjson`, optionally `.gz`), a
JSON array (`.json`) or Parquet (`.parquet`), or a folder of such files (one output file for all of them).

Options (`text_col` required, the rest optional): `id_col`, `title_col`, `scope_col`, `author_col`,
`date_col`, `rating_col`. A mapped column that is missing from a file is an error for `text_col` (nothing to
import) and a warning otherwise. Unmapped columns whose name starts with `author_` or `rating_` are carried
over unchanged (they are already in the contract's vocabulary); every other unmapped column is dropped, since
the contract gives it no meaning. CSV cells are strings; for `rating_*` columns numeric strings become numbers
because the contract defines them as star ratings; `author_*` values stay as written.

doc_id: the `id_col` value as written (the caller's own ids, so results can be joined back); a row whose id is
empty, or repeats an earlier id, is skipped and recorded. Without `id_col` the id is `row-<hash>`, a hash of the
whole source row, so it is stable across re-imports and machines; identical rows get `-2`, `-3`... in order.

Rows are streamed (CSV through the csv module, Parquet in record batches), so large tables do not need to fit
in memory as a data frame. Dates are normalised to ISO-8601; a date that cannot be read unambiguously leaves
`created_at` null with a warning (day/month order of `01/02/2020` is never guessed).
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from oprag_pipeline.importers.common import (
    ImportContext,
    Rows,
    clean_str,
    list_source_files,
    logical_suffix,
    open_text,
    parse_date,
    short_hash,
    to_number,
)

SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".parquet")
_MAPPED = {
    "id_col": "doc_id",
    "title_col": "title",
    "scope_col": "entity_scope",
    "author_col": "author_id",
    "date_col": "created_at",
    "rating_col": "rating",
}


def _iter_csv(path: Path, delimiter: str) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    csv.field_size_limit(sys.maxsize)
    with open_text(path) as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            header = [name.strip() for name in next(reader)]
        except StopIteration:
            return
        start = reader.line_num + 1
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                yield start, None, f"malformed CSV: {error}"
                start = reader.line_num + 1
                continue
            number, start = start, reader.line_num + 1
            if not values or (len(values) == 1 and not values[0].strip()):
                continue
            if len(values) != len(header):
                yield number, None, f"{len(values)} fields where the header has {len(header)}"
                continue
            yield number, {k: (v if v != "" else None) for k, v in zip(header, values, strict=True)}, None


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as error:
                yield number, None, f"malformed JSON: {error.msg}"
                continue
            if isinstance(item, dict):
                yield number, item, None
            else:
                yield number, None, "line is JSON but not an object"


def _iter_json(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """A JSON array read element by element (the ingest's streaming splitter), so one bad or deeply nested record
    costs its own row and a large file is never held whole; JSON lines saved as `.json` are read as such."""
    from oprag_pipeline.ingest.json_array import split_json_array

    with open_text(path) as handle:
        head = handle.read(4096)
    if not head.lstrip("\ufeff \t\r\n").startswith("["):
        yield from _iter_jsonl(path)  # JSON lines saved as .json
        return
    with open_text(path) as handle:
        chunks = (chunk.encode("utf-8", "surrogatepass") for chunk in iter(lambda: handle.read(1 << 20), ""))
        for number, element, problem in split_json_array(chunks):
            if problem is not None:
                yield number, None, f"{problem.reason}: {problem.detail}"
                continue
            try:
                item = json.loads(element.decode("utf-8", "surrogatepass"))
            except json.JSONDecodeError as error:
                yield number, None, f"malformed JSON: {error.msg}"
                continue
            except RecursionError:
                yield number, None, "nested too deep to parse"
                continue
            yield (number, item, None) if isinstance(item, dict) else (number, None, "array element is not an object")


def _iter_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    number = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=10_000):
        for row in batch.to_pylist():
            number += 1
            yield number, row, None


def iter_records(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line or row number, record or None, problem or None) for one table file."""
    suffix = logical_suffix(path)
    if suffix == ".csv":
        return _iter_csv(path, ",")
    if suffix == ".tsv":
        return _iter_csv(path, "\t")
    if suffix in (".jsonl", ".ndjson"):
        return _iter_jsonl(path)
    if suffix == ".json":
        return _iter_json(path)
    if suffix == ".parquet":
        return _iter_parquet(path)
    raise ValueError(f"{path}: unsupported table type {suffix!r}; expected one of {', '.join(SUFFIXES)}")


TEXT_COLUMN_GUESSES = ("text", "review_text", "review", "body", "content", "comment")
"""Column names taken for the text when `text_col` is not given, if exactly one of them (case-insensitively) is
in the table; anything else is a question for the user."""


def columns(source: Path) -> list[str]:
    """The column names of the first record of the first table file in `source` (empty if none is readable)."""
    for path in list_source_files(source, SUFFIXES):
        try:
            for _number, record, _problem in iter_records(path):
                if record is not None:
                    return [str(name) for name in record]
        except (OSError, UnicodeError, ValueError):
            continue
    return []


def guess_text_column(names: list[str]) -> str | None:
    """The one column among `names` that is plainly the text (see `TEXT_COLUMN_GUESSES`), else None."""
    found = [name for name in names if name.strip().lower() in TEXT_COLUMN_GUESSES]
    return found[0] if len(found) == 1 else None


def _row_hash(record: dict[str, Any]) -> str:
    return short_hash(json.dumps(record, sort_keys=True, ensure_ascii=False, default=str))


def _carry(value: Any, numeric: bool) -> Any:
    """An unmapped author_/rating_ value: JSON-safe, NaN -> null, numeric strings -> numbers for ratings."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if numeric and isinstance(value, str):
        number = to_number(value)
        return number if number is not None else value
    if isinstance(value, str | int | float | bool | list | dict):
        return value
    return str(value)


def convert(
    source: Path,
    ctx: ImportContext,
    *,
    text_col: str | None = None,
    id_col: str | None = None,
    title_col: str | None = None,
    scope_col: str | None = None,
    author_col: str | None = None,
    date_col: str | None = None,
    rating_col: str | None = None,
    **options: Any,
) -> Rows:
    """Rows of one table file or of every table file in a folder, mapped by the `*_col` options."""
    if options:
        raise TypeError(f"unknown table import options {sorted(options)}; known: text_col, {', '.join(_MAPPED)}")
    if not text_col:
        raise ValueError("table import needs text_col= (the column that holds the text)")
    mapping = {
        key: column
        for key, column in {
            "id_col": id_col,
            "title_col": title_col,
            "scope_col": scope_col,
            "author_col": author_col,
            "date_col": date_col,
            "rating_col": rating_col,
        }.items()
        if column
    }
    mapped_columns = {text_col, *mapping.values()}
    files = list_source_files(source, SUFFIXES)
    if source.is_dir() and not files:
        raise ValueError(f"{source}: no {', '.join(SUFFIXES)} files found")
    hash_counts: dict[str, int] = {}
    for path in files:
        name = path.name
        checked = False
        for number, record, problem in ctx.track(iter_records(path), unit="row", desc=name):
            if record is None:
                ctx.skip(name, number, problem or "unreadable row")
                continue
            if not checked:
                checked = True
                if text_col not in record:
                    ctx.skip(name, None, f"text column {text_col!r} not in the file (columns: {', '.join(record)})")
                    break
                for option, column in mapping.items():
                    if column not in record:
                        ctx.warn(name, None, f"{option}={column!r} not in the file; left null")
            text = record.get(text_col)
            text = text.strip() if isinstance(text, str) else clean_str(text)
            if not text:
                ctx.skip(name, number, f"empty {text_col!r}")
                continue
            if "id_col" in mapping:
                doc_id = clean_str(record.get(mapping["id_col"]))
                if doc_id is None:
                    ctx.skip(name, number, f"empty id column {mapping['id_col']!r}")
                    continue
            else:
                digest = _row_hash(record)
                hash_counts[digest] = hash_counts.get(digest, 0) + 1
                doc_id = f"row-{digest}" + (f"-{hash_counts[digest]}" if hash_counts[digest] > 1 else "")
            row: dict[str, Any] = {"doc_id": doc_id, "text": text}
            if "title_col" in mapping:
                row["title"] = clean_str(record.get(mapping["title_col"]))
            if "scope_col" in mapping:
                row["entity_scope"] = clean_str(record.get(mapping["scope_col"]))
            if "author_col" in mapping:
                row["author_id"] = clean_str(record.get(mapping["author_col"]))
            if "date_col" in mapping:
                raw_date = record.get(mapping["date_col"])
                row["created_at"] = parse_date(raw_date)
                if row["created_at"] is None and clean_str(raw_date) is not None:
                    ctx.warn(name, number, f"unparsable date {str(raw_date)[:40]!r}: created_at left null")
            if "rating_col" in mapping:
                raw_rating = record.get(mapping["rating_col"])
                row["rating"] = to_number(raw_rating)
                if row["rating"] is None and clean_str(raw_rating) is not None:
                    ctx.warn(name, number, f"non-numeric rating {str(raw_rating)[:40]!r}: left null")
            for key, value in record.items():
                if key in mapped_columns or key in row:
                    continue
                if key.startswith("author_"):
                    row[key] = _carry(value, numeric=False)
                elif key.startswith("rating_"):
                    row[key] = _carry(value, numeric=True)
            yield name, number, row
