"""The vector store: one behaviour (`VectorStore`), two adapters, chosen by the environment.

Why two adapters. The pipeline must run with no server at all (laptops, CI, these machines), and the same pipeline
must be pointable at a Qdrant server or cluster for real corpora. qdrant-client alone covers both only on paper: its
local mode (`QdrantClient(path=...)`) is a brute-force Python scan, measured here at ~3 s per filtered hybrid query,
122 s to upsert and 28 s to reopen at 100k points. `qdrant-edge-py` runs Qdrant's own engine in process (HNSW,
sparse inverted index, payload indexes, RRF fusion) and did the same query in ~2.5 ms. So:

* `EdgeVectorStore` is the embedded default: one `EdgeShard` per collection under `<data dir>/qdrant/<collection>/`.
* `ClientVectorStore` wraps a `QdrantClient`: a server/cluster when `QDRANT_URL` is set, and qdrant-client's local
  mode in tests, where it stands in for the server (same client code path, same query model).

Both create the same collection layout and answer the same queries, so retrieval results do not depend on where the
index lives:

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

import json
import logging
import re
import shutil
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from oprag_pipeline import config

if TYPE_CHECKING:
    import qdrant_edge
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qmodels

logger = logging.getLogger(__name__)

SHARD_NUMBER_ENV = "OPRAG_QDRANT_SHARD_NUMBER"
REPLICATION_FACTOR_ENV = "OPRAG_QDRANT_REPLICATION_FACTOR"
QUANTIZATION_ENV = "OPRAG_QDRANT_QUANTIZATION"


@dataclass(frozen=True)
class CollectionOptions:
    """How new collections are laid out, beyond the fixed vectors and indexes.

    `shard_number` / `replication_factor` apply to a Qdrant server or cluster only (Edge is one shard in one
    process); None leaves the server's default. `quantization` "int8" keeps an 8-bit copy of the dense vectors in
    RAM (4x smaller than float32) that HNSW searches first, rescoring with the full vectors: at millions of points
    the float vectors then stay on disk / page cache while the graph walk reads RAM. Env: OPRAG_QDRANT_SHARD_NUMBER,
    OPRAG_QDRANT_REPLICATION_FACTOR, OPRAG_QDRANT_QUANTIZATION (`int8` or unset). On Edge the quantization also
    applies to an existing collection the next time an index step opens it (`ensure_collection`); the server's
    options apply to collections it creates.
    """

    shard_number: int | None = None
    replication_factor: int | None = None
    quantization: str | None = None

    def __post_init__(self) -> None:
        if self.quantization not in (None, "int8"):
            raise ValueError(f"quantization must be 'int8' or unset, not {self.quantization!r}")
        for name in ("shard_number", "replication_factor"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, not {value}")

    @classmethod
    def from_env(cls, **overrides: Any) -> CollectionOptions:
        values = {
            "shard_number": config.value(SHARD_NUMBER_ENV),
            "replication_factor": config.value(REPLICATION_FACTOR_ENV),
            "quantization": config.value(QUANTIZATION_ENV),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"
CONTENT_HASH_FIELD = "content_hash"
KEYWORD_FIELDS: tuple[str, ...] = ("domain", "entity_id", "sentiment", "doc_id", "entity_scope")
INTEGER_FIELDS: tuple[str, ...] = ("sentiment_intensity",)
"""Integer payload indexes made with every collection. Opinion-balanced retrieval filters on the σ-score; without an
index the engine reads each candidate's payload from disk to check it, measured at 2-3 s per filtered query on a
2.48M-point KB instead of 20 ms (points without the field, such as raw chunks, are simply absent from the index)."""
_STANDARD_INDEXES: Mapping[str, str] = {
    **dict.fromkeys(KEYWORD_FIELDS, "keyword"),
    **dict.fromkeys(INTEGER_FIELDS, "integer"),
}
"""The payload indexes every collection gets (author fields are added on first sight)."""
AUTHOR_FIELD_PREFIX = "author_"
RRF_K = 2
"""Reciprocal-rank-fusion constant: Qdrant's default, so the server adapter can send the plain RRF fusion query
(understood by every server version) and still rank exactly as the Edge adapter, which has to pass k explicitly."""

QUANTIZED_OVERSAMPLING = 2.0
"""Dense searches of a collection with an 8-bit copy (`OPRAG_QDRANT_QUANTIZATION=int8`) preselect this many times
the limit by the 8-bit scores and always rescore them with the full vectors. Left to the engine, Edge ranked by the
8-bit scores alone: on 20,000 generated points, filtered hybrid top-20 agreed with the float answer on 0.986
(1.000 with rescoring) and unfiltered semantic on 0.905 (0.932 with 2x oversampling; 3x gained nothing more). The
parameters are sent with every dense search: a collection without a quantized copy ignores them."""

POINT_NAMESPACE = uuid.UUID("5f0c43e4-4e0b-5d1a-9a51-6f7072616721")
"""uuid5 namespace of oprag point ids. Never change it: every stored point id is derived from it."""

T = TypeVar("T")
SearchMode = Literal["semantic", "sparse", "hybrid"]
FilterValue = str | int | bool | Sequence[str] | Sequence[int]
SparseInput = Any
"""`(indices, values)` as sequences or numpy arrays (what `OfflineEmbedder.embed_sparse` returns), or any object
with `.indices` and `.values` (fastembed's `SparseEmbedding`, qdrant-edge's `SparseVector`)."""

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")
_EDGE_CONFIG_FILE = "edge_config.json"
_SCROLL_PAGE = 2048
_CLIENT_UPSERT_BATCH = 256
_EDGE_UPSERT_BATCH = 1024
# Edge runs no optimizer in the background: unoptimized points pile up in the appendable segments until `optimize()`,
# which then builds one HNSW segment from all of them, and merges segments without bound. That one big build is what
# set the peak memory (1.25 GB at 100k points, ~7.5 GB at 700k: a transient of ~5 KB per point on top of the data).
# Optimizing (and flushing) every `_EDGE_OPTIMIZE_EVERY` written points and capping segments at `_EDGE_SEGMENT_KB`
# keeps every build small: measured on 200k generated points, peak RSS 1.04 GB instead of 2.0 GB without the flush
# and ~2.5 GB with one build at the end; benchmarks/bench_vector_store.py prints the figures at corpus scale.
_EDGE_SEGMENT_KB: int = config.declared("OPRAG_QDRANT_SEGMENT_KB").default
_EDGE_OPTIMIZE_EVERY = 50_000


class CollectionNotFoundError(LookupError):
    """Raised by every adapter when an operation names a collection that does not exist."""


def point_uuid(key: str) -> str:
    """A deterministic point id for `key` (e.g. "hotels/doc-17/entity-3"): the same key gives the same id in every
    run and process, so re-indexing replaces points rather than duplicating them."""
    return str(uuid.uuid5(POINT_NAMESPACE, key))


@dataclass(frozen=True, slots=True)
class IndexPoint:
    """One point to write: id from `point_uuid`, dense vector, sparse BM25 (indices, values), JSON-able payload.

    The payload should carry `content_hash` (see `existing_payload_hashes`) and, for filtering, the keyword fields
    `domain`, `entity_id`, `sentiment`, `doc_id` as strings and author attributes as `author_*` fields.
    """

    id: str
    dense: np.ndarray
    sparse: SparseInput
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One retrieved point: id (canonical UUID string), engine score (cosine, or RRF sum in hybrid mode), payload,
    and its stored dense vector when the search asked for it (`with_vectors=True`) and the engine returned one.

    The engine keeps cosine vectors normalised, so `vector` is the unit vector the point was indexed with; None
    means "not returned" (a re-ranker then embeds the point's text instead). Hits compare without it.
    """

    id: str
    score: float
    payload: dict[str, Any]
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)


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


# --------------------------------------------------------------------------------------------------------------
# Shared argument handling (both adapters go through these, so they accept and reject the same inputs)
# --------------------------------------------------------------------------------------------------------------


def _check_name(name: str) -> str:
    """Collection names double as folder names for Edge: keep them to a portable, path-safe alphabet everywhere."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"invalid collection name {name!r}: use letters, digits, '_', '-', '.' (not leading)")
    return name


def _dense_list(dense: np.ndarray | Sequence[float]) -> list[float]:
    array = np.asarray(dense, dtype=np.float32)
    if array.ndim != 1:
        raise ValueError(f"a dense vector must be one-dimensional, got shape {array.shape}")
    return array.tolist()


def _sparse_lists(sparse: SparseInput) -> tuple[list[int], list[float]]:
    if hasattr(sparse, "indices") and hasattr(sparse, "values"):
        indices, values = sparse.indices, sparse.values
    else:
        indices, values = sparse
    idx = np.asarray(indices, dtype=np.int64).ravel()
    val = np.asarray(values, dtype=np.float32).ravel()
    if idx.shape != val.shape:
        raise ValueError(f"sparse vector has {idx.size} indices but {val.size} values")
    if idx.size and (idx.min() < 0 or idx.max() > 0xFFFFFFFF):
        raise ValueError("sparse indices must fit in an unsigned 32-bit integer")
    if np.unique(idx).size != idx.size:  # qdrant rejects these; Edge would silently keep both: reject everywhere
        raise ValueError("sparse indices must be unique")
    return idx.tolist(), val.tolist()


def _stored_dense(vector: Any) -> np.ndarray | None:
    """The dense vector of a returned point, from what either engine gives back: a dict of named vectors (both do
    for a named-vector collection), a bare list (an unnamed one), or None when vectors were not asked for."""
    if isinstance(vector, Mapping):
        vector = vector.get(DENSE_VECTOR)
    if vector is None or not isinstance(vector, Sequence | np.ndarray) or len(vector) == 0:
        return None
    return np.asarray(vector, dtype=np.float32)


def _check_query(
    mode: str, dense: np.ndarray | Sequence[float] | None, sparse: SparseInput | None, k: int
) -> tuple[list[float] | None, tuple[list[int], list[float]] | None]:
    if mode not in ("semantic", "sparse", "hybrid"):
        raise ValueError(f"mode must be 'semantic', 'sparse' or 'hybrid', not {mode!r}")
    if k < 1:
        raise ValueError("k must be at least 1")
    if mode == "sparse":
        if sparse is None:
            raise ValueError("sparse search needs a sparse query vector")
        indices, values = _sparse_lists(sparse)
        return None, ((indices, values) if indices else None)
    if dense is None:
        raise ValueError(f"{mode} search needs a dense query vector")
    if mode == "semantic":
        return _dense_list(dense), None
    if sparse is None:
        raise ValueError("hybrid search needs a sparse query vector as well")
    indices, values = _sparse_lists(sparse)
    # A query of stopwords only has no terms: the sparse prefetch would be empty, so fuse the dense one alone.
    return _dense_list(dense), ((indices, values) if indices else None)


def _prefetch_limit(k: int, given: int | None) -> int:
    """Candidates per prefetch in hybrid mode: enough that a hit ranked well by only one retriever still surfaces."""
    return max(given, k) if given is not None else max(3 * k, 50)


_NOTHING = object()


def _filter_terms(filters: Mapping[str, FilterValue] | None) -> list[tuple[str, Any]] | object | None:
    """Validate filters into (field, value-or-list) pairs; `_NOTHING` when a filter can match no point."""
    if not filters:
        return None
    terms: list[tuple[str, Any]] = []
    for key, value in filters.items():
        if isinstance(value, str | bool | int):
            terms.append((key, value))
        elif isinstance(value, Sequence):
            values = list(value)
            if not values:
                return _NOTHING
            if not (all(isinstance(v, str) for v in values) or all(_is_int(v) for v in values)):
                raise TypeError(f"filter {key!r}: a list must hold only strings or only integers")
            terms.append((key, values))
        else:
            raise TypeError(f"filter {key!r}: expected str, int, bool or a list of them, got {type(value).__name__}")
    return terms


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _schema_for(value: Any) -> str | None:
    """Index type of an author attribute, from a sample value (None: not indexable as an exact-match field)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "keyword"
    return None


def _new_author_fields(points: Sequence[IndexPoint], known: Mapping[str, str]) -> dict[str, str]:
    """`author_*` payload fields in this batch that have no index yet, with the type of their first value."""
    found: dict[str, str] = {}
    for point in points:
        for key, value in point.payload.items():
            if key.startswith(AUTHOR_FIELD_PREFIX) and key not in known and key not in found and value is not None:
                schema = _schema_for(value)
                if schema is not None:
                    found[key] = schema
    return found


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`itertools.batched` (Python 3.12+; the project supports 3.11): lists of `size` items, the last one shorter."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def redact_url(url: str) -> str:
    """The URL without user-info or query string, for logs (a key can hide in either)."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# --------------------------------------------------------------------------------------------------------------
# Edge: Qdrant's engine in process
# --------------------------------------------------------------------------------------------------------------


class EdgeVectorStore:
    """One `qdrant_edge.EdgeShard` per collection under `root/<collection>/`, on disk.

    The engine builds nothing in the background: segments are indexed with HNSW only when `optimize()` runs (below
    the engine's indexing threshold a segment is searched exactly, which is fast at that size anyway). Writes mark
    the collection dirty, and `close()` optimizes dirty collections, then flushes and closes every shard, so the next
    process opens a ready index (`optimize_on_close=False` leaves that to explicit `optimize` calls). Updates also go
    through the engine's write-ahead log, so an unclosed store loses nothing that `upsert` returned from.

    Only one process may hold a shard open (the engine locks its WAL); a second one gets a RuntimeError naming the
    folder instead of the engine's "WouldBlock".
    """

    supports_payload_indexes = True

    def __init__(
        self,
        root: Path,
        *,
        optimize_on_close: bool = True,
        on_disk: bool | None = None,
        max_segment_kb: int | None = None,
        optimize_every: int = _EDGE_OPTIMIZE_EVERY,
        indexing_threshold_kb: int | None = None,
        options: CollectionOptions | None = None,
    ) -> None:
        import qdrant_edge

        self._edge = qdrant_edge
        # Vectors, HNSW graph and payload memory-mapped from disk instead of held in RAM, for collections near the
        # memory limit (env OPRAG_QDRANT_ON_DISK=1; applies to collections created afterwards).
        self.on_disk = on_disk if on_disk is not None else config.value("OPRAG_QDRANT_ON_DISK")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.optimize_on_close = optimize_on_close
        # Segment cap (KB of vector data) for collections created from now on; env OPRAG_QDRANT_SEGMENT_KB.
        self.max_segment_kb = max_segment_kb or config.value("OPRAG_QDRANT_SEGMENT_KB")
        self.optimize_every = optimize_every
        # Segments below this many KB of vectors are searched exactly and left alone by the optimizer (None: the
        # engine's default, ~10 MB); tests lower it to exercise segment building on a few hundred points.
        self.indexing_threshold_kb = indexing_threshold_kb
        self.options = options or CollectionOptions.from_env()
        # Sent with every dense search (see QUANTIZED_OVERSAMPLING); a benchmark swaps it to compare the float search.
        self.dense_search_params = qdrant_edge.SearchParams(
            quantization=qdrant_edge.QuantizationSearchParams(rescore=True, oversampling=QUANTIZED_OVERSAMPLING)
        )
        self._written_since_optimize: dict[str, int] = {}
        self._shards: dict[str, qdrant_edge.EdgeShard] = {}
        self._indexed: dict[str, dict[str, str]] = {}
        self._dirty: set[str] = set()
        self._lock = threading.RLock()
        self._closed = False

    def __repr__(self) -> str:
        return f"EdgeVectorStore(root={str(self.root)!r})"

    # -- shard management ------------------------------------------------------------------------------------

    def _path(self, name: str) -> Path:
        return self.root / _check_name(name)

    def _config(self, dense_dim: int) -> qdrant_edge.EdgeConfig:
        e = self._edge
        optimizers = e.EdgeOptimizersConfig(
            max_segment_size=self.max_segment_kb, indexing_threshold=self.indexing_threshold_kb
        )
        on_disk: dict[str, Any] = {}
        if self.on_disk:
            on_disk = {
                "on_disk_payload": True,
                "hnsw_config": e.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000, on_disk=True),
            }
        quantization = None
        if self.options.quantization == "int8":
            quantization = e.ScalarQuantizationConfig(e.ScalarType.Int8, always_ram=True)
        return e.EdgeConfig(
            vectors={
                DENSE_VECTOR: e.EdgeVectorParams(
                    size=dense_dim, distance=e.Distance.Cosine, on_disk=self.on_disk, quantization_config=quantization
                )
            },
            sparse_vectors={SPARSE_VECTOR: e.EdgeSparseVectorParams(modifier=e.Modifier.Idf)},
            optimizers=optimizers,
            **on_disk,
        )

    def _open(self, name: str, config: qdrant_edge.EdgeConfig | None = None) -> qdrant_edge.EdgeShard:
        path = self._path(name)
        try:
            shard = self._edge.EdgeShard.load(str(path), config)
        except Exception as exc:
            if "WouldBlock" in str(exc):
                raise RuntimeError(f"vector shard {path} is open in another process (one writer per shard)") from exc
            if "incompatible" in str(exc).lower():
                raise ValueError(f"collection {name!r} exists with another layout: {exc}") from exc
            raise
        self._shards[name] = shard
        self._indexed[name] = self._read_indexes(shard)
        # A collection written by an older version may lack an index this version's queries rely on (the σ-score);
        # making it here costs one pass over the payloads once (18 s at 2.48M points) instead of slow queries forever.
        self._create_indexes(name, shard, _STANDARD_INDEXES)
        return shard

    def _shard(self, name: str) -> qdrant_edge.EdgeShard:
        if self._closed:
            raise RuntimeError("the vector store is closed")
        with self._lock:
            shard = self._shards.get(name)
            if shard is not None:
                return shard
            if not (self._path(name) / _EDGE_CONFIG_FILE).exists():
                raise CollectionNotFoundError(f"collection {name!r} does not exist under {self.root}")
            return self._open(name)

    @staticmethod
    def _read_indexes(shard: qdrant_edge.EdgeShard) -> dict[str, str]:
        # The engine's enums are not Python enums (no `.name`); their str() is "PayloadSchemaType.Keyword".
        return {
            key: str(info.data_type).rsplit(".", 1)[-1].lower() for key, info in shard.info().payload_schema.items()
        }

    def _create_indexes(self, name: str, shard: qdrant_edge.EdgeShard, wanted: Mapping[str, str]) -> None:
        schema_types = {
            "keyword": self._edge.PayloadSchemaType.Keyword,
            "integer": self._edge.PayloadSchemaType.Integer,
            "bool": self._edge.PayloadSchemaType.Bool,
        }
        known = self._indexed.setdefault(name, {})
        for key, schema in wanted.items():
            if key not in known:
                shard.update(self._edge.UpdateOperation.create_field_index(key, schema_types[schema]))
                known[key] = schema

    # -- the protocol ----------------------------------------------------------------------------------------

    def collection_exists(self, name: str) -> bool:
        return name in self._shards or (self._path(name) / _EDGE_CONFIG_FILE).exists()

    def ensure_collection(self, name: str, dense_dim: int) -> None:
        if self._closed:
            raise RuntimeError("the vector store is closed")
        path = self._path(name)
        with self._lock:
            if name in self._shards or (path / _EDGE_CONFIG_FILE).exists():
                existing = json.loads((path / _EDGE_CONFIG_FILE).read_text())["vectors"][DENSE_VECTOR]["size"]
                if existing != dense_dim:
                    raise ValueError(f"collection {name!r} has dense dimension {existing}, not {dense_dim}")
                shard = self._shards.get(name) or self._open(name, self._config(dense_dim))
            else:
                path.mkdir(parents=True, exist_ok=True)
                shard = self._edge.EdgeShard.create(str(path), self._config(dense_dim))
                self._shards[name] = shard
                self._indexed[name] = {}
                logger.info("created vector collection %s at %s (dense %d-d)", name, path, dense_dim)
            self._create_indexes(name, shard, _STANDARD_INDEXES)

    def upsert(self, name: str, points: Sequence[IndexPoint]) -> None:
        shard = self._shard(name)
        if not points:
            return
        e = self._edge
        with self._lock:
            self._create_indexes(name, shard, _new_author_fields(points, self._indexed.get(name, {})))
            self._dirty.add(name)
        for batch in batched(points, _EDGE_UPSERT_BATCH):
            edge_points = []
            for point in batch:
                indices, values = _sparse_lists(point.sparse)
                vector = {DENSE_VECTOR: _dense_list(point.dense), SPARSE_VECTOR: e.SparseVector(indices, values)}
                edge_points.append(e.Point(str(point.id), vector, point.payload))
            shard.update(e.UpdateOperation.upsert_points(edge_points))
        with self._lock:
            written = self._written_since_optimize.get(name, 0) + len(points)
            self._written_since_optimize[name] = written
            if written >= self.optimize_every:
                logger.info("indexing %s: building segments for the last %d points", name, written)
                self.optimize(name)  # its flush releases the replaced segments (halves the peak)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        shard = self._shard(name)
        if ids:
            shard.update(self._edge.UpdateOperation.delete_points([str(i) for i in ids]))
            self._dirty.add(name)

    def count(self, name: str) -> int:
        return int(self._shard(name).count(self._edge.CountRequest(exact=True)))

    def segment_count(self, name: str) -> int:
        """Segments of the collection: each is one more graph (and sparse index) a query searches."""
        return int(self._shard(name).info().segments_count)

    def existing_payload_hashes(self, name: str) -> dict[str, str]:
        shard = self._shard(name)
        hashes: dict[str, str] = {}
        offset = None
        while True:
            records, offset = shard.scroll(
                self._edge.ScrollRequest(offset=offset, limit=_SCROLL_PAGE, with_payload=[CONTENT_HASH_FIELD])
            )
            for record in records:
                hashes[str(record.id)] = str((record.payload or {}).get(CONTENT_HASH_FIELD, ""))
            if offset is None:
                return hashes

    def _filter(self, terms: list[tuple[str, Any]] | None) -> qdrant_edge.Filter | None:
        if not terms:
            return None
        e = self._edge
        conditions = [
            e.FieldCondition(key, match=e.MatchAny(value) if isinstance(value, list) else e.MatchValue(value))
            for key, value in terms
        ]
        return e.Filter(must=conditions)

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
        shard = self._shard(name)
        dense_q, sparse_q = _check_query(mode, dense, sparse, k)
        terms = _filter_terms(filters)
        if terms is _NOTHING:
            return []
        e = self._edge
        flt = self._filter(terms)  # type: ignore[arg-type]
        wanted_vectors: bool | list[str] = [DENSE_VECTOR] if with_vectors else False  # never the sparse one
        if mode != "hybrid":
            if mode == "sparse" and sparse_q is None:
                return []  # a query of stopwords only: BM25 has nothing to rank by
            one_list = (
                e.Query.Nearest(dense_q, using=DENSE_VECTOR)
                if mode == "semantic"
                else e.Query.Nearest(e.SparseVector(*sparse_q), using=SPARSE_VECTOR)
            )
            request = e.QueryRequest(
                limit=k,
                query=one_list,
                filter=flt,
                with_payload=True,
                with_vector=wanted_vectors,
                params=self.dense_search_params if mode == "semantic" else None,
            )
        else:
            dense_query = e.Query.Nearest(dense_q, using=DENSE_VECTOR)
            limit = _prefetch_limit(k, prefetch_limit)
            prefetches = [e.Prefetch(limit=limit, query=dense_query, filter=flt, params=self.dense_search_params)]
            if sparse_q is not None:
                sparse_query = e.Query.Nearest(e.SparseVector(*sparse_q), using=SPARSE_VECTOR)
                prefetches.append(e.Prefetch(limit=limit, query=sparse_query, filter=flt))
            request = e.QueryRequest(
                limit=k,
                prefetches=prefetches,
                query=e.Fusion.Rrf(k=RRF_K),
                filter=None,  # only the prefetches filter (module docstring)
                with_payload=True,
                with_vector=wanted_vectors,
            )
        return [
            SearchHit(str(p.id), float(p.score), dict(p.payload or {}), _stored_dense(p.vector))
            for p in shard.query(request)
        ]

    def indexed_fields(self, name: str) -> dict[str, str]:
        return self._read_indexes(self._shard(name))

    def optimize(self, name: str) -> None:
        shard = self._shard(name)
        with self._lock:
            shard.optimize()
            shard.flush()
            self._dirty.discard(name)
            self._written_since_optimize[name] = 0

    def drop(self, name: str) -> None:
        path = self._path(name)
        with self._lock:
            shard = self._shards.pop(name, None)
            self._indexed.pop(name, None)
            self._written_since_optimize.pop(name, None)
            self._dirty.discard(name)
            if shard is not None:
                shard.close()
            if path.exists():
                shutil.rmtree(path)
                logger.info("dropped vector collection %s (%s)", name, path)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            errors: list[BaseException] = []
            for name, shard in list(self._shards.items()):
                try:
                    if self.optimize_on_close and name in self._dirty:
                        shard.optimize()
                    shard.flush()
                except Exception as exc:  # still close the other shards, then report
                    errors.append(exc)
                finally:
                    shard.close()
            self._shards.clear()
            self._dirty.clear()
            self._closed = True
            if errors:
                raise RuntimeError(f"closing the vector store failed: {errors[0]}") from errors[0]

    def __enter__(self) -> EdgeVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------------------------
# qdrant-client: a server / cluster, or qdrant-client's local mode
# --------------------------------------------------------------------------------------------------------------


class ClientVectorStore:
    """The same behaviour through `qdrant_client.QdrantClient`.

    Against a server the collection gets the same vectors and payload indexes as with Edge and the engine does the
    fusion. In qdrant-client's local mode (`path=` or `":memory:"`) payload indexes do not exist (the client warns
    and ignores them), so none are created; queries are then exact brute-force scans in Python — correct, and the
    reason the local mode is only used to test this adapter.
    """

    def __init__(self, client: QdrantClient, options: CollectionOptions | None = None) -> None:
        from qdrant_client.http import models

        self.client = client
        self.options = options or CollectionOptions.from_env()
        self._models = models
        self.dense_search_params = models.SearchParams(
            quantization=models.QuantizationSearchParams(rescore=True, oversampling=QUANTIZED_OVERSAMPLING)
        )
        options = client.init_options
        self._local = bool(options.get("path")) or options.get("location") == ":memory:"
        self._indexed: dict[str, dict[str, str]] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"ClientVectorStore(local={self._local})"

    @property
    def supports_payload_indexes(self) -> bool:
        return not self._local

    @contextmanager
    def _existing(self, name: str) -> Iterator[None]:
        """Turn "collection not found" from either client backend into `CollectionNotFoundError`, checking only
        when a call has already failed (no extra round trip on the normal path)."""
        try:
            yield
        except CollectionNotFoundError:
            raise
        except Exception as exc:
            if not self.client.collection_exists(name):
                raise CollectionNotFoundError(f"collection {name!r} does not exist") from exc
            raise

    def _create_indexes(self, name: str, wanted: Mapping[str, str]) -> None:
        if self._local:
            return
        known = self._known_indexes(name)
        schema_types = {
            "keyword": self._models.PayloadSchemaType.KEYWORD,
            "integer": self._models.PayloadSchemaType.INTEGER,
            "bool": self._models.PayloadSchemaType.BOOL,
        }
        for key, schema in wanted.items():
            if key not in known:
                self.client.create_payload_index(name, key, field_schema=schema_types[schema], wait=True)
                known[key] = schema

    def _known_indexes(self, name: str) -> dict[str, str]:
        if name not in self._indexed:
            self._indexed[name] = self.indexed_fields(name)
        return self._indexed[name]

    def collection_exists(self, name: str) -> bool:
        return bool(self.client.collection_exists(_check_name(name)))

    def ensure_collection(self, name: str, dense_dim: int) -> None:
        m = self._models
        if self.collection_exists(name):
            vectors = self.client.get_collection(name).config.params.vectors
            existing = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else None
            if existing is None or existing.size != dense_dim:
                size = None if existing is None else existing.size
                raise ValueError(f"collection {name!r} has dense dimension {size}, not {dense_dim}")
        else:
            quantization = None
            if self.options.quantization == "int8":
                quantization = m.ScalarQuantization(
                    scalar=m.ScalarQuantizationConfig(type=m.ScalarType.INT8, always_ram=True)
                )
            self.client.create_collection(
                name,
                vectors_config={
                    DENSE_VECTOR: m.VectorParams(
                        size=dense_dim, distance=m.Distance.COSINE, quantization_config=quantization
                    )
                },
                sparse_vectors_config={SPARSE_VECTOR: m.SparseVectorParams(modifier=m.Modifier.IDF)},
                shard_number=self.options.shard_number,
                replication_factor=self.options.replication_factor,
            )
            logger.info("created vector collection %s (dense %d-d)", name, dense_dim)
        self._create_indexes(name, _STANDARD_INDEXES)

    def upsert(self, name: str, points: Sequence[IndexPoint]) -> None:
        _check_name(name)
        m = self._models
        with self._existing(name):
            if not points:
                if not self.client.collection_exists(name):
                    raise CollectionNotFoundError(f"collection {name!r} does not exist")
                return
            if not self._local:
                self._create_indexes(name, _new_author_fields(points, self._known_indexes(name)))
            for batch in batched(points, _CLIENT_UPSERT_BATCH):
                structs = []
                for point in batch:
                    indices, values = _sparse_lists(point.sparse)
                    vector = {
                        DENSE_VECTOR: _dense_list(point.dense),
                        SPARSE_VECTOR: m.SparseVector(indices=indices, values=values),
                    }
                    structs.append(m.PointStruct(id=str(point.id), vector=vector, payload=point.payload))
                self.client.upsert(name, points=structs, wait=True)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        _check_name(name)
        with self._existing(name):
            if not ids:
                self.count(name)  # still report a missing collection
                return
            self.client.delete(name, points_selector=self._models.PointIdsList(points=[str(i) for i in ids]), wait=True)

    def count(self, name: str) -> int:
        _check_name(name)
        with self._existing(name):
            return int(self.client.count(name, exact=True).count)

    def existing_payload_hashes(self, name: str) -> dict[str, str]:
        _check_name(name)
        hashes: dict[str, str] = {}
        offset = None
        with self._existing(name):
            while True:
                records, offset = self.client.scroll(
                    name, limit=_SCROLL_PAGE, offset=offset, with_payload=[CONTENT_HASH_FIELD], with_vectors=False
                )
                for record in records:
                    hashes[str(record.id)] = str((record.payload or {}).get(CONTENT_HASH_FIELD, ""))
                if offset is None:
                    return hashes

    def _filter(self, terms: list[tuple[str, Any]] | None) -> qmodels.Filter | None:
        if not terms:
            return None
        m = self._models
        conditions: list[Any] = [
            m.FieldCondition(
                key=key, match=m.MatchAny(any=value) if isinstance(value, list) else m.MatchValue(value=value)
            )
            for key, value in terms
        ]
        return m.Filter(must=conditions)

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
        _check_name(name)
        dense_q, sparse_q = _check_query(mode, dense, sparse, k)
        terms = _filter_terms(filters)
        if terms is _NOTHING:
            self.count(name)  # a missing collection is still an error
            return []
        m = self._models
        flt = self._filter(terms)  # type: ignore[arg-type]
        wanted_vectors: bool | list[str] = [DENSE_VECTOR] if with_vectors else False  # never the sparse one
        with self._existing(name):
            if mode != "hybrid":
                if mode == "sparse" and sparse_q is None:
                    self.count(name)  # a missing collection is still an error
                    return []  # a query of stopwords only: BM25 has nothing to rank by
                sparse_one = mode == "sparse" and sparse_q is not None
                response = self.client.query_points(
                    name,
                    query=m.SparseVector(indices=sparse_q[0], values=sparse_q[1]) if sparse_one else dense_q,
                    using=SPARSE_VECTOR if sparse_one else DENSE_VECTOR,
                    query_filter=flt,
                    search_params=None if sparse_one else self.dense_search_params,
                    limit=k,
                    with_payload=True,
                    with_vectors=wanted_vectors,
                )
            else:
                limit = _prefetch_limit(k, prefetch_limit)
                params = self.dense_search_params
                prefetch = [m.Prefetch(query=dense_q, using=DENSE_VECTOR, limit=limit, filter=flt, params=params)]
                if sparse_q is not None:
                    sparse_vector = m.SparseVector(indices=sparse_q[0], values=sparse_q[1])
                    prefetch.append(m.Prefetch(query=sparse_vector, using=SPARSE_VECTOR, limit=limit, filter=flt))
                response = self.client.query_points(
                    name,
                    prefetch=prefetch,
                    query=m.FusionQuery(fusion=m.Fusion.RRF),  # k = 2, Qdrant's default (= RRF_K)
                    query_filter=None,  # only the prefetches filter (module docstring)
                    limit=k,
                    with_payload=True,
                    with_vectors=wanted_vectors,
                )
        return [
            SearchHit(str(p.id), float(p.score), dict(p.payload or {}), _stored_dense(p.vector))
            for p in response.points
        ]

    def indexed_fields(self, name: str) -> dict[str, str]:
        _check_name(name)
        with self._existing(name):
            schema = self.client.get_collection(name).payload_schema or {}
        if self._local:
            return {}
        return {key: str(getattr(info.data_type, "value", info.data_type)) for key, info in schema.items()}

    def optimize(self, name: str) -> None:
        """Nothing to do: a server optimizes in the background, and local mode has no index to build."""
        self.count(name)

    def drop(self, name: str) -> None:
        _check_name(name)
        self._indexed.pop(name, None)
        if self.client.collection_exists(name):
            self.client.delete_collection(name)
            logger.info("dropped vector collection %s", name)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.client.close()

    def __enter__(self) -> ClientVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------------------------
# Choosing the adapter
# --------------------------------------------------------------------------------------------------------------


def open_vector_store(
    data_dir: Path,
    url: str | None = None,
    options: CollectionOptions | None = None,
    *,
    api_key: str | None = None,
    on_disk: bool | None = None,
    max_segment_kb: int | None = None,
) -> VectorStore:
    """The store the pipeline uses: a Qdrant server when `url` or `QDRANT_URL` is set (with `api_key`, else
    `QDRANT_API_KEY` if present), else the embedded Edge store under `data_dir/qdrant`. The API key is never logged.
    `options` (default: from the environment) lay out collections created from now on; `on_disk` and
    `max_segment_kb` (default: from the environment) configure the embedded store."""
    url = url or config.value("QDRANT_URL")
    options = options or CollectionOptions.from_env()
    if url:
        from qdrant_client import QdrantClient

        api_key = api_key or config.secret("QDRANT_API_KEY")
        logger.info("vector store: Qdrant server at %s (api key %s)", redact_url(url), "set" if api_key else "unset")
        # 60 s rather than the client's 5 s default: `wait=True` writes and payload-index builds on a large
        # collection legitimately take longer than that.
        return ClientVectorStore(QdrantClient(url=url, api_key=api_key, timeout=60), options)
    root = Path(data_dir) / "qdrant"
    logger.info("vector store: embedded Qdrant Edge at %s", root)
    return EdgeVectorStore(root, options=options, on_disk=on_disk, max_segment_kb=max_segment_kb)
