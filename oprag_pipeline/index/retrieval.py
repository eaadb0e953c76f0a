"""The retrieval API shared by the evaluation and `oprag query`.

`search()` embeds the query once per mode and asks the vector store; what comes back is the point's payload.
Enriched points carry their own opinion metadata; for raw chunks and split points, `attach_opinions` maps hits
back to the opinions they contain (a raw chunk: every opinion of its document whose evidence span overlaps the
chunk), so all three knowledge bases are measured the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from oprag_pipeline.index.sync import collection_name
from oprag_pipeline.index.vector_store import FilterValue, VectorStore

MODES = ("semantic", "hybrid")


@dataclass
class RetrievedHit:
    point_id: str
    score: float
    payload: dict[str, Any]
    opinions: list[dict[str, Any]] = field(default_factory=list)
    author: dict[str, str] = field(default_factory=dict)


class Retriever:
    """Holds one embedder and one store; embeddings of a query are reused across KBs and k."""

    def __init__(self, store: VectorStore, embedder: Any) -> None:
        self.store = store
        self.embedder = embedder
        self._cache: dict[str, tuple[Any, Any]] = {}

    def _vectors(self, query: str) -> tuple[Any, Any]:
        if query not in self._cache:
            dense = self.embedder.embed_dense_query([query])[0]
            sparse = self.embedder.embed_sparse_query([query])[0]
            self._cache[query] = (dense, sparse)
        return self._cache[query]

    def search(
        self,
        domain: str,
        query: str,
        k: int = 20,
        mode: str = "hybrid",
        kb: str = "enriched",
        filters: Mapping[str, FilterValue] | None = None,
    ) -> list[RetrievedHit]:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        dense, sparse = self._vectors(query)
        hits = self.store.search(
            collection_name(domain, kb),
            dense=dense,
            sparse=sparse if mode == "hybrid" else None,
            k=k,
            mode=mode,
            filters=filters,
        )
        return [RetrievedHit(h.id, h.score, dict(h.payload)) for h in hits]


def attach_opinions(conn: duckdb.DuckDBPyConnection, domain: str, kb: str, hits: Sequence[RetrievedHit]) -> None:
    """Fill `hit.opinions` and `hit.author` from the warehouse (see the module docstring for the rules)."""
    if not hits:
        return
    doc_ids = sorted({h.payload["doc_id"] for h in hits})
    rows = conn.execute(
        """SELECT doc_id, entity_id, entity_name, sentiment, intensity, sentiment_intensity, impact_score, emotions,
                  span_start, span_end
           FROM opinions WHERE domain = ? AND doc_id IN (SELECT unnest(?))""",
        [domain, doc_ids],
    ).fetchall()
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_doc.setdefault(r[0], []).append(
            {
                "entity_id": r[1],
                "entity_name": r[2],
                "sentiment": r[3],
                "intensity": r[4],
                "sentiment_intensity": r[5],
                "impact_score": r[6],
                "emotions": list(r[7]),
                "span": (r[8], r[9]),
            }
        )
    authors: dict[str, dict[str, str]] = {}
    for doc_id, attribute, value in conn.execute(
        "SELECT doc_id, attribute, value FROM author_attributes WHERE domain = ? AND doc_id IN (SELECT unnest(?))",
        [domain, doc_ids],
    ).fetchall():
        authors.setdefault(doc_id, {})[attribute] = value
    for hit in hits:
        doc_id = hit.payload["doc_id"]
        hit.author = authors.get(doc_id, {})
        opinions = by_doc.get(doc_id, [])
        if kb == "raw":
            start, end = hit.payload.get("char_start", 0), hit.payload.get("char_end", 1 << 30)
            hit.opinions = [o for o in opinions if _overlaps(o["span"], start, end)]
        else:
            hit.opinions = [o for o in opinions if o["entity_id"] == hit.payload.get("entity_id")]


def _overlaps(span: tuple[int | None, int | None], start: int, end: int) -> bool:
    lo, hi = span
    if lo is None or hi is None:
        return True  # an opinion without a span belongs to the whole document
    return lo < end and hi > start
