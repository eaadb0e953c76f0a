"""What every format reader shares: opening a file's bytes (gzipped or not), telling its Unicode encoding, and
the `RawRow` each reader yields per physical row (a parsed dict, or the error that stopped parsing)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any, NamedTuple

from oprag_pipeline.ingest.contract import REASON_UNSUPPORTED_ENCODING, RowError


def open_bytes(path: Path) -> io.BufferedIOBase:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


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
    with open_bytes(path) as handle:
        return handle.read(size)


def encoding_or_refusal(path: Path) -> tuple[str | None, RawRow | None]:
    try:
        return detect_encoding(_head(path)), None
    except RowError as error:
        return None, RawRow(1, None, error, "")


def line_text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").rstrip("\r\n")
