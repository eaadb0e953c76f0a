"""How strongly an opinion is held, learnt from a corpus's own star ratings.

The offline extractor's default intensity is a hand-weighted rule over cues in the opinion's clause
(`cues.intensity_score`): it is general, but within the opinions it calls positive its level hardly tracks how many
stars the author gave (Spearman about 0.2-0.25 on TripAdvisor per-aspect stars). A corpus whose documents carry
ratings says how strongly its authors feel in its own terms, so when one does, the adaptation step
(`ratings.fit_intensity_from_ratings`) learns the level from them: a ridge regression per polarity from the
opinion's strength features (below) onto the rating, read as a strength on the polarity's side of the scale; the
levels are then cut at the shares the ratings themselves give (for positive opinions: the top star is "high", the
next "medium", the rest "low"; mirrored for negative ones). Nothing here is fitted to a shipped corpus: the
calibration is built from the user's data, stored in the warehouse beside the domain's other adaptation, and part
of the extractor version, so the opinion cache re-extracts once when it appears or changes.

Measured with `benchmarks/bench_aspect_model.py` (TripAdvisor, calibration fitted on the ratings of 20 hotels,
judged on 20 other hotels never used for any fit): see the README's extraction section for the figures.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STRENGTH_FEATURES = (
    "confidence",  # the pooled probability of the answered polarity
    "evidence_valence",  # VADER compound of the entity's sentences, signed toward the polarity
    "document_tone",  # mean VADER compound of the document's other sentences, signed toward the polarity (0: none)
    "own_sentence_valence",  # mean VADER compound of the sentences that name the entity, signed likewise
    "intensifiers",
    "extreme_words",
    "softeners",
    "exclamations",
    "shouted_words",
    "cue_level",  # the cue rule's level (0 low, 1 medium, 2 high), after the concession rule
    "log_words",  # length of the entity's sentences: a long account of one thing tends to be a strong one
    "neutral_mass",  # the pooled probability of "neutral": a hedged answer
    "contrasts",  # but / however / although ... in the entity's sentences: a qualified opinion
    "opposing_share",  # share of the document's other sentences on the opposite side
)
LEVELS = ("low", "medium", "high")
# Counts are capped: the third "very" in a sentence says little more than the second, and a pasted run of "!!!!!!"
# must not dominate a linear score.
COUNT_CAP = 3.0
# Fewer opinions of one polarity than this in the rated sample and that polarity keeps the cue rule: a regression and
# two quantiles estimated from a handful of ratings would move with every document added.
MIN_PER_POLARITY = 30
# Folds of the check that a learnt level beats the cue rule's on the rated sample itself (`_learns_more_than_cues`).
CHECK_FOLDS = 5
# Ridge penalty on standardised features: a weak prior (the sample has hundreds of opinions) that keeps the fit stable
# when two features are nearly collinear (evidence and own-sentence valence often are).
RIDGE = 1.0


def strength_features(
    sign: int,
    confidence: float,
    evidence_valence: float,
    document_tone: float | None,
    own_valence: float,
    cue_counts: dict[str, float],
    cue_level: str,
    words: int,
    neutral_mass: float = 0.0,
    contrasts: int = 0,
    opposing_share: float = 0.0,
) -> np.ndarray:
    """The feature vector of one stated opinion, valences oriented so that larger means stronger on its side."""

    def capped(name: str) -> float:
        return min(float(cue_counts.get(name, 0.0)), COUNT_CAP)

    return np.array(
        [
            confidence,
            sign * evidence_valence,
            sign * (document_tone or 0.0),
            sign * own_valence,
            capped("intensifiers"),
            capped("extreme"),
            capped("softeners"),
            capped("exclaim"),
            capped("caps"),
            float(LEVELS.index(cue_level)),
            math.log1p(words),
            neutral_mass,
            min(float(contrasts), COUNT_CAP),
            opposing_share,
        ],
        dtype=np.float64,
    )


@dataclass(frozen=True)
class PolarityFit:
    """A linear strength score for one polarity and the two cuts that turn it into a level."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]  # intercept first
    low_cut: float  # below: "low"
    high_cut: float  # at or above: "high"
    size: int

    def score(self, features: np.ndarray) -> float:
        z = (features - np.asarray(self.mean)) / np.asarray(self.scale)
        return float(self.weights[0] + z @ np.asarray(self.weights[1:]))

    def level(self, features: np.ndarray) -> str:
        s = self.score(features)
        return "high" if s >= self.high_cut else "medium" if s >= self.low_cut else "low"


@dataclass(frozen=True)
class IntensityCalibration:
    """Per-polarity fits; a polarity without one keeps the cue rule's level."""

    positive: PolarityFit | None
    negative: PolarityFit | None

    def level(self, sentiment: str, features: np.ndarray, cue_level: str) -> str:
        fit = self.positive if sentiment == "positive" else self.negative if sentiment == "negative" else None
        return cue_level if fit is None else fit.level(features)

    def to_json(self) -> str:
        def side(fit: PolarityFit | None) -> dict | None:
            return None if fit is None else fit.__dict__

        return json.dumps({"positive": side(self.positive), "negative": side(self.negative)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> IntensityCalibration:
        data = json.loads(text)

        def side(value: dict | None) -> PolarityFit | None:
            if value is None:
                return None
            return PolarityFit(**{k: tuple(v) if isinstance(v, list) else v for k, v in value.items()})

        return cls(side(data.get("positive")), side(data.get("negative")))

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:8]


def rating_strength_level(rating: float, sign: int, scale: tuple[float, float]) -> int:
    """The level (0 low, 1 medium, 2 high) a rating gives an opinion of polarity ``sign``: the scale's end on the
    opinion's side is high, one step in from it medium, anything further (the middle, or the other side) low."""
    lo, hi = scale
    strength = rating if sign > 0 else lo + hi - rating
    return 2 if strength >= hi - 0.5 else 1 if strength >= hi - 1.5 else 0


def _fit_polarity(features: np.ndarray, ratings: np.ndarray, sign: int, scale: tuple[float, float]) -> PolarityFit:
    lo, hi = scale
    target = (ratings - lo) / (hi - lo) if sign > 0 else (hi - ratings) / (hi - lo)
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    std = np.where(std > 1e-9, std, 1.0)  # a feature constant in the sample carries no weight
    z = (features - mean) / std
    design = np.c_[np.ones(len(z)), z]
    penalty = RIDGE * np.eye(design.shape[1])
    penalty[0, 0] = 0.0  # the intercept is not shrunk
    weights = np.linalg.solve(design.T @ design + penalty, design.T @ target)
    scores = design @ weights
    levels = np.array([rating_strength_level(float(r), sign, scale) for r in ratings])
    share_high = float((levels == 2).mean())
    share_medium = float((levels == 1).mean())
    # the cuts reproduce the sample's own shares of the three levels among this polarity's opinions
    # (a level no rating gave is cut beyond every score, so it is never answered)
    above, below = float(scores.max()) + 1.0, float(scores.min()) - 1.0
    high_cut = float(np.quantile(scores, 1.0 - share_high)) if share_high > 0 else above
    low_share = 1.0 - share_high - share_medium
    low_cut = below if low_share < 1e-9 else float(np.quantile(scores, low_share)) if low_share < 1.0 else above
    return PolarityFit(
        mean=tuple(round(float(v), 6) for v in mean),
        scale=tuple(round(float(v), 6) for v in std),
        weights=tuple(round(float(v), 6) for v in weights),
        low_cut=round(low_cut, 6),
        high_cut=round(high_cut, 6),
        size=len(ratings),
    )


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho, 0 where either side is constant (no ordering to agree with)."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(spearmanr(a, b).statistic)


def _learns_more_than_cues(
    features: np.ndarray, ratings: np.ndarray, sign: int, scale: tuple[float, float], folds: int = CHECK_FOLDS
) -> bool:
    """Whether levels learnt on part of the sample order the rest of it by its ratings better than the cue rule's
    levels do (Spearman, out of fold; folds by position, so the same sample always decides the same way). A domain
    whose ratings say little about how its opinions are worded (an overall rating that speaks for one entity only
    loosely, say) then keeps the cue rule rather than levels fitted to noise."""
    strength = ratings if sign > 0 else scale[0] + scale[1] - ratings
    fold = np.arange(len(ratings)) % folds
    learnt = np.zeros(len(ratings))
    for k in range(folds):
        train, test = fold != k, fold == k
        fit = _fit_polarity(features[train], ratings[train], sign, scale)
        learnt[test] = [LEVELS.index(fit.level(x)) for x in features[test]]
    cue = features[:, STRENGTH_FEATURES.index("cue_level")]
    return _spearman(learnt, strength) > _spearman(cue, strength)


def fit_intensity_calibration(
    features: Sequence[np.ndarray],
    sentiments: Sequence[str],
    ratings: Sequence[float],
    scale: tuple[float, float],
    min_per_polarity: int = MIN_PER_POLARITY,
) -> IntensityCalibration | None:
    """The calibration learnt from rated opinions (neutral ones are ignored), None when neither polarity has
    ``min_per_polarity`` of them or, for either, learnt levels do not order held-out ratings better than the cue
    rule's (`_learns_more_than_cues`)."""
    fits: dict[str, PolarityFit | None] = {}
    for sentiment, sign in (("positive", 1), ("negative", -1)):
        rows = [i for i, s in enumerate(sentiments) if s == sentiment]
        if len(rows) < min_per_polarity:
            fits[sentiment] = None
            continue
        x = np.vstack([features[i] for i in rows])
        y = np.asarray([ratings[i] for i in rows], dtype=np.float64)
        fits[sentiment] = _fit_polarity(x, y, sign, scale) if _learns_more_than_cues(x, y, sign, scale) else None
    if fits["positive"] is None and fits["negative"] is None:
        return None
    return IntensityCalibration(fits["positive"], fits["negative"])
