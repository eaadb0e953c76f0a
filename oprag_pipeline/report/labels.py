"""How the report names and prints things: the retrieval variants (labels, short labels, one colour each), the
headline metrics, numbers and CIs as text. A change of a rate or a share is printed in points, never as a percent
change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oprag_pipeline.rendering import change_label

VARIANT_LABELS = {
    "raw": "raw KB (plain RAG)",
    "entity_split": "entity-split KB",
    "enriched": "enriched KB",
    "enriched_balanced": "enriched, balanced",
    "enriched_pm2": "enriched, PM-2",
    "enriched_xquad": "enriched, xQuAD",
    "enriched_mmr": "enriched, MMR",
}
"""Every retrieval variant the report shows, in this order: each KB with hybrid retrieval, then the enriched KB's
opinion-aware (balanced, PM-2, xQuAD) and semantic-diversity (MMR) modes."""
VARIANTS = tuple(VARIANT_LABELS)
SHORT_LABELS = {
    "raw": "raw",
    "entity_split": "split",
    "enriched": "enriched",
    "enriched_balanced": "balanced",
    "enriched_pm2": "PM-2",
    "enriched_xquad": "xQuAD",
    "enriched_mmr": "MMR",
}
VARIANT_COLORS = {
    "raw": "#7f7f7f",
    "entity_split": "#56b4e9",
    "enriched": "#0072b2",
    "enriched_balanced": "#d55e00",
    "enriched_pm2": "#009e73",
    "enriched_xquad": "#cc79a7",
    "enriched_mmr": "#e69f00",
}
"""One colour per variant in every plot (the Okabe–Ito palette, legible to colour-blind readers)."""
HEADLINE_METRICS = (
    ("w1_gold", "W1 to gold distribution", "num", "lower"),
    ("w1_gold_miss", "miss rate (gold)", "share", "lower"),
    ("w1", "W1 to corpus distribution", "num", "lower"),
    ("w1_miss", "miss rate", "share", "lower"),
    ("w1_incl_miss", "W1 to corpus, a miss as 60 (old figure)", "num", "lower"),
    ("entity_match_rate", "entity match rate", "share", "higher"),
    ("relevance_hybrid_rank", "mean rank in its KB's hybrid top 60", "num", "lower"),
    ("relevance_in_hybrid_top", "share in its KB's hybrid top 60", "share", "higher"),
    ("sentiment_intensity_std", "sentiment-intensity std (σ)", "num", "higher"),
    ("distinct_emotions", "distinct emotional markers", "num", "higher"),
)
METRIC_LABELS = {m: label for m, label, _, _ in HEADLINE_METRICS}
PLAIN_RAG = "raw"
ALPHA = 0.05


def count_phrase(n: int, one: str, many: str | None = None) -> str:
    """`1 entity`, `5 entities`: a small demo corpus often yields a single entity, and the verdict is read as prose."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def fmt(value: Any, kind: str = "num") -> str:
    if value is None:
        return "—"
    if kind == "share":
        return f"{value:.1%}"
    if kind == "p":
        return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"
    return f"{value:.2f}"


METRIC_KINDS = {m: kind for m, _, kind, _ in HEADLINE_METRICS}


def change_text(row: Mapping[str, Any]) -> str:
    """A comparison's change: in points for a rate or a share (a miss rate from 1% to 25% is "+24.0 points", not
    "+2400.0%"), else the relative change the significance table stores."""
    rate = METRIC_KINDS.get(row["metric"]) == "share"
    return change_label(row["treatment_mean"], row["baseline_mean"], row["relative_change_label"], rate=rate)


def variant(kb: str, mode: str) -> str:
    return kb if mode in ("semantic", "hybrid") else f"{kb}_{mode}"


def comparison_label(row: Mapping[str, Any]) -> str:
    def side(kb: str, mode: str) -> str:
        label = VARIANT_LABELS.get(variant(kb, mode), kb)
        return f"{label}, semantic" if mode == "semantic" else label

    return f"{side(row['treatment'], row['mode'])} vs {side(row['baseline'], row['baseline_mode'])}"


def ci_text(row: Mapping[str, Any]) -> str:
    """The CI as "[low, high]"; over a single entity there is nothing to resample, so no interval is claimed
    (the bootstrap returns the one value twice, which would read as certainty)."""
    if (row.get("n_entities") or 0) < 2:
        return "no CI (1 entity)"
    return f"[{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]"


def effect_text(row: Mapping[str, Any]) -> str:
    ci = ci_text(row)
    return f"Δ {row['mean_difference']:+.2f} ({ci if ci.startswith('no') else '95% CI ' + ci})"
