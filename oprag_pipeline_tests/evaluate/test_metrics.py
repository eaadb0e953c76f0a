"""Metrics and statistics against values worked out by hand."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from oprag_pipeline.enrich.store import entropy_bits
from oprag_pipeline.evaluate.metrics import (
    Hit,
    HitOpinion,
    ScoreDistribution,
    demographic_coverage,
    distinct_emotions,
    entity_match_rate,
    fidelity_metrics,
    hybrid_rank_relevance,
    impact_std,
    question_metrics,
    sentiment_intensity_std,
    wasserstein1,
)
from oprag_pipeline.evaluate.stats import bootstrap_ci, compare_clustered, compare_paired, holm

HITS = [
    Hit("p1", (HitOpinion("e1", 30, 30, ("delight",)),), {"traveller_type": "business", "activity": "novice"}),
    Hit("p2", (HitOpinion("e1", -20, 10, ("frustration", "anger")),), {"traveller_type": "family"}),
    Hit("p3", (HitOpinion("e2", -30, 20, ("anger",)),), {"traveller_type": "solo"}),
    Hit("p4", (HitOpinion("e1", -20, 20, ()), HitOpinion("e2", 10, 10, ())), {"traveller_type": "business"}),
]


def test_entity_match_rate() -> None:
    assert entity_match_rate(HITS, "e1") == 0.75
    assert entity_match_rate(HITS, "e9") == 0.0
    assert entity_match_rate([], "e1") == 0.0


def test_spread_metrics_by_hand() -> None:
    # e1 scores: 30, -20, -20 → mean -10/3; deviations 33.33, -16.67, -16.67 → var = (1111.1+277.8+277.8)/3
    assert sentiment_intensity_std(HITS, "e1") == pytest.approx(np.sqrt((1111.111 + 277.778 + 277.778) / 3), rel=1e-4)
    # e1 impacts: 30, 10, 20 → std of population = sqrt(200/3)
    assert impact_std(HITS, "e1") == pytest.approx(np.sqrt(200 / 3))
    assert distinct_emotions(HITS, "e1") == 3
    assert distinct_emotions(HITS) == 3
    assert sentiment_intensity_std([], "e1") == 0.0


def test_w1_matches_scipy_and_hand_values() -> None:
    # moving one unit of mass from +30 to −30 costs 60; half the mass costs 30
    assert wasserstein1([30], [-30]) == pytest.approx(60)
    assert wasserstein1([30, -30], [-30, -30]) == pytest.approx(30)
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = rng.choice([-30, -20, -10, 0, 10, 20, 30], size=rng.integers(1, 40))
        b = rng.choice([-30, -20, -10, 0, 10, 20, 30], size=rng.integers(1, 40))
        assert wasserstein1(a, b) == pytest.approx(wasserstein_distance(a, b), abs=1e-9)
    assert wasserstein1([], [10, 20]) == 60.0
    with pytest.raises(ValueError):
        wasserstein1([10], [])


def test_w1_against_a_counted_distribution_equals_w1_against_the_sample() -> None:
    # {-30: 1, 10: 3} is the sample [-30, 10, 10, 10]; [30] against it: 1/4 moves 60, 3/4 move 20 → 30
    counted = ScoreDistribution.from_counts({-30: 1, 10: 3, 20: 0})
    assert len(counted) == 4 and counted.values.tolist() == [-30.0, 10.0]
    assert wasserstein1([30], counted) == pytest.approx(30.0)
    rng = np.random.default_rng(7)
    for _ in range(20):
        a = rng.choice([-30, -20, -10, 0, 10, 20, 30], size=rng.integers(1, 40))
        b = rng.choice([-30, -20, -10, 0, 10, 20, 30], size=rng.integers(1, 5000))
        assert wasserstein1(a, ScoreDistribution.from_counts(Counter(b))) == pytest.approx(
            wasserstein_distance(a, b), abs=1e-9
        )
    assert wasserstein1([], counted) == 60.0
    with pytest.raises(ValueError):
        wasserstein1([10], ScoreDistribution.from_counts({}))


def test_demographic_coverage_overall_and_matched() -> None:
    groups = {"traveller_type": ["business", "family", "solo", "couple"], "activity": ["novice", "prolific"]}
    assert demographic_coverage(HITS, groups) == {"traveller_type": 0.75, "activity": 0.5}
    assert demographic_coverage(HITS, groups, entity_id="e1") == {"traveller_type": 0.5, "activity": 0.5}


def test_question_metrics_row() -> None:
    row = question_metrics(HITS, "e1", [30, -20, -20], {"traveller_type": ["business", "family"]})
    assert row["w1"] == pytest.approx(0.0) and row["w1_miss"] == 0.0 and row["w1_incl_miss"] == pytest.approx(0.0)
    missed = question_metrics(HITS, "e9", [30], {})
    assert "w1" not in missed and missed["w1_miss"] == 1.0 and missed["w1_incl_miss"] == 60.0
    assert row["entity_match_rate"] == 0.75
    assert row["coverage_traveller_type"] == 1.0 and row["coverage_matched_traveller_type"] == 1.0


def test_entropy_bits() -> None:
    assert entropy_bits([10, 0, 0]) == 0.0
    assert entropy_bits([5, 0, 5]) == pytest.approx(1.0)
    assert entropy_bits([1, 1, 1]) == pytest.approx(np.log2(3))
    assert entropy_bits([9, 0, 1]) == pytest.approx(-(0.9 * np.log2(0.9) + 0.1 * np.log2(0.1)))


def test_paired_comparison() -> None:
    baseline = [20.0, 18.0, 25.0, 30.0, 22.0, 19.0, 24.0, 28.0]
    treatment = [12.0, 15.0, 14.0, 20.0, 10.0, 16.0, 13.0, 18.0]
    result = compare_paired("w1", "enriched", treatment, "raw", baseline)
    assert result.n_questions == 8
    assert result.relative_change == pytest.approx((np.mean(treatment) - np.mean(baseline)) / np.mean(baseline))
    assert result.relative_change_label == f"{result.relative_change * 100:+.1f}%"
    # all 8 differences negative: the exact two-sided signed-rank p-value is 2 / 2^8
    assert result.p_value == pytest.approx(2 / 256)
    assert result.ci_low <= result.mean_difference <= result.ci_high < 0
    same = compare_paired("w1", "a", baseline, "b", baseline)
    assert same.p_value == 1.0 and same.relative_change == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        compare_paired("w1", "a", [1.0], "b", [1.0, 2.0])


def test_bootstrap_is_reproducible() -> None:
    values = [0.1, -0.3, 0.5, 0.2, -0.1, 0.4]
    assert bootstrap_ci(values) == bootstrap_ci(values)
    low, high = bootstrap_ci(values)
    assert low < np.mean(values) < high


def test_w1_and_miss_are_apart_and_the_combined_figure_keeps_its_old_value() -> None:
    assert fidelity_metrics("w1", [30], [30, -30]) == {"w1": 30.0, "w1_miss": 0.0, "w1_incl_miss": 30.0}
    assert fidelity_metrics("w1_gold", [], [30, -30]) == {"w1_gold_miss": 1.0, "w1_gold_incl_miss": 60.0}


def test_hybrid_rank_relevance() -> None:
    # a at rank 1, c at rank 5, b outside the top 10 (counted 11)
    row = hybrid_rank_relevance(["a", "b", "c"], {"a": 1, "c": 5, "z": 2}, 10)
    assert row == pytest.approx({"relevance_in_hybrid_top": 2 / 3, "relevance_hybrid_rank": 17 / 3})
    assert hybrid_rank_relevance([], {"a": 1}, 10) == {}


def test_clustered_comparison_runs_over_entities() -> None:
    # e1: q1 (10 vs 20), q2 (14 vs 20) → 12 vs 20, Δ −8; e2: q3 (5 vs 6) → Δ −1; e3: q4 (30 vs 27) → Δ +3, q5 has
    # no treatment value and is left out on both sides. Entity Δ = (−8, −1, +3): ranks of |Δ| 3, 1, 2, W+ = 2,
    # W− = 4; of the 8 equally likely sign patterns 3 give W+ ≤ 2, so the exact two-sided p is 2 · 3/8 = 0.75.
    clusters = {"q1": "e1", "q2": "e1", "q3": "e2", "q4": "e3", "q5": "e3"}
    treatment = {"q1": 10.0, "q2": 14.0, "q3": 5.0, "q4": 30.0}
    baseline = {"q1": 20.0, "q2": 20.0, "q3": 6.0, "q4": 27.0, "q5": 50.0}
    c = compare_clustered("w1", "t", treatment, "b", baseline, clusters)
    assert (c.n_entities, c.n_questions) == (3, 4)
    assert c.mean_difference == pytest.approx(-2.0)
    assert (c.treatment_mean, c.baseline_mean) == pytest.approx((47 / 3, 53 / 3))
    assert c.wilcoxon_statistic == 2.0 and c.p_value == pytest.approx(0.75)
    assert c.ci_low <= -2.0 <= c.ci_high


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 → ×3, ×2, ×1 = 0.03, 0.06, 0.04 → running maximum 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    assert holm([]) == []
