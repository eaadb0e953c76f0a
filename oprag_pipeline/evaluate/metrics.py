"""Retrieval-fidelity metrics of one question's top-k hits, as pure functions.

A hit is what a retrieved point maps back to: the opinions it carries (an enriched or split point carries its
own; a raw chunk carries those of the documents and spans it contains) and its author attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import ot

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
    finds nothing about the entity is not rewarded.
    """
    if len(reference) == 0:
        raise ValueError("the reference distribution is empty")
    if len(retrieved) == 0:
        return float(SIGMA_SUPPORT[-1] - SIGMA_SUPPORT[0])
    a = np.asarray(retrieved, dtype=np.float64)
    if isinstance(reference, ScoreDistribution):
        return float(ot.wasserstein_1d(a, reference.values, v_weights=reference.weights, p=1))
    return float(ot.wasserstein_1d(a, np.asarray(reference, dtype=np.float64), p=1))


def retrieved_scores(hits: Sequence[Hit], entity_id: str) -> list[int]:
    return [o.sentiment_intensity for o in _entity_opinions(hits, entity_id)]


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
        "w1": wasserstein1(retrieved_scores(hits, entity_id), corpus_scores),
    }
    for attribute, share in demographic_coverage(hits, groups).items():
        row[f"coverage_{attribute}"] = share
    for attribute, share in demographic_coverage(hits, groups, entity_id=entity_id).items():
        row[f"coverage_matched_{attribute}"] = share
    return row
