"""CSV and TSV files with a header row: one stray quote costs one quarantined row, never the rest of the file."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator
from pathlib import Path

from oprag_pipeline.ingest.contract import (
    MAX_RECORD_BYTES,
    REASON_MALFORMED_CSV,
    REASON_RECORD_TOO_LARGE,
    REASON_UNDECODABLE,
    RowError,
    has_surrogates,
)
from oprag_pipeline.ingest.decoding import RawRow, detect_encoding, open_bytes
from oprag_pipeline.ingest.input_files import logical_suffix


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


def iter_csv(path: Path) -> Iterator[RawRow]:
    """CSV with a header row. Row numbers are physical line numbers where the record starts.

    A record that spans several lines and still fails (an unclosed quote swallows every following record until
    the end of the file or the next stray quote) is quarantined as its first line only, and parsing restarts on
    the next line, so one stray quote costs one row, not the rest of the file.
    """
    delimiter = "\t" if logical_suffix(path) == ".tsv" else ","
    with open_bytes(path) as handle:
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
            if not clean and any(has_surrogates(v) for v in values):
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


def _printable(raw: str) -> str:
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace").rstrip("\r\n")
