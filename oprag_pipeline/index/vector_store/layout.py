"""What both vector-store engines share: the collection layout, its options, the point and hit types, and the checks
every argument goes through, so the two adapters create the same collections and accept and reject the same inputs.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

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
    OPRAG_QDRANT_REPLICATION_FACTOR, OPRAG_QDRANT_QUANTIZATION (`int8` or unset), read by
    `resources.VectorStoreResource.collection_options`. On Edge the quantization also
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


DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"
CONTENT_HASH_FIELD = "content_hash"
KEYWORD_FIELDS: tuple[str, ...] = ("domain", "entity_id", "sentiment", "doc_id", "entity_scope")
INTEGER_FIELDS: tuple[str, ...] = ("sentiment_intensity",)
"""Integer payload indexes made with every collection. Opinion-balanced retrieval filters on the σ-score; without an
index the engine reads each candidate's payload from disk to check it, measured at 2-3 s per filtered query on a
2.48M-point KB instead of 20 ms (points without the field, such as raw chunks, are simply absent from the index)."""
STANDARD_INDEXES: Mapping[str, str] = {
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

SCROLL_PAGE = 2048
"""Points per page when either adapter scrolls a collection (`existing_payload_hashes`)."""

T = TypeVar("T")
SearchMode = Literal["semantic", "sparse", "hybrid"]
FilterValue = str | int | bool | Sequence[str] | Sequence[int]
SparseInput = Any
"""`(indices, values)` as sequences or numpy arrays (what `OfflineEmbedder.embed_sparse` returns), or any object
with `.indices` and `.values` (fastembed's `SparseEmbedding`, qdrant-edge's `SparseVector`)."""

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")


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


# --------------------------------------------------------------------------------------------------------------
# Argument handling (both adapters go through these, so they accept and reject the same inputs)
# --------------------------------------------------------------------------------------------------------------


def check_name(name: str) -> str:
    """Collection names double as folder names for Edge: keep them to a portable, path-safe alphabet everywhere."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"invalid collection name {name!r}: use letters, digits, '_', '-', '.' (not leading)")
    return name


def dense_list(dense: np.ndarray | Sequence[float]) -> list[float]:
    array = np.asarray(dense, dtype=np.float32)
    if array.ndim != 1:
        raise ValueError(f"a dense vector must be one-dimensional, got shape {array.shape}")
    return array.tolist()


def sparse_lists(sparse: SparseInput) -> tuple[list[int], list[float]]:
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


def _schema_for(value: Any) -> str | None:
    """Index type of an author attribute, from a sample value (None: not indexable as an exact-match field)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "keyword"
    return None


def new_author_fields(points: Sequence[IndexPoint], known: Mapping[str, str]) -> dict[str, str]:
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
