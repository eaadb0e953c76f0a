"""Shared plumbing of the importers: the result type, the atomic JSONL writer, decoding and date parsing.

Every importer is a generator of output rows (plain dicts in the input contract of `data/raw/<domain>/`).
Keeping the importers free of file handling means one writer enforces the contract for all of them: a row
without `doc_id` or `text`, or one whose `doc_id` repeats, never reaches the output file; it is recorded in
`ImportResult.skipped` instead, so an import never loses a record silently.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import hashlib
import io
import itertools
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")

# (file, line or record number, reason)
Problem = tuple[str, int | None, str]
# What every importer yields: (source file name, line or record number, output row).
Rows = Iterator[tuple[str, int | None, dict[str, Any]]]

POLARITIES = ("positive", "negative", "neutral", "conflict")


@dataclass
class ImportResult:
    """What one `run_import` call did.

    `skipped` lists source records that are absent from the output (file, line/record number, reason).
    `warnings` lists records that were written but lost a detail on the way (an unparsable date, a gold
    opinion whose offsets did not match its target): these are worth a look but do not lose documents.
    """

    format: str
    domain: str
    files_written: list[Path]
    documents: int
    skipped: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


@dataclass
class ImportContext:
    """Passed to each importer: collects skipped records and warnings, and wraps iterables in tqdm."""

    progress: bool = False
    skipped: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def skip(self, file: str | Path, number: int | None, reason: str) -> None:
        self.skipped.append((_display(file), number, reason))

    def warn(self, file: str | Path, number: int | None, reason: str) -> None:
        self.warnings.append((_display(file), number, reason))

    def track(self, items: Iterable[T], *, total: int | None = None, unit: str = "it", desc: str = "") -> Iterable[T]:
        """`items` itself when progress is off, so the hot loops pay nothing for the option."""
        if not self.progress:
            return items
        return tqdm(items, total=total, unit=unit, desc=desc, dynamic_ncols=True)


def _display(file: str | Path) -> str:
    return file.name if isinstance(file, Path) else file


# ----------------------------------------------------------------------------------------------------
# Reading


def read_bytes(path: Path) -> bytes:
    """Whole file as bytes, transparently un-gzipped / un-bzipped (recognised by magic number, not suffix)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        return gzip.decompress(raw)
    if raw[:3] == b"BZh":
        return bz2.decompress(raw)
    return raw


def open_binary(path: Path) -> IO[bytes]:
    """A streaming binary handle, un-gzipped / un-bzipped by magic number."""
    with path.open("rb") as probe:
        magic = probe.read(3)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if magic == b"BZh":
        return bz2.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def decode_bytes(raw: bytes) -> str:
    """UTF-8 (BOM dropped), else Windows-1252, else Latin-1.

    Crawled review corpora are mostly UTF-8 but older files are often Windows-1252; cp1252 is tried before
    Latin-1 because it maps the 0x80-0x9F bytes to the curly quotes and dashes their authors typed, where
    Latin-1 would turn them into invisible control characters. Latin-1 decodes any byte, so this never fails.
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def detect_encoding(path: Path) -> str:
    """The codec `decode_bytes` would choose, found by streaming the file (for files too big to slurp)."""
    for encoding in ("utf-8-sig", "cp1252"):
        decoder = codecs.getincrementaldecoder(encoding)()
        try:
            with open_binary(path) as handle:
                for block in iter(lambda h=handle: h.read(1 << 20), b""):
                    decoder.decode(block)
                decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            continue
        return encoding
    return "latin-1"


def open_text(path: Path) -> io.TextIOWrapper:
    """Streaming text handle with the encoding `detect_encoding` picked; universal newlines are off
    (`newline=""`) so the csv module and JSON-lines splitting see the bytes as written."""
    return io.TextIOWrapper(open_binary(path), encoding=detect_encoding(path), newline="")


def split_lines(text: str) -> list[str]:
    """Split on \\r\\n, \\r and \\n only. `str.splitlines` would also split on U+2028, form feeds and other
    separators that do occur inside review text, cutting a review in two."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def logical_stem(path: Path) -> str:
    """`reviews.csv.gz` -> `reviews`; a folder keeps its name."""
    if path.is_dir():
        return path.name
    name = path.name
    for compression in (".gz", ".bz2"):
        if name.lower().endswith(compression):
            name = name[: -len(compression)]
    stem, dot, _suffix = name.rpartition(".")
    return stem if dot and stem else name


def logical_suffix(path: Path) -> str:
    """`.csv` for `reviews.csv.gz`."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2"):
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def list_source_files(source: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """`source` itself if it is a file, else its files with one of `suffixes` (recursively), sorted so that
    document numbering, and therefore every doc_id, is the same on every machine."""
    if source.is_file():
        return [source]
    files = [
        p
        for p in source.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(source).parts)
        and logical_suffix(p) in suffixes
    ]
    return sorted(files, key=lambda p: p.relative_to(source).as_posix())


# ----------------------------------------------------------------------------------------------------
# Values

MONTH_ABBREVIATIONS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAMES = {
    **{name: number for number, name in enumerate(MONTH_ABBREVIATIONS, 1)},
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "sept": 9,
    "october": 10,
    "november": 11,
    "december": 12,
}
_MONTH_FIRST = re.compile(r"^([A-Za-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")
_DAY_FIRST = re.compile(r"^(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})$")
_YMD_SLASH = re.compile(r"^(\d{4})[/.](\d{1,2})[/.](\d{1,2})$")
_YMD_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})$")


def parse_date(value: Any) -> str | None:
    """An ISO-8601 string (`YYYY-MM-DD`, or the full datetime when the source has a time) or None.

    Accepted: date/datetime objects, ISO-8601 strings, `Dec 23, 2008`, `23 December 2008`, `2008/12/23`,
    `20081223`. Numeric day/month orders such as `01/02/2008` are deliberately not guessed, because a wrong
    guess silently moves an opinion in time; they come back as None and the caller records a warning.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    match = _MONTH_FIRST.match(text)
    if match:
        return _ymd(match.group(3), _MONTH_NAMES.get(match.group(1).lower()), match.group(2))
    match = _DAY_FIRST.match(text)
    if match:
        return _ymd(match.group(3), _MONTH_NAMES.get(match.group(2).lower()), match.group(1))
    match = _YMD_SLASH.match(text) or _YMD_COMPACT.match(text)
    if match:
        return _ymd(match.group(1), int(match.group(2)), match.group(3))
    try:
        if len(text) == 10:
            return date.fromisoformat(text).isoformat()
        iso = text[:-1] + "+00:00" if text.endswith("Z") else text
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if parsed.tzinfo is None and parsed.time() == datetime.min.time():
        return parsed.date().isoformat()
    return parsed.isoformat()


def _ymd(year: str, month: int | None, day: str) -> str | None:
    if month is None:
        return None
    try:
        return date(int(year), month, int(day)).isoformat()
    except ValueError:
        return None


def to_number(value: Any) -> int | float | None:
    """Int when integral, float otherwise, None for missing / NaN / unparsable values."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        return int(value) if value.is_integer() else value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return to_number(float(text))
        except ValueError:
            return None
    try:  # numpy / decimal scalars
        return to_number(float(value))
    except (TypeError, ValueError):
        return None


def clean_str(value: Any) -> str | None:
    """Stripped string, or None for missing / empty / NaN."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    text = value.strip() if isinstance(value, str) else str(value).strip()
    return text or None


def slug(value: str) -> str:
    """Lower-case ASCII-ish id fragment: `Canon G3` -> `canon-g3`. Stable, so usable inside doc_ids."""
    text = re.sub(r"[^0-9A-Za-z]+", "-", value.strip().lower()).strip("-")
    return text or "x"


def short_hash(*parts: Any, length: int = 16) -> str:
    """Hex digest of the parts; used where the source gives no id, so ids depend on content, not luck."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(str(part).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:length]


def gold_opinion(
    *,
    target: str | None,
    category: str | None,
    polarity: str,
    strength: int | None = None,
    start: int | None = None,
    end: int | None = None,
    flags: list[str] | None = None,
) -> dict[str, Any]:
    """One entry of `gold_opinions`, keys in the documented order."""
    opinion: dict[str, Any] = {
        "target": target,
        "category": category,
        "polarity": polarity,
        "strength": strength,
        "from": start,
        "to": end,
    }
    if flags:
        opinion["flags"] = flags
    return opinion


def normalise_polarity(value: Any) -> str | None:
    """`positive|negative|neutral|conflict` (case-insensitive), None for anything else."""
    text = clean_str(value)
    if text is None:
        return None
    text = text.lower()
    return text if text in POLARITIES else None


# ----------------------------------------------------------------------------------------------------
# Writing


def safe_file_part(value: str) -> str:
    """A file-name fragment: path separators and whitespace become `_`."""
    return re.sub(r"[^0-9A-Za-z._-]+", "_", value).strip("_") or "source"


def write_jsonl_atomic(
    path: Path,
    rows: Iterable[tuple[str, int | None, dict[str, Any]]],
    ctx: ImportContext,
) -> int:
    """Write `(file, number, row)` triples as JSON lines to `path`, atomically; return the rows written.

    The file appears under its final name only when complete (temp file in the same folder, fsync, then
    `os.replace`), so a crash or Ctrl-C never leaves half an import for the ingest stage to read, and
    re-running an import replaces the previous output in one step. The temp name starts with a dot, which
    the ingest reader ignores.

    Rows are validated here, once for every format: `doc_id` and `text` must be non-empty strings, doc_ids
    unique within the file, and values JSON-serialisable without NaN (which is not valid JSON).
    """
    # Pull the first row before touching the disk: a bad option or unreadable source raises here, so a failed
    # import never leaves behind an empty domain folder (which the pipeline would take for a new domain).
    iterator = iter(rows)
    first = next(iterator, None)
    rows = iterator if first is None else itertools.chain([first], iterator)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Not a `with` block: the file must outlive the handle (it is renamed after closing).
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115
        "w", encoding="utf-8", newline="\n", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    temp = Path(handle.name)
    seen: dict[str, tuple[str, int | None]] = {}
    written = 0
    try:
        with handle:
            encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
            buffer: list[str] = []
            for file, number, row in rows:
                doc_id = row.get("doc_id")
                text = row.get("text")
                if not isinstance(doc_id, str) or not doc_id.strip():
                    ctx.skip(file, number, "missing doc_id")
                    continue
                if not isinstance(text, str) or not text.strip():
                    ctx.skip(file, number, f"empty text (doc_id {doc_id!r})")
                    continue
                if doc_id in seen:
                    first_file, first_number = seen[doc_id]
                    ctx.skip(file, number, f"duplicate doc_id {doc_id!r} (first at {first_file}:{first_number})")
                    continue
                try:
                    line = encode(row)
                except (TypeError, ValueError) as error:
                    ctx.skip(file, number, f"not serialisable as JSON: {error}")
                    continue
                seen[doc_id] = (file, number)
                buffer.append(line)
                written += 1
                if len(buffer) >= 4096:
                    handle.write("\n".join(buffer) + "\n")
                    buffer.clear()
            if buffer:
                handle.write("\n".join(buffer) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        # NamedTemporaryFile creates 0600; an input file must be readable like any other file in the folder.
        temp.chmod(0o644)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return written
