"""Search-result diversification baselines from the literature, as pure selection functions.

Balanced retrieval (see `balancing.py`) fills k slots in proportion to the corpus's σ-levels. Before claiming it
helps, it has to beat what information retrieval already knows how to do:

* **MMR** (Carbonell & Goldstein, SIGIR 1998): greedy selection of argmax λ·sim(d, q) − (1 − λ)·max_{s∈S} sim(d, s).
  It diversifies *semantically*; the reference study argues this is not opinion diversification, so it is the
  baseline balanced retrieval should beat on fidelity.
* **xQuAD** (Santos, Macdonald & Ounis, WWW 2010): greedy selection of argmax
  (1 − λ)·P(d|q) + λ·Σ_a P(a|q)·P(d|q,a)·Π_{s∈S}(1 − P(s|q,a)) — coverage of explicit aspects, weighted by their
  importance, with novelty decaying as an aspect is served.
* **PM-2** (Dang & Croft, SIGIR 2012): proportionality by the Sainte-Laguë method. Each aspect a has votes v_a (its
  weight) and seats s_a (its share of what was already selected). For every position: quotients
  qt_a = v_a / (2·s_a + 1); the aspect a* with the largest quotient is served; the document chosen is
  argmax λ·qt_{a*}·P(d|a*) + (1 − λ)·Σ_{a≠a*} qt_a·P(d|a); then every aspect's seats grow by
  P(d*|a) / Σ_b P(d*|b).

Here the aspects are (entity, σ-level) pairs and their weights the corpus's σ distribution for the entities the
question names, so the three proportional methods all aim at the same target. A candidate covers exactly one
aspect (its own entity and σ-score) or none (a point about another entity), which makes the seat update of PM-2 a
whole seat for the selected point's aspect.

How the first-stage relevance becomes the probabilities the papers use (the papers take normalised retrieval
scores; the normalisations below are stated so the results can be reproduced):

* xQuAD: P(d|q) = rel(d) / Σ_R rel, and P(d|q,a) = rel(d) / Σ_{R_a} rel over the candidates covering a (0 for
  the others) — each a distribution over the candidates, as the probabilistic framework reads them;
* PM-2: P(d|a) = rel(d) / max_R rel for the candidates covering a (0 for the others): the aspect terms are then
  compared on the same relevance scale, whatever the size of each aspect's candidate list.

Two boundary cases the papers do not meet with a finite candidate list, decided here: an aspect none of whose
candidates remain cannot be served, so PM-2 leaves it out of the election (otherwise its quotient would stay the
largest for ever and the λ term would be wasted); and once no remaining candidate covers any aspect, the rest of
the list is filled by relevance.

Every argmax breaks ties by the candidate's relevance and then its point id, so a selection is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_LAMBDA = 0.5
"""λ of all three methods unless configured: the even trade-off between relevance and diversity that MMR's and
xQuAD's authors report as a reasonable default, and the midpoint of the range PM-2's authors tuned over; no value
is tuned on our corpora."""


@dataclass(frozen=True)
class Candidate:
    """A first-stage hit offered for re-ranking.

    `relevance` is its first-stage score (higher is better; for MMR the cosine to the query), `aspect` the one
    aspect it covers or None, `vector` its unit embedding (MMR only).
    """

    point_id: str
    relevance: float
    aspect: Hashable | None = None
    vector: np.ndarray | None = None


def relevance_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Best first by relevance, ties by point id: the deterministic order every ranking here falls back on."""
    return sorted(candidates, key=lambda c: (-c.relevance, c.point_id))


def _best(scored: Sequence[tuple[float, Candidate]]) -> Candidate:
    """argmax of the score; ties by relevance, then point id."""
    return min(scored, key=lambda sc: (-sc[0], -sc[1].relevance, sc[1].point_id))[1]


def _check_lambda(lambda_: float) -> None:
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"λ must lie in [0, 1], not {lambda_}")


def mmr(candidates: Sequence[Candidate], k: int, *, lambda_: float = DEFAULT_LAMBDA) -> list[Candidate]:
    """Maximal marginal relevance: λ·sim(d, q) − (1 − λ)·max similarity to what is already selected (cosine)."""
    _check_lambda(lambda_)
    if any(c.vector is None for c in candidates):
        raise ValueError("MMR needs every candidate's vector")
    remaining = relevance_order(candidates)
    chosen: list[Candidate] = []
    max_sim = {c.point_id: -np.inf for c in remaining}  # most similar selected document, updated incrementally
    while remaining and len(chosen) < k:
        scored = [
            (lambda_ * c.relevance - (1 - lambda_) * (max_sim[c.point_id] if chosen else 0.0), c) for c in remaining
        ]
        pick = _best(scored)
        chosen.append(pick)
        remaining = [c for c in remaining if c.point_id != pick.point_id]
        for c in remaining:
            max_sim[c.point_id] = max(max_sim[c.point_id], float(np.dot(c.vector, pick.vector)))
    return chosen


def _check_relevance(candidates: Sequence[Candidate]) -> None:
    if any(c.relevance < 0 for c in candidates):
        raise ValueError("xQuAD and PM-2 read relevance as a probability: scores must be non-negative")


def _weights(aspect_weights: Mapping[Hashable, float]) -> dict[Hashable, float]:
    total = math.fsum(w for w in aspect_weights.values() if w > 0)  # exact: the same whatever the dict's order
    if total <= 0:
        raise ValueError("aspect weights must have a positive sum")
    return {a: w / total for a, w in aspect_weights.items() if w > 0}


def _xquad_coverage(
    c: Candidate, weights: Mapping[Hashable, float], per_aspect: Mapping[Hashable, float], novelty: Mapping
) -> float:
    """Σ_a P(a|q)·P(d|q,a)·Π(1 − P(s|q,a)): only the candidate's own aspect contributes."""
    if c.aspect not in weights or not per_aspect.get(c.aspect):
        return 0.0
    return weights[c.aspect] * (c.relevance / per_aspect[c.aspect]) * novelty[c.aspect]


def _pm2_score(c: Candidate, quotient: Mapping[Hashable, float], served: Hashable, lambda_: float) -> float:
    """λ·qt_{a*} for the served aspect's candidates, (1 − λ)·qt_a for another aspect's, 0 for none (× P(d|a))."""
    if c.aspect not in quotient:
        return 0.0
    return (lambda_ if c.aspect == served else 1 - lambda_) * quotient[c.aspect]


def xquad(
    candidates: Sequence[Candidate],
    k: int,
    aspect_weights: Mapping[Hashable, float],
    *,
    lambda_: float = DEFAULT_LAMBDA,
) -> list[Candidate]:
    """xQuAD with each candidate covering at most one aspect (see the module docstring for the probabilities)."""
    _check_lambda(lambda_)
    _check_relevance(candidates)
    weights = _weights(aspect_weights)
    remaining = relevance_order(candidates)
    total = sum(c.relevance for c in remaining) or 1.0
    per_aspect: dict[Hashable, float] = {}
    for c in remaining:
        if c.aspect in weights:
            per_aspect[c.aspect] = per_aspect.get(c.aspect, 0.0) + c.relevance
    novelty = dict.fromkeys(weights, 1.0)  # Π over selected of (1 − P(s|q,a))
    chosen: list[Candidate] = []
    while remaining and len(chosen) < k:
        pick = _best(
            [
                ((1 - lambda_) * c.relevance / total + lambda_ * _xquad_coverage(c, weights, per_aspect, novelty), c)
                for c in remaining
            ]
        )
        chosen.append(pick)
        remaining = [c for c in remaining if c.point_id != pick.point_id]
        if pick.aspect in weights and per_aspect.get(pick.aspect):
            novelty[pick.aspect] *= 1 - pick.relevance / per_aspect[pick.aspect]
    return chosen


def pm2(
    candidates: Sequence[Candidate],
    k: int,
    aspect_weights: Mapping[Hashable, float],
    *,
    lambda_: float = DEFAULT_LAMBDA,
) -> list[Candidate]:
    """PM-2: Sainte-Laguë quotients choose the aspect to serve, then the λ-weighted score chooses the document."""
    _check_lambda(lambda_)
    _check_relevance(candidates)
    votes = _weights(aspect_weights)
    remaining = relevance_order(candidates)
    top = max((c.relevance for c in remaining), default=0.0) or 1.0
    seats = dict.fromkeys(votes, 0.0)
    chosen: list[Candidate] = []
    while remaining and len(chosen) < k:
        servable = {c.aspect for c in remaining if c.aspect in votes}
        if not servable:
            chosen.extend(remaining[: k - len(chosen)])  # nothing left covers an aspect: relevance fills the rest
            break
        quotient = {a: votes[a] / (2 * seats[a] + 1) for a in servable}
        served = min(servable, key=lambda a: (-quotient[a], str(a)))  # ties: the aspect's name, deterministically

        pick = _best([(_pm2_score(c, quotient, served, lambda_) * c.relevance / top, c) for c in remaining])
        chosen.append(pick)
        remaining = [c for c in remaining if c.point_id != pick.point_id]
        if pick.aspect in seats:
            seats[pick.aspect] += 1.0  # P(d*|a) / Σ_b P(d*|b) = 1 for its one aspect
    return chosen


def sigma_aspect_weights(
    sigma_counts: Mapping[str, Mapping[int, int]], entities: Sequence[str]
) -> dict[tuple[str, int], float]:
    """Aspect weights for the entities a question names: each entity an equal share (as balanced retrieval splits
    its slots), divided over its σ-levels in proportion to the corpus's counts."""
    weights: dict[tuple[str, int], float] = {}
    named = [e for e in entities if sum(sigma_counts.get(e, {}).values()) > 0]
    for entity_id in named:
        counts = sigma_counts[entity_id]
        total = sum(c for c in counts.values() if c > 0)
        for sigma, count in counts.items():
            if count > 0:
                weights[(entity_id, int(sigma))] = count / total / len(named)
    return weights
