"""JSON Lines (`.jsonl`, `.ndjson`, and `.json` files that are not an array): one object per line, each bad line
quarantined with the precise reason."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import orjson

from oprag_pipeline.ingest.contract import (
    MAX_JSON_DEPTH,
    MAX_RECORD_BYTES,
    REASON_JSON_TOO_DEEP,
    REASON_MALFORMED_JSON,
    REASON_RECORD_TOO_LARGE,
    REASON_UNDECODABLE,
    RowError,
)
from oprag_pipeline.ingest.decoding import RawRow, encoding_or_refusal, line_text, open_bytes


def _utf8_lines(path: Path, codec: str) -> Iterator[bytes]:
    """Physical lines as UTF-8 bytes whatever the file's Unicode encoding; only \n (and \r\n) end a line."""
    with open_bytes(path) as handle:
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


def iter_jsonl(path: Path) -> Iterator[RawRow]:
    codec, refusal = encoding_or_refusal(path)
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
                line_text(line[:10_000]),
            )
            continue
        if not line.strip():
            continue
        try:
            parsed = orjson.loads(line)  # also rejects invalid UTF-8, so valid rows need no second check
        except orjson.JSONDecodeError:
            yield diagnose_json_line(number, line)
            continue
        if not isinstance(parsed, dict):
            yield RawRow(
                number, None, RowError(REASON_MALFORMED_JSON, "line is JSON but not an object"), line_text(line)
            )
            continue
        yield RawRow(number, parsed, None, "", may_hold_undecodable=False)


def diagnose_json_line(number: int, line: bytes) -> RawRow:
    """The slow path for a line the fast parser refused: say precisely why, or accept what the stdlib accepts."""
    try:
        text = line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        return RawRow(
            number, None, RowError(REASON_UNDECODABLE, f"invalid UTF-8 at byte {error.start}"), line_text(line)
        )
    try:
        parsed = json.loads(text)
    except RecursionError:
        return RawRow(
            number,
            None,
            RowError(REASON_JSON_TOO_DEEP, f"nested too deep to parse (records may nest {MAX_JSON_DEPTH} levels)"),
            line_text(line),
        )
    except json.JSONDecodeError as error:
        return RawRow(
            number, None, RowError(REASON_MALFORMED_JSON, f"{error.msg} at column {error.colno}"), line_text(line)
        )
    if not isinstance(parsed, dict):
        return RawRow(number, None, RowError(REASON_MALFORMED_JSON, "line is JSON but not an object"), line_text(line))
    # e.g. an escaped lone surrogate (\\udc80) or an integer beyond 64 bits, which orjson refuses and the stdlib
    # decodes; normalise_record then rejects what cannot be stored
    return RawRow(number, parsed, None, line_text(line), may_hold_undecodable=True)
