"""The server adapter: a Qdrant server or cluster through `qdrant_client.QdrantClient` (chosen when `QDRANT_URL` is
set), and qdrant-client's local mode in tests, where it stands in for the server (same client code path, same query
model)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

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
    from qdrant_client import QdrantClient

logger = logging.getLogger(__name__)

_CLIENT_UPSERT_BATCH = 256


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
        self.options = options or CollectionOptions()
        self._models = models
        self.dense_search_params = models.SearchParams(
            quantization=models.QuantizationSearchParams(rescore=True, oversampling=QUANTIZED_OVERSAMPLING)
        )
        self._filter_models = FilterModels(
            match_value=lambda value: models.MatchValue(value=value),
            match_any=lambda values: models.MatchAny(any=values),
            field_condition=lambda key, match: models.FieldCondition(key=key, match=match),
            must=lambda conditions: models.Filter(must=conditions),
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
        return bool(self.client.collection_exists(check_name(name)))

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
        self._create_indexes(name, STANDARD_INDEXES)

    def upsert(self, name: str, points: Sequence[IndexPoint]) -> None:
        check_name(name)
        m = self._models
        with self._existing(name):
            if not points:
                if not self.client.collection_exists(name):
                    raise CollectionNotFoundError(f"collection {name!r} does not exist")
                return
            if not self._local:
                self._create_indexes(name, new_author_fields(points, self._known_indexes(name)))
            for batch in batched(points, _CLIENT_UPSERT_BATCH):
                structs = []
                for point in batch:
                    indices, values = sparse_lists(point.sparse)
                    vector = {
                        DENSE_VECTOR: dense_list(point.dense),
                        SPARSE_VECTOR: m.SparseVector(indices=indices, values=values),
                    }
                    structs.append(m.PointStruct(id=str(point.id), vector=vector, payload=point.payload))
                self.client.upsert(name, points=structs, wait=True)

    def delete(self, name: str, ids: Sequence[str]) -> None:
        check_name(name)
        with self._existing(name):
            if not ids:
                self.count(name)  # still report a missing collection
                return
            self.client.delete(name, points_selector=self._models.PointIdsList(points=[str(i) for i in ids]), wait=True)

    def count(self, name: str) -> int:
        check_name(name)
        with self._existing(name):
            return int(self.client.count(name, exact=True).count)

    def existing_payload_hashes(self, name: str) -> dict[str, str]:
        check_name(name)
        with self._existing(name):
            return payload_hashes(
                lambda offset: self.client.scroll(
                    name, limit=SCROLL_PAGE, offset=offset, with_payload=[CONTENT_HASH_FIELD], with_vectors=False
                )
            )

    def _vector(self, nearest: Nearest) -> Any:
        if nearest.dense:
            return nearest.vector
        indices, values = nearest.vector
        return self._models.SparseVector(indices=indices, values=values)

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
        check_name(name)
        plan = plan_search(mode, dense, sparse, k, filters, prefetch_limit, with_vectors)
        if plan is None:
            self.count(name)  # a missing collection is still an error
            return []
        m = self._models
        flt = build_filter(plan.terms, self._filter_models)
        with self._existing(name):
            if not plan.lists:
                self.count(name)  # a missing collection is still an error
                return []  # a query of stopwords only: BM25 has nothing to rank by
            if not plan.fused:
                (one_list,) = plan.lists
                response = self.client.query_points(
                    name,
                    query=self._vector(one_list),
                    using=one_list.using,
                    query_filter=flt,
                    search_params=self.dense_search_params if one_list.dense else None,
                    limit=plan.k,
                    with_payload=True,
                    with_vectors=plan.with_vectors,
                )
            else:
                limit = plan.prefetch_limit
                params = self.dense_search_params
                prefetch = [
                    m.Prefetch(query=self._vector(q), using=q.using, limit=limit, filter=flt, params=params)
                    if q.dense
                    else m.Prefetch(query=self._vector(q), using=q.using, limit=limit, filter=flt)
                    for q in plan.lists
                ]
                response = self.client.query_points(
                    name,
                    prefetch=prefetch,
                    query=m.FusionQuery(fusion=m.Fusion.RRF),  # k = 2, Qdrant's default (= RRF_K)
                    query_filter=None,  # only the prefetches filter (package docstring)
                    limit=plan.k,
                    with_payload=True,
                    with_vectors=plan.with_vectors,
                )
        return to_hits(response.points)

    def indexed_fields(self, name: str) -> dict[str, str]:
        check_name(name)
        with self._existing(name):
            schema = self.client.get_collection(name).payload_schema or {}
        if self._local:
            return {}
        return {key: str(getattr(info.data_type, "value", info.data_type)) for key, info in schema.items()}

    def optimize(self, name: str) -> None:
        """Nothing to do: a server optimizes in the background, and local mode has no index to build."""
        self.count(name)

    def drop(self, name: str) -> None:
        check_name(name)
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
