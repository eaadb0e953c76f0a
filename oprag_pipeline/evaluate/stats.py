"""Significance and uncertainty for paired comparisons of retrievals over the same questions.

The unit of analysis is the entity, not the question. The evaluation asks ~10 questions about each entity, and
questions about the same entity share its corpus distribution and most of its retrieved documents, so they are not
independent; a test over 100 questions behaves as if it had far more evidence than 10 entities give. So
`compare_clustered` averages each retrieval's metric over an entity's questions first, then runs the paired
Wilcoxon signed-rank test and the percentile bootstrap over entities (a cluster bootstrap: resampling entity means
is resampling whole clusters of questions). The effect is the mean over entities of the per-entity difference.

Multiplicity: a report declares a small family of headline comparisons; `holm` adjusts their p-values (Holm's
step-down, which controls the family-wise error rate without assuming independence). Every other test is
exploratory and says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np


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
    n_entities: int | None = None  # the unit the test ran over, when clustered (`compare_clustered`)

    @property
    def relative_change_label(self) -> str:
        """As the reference study prints it, e.g. "+42.7%"."""
        return "n/a" if self.relative_change is None else f"{self.relative_change * 100:+.1f}%"

    def row(self) -> dict[str, object]:
        """The comparison as named columns of a significance table (`n_entities` only for a clustered test), so the
        tables that store comparisons take them by name."""
        row = {**asdict(self), "relative_change_label": self.relative_change_label}
        if self.n_entities is None:
            del row["n_entities"]
        return row


def bootstrap_ci(
    differences: Sequence[float], *, confidence: float = 0.95, resamples: int = 5000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean paired difference (scipy.stats.bootstrap, seeded: reports reproduce)."""
    values = np.asarray(differences, dtype=np.float64)
    if len(values) < 2 or np.all(values == values[0]):
        mean = float(values.mean()) if len(values) else 0.0
        return mean, mean
    from scipy import stats  # here, not at module level: scipy.stats costs ~1 s of every `oprag` command's start

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
        from scipy import stats

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


def compare_clustered(
    metric: str,
    treatment_name: str,
    treatment: Mapping[str, float],
    baseline_name: str,
    baseline: Mapping[str, float],
    clusters: Mapping[str, str],
) -> PairedComparison:
    """Paired comparison at the entity level: per-question values (question id → value) are averaged per cluster
    (question id → entity id) over the questions both retrievals have a value for, then compared over entities.

    A question missing from either side (e.g. W1 where one retrieval found no opinion) is left out of its
    entity's mean on both sides, so each entity compares like with like; `n_questions` counts what was kept.
    """
    shared = sorted(q for q in set(treatment) & set(baseline) if q in clusters)
    by_entity: dict[str, list[str]] = defaultdict(list)
    for q in shared:
        by_entity[clusters[q]].append(q)
    entities = sorted(by_entity)
    t = [float(np.mean([treatment[q] for q in by_entity[e]])) for e in entities]
    b = [float(np.mean([baseline[q] for q in by_entity[e]])) for e in entities]
    result = compare_paired(metric, treatment_name, t, baseline_name, b)
    return PairedComparison(**{**result.__dict__, "n_questions": len(shared), "n_entities": len(entities)})


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values, in the input order (None stays None and does not count in the family).

    Sorted ascending, the j-th smallest (from 0) is multiplied by (m − j), made monotone by a running maximum,
    and capped at 1.
    """
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for j, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - j) * p))
        adjusted[i] = running
    return adjusted
