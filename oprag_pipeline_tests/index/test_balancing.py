"""Opinion-balanced retrieval: quotas, entity finding, and the mode against a real embedded Qdrant engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oprag_pipeline.index.balancing import proportional_quotas, split_slots
from oprag_pipeline.index.retrieval import OpinionProfile, Retriever
from oprag_pipeline.index.vector_store import EdgeVectorStore, IndexPoint, point_uuid
from oprag_pipeline.registry.matching import AliasMatcher


def test_quotas_follow_the_corpus_proportions_and_sum_to_k() -> None:
    assert proportional_quotas({-30: 50, 0: 30, 20: 20}, 10) == {-30: 5, 0: 3, 20: 2}
    # largest remainder: 7 slots over 1/3 each → 2.33 each, the extra slot to the most frequent, then lowest level
    assert proportional_quotas({-10: 5, 10: 5, 30: 5}, 7) == {-10: 3, 10: 2, 30: 2}
    quotas = proportional_quotas({-30: 3, -20: 1, 0: 90, 30: 6}, 20)
    assert sum(quotas.values()) == 20 and quotas[0] == 18
    assert proportional_quotas({10: 2, -10: 1}, 10) == {10: 2, -10: 1}  # never more than exists
    assert proportional_quotas({}, 10) == {} and proportional_quotas({10: 4}, 0) == {}


def test_slots_split_over_named_entities() -> None:
    assert split_slots(20, 2) == [10, 10]
    assert split_slots(7, 3) == [3, 2, 2]
    assert split_slots(5, 0) == []


def test_entities_are_found_on_whole_words_with_plurals_folded() -> None:
    finder = AliasMatcher.from_aliases(
        {"e1": ["front desk", "reception"], "e2": ["desk"], "e3": ["room"], "e4": ["check-in"]}
    )
    assert finder.entities_in("How friendly was the Front Desk compared with the rooms?") == ["e1", "e3"]
    assert finder.entities_in("was the desk clean") == ["e2"]
    assert finder.entities_in("the check-in was slow; bedrooms fine") == ["e4"]  # "bedrooms" is not "room"
    assert finder.entities_in("nothing here") == []


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=8).astype(np.float32)
    return v / np.linalg.norm(v)


class FixedEmbedder:
    """Every query embeds to the same vector: relevance alone would return the points closest to it."""

    def embed_dense_query(self, texts):
        return [_vector(0) for _ in texts]

    def embed_sparse_query(self, texts):
        return [([1], [1.0]) for _ in texts]


def test_balanced_mode_mirrors_the_corpus_distribution(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path / "qdrant")
    name = "d.enriched_kb"
    store.ensure_collection(name, 8)
    points = []
    # 30 wifi opinions: 20 negative-high, 10 positive-medium. The positive ones are the most similar to the query,
    # so plain relevance returns only positives; the corpus is two-thirds negative.
    for i in range(30):
        positive = i < 10
        vector = _vector(0) + (0.01 if positive else 0.5) * _vector(100 + i)
        points.append(
            IndexPoint(
                id=point_uuid(f"p{i}"),
                dense=vector / np.linalg.norm(vector),
                sparse=([1], [1.0 + i / 100]),  # distinct sparse scores: no ties, a stable fused order
                payload={
                    "domain": "d",
                    "doc_id": f"d{i}",
                    "entity_id": "wifi",
                    "sentiment": "positive" if positive else "negative",
                    "intensity": "medium" if positive else "high",
                    "sentiment_intensity": 20 if positive else -30,
                    "content_hash": str(i),
                },
            )
        )
    store.upsert(name, points)
    profile = OpinionProfile(AliasMatcher.from_aliases({"wifi": ["wifi", "wireless"]}), {"wifi": {20: 10, -30: 20}})
    retriever = Retriever(store, FixedEmbedder(), profiles={"d": profile})
    nearest = retriever.search("d", "is the wifi good?", k=6, mode="semantic", kb="enriched")
    assert {h.payload["sentiment"] for h in nearest} == {"positive"}
    balanced = retriever.search("d", "is the wifi good?", k=6, mode="balanced", kb="enriched")
    assert len(balanced) == 6 and len({h.point_id for h in balanced}) == 6
    assert sorted(h.payload["sentiment_intensity"] for h in balanced) == [-30, -30, -30, -30, 20, 20]
    # no entity named: plain hybrid retrieval (compared by fused scores: RRF sums can tie, and tied points may come
    # back in either order)
    plain = retriever.search("d", "anything?", k=6, mode="hybrid", kb="enriched")
    fallback = retriever.search("d", "anything?", k=6, mode="balanced", kb="enriched")
    assert [round(h.score, 6) for h in fallback] == [round(h.score, 6) for h in plain]
    with pytest.raises(ValueError, match="enriched KB"):
        retriever.search("d", "is the wifi good?", k=6, mode="balanced", kb="raw")
    store.close()
