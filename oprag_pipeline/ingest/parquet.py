"""Parquet files, read in batches; byte columns are decoded as UTF-8, undecodable bytes kept for the quarantine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

from oprag_pipeline.ingest.decoding import RawRow


def iter_parquet(path: Path) -> Iterator[RawRow]:
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
