"""Extraction in shards of a domain: each shard reads its documents from Parquet and writes its results as Parquet.

Why not the warehouse: DuckDB admits one writing process per file, so a shard that wrote its batches there would
serialise every shard behind it, on one machine (Dagster's multiprocess executor) as on a cluster (one pod per
shard). A shard instead writes each batch as a *part*, the cache's own two tables (`store.batch_tables`) under
`<shard URI>/<domain>/`, and one step merges the parts into the warehouse, which reads Parquet natively. The URI is
a local folder by default and may be any filesystem pyarrow opens (`s3://bucket/prefix`, `gs://...`), so shards on
several machines write to the same place.

A part is complete when its header file exists: the detail file is written first, and each file is written under a
temporary name and moved into place. A killed run leaves complete parts behind; the next run merges them before it
asks which documents are pending, so it resumes from the last part any shard committed.
"""

from __future__ import annotations

import hashlib
import posixpath
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from oprag_pipeline.schema import DocumentInput, RegistryEntity

INPUT_FILE = "input.parquet"
DOCUMENT_COLUMNS = ("doc_id", "text", "content_hash", "title", "entity_scope")


def shard_of(doc_id: str, shards: int) -> int:
    """The shard a document belongs to: stable across runs, processes and machines (MD5, not Python's hash)."""
    return int.from_bytes(hashlib.md5(doc_id.encode("utf-8")).digest()[:8], "big") % shards


def split_into_shards(doc_ids: Sequence[str], shards: int) -> list[list[str]]:
    """`doc_ids` by shard, each list in the input order."""
    out: list[list[str]] = [[] for _ in range(shards)]
    for doc_id in doc_ids:
        out[shard_of(doc_id, shards)].append(doc_id)
    return out


@dataclass(frozen=True)
class ShardTask:
    """What one shard step needs, passed between steps by Dagster (so it must pickle: no engine, no connection)."""

    domain: str
    index: int
    shards: int
    folder: str  # this shard's folder, a path inside `ShardStore.uri`
    documents: int
    registry_version: int
    extractor: str
    extractor_version: str
    entities: tuple[RegistryEntity, ...] = ()  # the registry the mentions are anchored to
    adaptation: Any = None  # ratings.Adaptation: how the shard rebuilds the adapted extractor
    started_at: float = 0.0  # when the plan step started (wall clock), for the whole extraction's seconds
    plan: dict[str, Any] = field(default_factory=dict)  # the plan step's facts, for the merge step's metadata


@dataclass(frozen=True)
class ShardResult:
    task: ShardTask
    extracted: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    cost_usd: float | None = 0.0  # the extractor's estimate for this shard's tokens; None: its price is unknown


class ShardStore:
    """Shard inputs and parts under one URI (a local folder or an object store pyarrow can open)."""

    def __init__(self, uri: str | Path) -> None:
        text = str(uri)
        if "://" not in text:
            text = str(Path(text).resolve())
            Path(text).mkdir(parents=True, exist_ok=True)
        self.uri = text
        self.fs, self.root = pafs.FileSystem.from_uri(text)

    def domain_folder(self, domain: str) -> str:
        return posixpath.join(self.root, domain)

    def shard_folder(self, domain: str, index: int, shards: int) -> str:
        return posixpath.join(self.domain_folder(domain), f"shard-{index:03d}-of-{shards:03d}")

    def _write(self, path: str, table: pa.Table) -> None:
        """Write under a temporary name, then move into place: a reader never opens a half-written file."""
        self.fs.create_dir(posixpath.dirname(path), recursive=True)
        tmp = posixpath.join(posixpath.dirname(path), f".{uuid.uuid4().hex}.tmp")
        with self.fs.open_output_stream(tmp) as sink:
            pq.write_table(table, sink)
        self.fs.move(tmp, path)

    def write_input(self, folder: str, batches: Iterator[Sequence[DocumentInput]]) -> int:
        """The shard's documents as one Parquet file, written batch by batch (a shard may hold 100k documents)."""
        schema = pa.schema([(name, pa.string()) for name in DOCUMENT_COLUMNS])
        tables = (
            pa.table({name: [getattr(d, name) for d in batch] for name in DOCUMENT_COLUMNS}, schema=schema)
            for batch in batches
        )
        return self.write_stream(folder, INPUT_FILE, schema, tables)

    def read_input(self, folder: str, batch_size: int) -> Iterator[list[DocumentInput]]:
        for rows in self.read_stream(folder, INPUT_FILE, batch_size):
            yield [DocumentInput(**row) for row in rows]

    def write_stream(self, folder: str, name: str, schema: pa.Schema, tables: Iterator[pa.Table]) -> int:
        """`tables` as one Parquet file `name` in `folder`, written table by table under a temporary name and then
        moved into place; the rows written."""
        self.fs.create_dir(folder, recursive=True)
        tmp = posixpath.join(folder, f".{uuid.uuid4().hex}.tmp")
        rows = 0
        with self.fs.open_output_stream(tmp) as sink, pq.ParquetWriter(sink, schema) as writer:
            for table in tables:
                writer.write_table(table)
                rows += table.num_rows
        self.fs.move(tmp, posixpath.join(folder, name))
        return rows

    def read_stream(self, folder: str, name: str, batch_size: int) -> Iterator[list[dict[str, Any]]]:
        """The rows of `write_stream`'s file, `batch_size` at a time."""
        with self.fs.open_input_file(posixpath.join(folder, name)) as source:
            for batch in pq.ParquetFile(source).iter_batches(batch_size=batch_size):
                yield batch.to_pylist()

    def write_part(self, folder: str, number: int, header: pa.Table, detail: pa.Table) -> None:
        """One committed batch; the header goes last, so its presence marks the part complete."""
        self._write(posixpath.join(folder, f"part-{number:06d}.detail.parquet"), detail)
        self._write(posixpath.join(folder, f"part-{number:06d}.header.parquet"), header)

    def complete_parts(self, domain: str) -> list[tuple[str, str]]:
        """(header, detail) paths of every complete part under the domain, in path order."""
        selector = pafs.FileSelector(self.domain_folder(domain), recursive=True, allow_not_found=True)
        paths = {info.path for info in self.fs.get_file_info(selector) if info.type == pafs.FileType.File}
        headers = sorted(p for p in paths if p.endswith(".header.parquet"))
        return [(h, h.removesuffix(".header.parquet") + ".detail.parquet") for h in headers]

    def read_part(self, header_path: str, detail_path: str) -> tuple[pa.Table, pa.Table]:
        return pq.read_table(header_path, filesystem=self.fs), pq.read_table(detail_path, filesystem=self.fs)

    def clear(self, domain: str) -> None:
        """Remove the domain's shard inputs and parts (after they are merged)."""
        info = self.fs.get_file_info(self.domain_folder(domain))
        if info.type != pafs.FileType.NotFound:
            self.fs.delete_dir(self.domain_folder(domain))
