"""Filters and searches, decided once for both engines.

`plan_search` validates a query and decides what both adapters send: which nearest-neighbour lists (dense, sparse or
both fused), the filter terms, the prefetch limit, which vectors come back, and when the answer is no hits without
asking the engine. `build_filter` turns the terms into one engine's filter objects from its four constructors, and
`to_hits` / `payload_hashes` shape what either engine returns. The adapters only translate into their library's
request objects, so the same filters and queries give the same results on both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from oprag_pipeline.index.vector_store.layout import (
    CONTENT_HASH_FIELD,
    DENSE_VECTOR,
    SPARSE_VECTOR,
    FilterValue,
    SearchHit,
    SparseInput,
    dense_list,
    sparse_lists,
)

Terms = list[tuple[str, Any]]
"""Validated filters: (field, value) pairs, AND-ed; a list value means "match any"."""

NOTHING = object()
"""What `filter_terms` returns for a filter no point can match (a field restricted to an empty list)."""


def filter_terms(filters: Mapping[str, FilterValue] | None) -> Terms | object | None:
    """Validate filters into (field, value-or-list) pairs; `NOTHING` when a filter can match no point."""
    if not filters:
        return None
    terms: Terms = []
    for key, value in filters.items():
        if isinstance(value, str | bool | int):
            terms.append((key, value))
        elif isinstance(value, Sequence):
            values = list(value)
            if not values:
                return NOTHING
            if not (all(isinstance(v, str) for v in values) or all(_is_int(v) for v in values)):
                raise TypeError(f"filter {key!r}: a list must hold only strings or only integers")
            terms.append((key, values))
        else:
            raise TypeError(f"filter {key!r}: expected str, int, bool or a list of them, got {type(value).__name__}")
    return terms


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class FilterModels(NamedTuple):
    """One engine's constructors for the parts of a filter (qdrant-client's models take keywords, Edge's positions)."""

    match_value: Callable[[Any], Any]
    match_any: Callable[[list[Any]], Any]
    field_condition: Callable[[str, Any], Any]
    must: Callable[[list[Any]], Any]


def build_filter(terms: Terms | None, models: FilterModels) -> Any | None:
    """The engine filter for validated terms (None: no filter): every term must hold; a list is "match any"."""
    if not terms:
        return None
    conditions = [
        models.field_condition(key, models.match_any(value) if isinstance(value, list) else models.match_value(value))
        for key, value in terms
    ]
    return models.must(conditions)


def check_query(
    mode: str, dense: np.ndarray | Sequence[float] | None, sparse: SparseInput | None, k: int
) -> tuple[list[float] | None, tuple[list[int], list[float]] | None]:
    if mode not in ("semantic", "sparse", "hybrid"):
        raise ValueError(f"mode must be 'semantic', 'sparse' or 'hybrid', not {mode!r}")
    if k < 1:
        raise ValueError("k must be at least 1")
    if mode == "sparse":
        if sparse is None:
            raise ValueError("sparse search needs a sparse query vector")
        indices, values = sparse_lists(sparse)
        return None, ((indices, values) if indices else None)
    if dense is None:
        raise ValueError(f"{mode} search needs a dense query vector")
    if mode == "semantic":
        return dense_list(dense), None
    if sparse is None:
        raise ValueError("hybrid search needs a sparse query vector as well")
    indices, values = sparse_lists(sparse)
    # A query of stopwords only has no terms: the sparse prefetch would be empty, so fuse the dense one alone.
    return dense_list(dense), ((indices, values) if indices else None)


def prefetch_limit(k: int, given: int | None) -> int:
    """Candidates per prefetch in hybrid mode: enough that a hit ranked well by only one retriever still surfaces."""
    return max(given, k) if given is not None else max(3 * k, 50)


@dataclass(frozen=True, slots=True)
class Nearest:
    """One nearest-neighbour list: the named vector it ranks by (`using`) and the query, a dense list of floats or a
    sparse (indices, values) pair. Dense lists are sent with the adapter's `dense_search_params`, sparse ones not."""

    using: str
    vector: Any

    @property
    def dense(self) -> bool:
        return self.using == DENSE_VECTOR


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """What an adapter sends for one `search`.

    `fused` False: the one list in `lists`, top `k`, under the filter. `fused` True (hybrid): every list is a
    prefetch of `prefetch_limit` candidates under the filter, fused by RRF with k = `RRF_K`, the filter not repeated
    on the fusion (module docstring of the package). No `lists`: there is nothing to rank by (a sparse query of
    stopwords only), so no hits. `with_vectors` is the engines' `with_vector(s)` argument (never the sparse one).
    """

    k: int
    terms: Terms | None
    lists: tuple[Nearest, ...]
    fused: bool
    prefetch_limit: int | None
    with_vectors: bool | list[str]


def plan_search(
    mode: str,
    dense: np.ndarray | Sequence[float] | None,
    sparse: SparseInput | None,
    k: int,
    filters: Mapping[str, FilterValue] | None,
    given_prefetch_limit: int | None,
    with_vectors: bool,
) -> SearchPlan | None:
    """Validate a search (ValueError / TypeError as both adapters raise them) and plan it; None when the filter can
    match no point."""
    dense_q, sparse_q = check_query(mode, dense, sparse, k)
    terms = filter_terms(filters)
    if terms is NOTHING:
        return None
    lists: list[Nearest] = []
    if mode != "sparse":
        lists.append(Nearest(DENSE_VECTOR, dense_q))
    if sparse_q is not None:
        lists.append(Nearest(SPARSE_VECTOR, sparse_q))
    fused = mode == "hybrid"
    return SearchPlan(
        k=k,
        terms=terms,  # type: ignore[arg-type]
        lists=tuple(lists),
        fused=fused,
        prefetch_limit=prefetch_limit(k, given_prefetch_limit) if fused else None,
        with_vectors=[DENSE_VECTOR] if with_vectors else False,
    )


def stored_dense(vector: Any) -> np.ndarray | None:
    """The dense vector of a returned point, from what either engine gives back: a dict of named vectors (both do
    for a named-vector collection), a bare list (an unnamed one), or None when vectors were not asked for."""
    if isinstance(vector, Mapping):
        vector = vector.get(DENSE_VECTOR)
    if vector is None or not isinstance(vector, Sequence | np.ndarray) or len(vector) == 0:
        return None
    return np.asarray(vector, dtype=np.float32)


def to_hits(points: Iterable[Any]) -> list[SearchHit]:
    """Hits from either engine's scored points (`.id`, `.score`, `.payload`, `.vector`), in the engine's order."""
    return [SearchHit(str(p.id), float(p.score), dict(p.payload or {}), stored_dense(p.vector)) for p in points]


def payload_hashes(scroll: Callable[[Any], tuple[Sequence[Any], Any]]) -> dict[str, str]:
    """Every point's `content_hash` by id ("" where a point has none), from `scroll(offset) -> (records, next
    offset)`, called from offset None until the next offset is None."""
    hashes: dict[str, str] = {}
    offset = None
    while True:
        records, offset = scroll(offset)
        for record in records:
            hashes[str(record.id)] = str((record.payload or {}).get(CONTENT_HASH_FIELD, ""))
        if offset is None:
            return hashes
