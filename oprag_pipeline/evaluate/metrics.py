"""Retrieval-fidelity metrics of one question's top-k hits, as pure functions.

A hit is what a retrieved point maps back to: the opinions it carries (an enriched or split point carries its
own; a raw chunk carries those of the documents and spans it contains) and its author attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

SIGMA_SUPPORT = np.array([-30.0, -20.0, -10.0, 0.0, 10.0, 20.0, 30.0])


@dataclass(frozen=True)
class HitOpinion:
    entity_id: str
    sentiment_intensity: int
    impact_score: int
    emotions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """One retrieved point with the opinions and author attributes it maps back to."""

    point_id: str
    opinions: tuple[HitOpinion, ...] = ()
    author: Mapping[str, str] = field(default_factory=dict)
    doc_id: str = ""


def entity_match_rate(hits: Sequence[Hit], entity_id: str) -> float:
    """Share of hits that carry an opinion about the queried entity (0 for no hits)."""
    if not hits:
        return 0.0
    return sum(any(o.entity_id == entity_id for o in h.opinions) for h in hits) / len(hits)


def _entity_opinions(hits: Sequence[Hit], entity_id: str | None) -> list[HitOpinion]:
    return [o for h in hits for o in h.opinions if entity_id is None or o.entity_id == entity_id]


def sentiment_intensity_std(hits: Sequence[Hit], entity_id: str | None = None) -> float:
    """Population std of σ-scale scores among retrieved opinions (of the entity, or all): spread of views."""
    values = [o.sentiment_intensity for o in _entity_opinions(hits, entity_id)]
    return float(np.std(values)) if values else 0.0


def impact_std(hits: Sequence[Hit], entity_id: str | None = None) -> float:
    values = [o.impact_score for o in _entity_opinions(hits, entity_id)]
    return float(np.std(values)) if values else 0.0


def distinct_emotions(hits: Sequence[Hit], entity_id: str | None = None) -> int:
    return len({e for o in _entity_opinions(hits, entity_id) for e in o.emotions})


@dataclass(frozen=True)
class ScoreDistribution:
    """A sample of scores held as its distinct values and their shares: the same empirical distribution.

    Why: on a large corpus one entity's reference sample has hundreds of thousands of scores on a 7-point scale,
    and W1 against it is computed for every cell of the retrieval grid; reduced once, each W1 is over 7 points.
    """

    values: np.ndarray
    weights: np.ndarray
    size: int

    @classmethod
    def from_counts(cls, counts: Mapping[float, int]) -> ScoreDistribution:
        kept = sorted((float(v), int(c)) for v, c in counts.items() if c > 0)
        total = sum(c for _, c in kept)
        values = np.array([v for v, _ in kept], dtype=np.float64)
        weights = np.array([c / total for _, c in kept], dtype=np.float64) if total else np.zeros(0)
        return cls(values, weights, total)

    def __len__(self) -> int:
        return self.size


def wasserstein1(retrieved: Sequence[float], reference: Sequence[float] | ScoreDistribution) -> float:
    """Empirical W1 between two samples of σ-scale scores, via optimal transport (POT's exact 1-D solver).

    Empty retrieved samples get the worst case on the scale (60: all mass moved end to end), so a retrieval that
    finds nothing about the entity is not rewarded; `fidelity_metrics` reports that case apart as a miss.
    """
    if len(reference) == 0:
        raise ValueError("the reference distribution is empty")
    if len(retrieved) == 0:
        return float(SIGMA_SUPPORT[-1] - SIGMA_SUPPORT[0])
    import ot  # here, not at module level: POT imports scipy.stats, ~1 s of every `oprag` command's start

    a = np.asarray(retrieved, dtype=np.float64)
    if isinstance(reference, ScoreDistribution):
        return float(ot.wasserstein_1d(a, reference.values, v_weights=reference.weights, p=1))
    return float(ot.wasserstein_1d(a, np.asarray(reference, dtype=np.float64), p=1))


def retrieved_scores(hits: Sequence[Hit], entity_id: str) -> list[int]:
    return [o.sentiment_intensity for o in _entity_opinions(hits, entity_id)]


def fidelity_metrics(
    name: str, retrieved: Sequence[float], reference: Sequence[float] | ScoreDistribution
) -> dict[str, float]:
    """W1 and the miss apart, and the old combined figure under its own name.

    Why apart: a retrieval that found no opinion on the entity has no distribution to compare, and scoring it at
    the scale's maximum (60) mixes "found nothing" with "found a skewed sample" in one average. So:

    * `<name>` — W1 over the retrievals that found opinions (absent from the row otherwise);
    * `<name>_miss` — 1 when none was found, else 0 (its mean is the miss rate);
    * `<name>_incl_miss` — the former combined figure, a miss counted as 60.
    """
    row = {f"{name}_miss": 0.0 if len(retrieved) else 1.0, f"{name}_incl_miss": wasserstein1(retrieved, reference)}
    if len(retrieved):
        row[name] = row[f"{name}_incl_miss"]
    return row


def hybrid_rank_relevance(hit_ids: Sequence[str], hybrid_ranks: Mapping[str, int], depth: int) -> dict[str, float]:
    """A relevance proxy next to the fidelity figures: where the hits sit in the same KB's plain hybrid ranking
    of the question (its top `depth`). A diversifier that reaches far down the relevance list — or outside it,
    into text the plain retriever would not have returned — shows it here.

    * `relevance_in_hybrid_top` — share of hits inside that top `depth`;
    * `relevance_hybrid_rank` — mean rank of the hits there, a hit outside counting as depth + 1 (a lower bound
      on how far down it is).
    """
    if not hit_ids:
        return {}
    ranks = [hybrid_ranks.get(h, depth + 1) for h in hit_ids]
    return {
        "relevance_in_hybrid_top": sum(r <= depth for r in ranks) / len(ranks),
        "relevance_hybrid_rank": float(np.mean(ranks)),
    }


def demographic_coverage(
    hits: Sequence[Hit], groups: Mapping[str, Iterable[str]], *, entity_id: str | None = None
) -> dict[str, float]:
    """Per author attribute: share of the attribute's corpus groups present among the hits.

    With `entity_id`, only hits that match the entity count — coverage among the opinions that actually answer
    the question, which is where a skewed retriever hides.
    """
    chosen = [h for h in hits if entity_id is None or any(o.entity_id == entity_id for o in h.opinions)]
    coverage = {}
    for attribute, values in groups.items():
        universe = set(values)
        if not universe:
            continue
        seen = {h.author.get(attribute) for h in chosen} & universe
        coverage[attribute] = len(seen) / len(universe)
    return coverage


def question_metrics(
    hits: Sequence[Hit],
    entity_id: str,
    corpus_scores: Sequence[float] | ScoreDistribution,
    groups: Mapping[str, Iterable[str]],
) -> dict[str, float]:
    """Every per-question metric in one mapping (the row a metric table stores)."""
    row: dict[str, float] = {
        "entity_match_rate": entity_match_rate(hits, entity_id),
        "sentiment_intensity_std": sentiment_intensity_std(hits, entity_id),
        "impact_std": impact_std(hits, entity_id),
        "distinct_emotions": float(distinct_emotions(hits, entity_id)),
        **fidelity_metrics("w1", retrieved_scores(hits, entity_id), corpus_scores),
    }
    for attribute, share in demographic_coverage(hits, groups).items():
        row[f"coverage_{attribute}"] = share
    for attribute, share in demographic_coverage(hits, groups, entity_id=entity_id).items():
        row[f"coverage_matched_{attribute}"] = share
    return row
