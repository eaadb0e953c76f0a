"""Fairness-aware multi-objective retrieval: fill k slots to match the corpus's σ mix *and* its author groups.

Why: balanced retrieval (`index/balancing.py`) matches the σ distribution of the entity's opinions, but any
slot of a σ-level may be filled by any author, so the retrieved views can all come from one kind of author
(business travellers, large sellers). The reference study found enrichment raised demographic coverage among
entity-matched hits yet cut it overall; this mode makes coverage an explicit objective. For each entity the
question names, k slots are filled greedily from the entity's most relevant points, each step adding the
candidate that most lowers

    J(S) = w_σ · TV(σ-levels of S, corpus σ shares) + w_g · mean over attributes a of TV(groups_a of S, shares_a)

where TV is the total-variation distance (½ L1 of shares, in [0, 1]) and shares_a is the share of each group of
author attribute a among the authors of the entity's opinions (whatever `author_*` attributes the domain has).
Ties go to the more relevant candidate, so with both weights 0 the mode is plain relevance ranking. Measuring
the set after every step (not only at k) keeps each prefix balanced too.

A selected point whose author lacks attribute a does not count in that attribute's shares; an attribute none of
the selected authors has scores TV = 1 (no group represented), which is what pushes coverage up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # share of the objective given to author groups, on the curve
# Why 4 × the slots: the candidates must hold every σ-level and group the quota asks for, yet stay relevant to
# the question; balanced retrieval's per-level fetch is k + chosen, so 4k keeps a comparable relevance horizon.
DEFAULT_POOL_FACTOR = 4


@dataclass(frozen=True)
class Candidate:
    """A point that may fill a slot: its id, σ-score and author groups (attribute → value)."""

    key: str
    sigma: int
    groups: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FairnessTargets:
    """What the selection aims at: σ-level shares and, per author attribute, group shares."""

    sigma_shares: Mapping[int, float]
    group_shares: Mapping[str, Mapping[str, float]]


def shares(counts: Mapping[Hashable, float]) -> dict[Hashable, float]:
    total = sum(counts.values())
    return {key: value / total for key, value in counts.items()} if total else {}


def total_variation(counts: Mapping[Hashable, float], target: Mapping[Hashable, float]) -> float:
    """½ Σ |share − target| over both supports; 1.0 for an empty selection (nothing matches yet)."""
    observed = shares(counts)
    if not observed:
        return 1.0
    keys = set(observed) | set(target)
    return 0.5 * sum(abs(observed.get(key, 0.0) - target.get(key, 0.0)) for key in keys)


def objective(
    selected: Sequence[Candidate], targets: FairnessTargets, *, sigma_weight: float, group_weight: float
) -> float:
    sigma_term = total_variation(Counter(c.sigma for c in selected), targets.sigma_shares)
    attributes = sorted(a for a, s in targets.group_shares.items() if s)
    group_term = (
        sum(
            total_variation(Counter(c.groups[a] for c in selected if a in c.groups), targets.group_shares[a])
            for a in attributes
        )
        / len(attributes)
        if attributes
        else 0.0
    )
    return sigma_weight * sigma_term + group_weight * group_term


def select_fair(
    candidates: Sequence[Candidate],
    k: int,
    targets: FairnessTargets,
    *,
    sigma_weight: float,
    group_weight: float,
) -> list[Candidate]:
    """Greedy selection of up to k candidates (given best-first by relevance) minimising J step by step."""
    if sigma_weight < 0 or group_weight < 0:
        raise ValueError("objective weights must be non-negative")
    remaining = list(candidates)
    selected: list[Candidate] = []
    while remaining and len(selected) < k:
        best_index, best_value = 0, float("inf")
        for index, candidate in enumerate(remaining):
            value = objective([*selected, candidate], targets, sigma_weight=sigma_weight, group_weight=group_weight)
            if value < best_value - 1e-12:  # strictly better: ties keep the more relevant candidate
                best_index, best_value = index, value
        selected.append(remaining.pop(best_index))
    return selected


def weights_for(group_share: float) -> tuple[float, float]:
    """(w_σ, w_g) for a point of the trade-off curve: the author-group objective's share of the total weight."""
    if not 0.0 <= group_share <= 1.0:
        raise ValueError("the group weight is a share in [0, 1]")
    return 1.0 - group_share, group_share


@dataclass(frozen=True)
class TradeoffPoint:
    """One retrieval variant's mean W1 (to gold where the domain has it) and matched coverage at one k."""

    label: str
    group_share: float | None  # None for the reference variants (raw, balanced)
    w1: float
    coverage_matched: float
    questions: int


def fair_points(
    scores: Iterable[tuple[str, str, float]], group_weights: Sequence[float], w1_metric: str
) -> list[TradeoffPoint]:
    """One trade-off point per group weight from the scoring grid's (mode, metric, value) rows of the ``fair:<w_g>``
    modes: mean W1 (``w1_metric``) and mean coverage over every ``coverage_matched_*`` attribute. A weight whose
    questions found no opinions has no W1, so it gets no point rather than a zero."""
    per_mode: dict[str, dict[str, list[float]]] = {}
    for mode, metric, value in scores:
        per_mode.setdefault(mode, {}).setdefault(metric, []).append(value)
    points = []
    for share in group_weights:
        metrics = per_mode.get(f"fair:{share}", {})
        w1_values = metrics.get(w1_metric, [])
        coverage = [v for m, vs in metrics.items() if m.startswith("coverage_matched_") for v in vs]
        if w1_values:
            points.append(
                TradeoffPoint(
                    "enriched KB, fair",
                    share,
                    sum(w1_values) / len(w1_values),
                    sum(coverage) / len(coverage) if coverage else 0.0,
                    len(w1_values),
                )
            )
    return points


def tradeoff_section(points: Sequence[TradeoffPoint], *, k: int, gold: bool, image: str | None = None) -> str:
    """Markdown for the report: what was measured, the table, and the plot when there is one."""
    if not points:
        return ""
    w1_label = "W1 to gold" if gold else "W1 to extracted corpus"
    lines = [
        "## Fairness-aware retrieval: σ fidelity against author-group coverage",
        "",
        f"Multi-objective retrieval on the enriched KB at k = {k}: the group weight w_g is the share of the "
        "objective given to covering the entity's author groups in proportion (w_σ = 1 − w_g goes to matching "
        f"the σ mix). {w1_label} (lower is better) against demographic coverage among entity-matched hits "
        "(mean over author attributes; higher is better), beside plain hybrid retrieval of the raw KB and "
        "balanced retrieval.",
        "",
        f"| variant | w_g | {w1_label} | coverage among matched hits | questions |",
        "|---|---|---|---|---|",
    ]
    for p in points:
        weight = "—" if p.group_share is None else f"{p.group_share:.2f}"
        lines.append(f"| {p.label} | {weight} | {p.w1:.2f} | {p.coverage_matched:.3f} | {p.questions} |")
    if image:
        lines += ["", f"![fairness trade-off]({image})"]
    return "\n".join(lines) + "\n"
