"""The diversification modes and deterministic tie-breaking against a real embedded Qdrant engine."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from oprag_pipeline.evaluate.grid import run_grid
from oprag_pipeline.index.retrieval import OpinionProfile, Retriever, reciprocal_rank_fusion
from oprag_pipeline.index.vector_store import EdgeVectorStore, IndexPoint, SearchHit, point_uuid
from oprag_pipeline.registry.matching import AliasMatcher

DIM = 8
# 30 wifi opinions: 20 at σ −30, 10 at σ +20. Point i lies at distance 0.1·(i + 1) from the query, orthogonally,
# so its dense rank is i and the +20 ones are the closest; consecutive pairs (2j, 2j + 1) lean the same way and are
# near-duplicates. Sparse weights run the other way, so point i and point 29 − i have the same fused RRF score: the
# hybrid list is full of ties.
VECTORS: dict[str, np.ndarray] = {}


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


QUERY = _unit(np.random.default_rng(0).normal(size=DIM))


def _direction(j: int) -> np.ndarray:
    r = np.random.default_rng(100 + j).normal(size=DIM)
    return _unit(r - (r @ QUERY) * QUERY)


def _point(i: int) -> IndexPoint:
    positive = i < 10
    v = _unit(QUERY + 0.1 * (i + 1) * _direction(i // 2))
    VECTORS[f"text {i}"] = v
    return IndexPoint(
        id=point_uuid(f"p{i}"),
        dense=v,
        sparse=([1], [1.0 + i / 100]),
        payload={
            "domain": "d",
            "doc_id": f"d{i}",
            "pair": i // 2,
            "entity_id": "wifi",
            "sentiment_intensity": 20 if positive else -30,
            "text": f"text {i}",
            "content_hash": str(i),
        },
    )


class TextEmbedder:
    """The query embeds to QUERY; a point's text to the vector it was indexed with."""

    def embed_dense_query(self, texts):
        return [QUERY for _ in texts]

    def embed_sparse_query(self, texts):
        return [([1], [1.0]) for _ in texts]

    def embed_dense(self, texts):
        return np.array([VECTORS[t] for t in texts])


PROFILE = OpinionProfile(AliasMatcher.from_aliases({"wifi": ["wifi"]}), {"wifi": {20: 10, -30: 20}})


@pytest.fixture
def store(tmp_path: Path):
    s = EdgeVectorStore(tmp_path / "qdrant")
    s.ensure_collection("d.enriched_kb", DIM)
    s.upsert("d.enriched_kb", [_point(i) for i in range(30)])
    yield s
    s.close()


def retriever(store, **kw) -> Retriever:
    return Retriever(store, TextEmbedder(), profiles={"d": PROFILE}, **kw)


def test_cuts_are_by_score_then_point_id(store) -> None:
    r = retriever(store)
    assert [h.payload["doc_id"] for h in r.search("d", "wifi?", k=3, mode="semantic", kb="enriched")] == [
        "d0",
        "d1",
        "d2",
    ]
    for mode in ("semantic", "hybrid"):
        full = r.search("d", "wifi?", k=30, mode=mode, kb="enriched")
        assert [(-h.score, h.point_id) for h in full] == sorted((-h.score, h.point_id) for h in full)
        for k in (3, 5, 7):
            cut = r.search("d", "wifi?", k=k, mode=mode, kb="enriched")
            assert [h.point_id for h in cut] == [h.point_id for h in full[:k]], (mode, k)
    scores = [h.score for h in r.search("d", "wifi?", k=30, mode="hybrid", kb="enriched")]
    assert len(set(scores)) < len(scores)  # the fixture does produce ties


def test_pm2_and_xquad_follow_the_corpus_sigma_distribution(store) -> None:
    r = retriever(store)
    nearest = r.search("d", "is the wifi good?", k=6, mode="semantic", kb="enriched")
    assert {h.payload["sentiment_intensity"] for h in nearest} == {20}
    pm2 = r.search("d", "is the wifi good?", k=6, mode="pm2", kb="enriched")
    # Sainte-Laguë of votes 20 : 10 over 6 seats is 4 : 2
    assert Counter(h.payload["sentiment_intensity"] for h in pm2) == {-30: 4, 20: 2}
    xq = r.search("d", "is the wifi good?", k=6, mode="xquad", kb="enriched")
    assert Counter(h.payload["sentiment_intensity"] for h in xq)[-30] >= 2
    # no entity named: the plain hybrid list
    assert [h.point_id for h in r.search("d", "anything?", k=6, mode="pm2", kb="enriched")] == [
        h.point_id for h in r.search("d", "anything?", k=6, mode="hybrid", kb="enriched")
    ]
    with pytest.raises(ValueError, match="enriched KB"):
        r.search("d", "is the wifi good?", k=6, mode="xquad", kb="raw")


def test_mmr_with_lambda_one_is_the_cosine_ranking_and_lower_lambda_diversifies(store) -> None:
    semantic = retriever(store).search("d", "wifi?", k=6, mode="semantic", kb="enriched")
    relevance_only = retriever(store, mmr_lambda=1.0).search("d", "wifi?", k=6, mode="mmr", kb="enriched")
    assert [h.point_id for h in relevance_only] == [h.point_id for h in semantic]
    diverse = retriever(store, mmr_lambda=0.3).search("d", "wifi?", k=6, mode="mmr", kb="enriched")
    # the semantic top 6 is three pairs of near-duplicates; MMR leaves twins out for other directions
    pairs = lambda hits: len({h.payload["pair"] for h in hits})  # noqa: E731
    assert pairs(semantic) == 3 and pairs(diverse) > 3


def test_the_grid_gives_the_same_rows_twice(store) -> None:
    questions = [("q1", "is the wifi good?"), ("q2", "what about the wifi speed?")]

    def rows():
        return [
            r for batch in run_grid(retriever(store), "d", questions, kbs=("enriched",), depths=(5, 10)) for r in batch
        ]

    first, second = rows(), rows()
    assert first == second
    assert {r.mode for r in first} == {"semantic", "hybrid", "balanced", "mmr", "xquad", "pm2"}


def test_reciprocal_rank_fusion_by_hand() -> None:
    hit = lambda i: SearchHit(i, 0.0, {"doc_id": i})  # noqa: E731
    fused = reciprocal_rank_fusion([[hit("a"), hit("b"), hit("c")], [hit("c"), hit("a")]], rrf_k=2)
    # a: 1/2 + 1/3, c: 1/4 + 1/2, b: 1/3
    assert [(h.id, round(h.score, 4)) for h in fused] == [("a", 0.8333), ("c", 0.75), ("b", 0.3333)]
    tied = reciprocal_rank_fusion([[hit("y"), hit("x")], [hit("x"), hit("y")]], rrf_k=2)
    assert [h.id for h in tied] == ["x", "y"]  # equal sums: by point id


def test_hybrid_fusion_scores_as_the_engine_does(store) -> None:
    # the fixture's dense and sparse orders have no ties of their own, so the engine's RRF is reproducible here
    engine = store.search("d.enriched_kb", dense=QUERY, sparse=([1], [1.0]), k=30, mode="hybrid")
    ours = retriever(store).search("d", "wifi?", k=30, mode="hybrid", kb="enriched")
    assert {h.point_id: round(h.score, 5) for h in ours} == {h.id: round(h.score, 5) for h in engine}


def _tied_point(i: int) -> IndexPoint:
    point = _point(i)
    # every point has the same BM25 weight: the sparse ranking is one 30-way tie
    return IndexPoint(id=point.id, dense=point.dense, sparse=([1], [1.0]), payload=point.payload)


@pytest.mark.parametrize("k", [3, 7, 20])
def test_hybrid_lists_do_not_depend_on_the_order_points_were_written(tmp_path: Path, k: int) -> None:
    lists = []
    for order in (range(30), reversed(range(30)), [*range(0, 30, 2), *range(1, 30, 2)]):
        s = EdgeVectorStore(tmp_path / f"qdrant-{len(lists)}")
        s.ensure_collection("d.enriched_kb", DIM)
        for i in order:  # one point per write, so each order is its own insertion sequence
            s.upsert("d.enriched_kb", [_tied_point(i)])
        r = retriever(s)
        lists.append([(h.point_id, h.score) for h in r.search("d", "wifi?", k=k, mode="hybrid", kb="enriched")])
        s.close()
    assert lists[0] == lists[1] == lists[2]
    assert len(lists[0]) == k
