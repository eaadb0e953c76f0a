"""Intensity levels learnt from a corpus's own ratings (enrich/intensity.py) and read by the offline extractor."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from oprag_pipeline.enrich.intensity import (
    LEVELS,
    STRENGTH_FEATURES,
    IntensityCalibration,
    PolarityFit,
    fit_intensity_calibration,
    rating_strength_level,
)
from oprag_pipeline.enrich.offline import OfflineExtractor, VaderClauseScorer, relevel
from oprag_pipeline.resources import ExtractorResource
from oprag_pipeline.schema import DocumentInput, RegistryEntity

SCALE = (1.0, 5.0)


def rated_sample(seed: int, n: int = 600) -> tuple[list[np.ndarray], list[str], list[float]]:
    """Invented rated opinions: one feature (the evidence valence) carries the stars, the others are noise."""
    rng = np.random.default_rng(seed)
    features, sentiments, ratings = [], [], []
    for _ in range(n):
        positive = rng.random() < 0.75
        stars = float(rng.choice([3, 4, 5], p=[0.2, 0.35, 0.45])) if positive else float(rng.choice([1, 2, 3]))
        strength = stars - 3 if positive else 3 - stars  # 0..2 on the opinion's side
        x = rng.normal(0.0, 1.0, len(STRENGTH_FEATURES))
        x[STRENGTH_FEATURES.index("evidence_valence")] = 0.3 * strength + rng.normal(0.0, 0.25)
        features.append(x)
        sentiments.append("positive" if positive else "negative")
        ratings.append(stars)
    return features, sentiments, ratings


def sigma(sentiment: str, level: str) -> int:
    return (1 if sentiment == "positive" else -1) * (LEVELS.index(level) + 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_learnt_levels_track_the_ratings_of_unseen_opinions(seed: int) -> None:
    calibration = fit_intensity_calibration(*rated_sample(seed)[:3], SCALE)
    assert calibration is not None and calibration.positive and calibration.negative
    features, sentiments, ratings = rated_sample(seed + 100)
    cue = [sigma(s, "medium") for s in sentiments]  # what a rule with no signal gives
    learnt = [sigma(s, calibration.level(s, x, "medium")) for x, s in zip(features, sentiments, strict=True)]
    assert spearmanr(ratings, learnt).statistic > spearmanr(ratings, cue).statistic + 0.05
    for side in ("positive", "negative"):  # within a polarity the sign says nothing; the learnt level does
        rows = [i for i, s in enumerate(sentiments) if s == side]
        rho = spearmanr([ratings[i] for i in rows], [learnt[i] for i in rows]).statistic
        assert rho > 0.5, (side, rho)
    # the levels come out in about the shares the ratings give: 5 stars high, 4 medium, 3 low (positive side)
    positive = [calibration.level("positive", x, "medium") for x, s in zip(features, sentiments, strict=True)
                if s == "positive"]  # fmt: skip
    shares = {level: positive.count(level) / len(positive) for level in LEVELS}
    assert shares["high"] == pytest.approx(0.45, abs=0.08) and shares["low"] == pytest.approx(0.2, abs=0.08)


def test_a_level_no_rating_gave_is_never_answered() -> None:
    features, sentiments, ratings = rated_sample(4)
    capped = [min(r, 4.0) if s == "positive" else r for s, r in zip(sentiments, ratings, strict=True)]
    calibration = fit_intensity_calibration(features, sentiments, capped, SCALE)
    assert calibration is not None
    levels = {calibration.level("positive", x, "medium") for x, s in zip(features, sentiments, strict=True)
              if s == "positive"}  # fmt: skip
    assert "high" not in levels and levels == {"low", "medium"}


def test_a_polarity_with_too_few_ratings_keeps_the_cue_rule() -> None:
    features, sentiments, ratings = rated_sample(5, n=160)  # about 40 negative opinions
    calibration = fit_intensity_calibration(features, sentiments, ratings, SCALE, min_per_polarity=60)
    assert calibration is not None and calibration.positive is not None and calibration.negative is None
    x = features[sentiments.index("negative")]
    assert calibration.level("negative", x, "high") == "high" and calibration.level("negative", x, "low") == "low"
    assert calibration.level("neutral", x, "low") == "low"
    assert fit_intensity_calibration(features, sentiments, ratings, SCALE, min_per_polarity=1000) is None


def test_calibration_round_trips_through_json_and_its_digest_follows_the_weights() -> None:
    calibration = fit_intensity_calibration(*rated_sample(6), SCALE)
    assert calibration is not None
    again = IntensityCalibration.from_json(calibration.to_json())
    assert again == calibration and again.digest == calibration.digest
    features, sentiments, _ = rated_sample(7, n=50)
    for x, s in zip(features, sentiments, strict=True):
        assert again.level(s, x, "low") == calibration.level(s, x, "low")
    assert calibration.positive is not None
    moved = PolarityFit(**{**calibration.positive.__dict__, "high_cut": calibration.positive.high_cut + 0.01})
    assert IntensityCalibration(moved, calibration.negative).digest != calibration.digest


def test_rating_strength_levels_mirror_for_negative_opinions() -> None:
    assert [rating_strength_level(r, 1, SCALE) for r in (5, 4, 3, 2, 1)] == [2, 1, 0, 0, 0]
    assert [rating_strength_level(r, -1, SCALE) for r in (1, 2, 3, 4, 5)] == [2, 1, 0, 0, 0]
    assert rating_strength_level(4.5, 1, SCALE) == 2  # half stars round toward the end they are nearest


BATTERY = [RegistryEntity("battery", "battery", ("battery",))]


def valence_calibration(low_cut: float = 0.3, high_cut: float = 0.7) -> IntensityCalibration:
    """A hand-made calibration: the positive side scores the evidence valence alone, cut at 0.3 and 0.7."""
    weights = [0.0] * (len(STRENGTH_FEATURES) + 1)
    weights[1 + STRENGTH_FEATURES.index("evidence_valence")] = 1.0
    n = len(STRENGTH_FEATURES)
    fit = PolarityFit((0.0,) * n, (1.0,) * n, tuple(weights), low_cut=low_cut, high_cut=high_cut, size=100)
    return IntensityCalibration(positive=fit, negative=None)


def test_the_extractor_reads_levels_from_a_calibration_and_its_version_says_so() -> None:
    texts = [
        "The battery is good.",  # VADER 0.44: medium under the calibration
        "The battery is absolutely wonderful, the best I have ever had!",  # high
        "The battery is okay.",  # low
        "The battery sits under the keyboard.",  # no opinion: neutral, untouched
        "The battery is awful.",  # negative: no fit on that side, so the cue rule's level
    ]
    docs = [DocumentInput(doc_id=str(i), text=t, content_hash=str(i)) for i, t in enumerate(texts)]
    plain = OfflineExtractor(scorer=VaderClauseScorer(), review_tone=False)
    calibrated = OfflineExtractor(
        scorer=VaderClauseScorer(), review_tone=False, intensity_calibration=valence_calibration()
    )
    before = [o.opinions[0] for o in plain.extract(docs, BATTERY)]
    after = [o.opinions[0] for o in calibrated.extract(docs, BATTERY)]
    assert [o.sentiment for o in after] == [o.sentiment for o in before]  # levels only
    assert [o.intensity for o in after[:3]] == ["medium", "high", "low"]
    assert after[3].sentiment == "neutral" and after[3].intensity == before[3].intensity
    assert after[4].sentiment == "negative" and after[4].intensity == before[4].intensity
    assert calibrated.version != plain.version and "+intensity-" in calibrated.version
    # the features the fit reads are given for stated opinions only, and `extract` is the same answer
    with_strength = calibrated.extract_with_strength(docs, BATTERY)
    assert [bool(strengths) for _, strengths in with_strength] == [True, True, True, False, True]
    assert [o.opinions for o, _ in with_strength] == [o.opinions for o in calibrated.extract(docs, BATTERY)]
    assert all(len(s["battery"]) == len(STRENGTH_FEATURES) for _, s in with_strength if s)


def test_the_intensity_setting_is_checked_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPRAG_INTENSITY", raising=False)
    assert ExtractorResource().intensity_source() == "ratings"  # the default
    monkeypatch.setenv("OPRAG_INTENSITY", "cues")
    assert ExtractorResource().intensity_source() == "cues"
    assert ExtractorResource(intensity="ratings").intensity_source() == "ratings"  # the field wins
    with pytest.raises(ValueError, match="OPRAG_INTENSITY must be one of ratings, cues"):
        ExtractorResource(intensity="stars").intensity_source()


def test_ratings_all_on_the_opinions_side_fit_without_a_low_level() -> None:
    """Shares of high and medium that add up to 1 (no 3-star rating) must not push a quantile past the range."""
    features, sentiments, _ = rated_sample(8)
    ratings = [5.0 if i % 10 < 7 else 4.0 for i in range(len(features))]  # 0.7 + 0.3: rounds past 1
    sentiments = ["positive"] * len(features)
    for x, r in zip(features, ratings, strict=True):  # a feature that carries the ratings
        x[STRENGTH_FEATURES.index("evidence_valence")] = r + 0.2 * x[0]
    calibration = fit_intensity_calibration(features, sentiments, ratings, SCALE)
    assert calibration is not None and calibration.positive is not None
    levels = {calibration.level("positive", x, "low") for x in features}
    assert levels <= {"medium", "high"} and "high" in levels


def test_relevel_gives_what_the_calibrated_extractor_answers() -> None:
    """The documents an intensity fit extracted are cached from that extraction (`offline.relevel`), so it must be
    exactly what the calibrated extractor gives, impacts included."""
    texts = [
        "The battery is absolutely wonderful, the best I have ever had! We will never go back to the old one.",
        "The battery is good. The screen is dim and the keyboard rattles.",
        "The battery is okay, though it cost me a refund on the charger.",
        "The battery sits under the keyboard. The rest of the laptop is lovely.",
        "The battery is awful.",
    ]
    docs = [DocumentInput(doc_id=str(i), text=t, content_hash=f"h{i}") for i, t in enumerate(texts)]
    calibration = valence_calibration(0.5, 0.95)  # stricter than the cue rule: levels move
    plain = OfflineExtractor(scorer=VaderClauseScorer())
    calibrated = OfflineExtractor(scorer=VaderClauseScorer(), intensity_calibration=calibration)
    relevelled = relevel(plain.extract_with_strength(docs, BATTERY), calibration)
    expected = calibrated.extract(docs, BATTERY)
    assert relevelled == expected
    assert [o.opinions[0].intensity for o in relevelled] != [
        o.opinions[0].intensity for o in plain.extract(docs, BATTERY)
    ]


@pytest.mark.parametrize("seed", [9, 10, 11])
def test_ratings_that_say_nothing_the_cues_do_not_keep_the_cue_rule(seed: int) -> None:
    """Ratings independent of every feature but the cue rule's own level: nothing learnt can order them better."""
    rng = np.random.default_rng(seed)
    features, sentiments, ratings = [], [], []
    for _ in range(400):
        x = rng.normal(0.0, 1.0, len(STRENGTH_FEATURES))
        cue = int(rng.integers(0, 3))
        x[STRENGTH_FEATURES.index("cue_level")] = cue
        features.append(x)
        sentiments.append("positive")
        ratings.append(float(3 + cue if rng.random() < 0.6 else rng.integers(3, 6)))
    assert fit_intensity_calibration(features, sentiments, ratings, SCALE) is None
    # the same sample with the ratings carried by another feature as well: learnt
    for x, r in zip(features, ratings, strict=True):
        x[STRENGTH_FEATURES.index("evidence_valence")] = r + rng.normal(0.0, 0.3)
    assert fit_intensity_calibration(features, sentiments, ratings, SCALE) is not None
