"""Reading one domain's input files into the input contract, losing nothing.

Every physical row of every file ends in exactly one of three places: accepted, quarantined (with file, row
number, reason and the raw content), or collapsed as an exact duplicate of an accepted row. The counts per
file are returned so the warehouse can prove `rows read = accepted + quarantined + duplicates`.

The readers are plain Python rather than DuckDB's `read_json` / `read_csv` because those either stop at the
first malformed line or skip it silently (`ignore_errors`), and we must name every bad row and keep it.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

SUPPORTED_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet")
CORE_FIELDS = ("doc_id", "text", "title", "entity_scope", "author_id", "created_at", "rating")

# Reasons are a closed vocabulary so the quarantine table can be grouped and alerted on.
REASON_MISSING_DOC_ID = "missing_doc_id"
REASON_MISSING_TEXT = "missing_text"
REASON_UNDECODABLE = "undecodable_bytes"
REASON_MALFORMED_JSON = "malformed_json"
REASON_MALFORMED_CSV = "malformed_csv"
REASON_TEXT_TOO_LONG = "text_too_long"
REASON_BAD_DATE = "unparsable_date"
REASON_BAD_RATING = "unparsable_rating"
REASON_CONFLICTING_DOC_ID = "conflicting_doc_id"
REASON_UNREADABLE_FILE = "unreadable_file"
QUARANTINE_REASONS = (
    REASON_MISSING_DOC_ID,
    REASON_MISSING_TEXT,
    REASON_UNDECODABLE,
    REASON_MALFORMED_JSON,
    REASON_MALFORMED_CSV,
    REASON_TEXT_TOO_LONG,
    REASON_BAD_DATE,
    REASON_BAD_RATING,
    REASON_CONFLICTING_DOC_ID,
    REASON_UNREADABLE_FILE,
)

_DATE_FORMATS = ("%b %d, %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y", "%Y/%m/%d", "%Y%m%d")


class RowError(ValueError):
    """A row that cannot be accepted; `reason` is one of QUARANTINE_REASONS."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class QuarantinedRow:
    file: str
    row_number: int
    reason: str
    detail: str
    raw: str


@dataclass
class FileStats:
    file: str
    size_bytes: int
    sha256: str
    rows_read: int = 0
    accepted: int = 0
    quarantined: int = 0
    duplicates: int = 0


@dataclass
class DomainBatch:
    """Accepted rows as columns, ready to become an Arrow table."""

    columns: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in ACCEPTED_SCHEMA.names})

    def __len__(self) -> int:
        return len(self.columns["doc_id"])

    def to_arrow(self) -> pa.Table:
        return pa.table(self.columns, schema=ACCEPTED_SCHEMA)


ACCEPTED_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("text", pa.string()),
        ("title", pa.string()),
        ("entity_scope", pa.string()),
        ("author_id", pa.string()),
        ("created_at", pa.timestamp("us")),
        ("rating", pa.float64()),
        ("author_attributes", pa.string()),  # JSON object of the author_* columns
        ("extra", pa.string()),  # JSON object of every other column (gold labels, votes, aspect ratings)
        ("content_hash", pa.string()),
        ("source_file", pa.string()),
        ("source_row", pa.int64()),
    ]
)


def parse_date(value: Any) -> datetime | None:
    """ISO-8601 first (what our importers write), then a few unambiguous human formats.

    Day-first versus month-first numeric dates (01/02/2020) are deliberately not guessed: a wrong guess would
    silently move opinions across time, so such values are quarantined instead.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return None
        seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds or seconds
        return datetime.fromtimestamp(seconds, tz=UTC).replace(tzinfo=None)
    text = str(value).strip()
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise RowError(REASON_BAD_DATE, f"created_at {text[:60]!r} is not an ISO-8601 or recognised date")


def _parse_rating(value: Any) -> float | None:
    if value is None or value == "":
        return None
    try:
        rating = float(value)
    except (TypeError, ValueError) as error:
        raise RowError(REASON_BAD_RATING, f"rating {str(value)[:40]!r} is not a number") from error
    return None if math.isnan(rating) else rating


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    text = str(value).strip()
    return text or None


def _has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def content_hash(record: dict[str, Any]) -> str:
    """Hash of everything that later stages derive from, so metadata edits also count as changes."""
    payload = "\x1f".join(
        "" if record[name] is None else str(record[name])
        for name in ("text", "title", "entity_scope", "author_id", "created_at", "rating", "author_attributes", "extra")
    )
    return hashlib.blake2b(payload.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def normalise_record(raw: dict[str, Any], *, max_text_chars: int, check_surrogates: bool = True) -> dict[str, Any]:
    """Map one parsed row onto the input contract or raise RowError saying why it cannot be.

    `check_surrogates` may be turned off by a reader that already knows its row decoded cleanly, which saves
    re-encoding every string of every row on the hot path.
    """
    doc_id = _optional_str(raw.get("doc_id"))
    if doc_id is None:
        raise RowError(REASON_MISSING_DOC_ID, "doc_id is missing or empty")
    text_value = raw.get("text")
    text = text_value.strip() if isinstance(text_value, str) else _optional_str(text_value)
    if not text:
        raise RowError(REASON_MISSING_TEXT, f"text is missing or empty for doc_id {doc_id!r}")
    if len(text) > max_text_chars:
        raise RowError(
            REASON_TEXT_TOO_LONG, f"text of doc_id {doc_id!r} has {len(text):,} characters (limit {max_text_chars:,})"
        )
    if check_surrogates:
        for key, value in raw.items():
            if isinstance(value, str) and _has_surrogates(value):
                raise RowError(REASON_UNDECODABLE, f"column {key!r} holds bytes that are not valid UTF-8")
    created_at = parse_date(raw.get("created_at"))
    rating = _parse_rating(raw.get("rating"))
    author_attributes = {}
    extra = {}
    for key, value in raw.items():
        if key in _CORE_SET or value is None or (value.__class__ is float and math.isnan(value)):
            continue
        if key.startswith("author_"):
            author_attributes[key[7:]] = value
        else:
            extra[key] = value
    record = {
        "doc_id": doc_id,
        "text": text,
        "title": _optional_str(raw.get("title")),
        "entity_scope": _optional_str(raw.get("entity_scope")),
        "author_id": _optional_str(raw.get("author_id")),
        "created_at": created_at,
        "rating": rating,
        "author_attributes": _dumps(author_attributes) if author_attributes else None,
        "extra": _dumps(extra) if extra else None,
    }
    record["content_hash"] = content_hash(record)
    return record


_CORE_SET = frozenset(CORE_FIELDS)


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------------------
# Physical readers: yield a RawRow per physical row (a parsed dict, or the error that stopped parsing)


def _open_bytes(path: Path) -> io.BufferedIOBase:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _logical_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


class RawRow(NamedTuple):
    number: int
    parsed: dict[str, Any] | None
    error: RowError | None
    raw: str
    may_hold_undecodable: bool = True  # False when the reader decoded the row strictly, so no check is needed


def _iter_jsonl(path: Path) -> Iterator[RawRow]:
    with _open_bytes(path) as handle:
        for number, line in enumerate(handle, start=1):
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.strip():
                continue
            try:
                parsed = orjson.loads(line)  # also rejects invalid UTF-8, so valid rows need no second check
            except orjson.JSONDecodeError:
                yield _diagnose_json_line(number, line)
                continue
            if not isinstance(parsed, dict):
                yield RawRow(
                    number, None, RowError(REASON_MALFORMED_JSON, "line is JSON but not an object"), _text(line)
                )
                continue
            yield RawRow(number, parsed, None, "", may_hold_undecodable=False)


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").rstrip("\r\n")


def _diagnose_json_line(number: int, line: bytes) -> RawRow:
    """The slow path for a line the fast parser refused: say precisely why, or accept what the stdlib accepts."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return RawRow(number, None, RowError(REASON_UNDECODABLE, f"invalid UTF-8 at byte {error.start}"), _text(line))
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        return RawRow(
            number, None, RowError(REASON_MALFORMED_JSON, f"{error.msg} at column {error.colno}"), _text(line)
        )
    if not isinstance(parsed, dict):
        return RawRow(number, None, RowError(REASON_MALFORMED_JSON, "line is JSON but not an object"), _text(line))
    # e.g. an escaped lone surrogate (\\udc80), which the stdlib decodes and normalise_record then rejects
    return RawRow(number, parsed, None, _text(line), may_hold_undecodable=True)


def _iter_json_array(path: Path) -> Iterator[RawRow]:
    """A `.json` file may be a single array of objects, or JSON Lines with the wrong suffix."""
    with _open_bytes(path) as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"["):
        yield from _iter_jsonl(path)
        return
    with _open_bytes(path) as handle:
        data = handle.read()
    try:
        items = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        yield RawRow(
            1,
            None,
            RowError(REASON_UNDECODABLE, f"invalid UTF-8 at byte {error.start}"),
            data.decode("utf-8", errors="replace"),
        )
        return
    except json.JSONDecodeError as error:
        yield RawRow(
            1,
            None,
            RowError(REASON_MALFORMED_JSON, f"{error.msg} at line {error.lineno}"),
            data.decode("utf-8", errors="replace"),
        )
        return
    for number, item in enumerate(items, start=1):
        if isinstance(item, dict):
            yield RawRow(number, item, None, "")
        else:
            yield RawRow(
                number,
                None,
                RowError(REASON_MALFORMED_JSON, "array element is not an object"),
                json.dumps(item),
            )


def _iter_csv(path: Path) -> Iterator[RawRow]:
    """CSV with a header row. Row numbers are physical line numbers where the record starts."""
    delimiter = "\t" if _logical_suffix(path) == ".tsv" else ","
    with _open_bytes(path) as handle:
        data = handle.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
        clean = True
    except UnicodeDecodeError:
        # surrogateescape keeps undecodable bytes addressable so one bad row does not lose the file.
        text = data.decode("utf-8", errors="surrogateescape")
        clean = False
    csv.field_size_limit(sys.maxsize)
    lines = text.splitlines(keepends=True)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as error:
        raw = lines[0] if lines else ""
        yield RawRow(
            1,
            None,
            RowError(REASON_MALFORMED_CSV, f"header: {error}"),
            raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
        )
        return
    header = [name.strip() for name in header]
    start_line = reader.line_num + 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            end_line = reader.line_num
            raw = "".join(lines[start_line - 1 : end_line])
            yield RawRow(start_line, None, RowError(REASON_MALFORMED_CSV, str(error)), _printable(raw))
            start_line = end_line + 1
            continue
        end_line = reader.line_num
        raw = "".join(lines[start_line - 1 : end_line])
        number = start_line
        start_line = end_line + 1
        if not values or (len(values) == 1 and not values[0].strip()):
            continue
        if len(values) != len(header):
            yield RawRow(
                number,
                None,
                RowError(REASON_MALFORMED_CSV, f"{len(values)} fields where the header has {len(header)}"),
                _printable(raw),
            )
            continue
        if not clean and any(_has_surrogates(v) for v in values):
            yield RawRow(
                number,
                None,
                RowError(REASON_UNDECODABLE, "row holds bytes that are not valid UTF-8"),
                _printable(raw),
            )
            continue
        row = {k: (v if v != "" else None) for k, v in zip(header, values, strict=True)}
        yield RawRow(number, row, None, raw, may_hold_undecodable=False)


def _iter_parquet(path: Path) -> Iterator[RawRow]:
    parquet = pq.ParquetFile(path)
    number = 0
    for batch in parquet.iter_batches(batch_size=20_000):
        for row in batch.to_pylist():
            number += 1
            for key, value in list(row.items()):
                if isinstance(value, bytes):
                    try:
                        row[key] = value.decode("utf-8")
                    except UnicodeDecodeError:
                        row[key] = value.decode("utf-8", errors="surrogateescape")
            yield RawRow(number, row, None, "")


def _printable(raw: str) -> str:
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace").rstrip("\r\n")


def iter_file_rows(path: Path) -> Iterator[RawRow]:
    suffix = _logical_suffix(path)
    if suffix in (".jsonl", ".ndjson"):
        return _iter_jsonl(path)
    if suffix == ".json":
        return _iter_json_array(path)
    if suffix in (".csv", ".tsv"):
        return _iter_csv(path)
    if suffix == ".parquet":
        return _iter_parquet(path)
    raise ValueError(f"{path}: unsupported file type {suffix!r}; expected one of {', '.join(SUPPORTED_SUFFIXES)}")


def list_input_files(domain_dir: Path) -> list[Path]:
    """Input files of a domain in a stable order (the order decides which of two conflicting rows wins)."""
    files = []
    for path in sorted(domain_dir.rglob("*")):
        if not path.is_file() or any(part.startswith((".", "_")) for part in path.relative_to(domain_dir).parts):
            continue
        if _logical_suffix(path) in SUPPORTED_SUFFIXES:
            files.append(path)
    return files


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class DomainReadResult:
    files: list[FileStats]
    quarantined: list[QuarantinedRow]

    @property
    def rows_read(self) -> int:
        return sum(f.rows_read for f in self.files)

    @property
    def accepted(self) -> int:
        return sum(f.accepted for f in self.files)

    @property
    def duplicates(self) -> int:
        return sum(f.duplicates for f in self.files)


def read_domain(
    domain_dir: Path,
    *,
    max_text_chars: int,
    batch_size: int = 50_000,
    on_batch: Any = None,
    on_file: Any = None,
) -> DomainReadResult:
    """Stream a domain's files, calling `on_batch(pa.Table)` for accepted rows as they fill up.

    Streaming keeps memory flat for million-document domains; the only per-document state held is the
    doc_id → (hash, location) map needed to tell exact duplicates from conflicting ones across files.
    """
    seen: dict[str, tuple[str, str, int]] = {}
    quarantined: list[QuarantinedRow] = []
    stats: list[FileStats] = []
    batch = DomainBatch()
    root = domain_dir
    for path in list_input_files(domain_dir):
        relative = str(path.relative_to(root))
        file_stats = FileStats(file=relative, size_bytes=path.stat().st_size, sha256=file_sha256(path))
        stats.append(file_stats)
        try:
            rows = iter_file_rows(path)
            for number, parsed, error, raw, may_hold_undecodable in rows:
                file_stats.rows_read += 1
                if error is None:
                    assert parsed is not None
                    try:
                        record = normalise_record(
                            parsed, max_text_chars=max_text_chars, check_surrogates=may_hold_undecodable
                        )
                    except RowError as row_error:
                        error = row_error
                if error is not None:
                    file_stats.quarantined += 1
                    quarantined.append(
                        QuarantinedRow(relative, number, error.reason, error.detail, raw or _dump(parsed))
                    )
                    continue
                previous = seen.get(record["doc_id"])
                if previous is not None:
                    if previous[0] == record["content_hash"]:
                        file_stats.duplicates += 1
                    else:
                        file_stats.quarantined += 1
                        quarantined.append(
                            QuarantinedRow(
                                relative,
                                number,
                                REASON_CONFLICTING_DOC_ID,
                                f"doc_id {record['doc_id']!r} was already accepted from {previous[1]} row "
                                f"{previous[2]} with different content",
                                raw or _dump(parsed),
                            )
                        )
                    continue
                seen[record["doc_id"]] = (record["content_hash"], relative, number)
                file_stats.accepted += 1
                columns = batch.columns
                for name in ACCEPTED_SCHEMA.names[:10]:
                    columns[name].append(record[name])
                columns["source_file"].append(relative)
                columns["source_row"].append(number)
                if len(batch) >= batch_size and on_batch is not None:
                    on_batch(batch.to_arrow())
                    batch = DomainBatch()
        except (OSError, EOFError, ValueError, pa.ArrowException) as error:
            # A truncated gzip or a corrupt Parquet footer: keep what was read, quarantine the remainder.
            file_stats.rows_read += 1
            file_stats.quarantined += 1
            quarantined.append(
                QuarantinedRow(
                    relative,
                    file_stats.rows_read,
                    REASON_UNREADABLE_FILE,
                    f"{type(error).__name__}: {error}",
                    "",
                )
            )
        if on_file is not None:
            on_file(file_stats)
    if len(batch) and on_batch is not None:
        on_batch(batch.to_arrow())
    return DomainReadResult(files=stats, quarantined=quarantined)


def _dump(parsed: dict[str, Any] | None) -> str:
    if parsed is None:
        return ""
    return json.dumps(parsed, default=str, ensure_ascii=False)
