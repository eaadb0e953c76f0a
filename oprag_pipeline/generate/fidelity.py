"""Generation fidelity as pure functions: does a reader of the answer come away with the corpus's views?

The reference study's agenda names the term W(P_pop, P_reader). Here P_reader is the distribution the answer
conveys about an entity on the σ-scale:

- from the shares it states: per σ-level when it gives intensities, else each side's share placed on that side's
  medium point (±20, neutral 0): a reader told "30% negative" and nothing about how strongly pictures an ordinary
  negative opinion;
- for an answer that states no shares (plain RAG, free text), by reading it back: the same offline extractor the
  pipeline uses runs on each sentence of the answer, and every opinion it finds about the entity is one observation
  of what the reader was told.

Then: W1 between P_pop and P_reader; minority erasure (a side held by at least 10% of the corpus that the answer
does not convey at all); the share error (largest gap between a conveyed and a true side share) against a tolerance;
the grounded-quote rate (quotes found verbatim in the retrieved text of the document they cite).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from oprag_pipeline.evaluate.metrics import SIGMA_SUPPORT, ScoreDistribution
from oprag_pipeline.generate.answer import SIDES, Answer, Quote, StatedShares
from oprag_pipeline.generate.context import Passage, sentences, side_of
from oprag_pipeline.registry.matching import locate_quote
from oprag_pipeline.schema import DocumentInput, RegistryEntity

SIDE_POINT = {"positive": 20.0, "neutral": 0.0, "negative": -20.0}  # the medium point of each side (see above)
# The study's threshold for a view worth keeping: one person in ten.
MINORITY_SHARE = 0.10
# A share is "right" within five points: whole-percent rounding costs half a point, and a reader hears "about 30%"
# as 25–35%.
SHARE_TOLERANCE = 0.05
# An answer that conveys nothing about the entity gets the worst case on the scale (all mass moved end to end), as
# an empty retrieval does in the retrieval metrics.
WORST_W1 = float(SIGMA_SUPPORT[-1] - SIGMA_SUPPORT[0])
_CITATION = re.compile(r"\[[^\]\n]{1,80}\]")


def distribution_from_shares(shares: Mapping[float, float], size: int = 1) -> ScoreDistribution:
    kept = sorted((float(v), float(w)) for v, w in shares.items() if w > 0)
    total = sum(w for _, w in kept)
    values = np.array([v for v, _ in kept], dtype=np.float64)
    weights = np.array([w / total for _, w in kept], dtype=np.float64) if total else np.zeros(0)
    return ScoreDistribution(values, weights, size if total else 0)


def conveyed_by_shares(stated: StatedShares) -> ScoreDistribution:
    if stated.sigma_shares:
        return distribution_from_shares(stated.sigma_shares, max(stated.basis, 1))
    return distribution_from_shares({SIDE_POINT[s]: w for s, w in stated.shares.items()}, max(stated.basis, 1))


def conveyed_by_scores(scores: Iterable[int]) -> ScoreDistribution:
    counts: dict[float, int] = {}
    for score in scores:
        counts[float(score)] = counts.get(float(score), 0) + 1
    return ScoreDistribution.from_counts(counts)


def w1_between(conveyed: ScoreDistribution, truth: ScoreDistribution) -> float:
    """W1 on the σ-scale between two weighted distributions (POT's exact 1-D solver)."""
    if len(truth) == 0:
        raise ValueError("the reference distribution is empty")
    if len(conveyed) == 0:
        return WORST_W1
    import ot  # lazily, as in `evaluate.metrics.wasserstein1`

    value = ot.wasserstein_1d(conveyed.values, truth.values, u_weights=conveyed.weights, v_weights=truth.weights, p=1)
    return round(float(value), 9)  # identical distributions give 1e-15 of float noise, not a distance


def side_shares(dist: ScoreDistribution) -> dict[str, float]:
    shares = dict.fromkeys(SIDES, 0.0)
    for value, weight in zip(dist.values, dist.weights, strict=True):
        shares[side_of(round(value))] += float(weight)
    return shares


def minority_sides(truth: Mapping[str, float], threshold: float = MINORITY_SHARE) -> list[str]:
    """Sides other than the largest that hold at least `threshold` of the corpus."""
    if not any(truth.values()):
        return []
    largest = max(SIDES, key=lambda s: (truth.get(s, 0.0), -SIDES.index(s)))
    return [s for s in SIDES if s != largest and truth.get(s, 0.0) >= threshold]


def erased_minorities(truth: Mapping[str, float], conveyed: Mapping[str, float]) -> list[str]:
    return [s for s in minority_sides(truth) if conveyed.get(s, 0.0) <= 0.0]


def share_error(conveyed: Mapping[str, float], truth: Mapping[str, float]) -> float:
    """The largest gap between a conveyed and a true side share (rounded: sums of shares carry 1e-17 of noise)."""
    return round(max(abs(conveyed.get(s, 0.0) - truth.get(s, 0.0)) for s in SIDES), 9)


def check_quotes(quotes: Sequence[Quote], passages: Sequence[Passage]) -> list[Quote]:
    """Each quote with `grounded` set: found verbatim (case-, whitespace- and quote-style-insensitive) in the text of a
    retrieved passage of the document it cites."""
    by_doc: dict[str, list[str]] = {}
    for passage in passages:
        by_doc.setdefault(passage.doc_id, []).append(passage.text)
    checked = []
    for quote in quotes:
        grounded = any(locate_quote(text, quote.text) is not None for text in by_doc.get(quote.doc_id, []))
        checked.append(Quote(quote.doc_id, quote.text, quote.entity_id, quote.sentiment, quote.point_id, grounded))
    return checked


def grounded_quote_rate(quotes: Sequence[Quote]) -> float | None:
    """Share of quotes grounded; None for an answer without quotes (nothing to check, not a perfect score)."""
    return sum(q.grounded for q in quotes) / len(quotes) if quotes else None


def reading_units(text: str) -> list[str]:
    """The sentences of an answer, citations removed, each read as one statement by the extractor."""
    units = []
    for line in text.splitlines():
        line = _CITATION.sub("", line).strip(" -*#>\t")
        units.extend(line[lo:hi] for lo, hi in sentences(line))
    return [u for u in units if u.strip()]


def read_back(text: str, extractor, entities: Sequence[RegistryEntity]) -> dict[str, list[int]]:
    """σ-scores the extractor reads in the answer, per entity: what a reader of the free text was told."""
    units = reading_units(text)
    if not units:
        return {}
    documents = [DocumentInput(doc_id=f"unit-{i}", text=u, content_hash="") for i, u in enumerate(units)]
    scores: dict[str, list[int]] = {}
    for outcome in extractor.extract(documents, list(entities)):
        for opinion in outcome.opinions:
            if opinion.entity_id is not None:
                scores.setdefault(opinion.entity_id, []).append(opinion.sentiment_intensity)
    return scores


def conveyed_distribution(
    answer: Answer, entity_id: str, read_scores: Mapping[str, Sequence[int]]
) -> ScoreDistribution:
    """What the answer conveys about the entity: its stated shares, else what was read back from its text."""
    stated = answer.stated_for(entity_id)
    if stated is not None:
        return conveyed_by_shares(stated)
    return conveyed_by_scores(read_scores.get(entity_id, ()))


def answer_fidelity(
    conveyed: ScoreDistribution,
    corpus: ScoreDistribution,
    quotes: Sequence[Quote],
    gold: ScoreDistribution | None = None,
) -> dict[str, float]:
    """Every per-answer fidelity figure in one mapping (the row the metric table stores). Rates are 0/1 per answer
    so their mean over answers is the rate; the grounded-quote rate is left out for an answer without quotes."""
    truth, told = side_shares(corpus), side_shares(conveyed) if len(conveyed) else dict.fromkeys(SIDES, 0.0)
    error = share_error(told, truth)
    row = {
        "w1": w1_between(conveyed, corpus),
        "minority_erased": float(bool(erased_minorities(truth, told))),
        "has_minority": float(bool(minority_sides(truth))),
        "share_error": error,
        "shares_within_tolerance": float(error <= SHARE_TOLERANCE),
        "conveys_entity": float(len(conveyed) > 0),
    }
    rate = grounded_quote_rate(quotes)
    if rate is not None:
        row["grounded_quote_rate"] = rate
    if gold is not None and len(gold):
        row["w1_gold"] = w1_between(conveyed, gold)
    return row
