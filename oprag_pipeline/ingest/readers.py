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
import os
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
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
REASON_DATE_OUT_OF_RANGE = "date_out_of_range"
REASON_RATING_OUT_OF_RANGE = "rating_out_of_range"
REASON_INVALID_DOC_ID = "invalid_doc_id"
REASON_INVALID_TEXT = "invalid_text_type"
REASON_UNSTORABLE_VALUE = "unstorable_value"
REASON_JSON_TOO_DEEP = "json_too_deep"
REASON_RECORD_TOO_LARGE = "record_too_large"
REASON_FILE_TOO_LARGE = "file_too_large"
REASON_UNSUPPORTED_ENCODING = "unsupported_encoding"
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
    REASON_DATE_OUT_OF_RANGE,
    REASON_RATING_OUT_OF_RANGE,
    REASON_INVALID_DOC_ID,
    REASON_INVALID_TEXT,
    REASON_UNSTORABLE_VALUE,
    REASON_JSON_TOO_DEEP,
    REASON_RECORD_TOO_LARGE,
    REASON_FILE_TOO_LARGE,
    REASON_UNSUPPORTED_ENCODING,
)

# Why files are not read at all: listed, never silently ignored.
SKIP_HIDDEN = "hidden file (name starts with '.'): editors and partial downloads"
SKIP_UNDERSCORE = "name starts with '_': reserved for work files"
SKIP_SYMLINK_OUTSIDE = "symbolic link to a path outside data/raw"
SKIP_NOT_A_FILE = "not a regular file"

# Limits, each chosen so that no legitimate opinion record comes near it while a hostile one cannot exhaust memory
# or the interpreter's stack:
# - JSON nesting: 64 levels. No opinion record needs more than a handful (gold opinions are 3 deep); the stdlib's
#   encoder and decoder recurse and raise RecursionError near 1,000 levels, orjson refuses beyond 1,024, and a
#   limit well under both keeps every later json.dumps / DuckDB JSON cast safe.
MAX_JSON_DEPTH = 64
# - One record (a JSON line, a CSV record): 64 MiB. Texts are capped far lower by max_text_chars (default 100k
#   characters, at most 4 bytes each), so a bigger record can only be quarantined; refusing it before parsing keeps
#   memory bounded by the record rather than by what the parser builds from it.
MAX_RECORD_BYTES = 64 * 1024 * 1024
# - A `.json` array file is split into its elements by a streaming scanner and each element parsed on its own, so
#   memory is bounded by the largest element (see MAX_RECORD_BYTES), never by the file.
# Ratings are scales (stars, scores, votes): later stages round them and cast to a 32-bit INTEGER, so anything
# beyond a billion is certainly not a rating and would fail there; refusing it here keeps later stages safe.
MAX_ABS_RATING = 1e9
# Python's datetime (and so the accepted schema) holds years 1..9999; epoch numbers beyond that are refused.

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
    if isinstance(value, date):  # a Parquet date32 column
        return datetime(value.year, value.month, value.day)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return None
        seconds = value / 1000 if abs(value) > 1e11 else value  # epoch milliseconds or seconds
        try:
            return datetime.fromtimestamp(seconds, tz=UTC).replace(tzinfo=None)
        except (OverflowError, OSError, ValueError) as error:
            raise RowError(
                REASON_DATE_OUT_OF_RANGE, f"created_at {value!r} is outside years 1..9999 as epoch (milli)seconds"
            ) from error
    if not isinstance(value, str):
        raise RowError(REASON_BAD_DATE, f"created_at is a {type(value).__name__}, not a date or a number")
    text = value.strip()
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    except ValueError:
        pass
    except OverflowError as error:  # a valid date whose UTC shift leaves years 1..9999 (0001-01-01T00:00+01:00)
        raise RowError(REASON_DATE_OUT_OF_RANGE, f"created_at {text[:60]!r} is outside years 1..9999") from error
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise RowError(REASON_BAD_DATE, f"created_at {text[:60]!r} is not an ISO-8601 or recognised date")


def _parse_rating(value: Any) -> float | None:
    """A finite number within MAX_ABS_RATING; NaN means absent (pandas and Parquet write it for a missing value)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RowError(REASON_BAD_RATING, f"rating is a {type(value).__name__}, not a number")
    try:
        rating = float(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise RowError(REASON_BAD_RATING, f"rating {str(value)[:40]!r} is not a number") from error
    if math.isnan(rating):
        if isinstance(value, str) and value.strip().lower() not in ("nan", "na", "n/a"):
            raise RowError(REASON_BAD_RATING, f"rating {value[:40]!r} is not a number")
        return None
    if not math.isfinite(rating) or abs(rating) > MAX_ABS_RATING:
        raise RowError(
            REASON_RATING_OUT_OF_RANGE, f"rating {str(value)[:40]!r} is beyond ±{MAX_ABS_RATING:.0e}, not a rating"
        )
    return rating


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict | list):
        return _dumps(value)  # JSON rather than Python's repr, so the stored value can be parsed back
    text = str(value).strip()
    return text or None


def _is_blank(text: str) -> bool:
    """True when nothing readable is left: only whitespace, zero-width, format or control characters."""
    return all(char.isspace() or unicodedata.category(char)[0] in ("C", "Z") for char in text)


def _doc_id(value: Any) -> str | None:
    """doc_id as text: strings and integers only; a float, bool, list or object id is ambiguous or an error."""
    if value is None or isinstance(value, str):
        return _optional_str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    raise RowError(REASON_INVALID_DOC_ID, f"doc_id is a {type(value).__name__} ({str(value)[:40]}), not text")


def _check_storable(key: str, value: Any, depth: int = 0) -> None:
    """Extra and author columns are stored as JSON: infinities and NaN inside them are not JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        raise RowError(REASON_UNSTORABLE_VALUE, f"column {key!r} holds {value!r}, which JSON cannot store")
    if depth > MAX_JSON_DEPTH:
        raise RowError(REASON_JSON_TOO_DEEP, f"column {key!r} is nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, dict):
        for inner in value.values():
            _check_storable(key, inner, depth + 1)
    elif isinstance(value, list):
        for inner in value:
            _check_storable(key, inner, depth + 1)


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
    doc_id = _doc_id(raw.get("doc_id"))
    if doc_id is None:
        raise RowError(REASON_MISSING_DOC_ID, "doc_id is missing or empty")
    text_value = raw.get("text")
    if text_value is not None and not isinstance(text_value, str) and not _is_missing_number(text_value):
        raise RowError(REASON_INVALID_TEXT, f"text of doc_id {doc_id!r} is a {type(text_value).__name__}, not a string")
    text = text_value.strip() if isinstance(text_value, str) else None
    if not text or _is_blank(text):
        raise RowError(REASON_MISSING_TEXT, f"text is missing, empty or invisible for doc_id {doc_id!r}")
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
        if value is None or (value.__class__ is float and math.isnan(value)):
            continue
        if value.__class__ is not str:
            _check_storable(key, value)
        if key in _CORE_SET:
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


def _is_missing_number(value: Any) -> bool:
    """A NaN in a text column is how pandas and Parquet writers spell a missing value."""
    return isinstance(value, float) and math.isnan(value)


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


def detect_encoding(head: bytes) -> str:
    """The codec of a text file from its first bytes: a BOM, or the NUL pattern of BOM-less UTF-16/32.

    Raises RowError(unsupported_encoding) for content with NUL bytes in no Unicode pattern (an image, a zip, a
    spreadsheet saved under a .csv name): decoding it as UTF-8 would quarantine every "line" for a wrong reason.
    """
    for bom, codec in (
        (b"\xff\xfe\x00\x00", "utf-32"),
        (b"\x00\x00\xfe\xff", "utf-32"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if head.startswith(bom):
            return codec
    if b"\x00" not in head:
        return "utf-8"
    sample = head[: len(head) - len(head) % 4]
    even_nul = sample[0::2].count(0) / max(1, len(sample[0::2]))
    odd_nul = sample[1::2].count(0) / max(1, len(sample[1::2]))
    # ASCII-range text in UTF-16 has a NUL in every other byte; 0.9 leaves room for some non-Latin characters.
    if odd_nul > 0.9 and even_nul < 0.1:
        return "utf-16-le"
    if even_nul > 0.9 and odd_nul < 0.1:
        return "utf-16-be"
    raise RowError(
        REASON_UNSUPPORTED_ENCODING,
        "file holds NUL bytes but is neither UTF-8, UTF-16 nor UTF-32 (binary content?); save it as UTF-8 text",
    )


def _head(path: Path, size: int = 4096) -> bytes:
    with _open_bytes(path) as handle:
        return handle.read(size)


def _utf8_lines(path: Path, codec: str) -> Iterator[bytes]:
    """Physical lines as UTF-8 bytes whatever the file's Unicode encoding; only \n (and \r\n) end a line."""
    with _open_bytes(path) as handle:
        if codec == "utf-8":
            yield from handle
            return
        text = io.TextIOWrapper(handle, encoding=codec, errors="strict", newline="")
        pending = ""
        for chunk in iter(lambda: text.read(1 << 20), ""):
            pending += chunk
            *complete, pending = pending.split("\n")
            for line in complete:
                yield (line + "\n").encode("utf-8", "surrogatepass")
        if pending:
            yield pending.encode("utf-8", "surrogatepass")


def _encoding_or_refusal(path: Path) -> tuple[str | None, RawRow | None]:
    try:
        return detect_encoding(_head(path)), None
    except RowError as error:
        return None, RawRow(1, None, error, "")


def _iter_jsonl(path: Path) -> Iterator[RawRow]:
    codec, refusal = _encoding_or_refusal(path)
    if refusal is not None:
        yield refusal
        return
    assert codec is not None
    for number, line in enumerate(_utf8_lines(path, codec), start=1):
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if len(line) > MAX_RECORD_BYTES:
            yield RawRow(
                number,
                None,
                RowError(REASON_RECORD_TOO_LARGE, f"line of {len(line):,} bytes (limit {MAX_RECORD_BYTES:,})"),
                _text(line[:10_000]),
            )
            continue
        if not line.strip():
            continue
        try:
            parsed = orjson.loads(line)  # also rejects invalid UTF-8, so valid rows need no second check
        except orjson.JSONDecodeError:
            yield _diagnose_json_line(number, line)
            continue
        if not isinstance(parsed, dict):
            yield RawRow(number, None, RowError(REASON_MALFORMED_JSON, "line is JSON but not an object"), _text(line))
            continue
        yield RawRow(number, parsed, None, "", may_hold_undecodable=False)


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").rstrip("\r\n")


def _diagnose_json_line(number: int, line: bytes) -> RawRow:
    """The slow path for a line the fast parser refused: say precisely why, or accept what the stdlib accepts."""
    try:
        text = line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        return RawRow(number, None, RowError(REASON_UNDECODABLE, f"invalid UTF-8 at byte {error.start}"), _text(line))
    try:
        parsed = json.loads(text)
    except RecursionError:
        return RawRow(
            number,
            None,
            RowError(REASON_JSON_TOO_DEEP, f"nested too deep to parse (records may nest {MAX_JSON_DEPTH} levels)"),
            _text(line),
        )
    except json.JSONDecodeError as error:
        return RawRow(
            number, None, RowError(REASON_MALFORMED_JSON, f"{error.msg} at column {error.colno}"), _text(line)
        )
    if not isinstance(parsed, dict):
        return RawRow(number, None, RowError(REASON_MALFORMED_JSON, "line is JSON but not an object"), _text(line))
    # e.g. an escaped lone surrogate (\\udc80) or an integer beyond 64 bits, which orjson refuses and the stdlib
    # decodes; normalise_record then rejects what cannot be stored
    return RawRow(number, parsed, None, _text(line), may_hold_undecodable=True)


def _iter_json_array(path: Path) -> Iterator[RawRow]:
    """A `.json` file may be a single array of objects, or JSON Lines with the wrong suffix."""
    codec, refusal = _encoding_or_refusal(path)
    if refusal is not None:
        yield refusal
        return
    assert codec is not None
    with _open_bytes(path) as handle:
        head = handle.read(4096)
    head_text = head.decode(codec, errors="ignore") if codec != "utf-8" else head.decode("utf-8", errors="ignore")
    if not head_text.lstrip("\ufeff \t\r\n").startswith("["):
        yield from _iter_jsonl(path)
        return
    for number, element, problem in split_json_array(_utf8_chunks(path, codec)):
        if problem is not None:
            yield RawRow(number, None, problem, _text(element[:10_000]))
        else:
            yield _parse_array_element(number, element)


def _utf8_chunks(path: Path, codec: str, size: int = 1 << 20) -> Iterator[bytes]:
    """The file's bytes in chunks, transcoded to UTF-8 when it is UTF-16/32 (a UTF-8 BOM is left to the caller)."""
    with _open_bytes(path) as handle:
        if codec == "utf-8":
            yield from iter(lambda: handle.read(size), b"")
            return
        text = io.TextIOWrapper(handle, encoding=codec, errors="strict", newline="")
        for chunk in iter(lambda: text.read(size), ""):
            yield chunk.lstrip("\ufeff").encode("utf-8", "surrogatepass")


_ARRAY_TOKEN = re.compile(rb'["\[\]{},]')
_STRING_TOKEN = re.compile(rb'["\\]')
_CLOSER = {ord("]"): ord("["), ord("}"): ord("{")}
_WHITESPACE = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"


def split_json_array(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes, RowError | None]]:
    """(element number, element bytes, problem or None) for each top-level element of a JSON array, streamed.

    A scanner over the raw bytes: it tracks strings (with their escapes) and bracket nesting, nothing else, so it
    needs no recursion and holds one element at a time, however large the file. Each element is then parsed on
    its own (`_parse_array_element`), so one bad record is one quarantined row and the rest of the file is read.
    Problems found here: an element nested deeper than `MAX_JSON_DEPTH` (not parsed at all), one larger than
    `MAX_RECORD_BYTES` (only its first 10,000 bytes are kept, for the quarantine), an empty element (a stray
    comma), brackets that do not match (the rest of the file is one row: it cannot be split reliably), content
    after the closing bracket and a file that ends inside the array.
    """
    opened = closed = broken = False
    in_string = escaped = False
    stack = bytearray()  # the brackets open inside the current element
    element = bytearray()  # the current element (its first MAX_RECORD_BYTES)
    size = deepest = 0  # the current element's length and deepest nesting
    number = 0
    reason = ""

    def take(chunk: bytes, begin: int, end: int) -> None:
        nonlocal size
        size += max(0, end - begin)
        room = MAX_RECORD_BYTES - len(element)
        if room > 0 and end > begin:
            element.extend(chunk[begin : min(end, begin + room)])

    def finish(terminator: int) -> tuple[int, bytes, RowError | None] | None:
        nonlocal number, size, deepest
        content = bytes(element).strip(_WHITESPACE)
        length, depth = size, deepest
        element.clear()
        size = deepest = 0
        if not content and length <= MAX_RECORD_BYTES:
            if terminator == ord("]") and number == 0:
                return None  # `[]`
            number += 1
            return number, b"", RowError(REASON_MALFORMED_JSON, "empty array element (a stray comma)")
        number += 1
        if length > MAX_RECORD_BYTES:
            detail = f"array element of {length:,} bytes (limit {MAX_RECORD_BYTES:,})"
            return number, content, RowError(REASON_RECORD_TOO_LARGE, detail)
        if depth - 1 > MAX_JSON_DEPTH:  # the levels below the record itself, as `_check_storable` counts them
            detail = f"array element nested {depth:,} levels deep (records may nest {MAX_JSON_DEPTH} levels)"
            return number, content, RowError(REASON_JSON_TOO_DEEP, detail)
        return number, content, None

    head = b""  # the bytes before the opening bracket: a UTF-8 BOM and whitespace, possibly over several chunks
    for chunk in chunks:
        if not opened:
            head += chunk
            if len(head) < len(_BOM) and _BOM.startswith(head):
                continue
            chunk = head.removeprefix(_BOM).lstrip(_WHITESPACE)
            head = b""
            if not chunk:
                continue
            opened = True
            if chunk.startswith(b"["):
                chunk = chunk[1:]
            else:
                broken, reason = True, "file is JSON but not an array"
        if closed and not broken:
            chunk = chunk.lstrip(_WHITESPACE)
            if chunk:
                broken, reason = True, "content after the array's closing bracket"
        if broken:
            take(chunk, 0, len(chunk))
            continue
        position = begin = 0
        end = len(chunk)
        while position < end:
            if in_string:
                if escaped:
                    escaped, position = False, position + 1
                    continue
                match = _STRING_TOKEN.search(chunk, position)
                if match is None:
                    break
                position = match.end()
                if match.group() == b"\\":
                    escaped = True
                else:
                    in_string = False
                continue
            match = _ARRAY_TOKEN.search(chunk, position)
            if match is None:
                break
            token, position = match.group()[0], match.end()
            if token == ord('"'):
                in_string = True
            elif token in (ord("["), ord("{")):
                stack.append(token)
                deepest = max(deepest, len(stack))
            elif token == ord(",") and stack:
                continue
            elif token in _CLOSER and stack:
                if stack.pop() != _CLOSER[token]:
                    broken, reason = True, f"brackets do not match in element {number + 1}"
                    break
            elif token == ord("}"):
                broken, reason = True, f"a closing brace with nothing open in element {number + 1}"
                break
            else:  # a top-level ',' or the array's closing ']'
                take(chunk, begin, match.start())
                begin = position
                result = finish(token)
                if result is not None:
                    yield result
                if token == ord("]"):
                    closed = True
                    rest = chunk[position:].lstrip(_WHITESPACE)
                    if rest:
                        broken, reason = True, "content after the array's closing bracket"
                        take(rest, 0, len(rest))
                    break
        if not closed:
            take(chunk, begin, end)
    if not opened and head.strip(_WHITESPACE):
        broken, reason = True, "file is JSON but not an array"
        element.extend(head)
    if broken:
        number += 1
        detail = f"{reason}: the rest of the file cannot be split into records"
        yield number, bytes(element), RowError(REASON_MALFORMED_JSON, detail)
    elif opened and not closed:
        detail = "file ends inside the array, before its closing bracket (truncated?)"
        if not stack and not in_string and bytes(element).strip(_WHITESPACE):
            last = finish(ord(","))  # the last element is whole: read it, then record the missing bracket
            assert last is not None
            yield last
            detail = "file ends before the array's closing bracket (truncated?)"
        number += 1
        yield number, bytes(element).strip(_WHITESPACE), RowError(REASON_MALFORMED_JSON, detail)


def _parse_array_element(number: int, element: bytes) -> RawRow:
    """One element of a JSON array: an object is a record, anything else is quarantined with the reason."""
    try:
        parsed = orjson.loads(element)
    except orjson.JSONDecodeError:
        return _diagnose_json_line(number, element)
    if not isinstance(parsed, dict):
        return RawRow(number, None, RowError(REASON_MALFORMED_JSON, "array element is not an object"), _text(element))
    return RawRow(number, parsed, None, "", may_hold_undecodable=False)


def _dump_any(value: Any) -> str:
    try:
        return json.dumps(value, default=str, ensure_ascii=False)[:10_000]
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} too deep to show>"


def _csv_lines(data: bytes, codec: str) -> tuple[list[str], bool]:
    """Physical lines of a CSV, split only where CSV ends a record: \n, \r\n or \r.

    str.splitlines would also split on \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and \u2029, which are ordinary
    characters inside a field; StringIO with newline="" knows only the three real line ends.
    """
    clean = True
    if codec == "utf-8":
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            # surrogateescape keeps undecodable bytes addressable so one bad row does not lose the file.
            text = data.decode("utf-8", errors="surrogateescape")
            clean = False
    else:
        text = data.decode(codec).lstrip("\ufeff")
    return list(io.StringIO(text, newline="")), clean


def _iter_csv(path: Path) -> Iterator[RawRow]:
    """CSV with a header row. Row numbers are physical line numbers where the record starts.

    A record that spans several lines and still fails (an unclosed quote swallows every following record until
    the end of the file or the next stray quote) is quarantined as its first line only, and parsing restarts on
    the next line, so one stray quote costs one row, not the rest of the file.
    """
    delimiter = "\t" if _logical_suffix(path) == ".tsv" else ","
    with _open_bytes(path) as handle:
        data = handle.read()
    try:
        codec = detect_encoding(data[:4096])
    except RowError as error:
        yield RawRow(1, None, error, "")
        return
    lines, clean = _csv_lines(data, codec)
    del data
    csv.field_size_limit(sys.maxsize)
    if not lines:
        return
    try:
        header = next(csv.reader(lines[:1], delimiter=delimiter, strict=True))
    except (csv.Error, StopIteration) as error:
        yield RawRow(1, None, RowError(REASON_MALFORMED_CSV, f"header: {error}"), _printable(lines[0]))
        return
    header = [name.strip() for name in header]
    position = 1  # index into `lines` of the next record's first line
    while position < len(lines):
        base = position
        reader = csv.reader((lines[i] for i in range(base, len(lines))), delimiter=delimiter, strict=True)
        while True:
            start = position
            try:
                values = next(reader)
            except StopIteration:
                position = len(lines)
                break
            except csv.Error as error:
                end = base + reader.line_num
                yield _csv_failure(lines, start, end, str(error))
                position = start + 1 if end - start > 1 else max(end, start + 1)
                break  # a fresh reader from `position`: the failed one may be mid-quote
            end = base + reader.line_num
            position = end
            if not values or (len(values) == 1 and not values[0].strip()):
                continue
            if len(values) != len(header):
                yield _csv_failure(lines, start, end, f"{len(values)} fields where the header has {len(header)}")
                if end - start > 1:
                    position = start + 1
                    break
                continue
            raw = "".join(lines[start:end])
            if len(raw) > MAX_RECORD_BYTES:
                yield RawRow(
                    start + 1,
                    None,
                    RowError(REASON_RECORD_TOO_LARGE, f"record of {len(raw):,} characters"),
                    _printable(raw[:10_000]),
                )
                continue
            if not clean and any(_has_surrogates(v) for v in values):
                yield RawRow(
                    start + 1,
                    None,
                    RowError(REASON_UNDECODABLE, "row holds bytes that are not valid UTF-8"),
                    _printable(raw),
                )
                continue
            row = {k: (v if v != "" else None) for k, v in zip(header, values, strict=True)}
            yield RawRow(start + 1, row, None, raw, may_hold_undecodable=False)


def _csv_failure(lines: list[str], start: int, end: int, problem: str) -> RawRow:
    """A failed record; when it spanned several lines only its first line is blamed (the rest is re-read)."""
    if end - start > 1:
        return RawRow(
            start + 1,
            None,
            RowError(
                REASON_MALFORMED_CSV,
                f"{problem}; the record starting here ran over {end - start} lines (an unclosed quote?), "
                "so only this line is quarantined and the lines after it are read again",
            ),
            _printable(lines[start]),
        )
    return RawRow(start + 1, None, RowError(REASON_MALFORMED_CSV, problem), _printable("".join(lines[start:end])))


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


_OTHER_COMPRESSIONS = {".bz2": "bzip2", ".xz": "xz", ".zst": "zstandard", ".zip": "zip", ".7z": "7-zip"}


@dataclass(frozen=True)
class SkippedFile:
    """A file in a domain folder that is not read, and why: shown in the asset's metadata and the run log."""

    file: str
    reason: str


def scan_input_files(domain_dir: Path, raw_root: Path | None = None) -> tuple[list[Path], list[SkippedFile]]:
    """(input files in a stable order, every other file with the reason it is not read).

    The order decides which of two conflicting rows wins. Links are followed only where they stay inside
    `raw_root` (default: the domain folder's parent, i.e. data/raw), so a link cannot pull outside files into
    the warehouse.
    """
    root = (raw_root or domain_dir.parent).resolve()
    inputs: list[Path] = []
    skipped: list[SkippedFile] = []
    for folder, dirnames, filenames in os.walk(domain_dir, followlinks=False):
        folder_path = Path(folder)
        for name in sorted(dirnames):
            path = folder_path / name
            relative = str(path.relative_to(domain_dir))
            if path.is_symlink():
                dirnames.remove(name)
                skipped.append(SkippedFile(relative + "/", "symbolic link to a folder: not followed"))
            elif name.startswith((".", "_")):
                dirnames.remove(name)
                skipped.append(SkippedFile(relative + "/", SKIP_HIDDEN if name[0] == "." else SKIP_UNDERSCORE))
        dirnames.sort()
        for name in filenames:
            path = folder_path / name
            relative = str(path.relative_to(domain_dir))
            reason = _skip_reason(path, name, root)
            if reason is None:
                inputs.append(path)
            else:
                skipped.append(SkippedFile(relative, reason))
    inputs.sort()
    skipped.sort(key=lambda item: item.file)
    return inputs, skipped


def _skip_reason(path: Path, name: str, root: Path) -> str | None:
    if name.startswith("."):
        return SKIP_HIDDEN
    if name.startswith("_"):
        return SKIP_UNDERSCORE
    if path.is_symlink():
        target = path.resolve()
        if not target.is_relative_to(root):
            return f"{SKIP_SYMLINK_OUTSIDE} ({target})"
    if not path.is_file():
        return SKIP_NOT_A_FILE
    suffix = path.suffix.lower()
    if suffix in _OTHER_COMPRESSIONS:
        return f"compressed with {_OTHER_COMPRESSIONS[suffix]}: only gzip (.gz) is read; decompress it or use gzip"
    logical = _logical_suffix(path)
    if logical not in SUPPORTED_SUFFIXES:
        shown = logical or "(none)"
        return f"unsupported file type {shown!r}: inputs are {', '.join(SUPPORTED_SUFFIXES)}, optionally gzipped"
    return None


def list_input_files(domain_dir: Path) -> list[Path]:
    """Input files of a domain in a stable order (see `scan_input_files` for those that are not)."""
    return scan_input_files(domain_dir)[0]


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
    skipped_files: list[SkippedFile] = field(default_factory=list)

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
    inputs, skipped_files = scan_input_files(domain_dir)
    for path in inputs:
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
                    except (ValueError, TypeError, OverflowError, RecursionError) as unexpected:
                        # a value no rule above foresaw: this row only, never the rest of the file
                        error = RowError(REASON_UNSTORABLE_VALUE, f"{type(unexpected).__name__}: {unexpected}")
                if error is not None:
                    file_stats.quarantined += 1
                    quarantined.append(
                        QuarantinedRow(relative, number, error.reason, error.detail[:2000], raw or _dump(parsed))
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
    return DomainReadResult(files=stats, quarantined=quarantined, skipped_files=skipped_files)


def _dump(parsed: dict[str, Any] | None) -> str:
    if parsed is None:
        return ""
    try:
        return json.dumps(parsed, default=str, ensure_ascii=False)
    except (RecursionError, ValueError):
        return _dump_any(repr(parsed)[:10_000])
