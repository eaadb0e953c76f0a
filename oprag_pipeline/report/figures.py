"""The report's PNG plots (matplotlib, headless): the headline effects, the variants at k = 20, retrieval depth and
demographic coverage; a figure the data does not support is not drawn."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from oprag_pipeline.report.data import coverage_means, family_rows
from oprag_pipeline.report.labels import (
    METRIC_LABELS,
    SHORT_LABELS,
    VARIANT_COLORS,
    VARIANT_LABELS,
    VARIANTS,
    comparison_label,
    variant,
)


def _headline_effects_figure(plt: Any, data: Mapping[str, Any]) -> Any | None:
    """The declared family's effects with their entity-level CIs, one row per comparison."""
    family = family_rows(data)
    if not family:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(family) + 1.4))
    for y, r in enumerate(reversed(family)):
        colour = VARIANT_COLORS.get(variant(r["treatment"], r["mode"]), "#333")
        ax.errorbar(
            r["mean_difference"],
            y,
            xerr=[[r["mean_difference"] - r["ci_low"]], [r["ci_high"] - r["mean_difference"]]],
            fmt="o",
            color=colour,
            capsize=4,
            markersize=7,
        )
    ax.axvline(0, color="#333", linewidth=0.8)
    ax.set_yticks(range(len(family)), [comparison_label(r) for r in reversed(family)])
    ax.set_xlabel(f"Δ {METRIC_LABELS.get(data['primary_metric'], data['primary_metric'])} (lower is closer)")
    ax.set_title(f"{data['domain']}: headline comparisons, k = 20, entity-level 95% CI")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _panel_metrics(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The four panels of the comparison and depth plots: primary W1, its miss rate, entity match, relevance."""
    primary = data.get("primary_metric") or "w1"
    return (primary, f"{primary}_miss", "entity_match_rate", "relevance_hybrid_rank")


def _kb_comparison_figure(plt: Any, data: Mapping[str, Any]) -> Any | None:
    """One bar per variant for each panel metric at k = 20 (question means, as in the summary table)."""
    coverage = coverage_means(data)
    panels = [m for m in _panel_metrics(data) if any((m, v) in coverage for v in VARIANTS)]
    if not panels:
        return None
    fig, axes = plt.subplots(2, 2, figsize=(9, 6), squeeze=False)
    for ax, metric in zip(axes.flat, panels, strict=False):
        shown = [v for v in VARIANTS if coverage.get((metric, v)) is not None]
        ax.bar(
            [SHORT_LABELS[v] for v in shown],
            [coverage[(metric, v)] for v in shown],
            color=[VARIANT_COLORS[v] for v in shown],
        )
        ax.set_title(f"{METRIC_LABELS.get(metric, metric)} (k = 20)")
        ax.tick_params(axis="x", labelrotation=30)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle(f"{data['domain']}: retrieval variants at k = 20 (question means)")
    fig.tight_layout()
    return fig


def _depth_figure(plt: Any, data: Mapping[str, Any]) -> Any | None:
    """Each panel metric against k, one line per variant; the legend sits below the panels, never over data."""
    curve = data["depth_curve"]
    metrics = [m for m in _panel_metrics(data) if any(r["metric"] == m for r in curve)]
    if not metrics:
        return None
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), squeeze=False)
    for ax, metric in zip(axes.flat, metrics, strict=False):
        for v in VARIANTS:
            points = sorted(
                (r["k"], r["mean"])
                for r in curve
                if r["metric"] == metric and r["mode"] != "semantic" and variant(r["kb"], r["mode"]) == v
            )
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", color=VARIANT_COLORS[v], label=VARIANT_LABELS[v])
        ax.set_title(METRIC_LABELS.get(metric, metric))
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, bbox_to_anchor=(0.5, -0.06))
    fig.suptitle(f"{data['domain']}: retrieval depth (hybrid; the enriched KB's other modes)")
    fig.tight_layout()
    return fig


def _fairness_figure(plt: Any, data: Mapping[str, Any]) -> Any | None:
    """Share of author groups present among all hits and among entity-matched hits, per variant."""
    fairness = data["fairness"]
    if not fairness:
        return None
    attributes = sorted({r["attribute"] for r in fairness})
    shown = [v for v in VARIANTS if any(r["variant"] == v for r in fairness)]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True, squeeze=False)
    width = 0.8 / max(1, len(shown))
    for ax, scope in zip(axes[0], ("overall", "matched"), strict=True):
        for i, v in enumerate(shown):
            xs = [a + (i - (len(shown) - 1) / 2) * width for a in range(len(attributes))]
            ys = [
                next((r[scope] or 0.0 for r in fairness if (r["attribute"], r["variant"]) == (a, v)), 0.0)
                for a in attributes
            ]
            ax.bar(xs, ys, width, color=VARIANT_COLORS[v], label=VARIANT_LABELS[v])
        ax.set_xticks(range(len(attributes)), attributes, rotation=20)
        ax.set_ylim(0, 1.05)
        ax.set_title("all hits" if scope == "overall" else "entity-matched hits")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("share of groups present")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, bbox_to_anchor=(0.5, -0.12))
    fig.suptitle(f"{data['domain']}: demographic coverage at k = 20")
    fig.tight_layout()
    return fig


_FIGURES: tuple[tuple[str, Callable[[Any, Mapping[str, Any]], Any | None]], ...] = (
    ("headline_effects.png", _headline_effects_figure),
    ("kb_comparison.png", _kb_comparison_figure),
    ("depth_curves.png", _depth_figure),
    ("fairness.png", _fairness_figure),
)


def write_plots(data: dict[str, Any], out_dir: Path) -> list[Path]:
    """Every figure the data supports, as PNGs in ``out_dir``; a figure without data is not drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10})
    plots = []
    for name, draw in _FIGURES:
        fig = draw(plt, data)
        if fig is None:
            continue
        path = out_dir / name
        fig.savefig(path, dpi=90, bbox_inches="tight")  # ~820 px wide: fits the Dagster UI's metadata dialog
        plt.close(fig)
        plots.append(path)
    return plots
