"""The input contract for one row: the accepted schema, why a row may be refused, and how a parsed row is checked
and normalised.

A row that cannot be accepted raises `RowError` with a reason from the closed vocabulary `QUARANTINE_REASONS`, and
ends in the quarantine as a `QuarantinedRow`; the limits below bound what any one record may cost.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa

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


def has_surrogates(value: str) -> bool:
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
            if isinstance(value, str) and has_surrogates(value):
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
