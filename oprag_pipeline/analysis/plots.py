"""The analyses' PNG plots (matplotlib, headless), written next to the report and embedded in asset metadata."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from oprag_pipeline.analysis.drift import EntityTimeline
from oprag_pipeline.analysis.fairness import TradeoffPoint
from oprag_pipeline.analysis.flooding import EntitySources
from oprag_pipeline.rendering import embedded_png

MAX_TIMELINES = 6  # panels in one figure: more stop being readable in the UI's metadata pane

embedded = embedded_png


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def timelines(items: Sequence[EntityTimeline], path: Path, domain: str) -> Path:
    """Mean σ and positive / negative share per window; detected shifts as dashed lines. Flagged entities
    first, then the most opinions."""
    plt = _pyplot()
    chosen = sorted(items, key=lambda t: (not t.flagged, -sum(w.n for w in t.windows), t.entity_id))[:MAX_TIMELINES]
    fig, axes = plt.subplots(len(chosen), 1, figsize=(8, 2.2 * len(chosen)), squeeze=False, sharex=True)
    for ax, t in zip(axes[:, 0], chosen, strict=True):
        xs = [w.start for w in t.windows]
        ax.plot(xs, [w.shares()["positive"] for w in t.windows], "-o", color="#2d6a4f", ms=3, label="positive")
        ax.plot(xs, [w.shares()["negative"] for w in t.windows], "-o", color="#c1121f", ms=3, label="negative")
        ax.bar(
            xs,
            [w.n / max(1, max(v.n for v in t.windows)) for w in t.windows],
            width=20,
            color="#ddd",
            label="opinions (scaled)",
        )
        for shift in t.shifts:
            ax.axvline(shift.start, ls="--", color="#333")
        kinds = ", ".join(f"{s.kind} {s.start}" for s in t.shifts) or "no shift"
        ax.set_title(f"{t.entity_name}: {kinds}", fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, loc="upper right")
    fig.suptitle(f"{domain}: opinion timelines", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def concentration(items: Sequence[EntitySources], path: Path, domain: str) -> Path:
    """Top-author share and W1 between bounded and unweighted P_pop, per entity."""
    plt = _pyplot()
    chosen = sorted(items, key=lambda r: (-r.estimate.w1, r.entity_id))[:20]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.3 * len(chosen) + 1.5), sharey=True)
    names = [r.entity_name for r in chosen]
    left.barh(names, [r.top_author_share for r in chosen], color="#6a9fd4")
    left.set_xlabel("share of opinions from the top authors")
    right.barh(names, [r.estimate.w1 for r in chosen], color="#e09f3e")
    right.axvline(1.0, ls="--", color="#333")
    right.set_xlabel("W1 bounded vs unweighted P_pop (σ-points)")
    left.invert_yaxis()
    fig.suptitle(f"{domain}: source concentration", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def tradeoff(points: Sequence[TradeoffPoint], path: Path, domain: str, *, gold: bool) -> Path:
    """The trade-off curve (fair mode as the group weight moves) with raw and balanced as reference points."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    curve = sorted((p for p in points if p.group_share is not None), key=lambda p: p.group_share)
    if curve:
        ax.plot([p.coverage_matched for p in curve], [p.w1 for p in curve], "-o", color="#2d6a4f", label="fair")
        for p in curve:
            ax.annotate(
                f"w_g={p.group_share:g}",
                (p.coverage_matched, p.w1),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    for p, marker in zip((p for p in points if p.group_share is None), ("s", "D"), strict=False):
        ax.plot([p.coverage_matched], [p.w1], marker, ms=8, label=p.label)
    ax.set_xlabel("demographic coverage among matched hits")
    ax.set_ylabel("W1 to gold" if gold else "W1 to extracted corpus")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{domain}: fairness trade-off", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
