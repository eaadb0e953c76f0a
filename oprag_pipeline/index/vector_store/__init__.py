"""The vector store: one behaviour (`VectorStore`), two adapters, chosen by the environment.

Why two adapters. The pipeline must run with no server at all (laptops, CI, these machines), and the same pipeline
must be pointable at a Qdrant server or cluster for real corpora. qdrant-client alone covers both only on paper: its
local mode (`QdrantClient(path=...)`) is a brute-force Python scan, measured here at ~3 s per filtered hybrid query,
122 s to upsert and 28 s to reopen at 100k points. `qdrant-edge-py` runs Qdrant's own engine in process (HNSW,
sparse inverted index, payload indexes, RRF fusion) and did the same query in ~2.5 ms. So:

* `EdgeVectorStore` (`edge.py`) is the embedded default: one `EdgeShard` per collection under
  `<data dir>/qdrant/<collection>/`.
* `ClientVectorStore` (`server.py`) wraps a `QdrantClient`: a server/cluster when `QDRANT_URL` is set, and
  qdrant-client's local mode in tests, where it stands in for the server (same client code path, same query model).

Both create the same collection layout (`layout.py`) and answer the same queries, planned once for both
(`filters.py`), so retrieval results do not depend on where the index lives:

* a named dense vector `dense` (cosine) and a named sparse vector `bm25` with the IDF modifier: the embedder writes
  only the BM25 term-frequency part, and the engine supplies IDF from the live collection, so IDF stays right as
  points are added and deleted without re-embedding anything;
* keyword payload indexes on `domain`, `entity_id`, `sentiment`, `doc_id`, `entity_scope` (answers restricted
  to one product or hotel), an integer index on the σ-score
  `sentiment_intensity`, plus one index per `author_*` field, made on first sight in `upsert` (keyword, integer or
  bool, from the value's type) — filtered retrieval by entity and σ-level and the fairness breakdowns by author
  group are the hot filters. qdrant-client's local mode has no payload indexes
  (it scans), so none are created there (`supports_payload_indexes` is False);
* semantic search = nearest neighbours on `dense`; sparse = BM25 alone (the retriever fuses it with the dense list
  itself, see `retrieval.reciprocal_rank_fusion`); hybrid = a dense prefetch and a sparse prefetch, each under the
  same filter, fused by reciprocal rank fusion in the engine with k = 2 (Qdrant's default constant), so a hit's
  score is the sum over prefetches of 1 / (rank0 + 2);
* in hybrid mode the filter goes on the two prefetches only, not again on the fusion: every fused candidate
  already passed it, and the repeat cost Edge about 3% (2.48M points in 50 segments, three runs of 400 queries
  alternating both ways: p50 12.9-13.4 -> 12.3-13.1 ms, the same fused scores);
* filters are exact matches, AND-ed: a scalar value is a match, a list value is "match any" (an empty list matches
  nothing).

Point ids are UUIDs derived from a stable key (`point_uuid`), so re-indexing the same (document, entity) overwrites
its point instead of adding a twin; each point carries a `content_hash` payload field, and `existing_payload_hashes`
returns them all, so re-indexing upserts only what changed and deletes what disappeared.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from oprag_pipeline import config
from oprag_pipeline.index.vector_store.edge import EdgeVectorStore
from oprag_pipeline.index.vector_store.layout import (
    AUTHOR_FIELD_PREFIX,
    CONTENT_HASH_FIELD,
    DENSE_VECTOR,
    INTEGER_FIELDS,
    KEYWORD_FIELDS,
    POINT_NAMESPACE,
    QUANTIZATION_ENV,
    QUANTIZED_OVERSAMPLING,
    REPLICATION_FACTOR_ENV,
    RRF_K,
    SHARD_NUMBER_ENV,
    SPARSE_VECTOR,
    CollectionNotFoundError,
    CollectionOptions,
    FilterValue,
    IndexPoint,
    SearchHit,
    SearchMode,
    SparseInput,
    batched,
    point_uuid,
)
from oprag_pipeline.index.vector_store.server import ClientVectorStore

__all__ = [
    "AUTHOR_FIELD_PREFIX",
    "CONTENT_HASH_FIELD",
    "DENSE_VECTOR",
    "INTEGER_FIELDS",
    "KEYWORD_FIELDS",
    "POINT_NAMESPACE",
    "QUANTIZATION_ENV",
    "QUANTIZED_OVERSAMPLING",
    "REPLICATION_FACTOR_ENV",
    "RRF_K",
    "SHARD_NUMBER_ENV",
    "SPARSE_VECTOR",
    "ClientVectorStore",
    "CollectionNotFoundError",
    "CollectionOptions",
    "EdgeVectorStore",
    "FilterValue",
    "IndexPoint",
    "SearchHit",
    "SearchMode",
    "SparseInput",
    "VectorStore",
    "batched",
    "open_vector_store",
    "point_uuid",
    "redact_url",
]

logger = logging.getLogger(__name__)


@runtime_checkable
class VectorStore(Protocol):
    """What the pipeline needs from a vector store; both adapters implement it with identical behaviour."""

    @property
    def supports_payload_indexes(self) -> bool:
        """Whether `ensure_collection`/`upsert` create payload indexes (False only for qdrant-client local mode)."""
        ...

    def collection_exists(self, name: str) -> bool:
        """Whether the collection exists."""
        ...

    def ensure_collection(self, name: str, dense_dim: int) -> None:
        """Create the collection if missing (dense `dense` cosine + sparse `bm25` with IDF + payload indexes);
        idempotent; raises ValueError when it exists with another dense dimension."""
        ...

    def upsert(self, name: str, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points (same id = replace vectors and the whole payload)."""
        ...

    def delete(self, name: str, ids: Sequence[str]) -> None:
        """Delete points by id (unknown ids are ignored)."""
        ...

    def count(self, name: str) -> int:
        """Exact number of points."""
        ...

    def existing_payload_hashes(self, name: str) -> dict[str, str]:
        """Every point's `content_hash` by id ("" where a point has none), read by scrolling the collection."""
        ...

    def search(
        self,
        name: str,
        *,
        dense: np.ndarray | Sequence[float] | None = None,
        sparse: SparseInput | None = None,
        k: int,
        mode: SearchMode,
        filters: Mapping[str, FilterValue] | None = None,
        prefetch_limit: int | None = None,
        with_vectors: bool = False,
    ) -> list[SearchHit]:
        """Top-k hits, best first: semantic = dense only; sparse = BM25 only (no hits for a query without terms);
        hybrid = dense and sparse prefetches fused by RRF.
        `with_vectors` also returns each hit's stored dense vector (`SearchHit.vector`), for re-rankers that
        compare hits with one another (MMR) and would otherwise have to embed their texts again."""
        ...

    def indexed_fields(self, name: str) -> dict[str, str]:
        """Payload indexes of the collection: field name -> schema type ("keyword", "integer", "bool", ...)."""
        ...

    def optimize(self, name: str) -> None:
        """Build the collection's indexes now (Edge builds HNSW here; a server optimizes in the background)."""
        ...

    def drop(self, name: str) -> None:
        """Delete the collection and its data (no error when missing)."""
        ...

    def close(self) -> None:
        """Persist and release everything; idempotent."""
        ...


def redact_url(url: str) -> str:
    """The URL without user-info or query string, for logs (a key can hide in either)."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def open_vector_store(
    data_dir: Path,
    url: str | None = None,
    options: CollectionOptions | None = None,
    *,
    api_key: str | None = None,
    on_disk: bool = config.declared("OPRAG_QDRANT_ON_DISK").default,
    max_segment_kb: int = config.declared("OPRAG_QDRANT_SEGMENT_KB").default,
) -> VectorStore:
    """The store the pipeline uses: a Qdrant server when `url` is given (with `api_key`), else the embedded Edge
    store under `data_dir/qdrant`. The API key is never logged. `options` (default: the servers' defaults) lay out
    collections created from now on; `on_disk` and `max_segment_kb` configure the embedded store. The environment's
    choices (QDRANT_URL...) are read by `resources.VectorStoreResource` (`resources.open_configured_store` outside a
    run)."""
    options = options or CollectionOptions()
    if url:
        from qdrant_client import QdrantClient

        logger.info("vector store: Qdrant server at %s (api key %s)", redact_url(url), "set" if api_key else "unset")
        # 60 s rather than the client's 5 s default: `wait=True` writes and payload-index builds on a large
        # collection legitimately take longer than that.
        return ClientVectorStore(QdrantClient(url=url, api_key=api_key, timeout=60), options)
    root = Path(data_dir) / "qdrant"
    logger.info("vector store: embedded Qdrant Edge at %s", root)
    return EdgeVectorStore(root, options=options, on_disk=on_disk, max_segment_kb=max_segment_kb)
