"""Significance and uncertainty for paired comparisons of knowledge bases over the same questions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class PairedComparison:
    metric: str
    treatment: str
    baseline: str
    n_questions: int
    treatment_mean: float
    baseline_mean: float
    relative_change: float | None  # (treatment − baseline) / |baseline|; None when the baseline mean is 0
    mean_difference: float
    ci_low: float
    ci_high: float
    wilcoxon_statistic: float | None
    p_value: float | None

    @property
    def relative_change_label(self) -> str:
        """As the reference study prints it, e.g. "+42.7%"."""
        return "n/a" if self.relative_change is None else f"{self.relative_change * 100:+.1f}%"


def bootstrap_ci(
    differences: Sequence[float], *, confidence: float = 0.95, resamples: int = 5000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean paired difference (scipy.stats.bootstrap, seeded: reports reproduce)."""
    values = np.asarray(differences, dtype=np.float64)
    if len(values) < 2 or np.all(values == values[0]):
        mean = float(values.mean()) if len(values) else 0.0
        return mean, mean
    result = stats.bootstrap(
        (values,),
        np.mean,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def compare_paired(
    metric: str,
    treatment_name: str,
    treatment: Sequence[float],
    baseline_name: str,
    baseline: Sequence[float],
) -> PairedComparison:
    """Wilcoxon signed-rank test and bootstrap CI of treatment − baseline over the same questions."""
    t = np.asarray(treatment, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if t.shape != b.shape:
        raise ValueError(f"{metric}: paired samples differ in length ({len(t)} vs {len(b)})")
    differences = t - b
    statistic = p_value = None
    if len(differences) and np.any(differences != 0):
        test = stats.wilcoxon(t, b, zero_method="wilcox", alternative="two-sided")
        statistic, p_value = float(test.statistic), float(test.pvalue)
    elif len(differences):
        p_value = 1.0
    low, high = bootstrap_ci(differences)
    base_mean = float(b.mean()) if len(b) else 0.0
    treat_mean = float(t.mean()) if len(t) else 0.0
    relative = None if base_mean == 0 else (treat_mean - base_mean) / abs(base_mean)
    return PairedComparison(
        metric=metric,
        treatment=treatment_name,
        baseline=baseline_name,
        n_questions=len(differences),
        treatment_mean=treat_mean,
        baseline_mean=base_mean,
        relative_change=relative,
        mean_difference=float(differences.mean()) if len(differences) else 0.0,
        ci_low=low,
        ci_high=high,
        wilcoxon_statistic=statistic,
        p_value=p_value,
    )
