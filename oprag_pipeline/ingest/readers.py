"""Reading one domain's input files into the input contract, losing nothing.

Every physical row of every file ends in exactly one of three places: accepted, quarantined (with file, row
number, reason and the raw content), or collapsed as an exact duplicate of an accepted row. The counts per
file are returned so the warehouse can prove `rows read = accepted + quarantined + duplicates`.

The readers are plain Python rather than DuckDB's `read_json` / `read_csv` because those either stop at the
first malformed line or skip it silently (`ignore_errors`), and we must name every bad row and keep it.

This module walks a domain's files (`input_files`), hands each to its format's reader (`jsonl`, `json_array`,
`delimited`, `parquet`), checks every parsed row against the input contract (`contract`) and counts the outcome.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from oprag_pipeline.ingest.contract import (
    ACCEPTED_SCHEMA,
    REASON_CONFLICTING_DOC_ID,
    REASON_UNREADABLE_FILE,
    REASON_UNSTORABLE_VALUE,
    QuarantinedRow,
    RowError,
    normalise_record,
)
from oprag_pipeline.ingest.decoding import RawRow
from oprag_pipeline.ingest.delimited import iter_csv
from oprag_pipeline.ingest.input_files import (
    SUPPORTED_SUFFIXES,
    SkippedFile,
    file_sha256,
    logical_suffix,
    scan_input_files,
)
from oprag_pipeline.ingest.json_array import iter_json_array
from oprag_pipeline.ingest.jsonl import iter_jsonl
from oprag_pipeline.ingest.parquet import iter_parquet


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


def iter_file_rows(path: Path) -> Iterator[RawRow]:
    suffix = logical_suffix(path)
    if suffix in (".jsonl", ".ndjson"):
        return iter_jsonl(path)
    if suffix == ".json":
        return iter_json_array(path)
    if suffix in (".csv", ".tsv"):
        return iter_csv(path)
    if suffix == ".parquet":
        return iter_parquet(path)
    raise ValueError(f"{path}: unsupported file type {suffix!r}; expected one of {', '.join(SUPPORTED_SUFFIXES)}")


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


def _dump_any(value: Any) -> str:
    try:
        return json.dumps(value, default=str, ensure_ascii=False)[:10_000]
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} too deep to show>"
