"""The embedded adapter: Qdrant's own engine in process through `qdrant-edge-py` (the pipeline's default store)."""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oprag_pipeline import config
from oprag_pipeline.index.vector_store.filters import (
    FilterModels,
    Nearest,
    build_filter,
    payload_hashes,
    plan_search,
    to_hits,
)
from oprag_pipeline.index.vector_store.layout import (
    CONTENT_HASH_FIELD,
    DENSE_VECTOR,
    QUANTIZED_OVERSAMPLING,
    RRF_K,
    SCROLL_PAGE,
    SPARSE_VECTOR,
    STANDARD_INDEXES,
    CollectionNotFoundError,
    CollectionOptions,
    FilterValue,
    IndexPoint,
    SearchHit,
    SearchMode,
    SparseInput,
    batched,
    check_name,
    dense_list,
    new_author_fields,
    sparse_lists,
)

if TYPE_CHECKING:
    import qdrant_edge

logger = logging.getLogger(__name__)

_EDGE_CONFIG_FILE = "edge_config.json"
_EDGE_UPSERT_BATCH = 1024
# Edge runs no optimizer in the background: unoptimized points pile up in the appendable segments until `optimize()`,
# which then builds one HNSW segment from all of them, and merges segments without bound. That one big build is what
# set the peak memory (1.25 GB at 100k points, ~7.5 GB at 700k: a transient of ~5 KB per point on top of the data).
# Optimizing (and flushing) every `_EDGE_OPTIMIZE_EVERY` written points and capping segments at `_EDGE_SEGMENT_KB`
# keeps every build small: measured on 200k generated points, peak RSS 1.04 GB instead of 2.0 GB without the flush
# and ~2.5 GB with one build at the end; benchmarks/bench_vector_store.py prints the figures at corpus scale.
_EDGE_SEGMENT_KB: int = config.declared("OPRAG_QDRANT_SEGMENT_KB").default
_EDGE_OPTIMIZE_EVERY = 50_000


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
        on_disk: bool = config.declared("OPRAG_QDRANT_ON_DISK").default,
        max_segment_kb: int = _EDGE_SEGMENT_KB,
        optimize_every: int = _EDGE_OPTIMIZE_EVERY,
        indexing_threshold_kb: int | None = None,
        options: CollectionOptions | None = None,
    ) -> None:
        import qdrant_edge

        self._edge = qdrant_edge
        # Vectors, HNSW graph and payload memory-mapped from disk instead of held in RAM, for collections near the
        # memory limit (env OPRAG_QDRANT_ON_DISK=1; applies to collections created afterwards).
        self.on_disk = on_disk
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.optimize_on_close = optimize_on_close
        # Segment cap (KB of vector data) for collections created from now on; env OPRAG_QDRANT_SEGMENT_KB.
        self.max_segment_kb = max_segment_kb
        self.optimize_every = optimize_every
        # Segments below this many KB of vectors are searched exactly and left alone by the optimizer (None: the
        # engine's default, ~10 MB); tests lower it to exercise segment building on a few hundred points.
        self.indexing_threshold_kb = indexing_threshold_kb
        self.options = options or CollectionOptions()
        # Sent with every dense search (see QUANTIZED_OVERSAMPLING); a benchmark swaps it to compare the float search.
        self.dense_search_params = qdrant_edge.SearchParams(
            quantization=qdrant_edge.QuantizationSearchParams(rescore=True, oversampling=QUANTIZED_OVERSAMPLING)
        )
        self._filter_models = FilterModels(
            match_value=qdrant_edge.MatchValue,
            match_any=qdrant_edge.MatchAny,
            field_condition=lambda key, match: qdrant_edge.FieldCondition(key, match=match),
            must=lambda conditions: qdrant_edge.Filter(must=conditions),
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
        return self.root / check_name(name)

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
        self._create_indexes(name, shard, STANDARD_INDEXES)
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
            self._create_indexes(name, shard, STANDARD_INDEXES)

    def upsert(self, name: str, points: Sequence[IndexPoint]) -> None:
        shard = self._shard(name)
        if not points:
            return
        e = self._edge
        with self._lock:
            self._create_indexes(name, shard, new_author_fields(points, self._indexed.get(name, {})))
            self._dirty.add(name)
        for batch in batched(points, _EDGE_UPSERT_BATCH):
            edge_points = []
            for point in batch:
                indices, values = sparse_lists(point.sparse)
                vector = {DENSE_VECTOR: dense_list(point.dense), SPARSE_VECTOR: e.SparseVector(indices, values)}
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
        return payload_hashes(
            lambda offset: shard.scroll(
                self._edge.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_payload=[CONTENT_HASH_FIELD])
            )
        )

    def _nearest(self, nearest: Nearest) -> qdrant_edge.Query:
        e = self._edge
        if nearest.dense:
            return e.Query.Nearest(nearest.vector, using=DENSE_VECTOR)
        return e.Query.Nearest(e.SparseVector(*nearest.vector), using=SPARSE_VECTOR)

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
        plan = plan_search(mode, dense, sparse, k, filters, prefetch_limit, with_vectors)
        if plan is None:
            return []
        e = self._edge
        flt = build_filter(plan.terms, self._filter_models)
        if not plan.lists:
            return []  # a query of stopwords only: BM25 has nothing to rank by
        if not plan.fused:
            (one_list,) = plan.lists
            request = e.QueryRequest(
                limit=plan.k,
                query=self._nearest(one_list),
                filter=flt,
                with_payload=True,
                with_vector=plan.with_vectors,
                params=self.dense_search_params if one_list.dense else None,
            )
        else:
            limit = plan.prefetch_limit
            prefetches = [
                e.Prefetch(limit=limit, query=self._nearest(q), filter=flt, params=self.dense_search_params)
                if q.dense
                else e.Prefetch(limit=limit, query=self._nearest(q), filter=flt)
                for q in plan.lists
            ]
            request = e.QueryRequest(
                limit=plan.k,
                prefetches=prefetches,
                query=e.Fusion.Rrf(k=RRF_K),
                filter=None,  # only the prefetches filter (package docstring)
                with_payload=True,
                with_vector=plan.with_vectors,
            )
        return to_hits(shard.query(request))

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
