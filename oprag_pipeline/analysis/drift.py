"""Opinion dynamics: an entity's σ distribution per time window, shifts between windows, lasting shift vs spike.

Why: a corpus-level distribution averages over time. When a hotel changes its breakfast caterer, "what do guests
think of breakfast?" has a different honest answer before and after, and balanced retrieval that matches the
all-time mix reproduces a view nobody holds any more. So each disputed entity gets a timeline:

- windows of a configurable number of calendar months (aligned to January, so 3 months are calendar quarters);
- W1 between consecutive windows, with a permutation p-value (the window labels are exchangeable when nothing
  changed), Bonferroni-adjusted over the entity's tests so that the chance of flagging an entity with no shift is
  at most α (the stated false-alarm rate);
- each significant boundary classified as a *lasting shift* or a *reactive spike*: a spike is an excursion that
  returns, within a few windows, to a level not distinguishable from before it;
- the current window against the all-time distribution (what retrieval balances on), for the drift check.

All scores are on the σ-scale (−30…+30 in steps of 10), so W1 is 10 × the L1 distance between the two CDFs over
the scale's levels; `w1_counts` computes it that way because the permutation test evaluates it thousands of times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np

from oprag_pipeline.index.balancing import proportional_quotas

SIGMA_LEVELS = np.array([-30, -20, -10, 0, 10, 20, 30])
SIGMA_STEP = 10
# Why 1999 resamples: the smallest attainable p-value is 1/2000 = 0.0005, well below a Bonferroni-adjusted
# α = 0.05 / 9 (nine boundaries of ten windows), and the permutation test stays in milliseconds per pair.
DEFAULT_RESAMPLES = 1999
DEFAULT_ALPHA = 0.05
# Why 8: below that a window's distribution is too coarse for W1 to mean anything (one opinion moves 12% of the
# mass), and the permutation test has almost no power; such windows are shown but not tested.
DEFAULT_MIN_COUNT = 8
# Why 2 windows: a reactive spike (an incident, a viral complaint) is short by definition; an excursion that lasts
# longer than two windows is reported as a lasting shift followed by another shift.
DEFAULT_MAX_SPIKE_WINDOWS = 2


def _as_date(value: date | datetime | str) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def level_counts(scores: Iterable[int]) -> np.ndarray:
    """Counts of the seven σ-levels; a score off the scale is an error (it would silently bend W1)."""
    counts = np.zeros(len(SIGMA_LEVELS), dtype=np.int64)
    for score in scores:
        index = (int(score) + 30) // SIGMA_STEP
        if int(score) % SIGMA_STEP or not 0 <= index < len(SIGMA_LEVELS):
            raise ValueError(f"σ-score {score} is not a point of the σ-scale (−30…+30 in steps of 10)")
        counts[index] += 1
    return counts


def w1_counts(a: np.ndarray, b: np.ndarray) -> float:
    """W1 between two distributions given as σ-level counts (or shares): 10 × Σ |CDF_a − CDF_b|."""
    if a.sum() == 0 or b.sum() == 0:
        raise ValueError("W1 needs two non-empty distributions")
    cdf_a = np.cumsum(a / a.sum())[:-1]
    cdf_b = np.cumsum(b / b.sum())[:-1]
    return float(SIGMA_STEP * np.abs(cdf_a - cdf_b).sum())


def _w1_statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """W1 of two samples along `axis`, vectorised over scipy's batches of permutations."""
    x = np.moveaxis(np.asarray(x), axis, -1)
    y = np.moveaxis(np.asarray(y), axis, -1)
    levels = SIGMA_LEVELS[:-1]
    cdf_x = (x[..., None] <= levels).mean(axis=-2)
    cdf_y = (y[..., None] <= levels).mean(axis=-2)
    return SIGMA_STEP * np.abs(cdf_x - cdf_y).sum(axis=-1)


def permutation_w1(
    a: Sequence[int], b: Sequence[int], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """(W1, p-value) of two σ samples; p from a one-sided permutation test of W1 (large W1 = different).

    scipy enumerates every split exactly when there are fewer than `resamples` of them, so tiny hand-made
    samples get exact p-values.
    """
    if not a or not b:
        raise ValueError("the permutation test needs two non-empty samples")
    from scipy import stats  # here, not at module level: scipy.stats costs ~1 s of every `oprag` command's start

    level_counts([*a, *b])  # validates the scale
    result = stats.permutation_test(
        (np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)),
        _w1_statistic,
        permutation_type="independent",
        vectorized=True,
        n_resamples=resamples,
        alternative="greater",
        random_state=np.random.default_rng(seed),
    )
    return float(result.statistic), float(result.pvalue)


@dataclass(frozen=True)
class Window:
    """One time window of an entity's opinions: [start, end) and the σ-scores dated inside it."""

    start: date
    end: date
    scores: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.scores)

    def shares(self) -> dict[str, float]:
        """Positive / neutral / negative shares (empty window: all zero)."""
        n = self.n or 1
        return {
            "positive": sum(s > 0 for s in self.scores) / n,
            "neutral": sum(s == 0 for s in self.scores) / n,
            "negative": sum(s < 0 for s in self.scores) / n,
        }

    def mean(self) -> float | None:
        return float(np.mean(self.scores)) if self.scores else None


def _add_months(day: date, months: int) -> date:
    total = day.year * 12 + day.month - 1 + months
    return date(total // 12, total % 12 + 1, 1)


def build_windows(dated_scores: Iterable[tuple[date | datetime | str, int]], months: int) -> list[Window]:
    """Consecutive windows of `months` calendar months covering every dated score, aligned to January of the
    first year (3 months = calendar quarters, 12 = calendar years); empty windows in between are kept, so the
    timeline shows gaps as gaps."""
    if months < 1:
        raise ValueError("a window is at least one month")
    items = sorted((_as_date(d), int(s)) for d, s in dated_scores)
    if not items:
        return []
    first, last = items[0][0], items[-1][0]
    start = date(first.year, 1, 1)
    while _add_months(start, months) <= first:
        start = _add_months(start, months)
    windows: list[Window] = []
    i = 0
    while start <= last:
        end = _add_months(start, months)
        scores = []
        while i < len(items) and items[i][0] < end:
            scores.append(items[i][1])
            i += 1
        windows.append(Window(start, end, tuple(scores)))
        start = end
    return windows


@dataclass(frozen=True)
class BoundaryTest:
    """W1 between window `index - 1` and window `index`, and its permutation test."""

    index: int
    start: date  # where the later window begins: the time the change is dated to
    n_before: int
    n_after: int
    w1: float
    p_value: float
    p_adjusted: float  # Bonferroni over the entity's tests
    significant: bool


def consecutive_tests(
    windows: Sequence[Window],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_count: int = DEFAULT_MIN_COUNT,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[BoundaryTest]:
    """Every pair of consecutive windows that both hold ≥ `min_count` opinions, tested and adjusted.

    Bonferroni rather than a sequential method because the tests share windows (dependent) and an entity has few
    of them: the family-wise bound holds under any dependence, which is what "false-alarm rate α per entity" needs.
    """
    raw = []
    for i in range(1, len(windows)):
        before, after = windows[i - 1], windows[i]
        if before.n >= min_count and after.n >= min_count:
            w1, p = permutation_w1(before.scores, after.scores, resamples=resamples, seed=seed + i)
            raw.append((i, before, after, w1, p))
    m = len(raw)
    return [
        BoundaryTest(i, after.start, before.n, after.n, w1, p, min(1.0, p * m), min(1.0, p * m) < alpha)
        for i, before, after, w1, p in raw
    ]


@dataclass(frozen=True)
class ChangePoint:
    """The single split of the timeline that best separates before from after, and its permutation test."""

    index: int  # the change lies between window index - 1 and index
    start: date
    w1: float
    p_value: float
    significant: bool


def change_point_scan(
    windows: Sequence[Window],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_count: int = DEFAULT_MIN_COUNT,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> ChangePoint | None:
    """Max over window boundaries of √(n₁n₂/n) · W1(all before, all after), tested by permuting time labels.

    Why besides the consecutive tests: a lasting shift that falls inside a window is split over two boundaries,
    each comparing ~30 opinions with ~30; the scan compares everything before with everything after, and the
    maximum over boundaries is calibrated by the same permutations, so it is one test per entity. The √(n₁n₂/n)
    factor puts boundaries near the ends on the same footing as central ones (W1's noise grows as a side shrinks).
    """
    sizes = np.array([w.n for w in windows])
    scores = np.array(_pooled(windows), dtype=np.int64)
    n = len(scores)
    edges = np.cumsum(sizes)[:-1]  # opinions before boundary i (i = 1 … len − 1)
    valid = [i for i in range(1, len(windows)) if min_count <= edges[i - 1] <= n - min_count]
    if not valid:
        return None
    before_n = np.array([edges[i - 1] for i in valid])
    after_n = n - before_n
    weight = np.sqrt(before_n * after_n / n)

    def statistic(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        onehot = (batch[..., None] == SIGMA_LEVELS).astype(np.int32)
        cumulative = np.cumsum(onehot, axis=1)
        before = cumulative[:, before_n - 1, :]
        after = cumulative[:, -1:, :] - before
        cdf_before = np.cumsum(before, axis=-1)[..., :-1] / before_n[:, None]
        cdf_after = np.cumsum(after, axis=-1)[..., :-1] / after_n[:, None]
        w1 = SIGMA_STEP * np.abs(cdf_before - cdf_after).sum(axis=-1)
        return (w1 * weight).max(axis=1), w1

    observed, observed_w1 = statistic(scores[None, :])
    best = int(np.argmax(observed_w1[0] * weight))
    rng = np.random.default_rng(seed)
    exceed = 0
    for start in range(0, resamples, 200):  # batches bound memory on entities with thousands of opinions
        batch = rng.permuted(np.tile(scores, (min(200, resamples - start), 1)), axis=1)
        exceed += int((statistic(batch)[0] >= observed[0] - 1e-9).sum())
    p = (exceed + 1) / (resamples + 1)
    index = valid[best]
    return ChangePoint(index, windows[index].start, float(observed_w1[0][best]), p, p < alpha)


@dataclass(frozen=True)
class Shift:
    """A detected change: `lasting`, or a `spike` from `start` that was back to the earlier level by `end`."""

    kind: str
    start: date
    end: date | None
    w1: float  # between the level before and the changed level
    mean_before: float
    mean_after: float


def _pooled(windows: Sequence[Window]) -> list[int]:
    return [s for w in windows for s in w.scores]


def classify_shifts(
    windows: Sequence[Window],
    changes: Sequence[int],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_count: int = DEFAULT_MIN_COUNT,
    max_spike_windows: int = DEFAULT_MAX_SPIKE_WINDOWS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[Shift]:
    """Each detected change (a window index: the change lies between window i − 1 and i) as a lasting shift or a
    spike.

    The level before a change is every window since the previous change. A change at window i is a spike when,
    for some j ≤ i + `max_spike_windows`, the windows from j on (as many as the excursion lasted, at most
    `max_spike_windows`) are (1) not significantly different from the level before and (2) at most half as far
    from it in W1 as the excursion was. (2) guards against reading "too few opinions to tell" as "returned".
    """
    shifts: list[Shift] = []
    previous = 0
    consumed: set[int] = set()
    changes = sorted(set(changes))
    for i in changes:
        if i in consumed:
            continue
        before = _pooled(windows[previous:i])
        spike: Shift | None = None
        for j in range(i + 1, min(i + max_spike_windows, len(windows) - 1) + 1):
            during = _pooled(windows[i:j])
            after = _pooled(windows[j : j + (j - i)])
            if len(after) < min_count or len(during) < min_count:
                continue
            w_during = w1_counts(level_counts(before), level_counts(during))
            w_after, p_after = permutation_w1(before, after, resamples=resamples, seed=seed + 1000 + j)
            if p_after >= alpha and w_after <= w_during / 2:
                spike = Shift(
                    "spike",
                    windows[i].start,
                    windows[j].start,
                    w_during,
                    float(np.mean(before)),
                    float(np.mean(during)),
                )
                consumed.update(c for c in changes if i < c <= j)
                break
        if spike is not None:
            shifts.append(spike)
            continue  # the level before the next change is still the one before the spike
        later = [c for c in changes if c > i + 1]  # a neighbouring boundary is the same change, smeared
        consumed.update(c for c in changes if c == i + 1)
        changed = _pooled(windows[i : later[0] if later else len(windows)])
        shifts.append(
            Shift(
                "lasting",
                windows[i].start,
                None,
                w1_counts(level_counts(before), level_counts(changed)),
                float(np.mean(before)),
                float(np.mean(changed)),
            )
        )
        previous = i
    return shifts


@dataclass(frozen=True)
class CurrentDrift:
    """The latest period against all time (the distribution balanced retrieval matches)."""

    window_start: date
    n_window: int
    w1_vs_all_time: float
    p_value: float  # the window against the rest of time (a two-sample test needs disjoint samples)
    drifted: bool


def current_drift(
    windows: Sequence[Window],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_count: int = DEFAULT_MIN_COUNT,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> CurrentDrift | None:
    """The current period is the last window, extended back over earlier windows until it holds `min_count`
    opinions (a quiet latest quarter is not left untested). None when that takes every window."""
    start = len(windows)
    current: list[int] = []
    while start > 0 and len(current) < min_count:
        start -= 1
        current = list(windows[start].scores) + current
    rest = _pooled(windows[:start])
    if len(current) < min_count or not rest:
        return None
    w_all = w1_counts(level_counts(current), level_counts(_pooled(windows)))
    _, p = permutation_w1(current, rest, resamples=resamples, seed=seed)
    return CurrentDrift(windows[start].start, len(current), w_all, p, p < alpha)


@dataclass(frozen=True)
class EntityTimeline:
    entity_id: str
    entity_name: str
    windows: tuple[Window, ...]
    tests: tuple[BoundaryTest, ...]
    scan: ChangePoint | None
    shifts: tuple[Shift, ...]
    drift: CurrentDrift | None

    @property
    def flagged(self) -> bool:
        return any(t.significant for t in self.tests) or bool(self.scan and self.scan.significant)


def analyse_entity(
    entity_id: str,
    entity_name: str,
    dated_scores: Iterable[tuple[date | datetime | str, int]],
    *,
    months: int = 3,
    alpha: float = DEFAULT_ALPHA,
    min_count: int = DEFAULT_MIN_COUNT,
    max_spike_windows: int = DEFAULT_MAX_SPIKE_WINDOWS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> EntityTimeline:
    """Windows, consecutive tests, the change-point scan, shifts and current drift of one entity.

    The entity's false-alarm rate α is split in halves: α/2 for the family of consecutive tests (Bonferroni) and
    α/2 for the scan, so an entity with no shift is flagged with probability at most α.
    """
    windows = build_windows(dated_scores, months)
    options = {"alpha": alpha / 2, "min_count": min_count, "resamples": resamples, "seed": seed}
    tests = consecutive_tests(windows, **options)
    scan = change_point_scan(windows, **options)
    changes = [t.index for t in tests if t.significant] + ([scan.index] if scan and scan.significant else [])
    shifts = classify_shifts(windows, changes, max_spike_windows=max_spike_windows, **{**options, "alpha": alpha})
    drifted = current_drift(windows, **{**options, "alpha": alpha})
    return EntityTimeline(entity_id, entity_name, tuple(windows), tuple(tests), scan, tuple(shifts), drifted)


def recency_weighted_counts(
    dated_scores: Iterable[tuple[date | datetime | str, int]], *, now: date, half_life_days: float
) -> dict[int, int]:
    """σ-level counts with each opinion weighted 2^(−age / half-life), rescaled to the number of opinions.

    Why rescale: balanced retrieval's quotas are proportional to these counts and capped by their total; keeping
    the total equal to the real count keeps that cap honest. Largest-remainder rounding keeps them integers.
    """
    if half_life_days <= 0:
        raise ValueError("the half-life must be positive")
    weights: dict[int, float] = {}
    n = 0  # the real number of opinions, which the weighted counts are rescaled to
    for day, score in dated_scores:
        age = max(0, (now - _as_date(day)).days)
        weights[int(score)] = weights.get(int(score), 0.0) + 0.5 ** (age / half_life_days)
        n += 1
    return rescaled_counts(weights, n)


def rescaled_counts(weights: Mapping[int, float], total: int) -> dict[int, int]:
    """Weighted σ-level masses as integer counts summing to `total` (largest remainder, via balancing's quotas).

    The weights are scaled to micro-units first: `proportional_quotas` takes counts, and a millionth of an
    opinion is far below anything a quota of k ≤ 500 slots can resolve.
    """
    if total <= 0 or sum(weights.values()) <= 0:
        return {}
    micro = {level: round(w * 1_000_000) for level, w in weights.items() if w > 0}
    return proportional_quotas(micro, total)


def render_timeline(timeline: EntityTimeline, *, bar_width: int = 20) -> list[str]:
    """Text timeline for `oprag query`: one line per window (shares, mean σ, a bar of the positive share)."""
    lines = [f"Timeline of {timeline.entity_name} ({timeline.entity_id}), windows of the opinions' dates:"]
    changed = {s.start for s in timeline.shifts}
    for window in timeline.windows:
        shares = window.shares()
        mean = window.mean()
        bar = "█" * round(shares["positive"] * bar_width) + "░" * round(shares["negative"] * bar_width)
        mark = "  ← shift" if window.start in changed else ""
        lines.append(
            f"  {window.start.isoformat()}  n={window.n:<4} +{shares['positive']:4.0%} ={shares['neutral']:4.0%} "
            f"−{shares['negative']:4.0%}  mean σ {'—' if mean is None else f'{mean:+5.1f}'}  {bar:<{bar_width}}{mark}"
        )
    for shift in timeline.shifts:
        until = f" until {shift.end.isoformat()}" if shift.end else ""
        lines.append(
            f"  {shift.kind} shift from {shift.start.isoformat()}{until}: mean σ {shift.mean_before:+.1f} → "
            f"{shift.mean_after:+.1f} (W1 {shift.w1:.1f})"
        )
    if timeline.drift is not None:
        d = timeline.drift
        lines.append(
            f"  since {d.window_start.isoformat()} (n={d.n_window}) vs all time: W1 {d.w1_vs_all_time:.1f}, "
            f"p={d.p_value:.3g}" + ("  (drifted: consider --since)" if d.drifted else "")
        )
    return lines


def drift_section(timelines: Sequence[EntityTimeline], *, months: int, alpha: float, image: str | None) -> str:
    """Markdown for the report: every disputed entity's detected shifts and its latest window's drift."""
    if not timelines:
        return ""
    lines = [
        "## Opinion drift over time",
        "",
        f"σ distribution per {months}-month window. Shifts: W1 between consecutive windows with a permutation "
        "test (Bonferroni over the entity's boundaries) and a change-point scan (best before/after split, "
        f"permutation-calibrated), each at α/2, so the false-alarm rate is at most α = {alpha} per entity; "
        f"lasting shift vs spike that returns within {DEFAULT_MAX_SPIKE_WINDOWS} windows. Windows with fewer than "
        f"{DEFAULT_MIN_COUNT} opinions are shown but not tested. The latest period (the last window, extended back to "
        f"{DEFAULT_MIN_COUNT} opinions) is compared with all time "
        "(what balanced retrieval matches).",
        "",
        "| entity | windows | boundaries tested | shifts | latest period from | W1 latest vs all time | p |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in sorted(timelines, key=lambda t: (not t.flagged, t.entity_id)):
        shifts = (
            "; ".join(f"{s.kind} {s.start.isoformat()}" + (f"–{s.end.isoformat()}" if s.end else "") for s in t.shifts)
            or "none"
        )
        d = t.drift
        latest = (d.window_start.isoformat(), f"{d.w1_vs_all_time:.1f}", f"{d.p_value:.3g}") if d else ("—",) * 3
        lines.append(f"| {t.entity_name} | {len(t.windows)} | {len(t.tests)} | {shifts} | {' | '.join(latest)} |")
    if image:
        lines += ["", f"![opinion timelines]({image})"]
    return "\n".join(lines) + "\n"
