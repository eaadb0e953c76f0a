"""Per-question metric rows from the staged hits: the glue between the SQL staging models and the pure metrics."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from oprag_pipeline.evaluate.metrics import (
    Hit,
    ScoreDistribution,
    fidelity_metrics,
    hybrid_rank_relevance,
    question_metrics,
)

GridKey = tuple[str, str, str, int]  # (question_id, kb, mode, k)


def score_grid(
    question_entities: Mapping[str, str],
    hits: Mapping[GridKey, Sequence[Hit]],
    corpus_scores: Mapping[str, Sequence[float] | ScoreDistribution],
    groups: Mapping[str, Sequence[str]],
    *,
    gold_corpus: Mapping[str, Sequence[float] | ScoreDistribution] | None = None,
    gold_by_doc: Mapping[tuple[str, str], float] | None = None,
    hybrid_ranks: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
    hybrid_depth: int = 60,
) -> Iterator[tuple[str, str, str, int, str, float]]:
    """(question_id, kb, mode, k, metric, value) for every grid cell.

    `w1` compares the σ-scores our extractor gave the retrieved opinions with those it gave the whole corpus.
    `w1_gold`, where the domain has gold labels for the entity, compares the *gold* scores of the retrieved
    documents' opinions on the entity with the gold scores across the corpus: fidelity against human judgement,
    independent of the extractor's errors. Each comes with its miss indicator and the old combined figure
    (`metrics.fidelity_metrics`).

    With `hybrid_ranks` ((question_id, kb) → point id → rank in that KB's plain hybrid list at `hybrid_depth`),
    every cell also gets the relevance proxy of `metrics.hybrid_rank_relevance`.
    """
    gold_corpus = gold_corpus or {}
    gold_by_doc = gold_by_doc or {}
    hybrid_ranks = hybrid_ranks or {}
    for (question_id, kb, mode, k), cell in hits.items():
        entity_id = question_entities[question_id]
        reference = corpus_scores.get(entity_id)
        if not reference:
            continue  # an entity without opinions cannot be evaluated (it would not have been chosen)
        for metric, value in question_metrics(cell, entity_id, reference, groups).items():
            yield question_id, kb, mode, k, metric, value
        gold_reference = gold_corpus.get(entity_id)
        if gold_reference:
            retrieved_gold = [
                gold_by_doc[(h.doc_id, entity_id)]
                for h in cell
                if any(o.entity_id == entity_id for o in h.opinions) and (h.doc_id, entity_id) in gold_by_doc
            ]
            for metric, value in fidelity_metrics("w1_gold", retrieved_gold, gold_reference).items():
                yield question_id, kb, mode, k, metric, value
        if (question_id, kb) in hybrid_ranks:
            relevance = hybrid_rank_relevance([h.point_id for h in cell], hybrid_ranks[(question_id, kb)], hybrid_depth)
            for metric, value in relevance.items():
                yield question_id, kb, mode, k, metric, value
