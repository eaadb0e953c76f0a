"""The per-entity KBs' dense vectors, embedded in shards of a domain before either KB is written.

Embedding is the index stage's dominant cost: at 229k reviews the two per-entity KBs hold 2.48M points each, and
their distinct texts are millions of encoder inputs. A KB asset writes to one collection, and the embedded engine
admits one writer, so embedding inside the KB step would tie the work to that single writer. Instead the texts are
embedded first, in shards (`OPRAG_EMBED_SHARDS`), each its own step: on one machine the multiprocess executor runs
them side by side, on a cluster each is a pod. A shard writes its vectors into the shared vector cache
(`vector_cache.py`: immutable parts, several writers at once without a lock), and the KB steps then find every
vector there and only write points.

The plan step reads the texts the two KBs will ask the encoder for (`sync.dense_texts`), keeps the distinct ones
no earlier run or shard has embedded, and writes them as Parquet under the shard URI, one folder per shard (a
text's shard is a function of its hash, so the same text lands in the same shard on every run and machine). A
killed shard loses at most the vectors it had not yet flushed (the cache writes a part every 20,000 vectors or 30
seconds, whichever comes first): the next run's plan finds the rest in the cache.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from oprag_pipeline.enrich.shards import ShardStore
from oprag_pipeline.index.vector_cache import VectorCache, text_keys

EMBED_STAGE_FOLDER = "_embedding"
"""Under the shard URI, beside the extraction's domain folders; a domain name cannot start with '_'."""
SHARD_COLUMN = "shard"
TEXTS_SCHEMA = pa.schema([(SHARD_COLUMN, pa.int32()), ("text", pa.string())])


def embedding_shard_store(shard_uri: str) -> ShardStore:
    """The shard store of the embedding stage: `<shard URI>/_embedding/<domain>/shard=<i>/`."""
    return ShardStore(posixpath.join(str(shard_uri), EMBED_STAGE_FOLDER))


def shard_of_keys(keys: np.ndarray, shards: int) -> np.ndarray:
    """The shard of each text by its 128-bit key (`text_keys`): stable across runs, processes and machines."""
    return (keys[:, 0] % np.uint64(shards)).astype(np.int32)


@dataclass
class EmbedPlan:
    """What the plan found: texts the KBs will ask for (repeats included), distinct ones, those already cached,
    and the distinct uncached ones per shard."""

    shards: int
    requested: int = 0
    distinct: int = 0
    cached: int = 0
    pending: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.pending = self.pending or [0] * self.shards


def pending_texts(batches: Iterable[Sequence[str]], cache: VectorCache, plan: EmbedPlan) -> Iterator[pa.RecordBatch]:
    """(shard, text) rows of every distinct text in `batches` that `cache` has no vector for, each once; `plan`'s
    counts are filled in as the batches are read.

    Only the 16-byte keys of texts seen are held, not the texts: at 229k reviews the distinct texts are about a GB
    of strings, their keys tens of MB."""
    seen: set[bytes] = set()
    for texts in batches:
        if not texts:
            continue
        keys = text_keys(texts)
        fresh = []
        for i, key in enumerate(keys):
            if (key_bytes := key.tobytes()) not in seen:
                seen.add(key_bytes)
                fresh.append(i)
        plan.requested += len(texts)
        plan.distinct += len(fresh)
        if not fresh:
            continue
        fresh_keys = keys[fresh]
        missing = np.flatnonzero(~cache.contains(fresh_keys))
        plan.cached += len(fresh) - len(missing)
        if not len(missing):
            continue
        shard = shard_of_keys(fresh_keys[missing], plan.shards)
        for s, n in zip(*np.unique(shard, return_counts=True), strict=True):
            plan.pending[int(s)] += int(n)
        yield pa.record_batch([pa.array(shard), pa.array([texts[fresh[i]] for i in missing])], schema=TEXTS_SCHEMA)


def write_plan(store: ShardStore, domain: str, rows: Iterable[pa.RecordBatch]) -> None:
    """The pending texts as Parquet, one hive folder per shard (`shard=<i>/`), replacing an earlier plan's."""
    store.clear(domain)
    ds.write_dataset(
        rows,
        store.domain_folder(domain),
        schema=TEXTS_SCHEMA,
        format="parquet",
        partitioning=ds.partitioning(pa.schema([(SHARD_COLUMN, pa.int32())]), flavor="hive"),
        filesystem=store.fs,
        existing_data_behavior="delete_matching",
    )


def read_shard(store: ShardStore, domain: str, index: int, batch_size: int) -> Iterator[list[str]]:
    """The texts of shard `index`, `batch_size` at a time (nothing when the shard got none)."""
    folder = posixpath.join(store.domain_folder(domain), f"{SHARD_COLUMN}={index}")
    if store.fs.get_file_info(folder).type == pafs.FileType.NotFound:
        return
    for batch in ds.dataset(folder, format="parquet", filesystem=store.fs).to_batches(
        columns=["text"], batch_size=batch_size
    ):
        if batch.num_rows:
            yield batch.column(0).to_pylist()


@dataclass(frozen=True)
class EmbedTask:
    """What one embedding shard step needs (pickled between steps: plain values only)."""

    domain: str
    index: int
    shards: int
    texts: int
    started_at: float = 0.0  # when the plan step started (wall clock), for the whole stage's seconds
    plan: dict[str, Any] = field(default_factory=dict)  # the plan's counts, for the collect step's metadata


@dataclass(frozen=True)
class EmbedResult:
    task: EmbedTask
    embedded: int = 0  # texts this shard sent through the encoder (fewer than planned if another run got there first)
    seconds: float = 0.0
