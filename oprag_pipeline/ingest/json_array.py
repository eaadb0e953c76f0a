"""A `.json` file holding one array of objects, streamed: a scanner splits the array into its elements and each
is parsed on its own, so memory is bounded by the largest element, never by the file."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from oprag_pipeline.ingest.contract import (
    MAX_JSON_DEPTH,
    MAX_RECORD_BYTES,
    REASON_JSON_TOO_DEEP,
    REASON_MALFORMED_JSON,
    REASON_RECORD_TOO_LARGE,
    RowError,
)
from oprag_pipeline.ingest.decoding import RawRow, encoding_or_refusal, line_text, open_bytes
from oprag_pipeline.ingest.jsonl import diagnose_json_line, iter_jsonl


def iter_json_array(path: Path) -> Iterator[RawRow]:
    """A `.json` file may be a single array of objects, or JSON Lines with the wrong suffix."""
    codec, refusal = encoding_or_refusal(path)
    if refusal is not None:
        yield refusal
        return
    assert codec is not None
    with open_bytes(path) as handle:
        head = handle.read(4096)
    head_text = head.decode(codec, errors="ignore") if codec != "utf-8" else head.decode("utf-8", errors="ignore")
    if not head_text.lstrip("\ufeff \t\r\n").startswith("["):
        yield from iter_jsonl(path)
        return
    for number, element, problem in split_json_array(_utf8_chunks(path, codec)):
        if problem is not None:
            yield RawRow(number, None, problem, line_text(element[:10_000]))
        else:
            yield _parse_array_element(number, element)


def _utf8_chunks(path: Path, codec: str, size: int = 1 << 20) -> Iterator[bytes]:
    """The file's bytes in chunks, transcoded to UTF-8 when it is UTF-16/32 (a UTF-8 BOM is left to the caller)."""
    with open_bytes(path) as handle:
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
        if depth - 1 > MAX_JSON_DEPTH:  # the levels below the record itself, as `contract._check_storable` counts them
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
        return diagnose_json_line(number, element)
    if not isinstance(parsed, dict):
        return RawRow(
            number, None, RowError(REASON_MALFORMED_JSON, "array element is not an object"), line_text(element)
        )
    return RawRow(number, parsed, None, "", may_hold_undecodable=False)
