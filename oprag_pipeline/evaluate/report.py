"""The evaluation report of one domain: `metrics.json`, `report.md`, `report.html` and PNG plots.

Everything is read from the marts and `metric_significance`, so the report shows exactly what the SQL models and
tests computed. It is written for a reader first: one plain sentence (`plain_verdict`: did answers built with
opinion-aware retrieval match the corpus's mix of opinions more closely than plain RAG, and by how much), a table
of contents, then the verdict in figures — which retrieval came closest, by how much, with its entity-level CI, and
what it cost in relevance — and the answers (generation) section; the statistics follow: the declared family of
headline comparisons, W1 per entity, and the exploratory rest. A change of a rate or a share is printed in points,
never as a percent change.

The Markdown and HTML are rendered from one list of sections, so they cannot disagree. The sections come from
`SECTIONS`, a list of functions `(data, plots) -> list[Section]`: a new analysis adds its section by appending a
function (and, if it needs more tables, a query to `collect`'s `extra_queries`).
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from oprag_pipeline.evaluate.grid import FAMILY
from oprag_pipeline.generate import report as generation_report
from oprag_pipeline.warehouse import records, table_exists

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


@dataclass
class Section:
    title: str
    text: str = ""  # paragraphs separated by blank lines
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    image: Path | None = None
    after: str = ""  # a paragraph after the table


@dataclass
class WrittenReport:
    directory: Path
    markdown: Path
    html: Path
    metrics_json: Path
    plots: list[Path]
    summary_markdown: str
    summary_rows: list[list[str]]
    verdict: list[str] = field(default_factory=list)  # the plain sentence first, then the verdict in figures


def _count(n: int, one: str, many: str | None = None) -> str:
    """`1 entity`, `5 entities`: a small demo corpus often yields a single entity, and the verdict is read as prose."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def _fmt(value: Any, kind: str = "num") -> str:
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
    return generation_report.change_label(
        row["treatment_mean"], row["baseline_mean"], row["relative_change_label"], rate=rate
    )


def _query(conn: duckdb.DuckDBPyConnection, sql: str, domain: str) -> list[dict[str, Any]]:
    return records(conn.execute(sql, [domain]))


def variant(kb: str, mode: str) -> str:
    return kb if mode in ("semantic", "hybrid") else f"{kb}_{mode}"


def comparison_label(row: Mapping[str, Any]) -> str:
    def side(kb: str, mode: str) -> str:
        label = VARIANT_LABELS.get(variant(kb, mode), kb)
        return f"{label}, semantic" if mode == "semantic" else label

    return f"{side(row['treatment'], row['mode'])} vs {side(row['baseline'], row['baseline_mode'])}"


extra_queries: dict[str, str] = {}
"""More tables for sections added later: name → SQL with one `?` for the domain; the rows land in `data[name]`
(an empty list when the query's table does not exist yet)."""


def collect(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[str, Any]:
    """Every figure of the report as plain data (this is `metrics.json`)."""
    needed = ["mart_coverage_k20", "metric_significance", "evaluation_questions", "mart_depth_curve"]
    missing = [t for t in needed if not table_exists(conn, t)]
    if missing:
        raise LookupError(f"{domain}: the evaluation has not run yet (missing tables: {', '.join(missing)})")
    q = lambda sql: _query(conn, sql, domain)  # noqa: E731
    data = {
        "domain": domain,
        "questions": conn.execute("SELECT count(*) FROM evaluation_questions WHERE domain = ?", [domain]).fetchone()[0],
        "entities": q(
            """SELECT entity_id, entity_name, tier1_name, mentions, round(entropy_bits, 4) AS entropy_bits,
                      comparison_name FROM evaluation_entities WHERE domain = ? ORDER BY entropy_bits DESC"""
        ),
        "coverage_k20": q("SELECT * EXCLUDE (domain) FROM mart_coverage_k20 WHERE domain = ? ORDER BY metric, variant"),
        # the declared family first, then the exploratory rest; within each, by metric, k and comparison
        "significance": q(
            """SELECT * EXCLUDE (domain) FROM metric_significance WHERE domain = ?
               ORDER BY family <> 'headline', metric, k, treatment, mode, baseline, baseline_mode"""
        ),
        "w1_by_entity": q(
            "SELECT * EXCLUDE (domain) FROM mart_w1_by_entity WHERE domain = ? ORDER BY metric, entity_name, variant"
        ),
        "depth_curve": q(
            "SELECT * EXCLUDE (domain) FROM mart_depth_curve WHERE domain = ? ORDER BY metric, kb, mode, k"
        ),
        "mode_comparison": q(
            "SELECT * EXCLUDE (domain) FROM mart_mode_comparison WHERE domain = ? ORDER BY metric, kb"
        ),
        "question_type": q(
            "SELECT * EXCLUDE (domain) FROM mart_question_type WHERE domain = ? ORDER BY metric, question_type, variant"
        ),
        "fairness": q("SELECT * EXCLUDE (domain) FROM mart_fairness WHERE domain = ? ORDER BY attribute, variant"),
        "extraction_vs_gold": q(
            "SELECT * EXCLUDE (domain) FROM mart_extraction_vs_gold WHERE domain = ? ORDER BY source"
        ),
    }
    for name, sql in extra_queries.items():
        try:
            data[name] = q(sql)
        except duckdb.CatalogException:
            data[name] = []
    family = [r for r in data["significance"] if r["family"] == "headline"]
    data["primary_metric"] = family[0]["metric"] if family else None
    return data


def _coverage(data: Mapping[str, Any]) -> dict[tuple[str, str], float | None]:
    return {(r["metric"], r["variant"]): r["mean"] for r in data["coverage_k20"]}


def family_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The headline comparisons in the order they were declared (`grid.FAMILY`)."""
    order = {pair: i for i, pair in enumerate(FAMILY)}

    def position(r: Mapping[str, Any]) -> int:
        return order.get(((r["treatment"], r["mode"]), (r["baseline"], r["baseline_mode"])), len(order))

    return sorted((r for r in data["significance"] if r["family"] == "headline"), key=position)


def _ci_text(row: Mapping[str, Any]) -> str:
    """The CI as "[low, high]"; over a single entity there is nothing to resample, so no interval is claimed
    (the bootstrap returns the one value twice, which would read as certainty)."""
    if (row.get("n_entities") or 0) < 2:
        return "no CI (1 entity)"
    return f"[{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]"


def _effect(row: Mapping[str, Any]) -> str:
    ci = _ci_text(row)
    return f"Δ {row['mean_difference']:+.2f} ({ci if ci.startswith('no') else '95% CI ' + ci})"


def _too_few_entities(row: Mapping[str, Any]) -> str:
    """A sentence when the entity count cannot give p < α at all: the exact two-sided Wilcoxon signed-rank test
    over n entities has 2^(1−n) as its smallest p, so below 6 entities no difference can be significant."""
    n = row.get("n_entities") or 0
    smallest = 2.0 ** (1 - n) if n else 1.0
    if smallest < ALPHA:
        return ""
    return (
        f" With {_count(n, 'entity', 'entities')} no test over entities can reach p < {ALPHA:g} (the smallest "
        f"possible p is {smallest:.3g}): the figures are to read, not findings."
    )


def _significant(row: Mapping[str, Any]) -> bool:
    return row.get("p_holm") is not None and row["p_holm"] < ALPHA


def closest_against_plain_rag(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The family's comparison against plain RAG of the closest retrieval: the lowest mean over all its questions
    that found opinions (the summary table's figure); its effect is then the paired, entity-level comparison."""
    metric = data.get("primary_metric")
    coverage = _coverage(data)
    against_raw = [r for r in family_rows(data) if (r["baseline"], r["baseline_mode"]) == (PLAIN_RAG, "hybrid")]

    def closeness(r: Mapping[str, Any]) -> tuple:
        mean = coverage.get((metric, variant(r["treatment"], r["mode"])))
        return (r["treatment_mean"] if mean is None else mean, r["treatment"], r["mode"])

    return min(against_raw, key=closeness) if against_raw and metric is not None else None


def verdict(data: Mapping[str, Any]) -> list[str]:
    """The report's first lines: which retrieval came closest to the corpus's opinions on the primary metric (W1 to
    gold where the domain has gold), by how much against plain RAG with its entity-level CI and Holm-corrected p,
    and what it cost in entity match, miss rate and relevance; then balanced retrieval against PM-2."""
    family = family_rows(data)
    metric = data.get("primary_metric")
    if not family or metric is None:
        return [f"{data['domain']}: no headline comparison could be made (no questions with opinions to compare)."]
    coverage = _coverage(data)
    what = "W1 to the gold distribution" if metric == "w1_gold" else "W1 to the extracted corpus distribution"
    lines = []
    best = closest_against_plain_rag(data)
    if best is not None:
        v = variant(best["treatment"], best["mode"])
        cost = (
            f"entity match {_fmt(coverage.get(('entity_match_rate', v)), 'share')} vs "
            f"{_fmt(coverage.get(('entity_match_rate', PLAIN_RAG)), 'share')}, miss rate "
            f"{_fmt(coverage.get((metric + '_miss', v)), 'share')} vs "
            f"{_fmt(coverage.get((metric + '_miss', PLAIN_RAG)), 'share')}, mean rank in its KB's plain hybrid list "
            f"{_fmt(coverage.get(('relevance_hybrid_rank', v)))} vs "
            f"{_fmt(coverage.get(('relevance_hybrid_rank', PLAIN_RAG)))}"
        )
        n = f"{_count(best['n_entities'], 'entity', 'entities')}, {_count(best['n_questions'], 'question')}"
        # the tests average each entity's questions first; the summary table averages all questions, so the two
        # figures differ where entities have different question counts: say both, so neither reads as a mistake
        raw_mean = coverage.get((metric, PLAIN_RAG))
        best_mean = coverage.get((metric, v))
        question_means = (
            f"; over questions, as in the summary table: {best_mean:.2f} vs {raw_mean:.2f}"
            if raw_mean is not None and best_mean is not None
            else ""
        )
        if best["mean_difference"] < 0:
            strength = (
                "significant after Holm's correction"
                if _significant(best)
                else "not significant after Holm's correction"
            )
            lines.append(
                f"{data['domain']}: closest to the corpus's opinions ({what}, k = 20) was {VARIANT_LABELS[v]}: "
                f"{best['treatment_mean']:.2f} against {best['baseline_mean']:.2f} for plain RAG "
                f"({change_text(best)}; means over entities{question_means}), {_effect(best)} over {n}; "
                "Wilcoxon over entities "
                f"p = {_fmt(best['p_value'], 'p')}, Holm p = {_fmt(best['p_holm'], 'p')} ({strength})."
                + _too_few_entities(best)
            )
        else:
            lines.append(
                f"{data['domain']}: no method came closer than plain RAG ({what}, k = 20, "
                f"{best['baseline_mean']:.2f}); the best, {VARIANT_LABELS[v]}, had {best['treatment_mean']:.2f} "
                f"(means over entities{question_means}), {_effect(best)} over {n}, "
                f"Holm p = {_fmt(best['p_holm'], 'p')}." + _too_few_entities(best)
            )
        lines.append(f"Relevance cost of {VARIANT_LABELS[v]} against plain RAG: {cost}.")
    duel = next((r for r in family if (r["baseline"], r["baseline_mode"]) == ("enriched", "pm2")), None)
    if duel is not None:
        closer = "closer than" if duel["mean_difference"] < 0 else "not closer than"
        lines.append(
            f"Balanced retrieval was {closer} PM-2 ({duel['treatment_mean']:.2f} vs {duel['baseline_mean']:.2f}, "
            f"{_effect(duel)}, {_count(duel['n_entities'], 'entity', 'entities')}, "
            f"Holm p = {_fmt(duel['p_holm'], 'p')})."
        )
    return lines


MIX = "the corpus's real mix of opinions"
_MEASURED = {
    "w1_gold": "measured against the corpus's gold labels",
    "w1": "measured against the opinions the pipeline extracted",
}


def _closeness(subject: str, metric: str, treatment: float, baseline: float) -> str:
    """One sentence: did `subject` come closer to the mix than plain RAG, and by what share of plain RAG's distance
    (W1 is a distance, not a rate: its relative change is the plain reading of "how much closer")."""
    change = (baseline - treatment) / baseline * 100 if baseline > 0 else 0.0
    measured = _MEASURED.get(metric, f"measured by {METRIC_LABELS.get(metric, metric)}")
    if treatment < baseline:
        amount = f"{change:.0f}%" if round(change) >= 1 else "slightly (under 1%)"
        return f"{subject} matched {MIX} {amount} more closely than plain RAG on this data ({measured})."
    further = f"they were {-change:.0f}% further from it; " if treatment > baseline and baseline > 0 else ""
    return f"{subject} did not match {MIX} more closely than plain RAG on this data ({further}{measured})."


def _certainty(p: float | None, entities: int | None) -> str:
    """The test behind the sentence, in words: whether the difference held up over the entities asked about."""
    n = entities or 0
    topics = _count(n, "topic")
    if p is not None and p < ALPHA:
        return f"The difference held up in a statistical test over {topics} (p = {_fmt(p, 'p')})."
    if n == 0 or 2.0 ** (1 - n) >= ALPHA:
        return f"With {topics} tested, no statistical test can tell this from chance."
    return f"Over {topics} the difference could still be chance (p = {_fmt(p, 'p')})."


def plain_verdict(data: Mapping[str, Any]) -> str:
    """The report's first sentence, for a reader who reads nothing else, then one on how sure it is. From the answers
    (generation) when they were measured: W1 between what the answers convey and the corpus (to gold where the
    domain has it), opinion-aware against plain RAG; else from retrieval: the closest opinion-aware retrieval of the
    declared family against plain RAG. The figures are the ones the sections below print (means over entities)."""
    tests = (data.get("generation") or {}).get("tests") or {}
    metric = next((m for m in ("w1_gold", "w1") if m in tests), None)
    if metric is not None:
        t = tests[metric]
        if t.get("treatment_mean") is not None and t.get("baseline_mean") is not None:
            subject = "Answers built with opinion-aware retrieval"
            return (
                _closeness(subject, metric, t["treatment_mean"], t["baseline_mean"])
                + " "
                + _certainty(t.get("p_value"), t.get("n_entities"))
            )
    metric = data.get("primary_metric")
    best = closest_against_plain_rag(data)
    if metric is None or best is None:
        return (
            f"No comparison with plain RAG could be made on {data['domain']}: no evaluation question found opinions "
            "to compare."
        )
    label = VARIANT_LABELS.get(variant(best["treatment"], best["mode"]), best["treatment"])
    subject = f"Passages found by opinion-aware retrieval ({label})"
    return (
        _closeness(subject, metric, best["treatment_mean"], best["baseline_mean"])
        + " "
        + _certainty(best.get("p_holm"), best.get("n_entities"))
        + " The answers were not measured on this domain."
    )


def summary_rows(data: dict[str, Any]) -> list[list[str]]:
    """Each headline metric at k = 20 for every variant (question means; the tests are entity-level)."""
    coverage = _coverage(data)
    rows = []
    for metric, label, kind, better in HEADLINE_METRICS:
        if not any((metric, v) in coverage for v in VARIANTS):
            continue
        rows.append([f"{label} ({better} is better)", *[_fmt(coverage.get((metric, v)), kind) for v in VARIANTS]])
    return rows


SUMMARY_HEADERS = ["metric (k=20)", *VARIANT_LABELS.values()]
_BETTER_ARROWS = {"lower": "↓", "higher": "↑"}


def compact_summary(rows: list[list[str]]) -> tuple[list[str], list[list[str]], str]:
    """The summary for a terminal: variant short names, "↓"/"↑" for which way is better, and a legend line that
    says both, so the table is about half as wide as `SUMMARY_HEADERS` (170 columns) without losing a figure."""
    suffixes = {f" ({better} is better)": f" {arrow}" for better, arrow in _BETTER_ARROWS.items()}
    compact_rows = []
    for label, *cells in rows:
        for suffix, arrow in suffixes.items():
            if label.endswith(suffix):
                label = label[: -len(suffix)] + arrow
        compact_rows.append([label, *cells])
    enriched_modes = [SHORT_LABELS[v] for v in VARIANTS if v.startswith("enriched_")]
    legend = (
        f"↓ lower is better, ↑ higher; raw = {VARIANT_LABELS['raw']}, split = {VARIANT_LABELS['entity_split']}, "
        f"enriched = {VARIANT_LABELS['enriched']} (hybrid retrieval), {', '.join(enriched_modes)} = the enriched "
        "KB with that retrieval"
    )
    return ["metric (k=20)", *(SHORT_LABELS[v] for v in VARIANTS)], compact_rows, legend


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
    coverage = _coverage(data)
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


def _plots(data: dict[str, Any], out_dir: Path) -> list[Path]:
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


SectionBuilder = Callable[[dict[str, Any], Mapping[str, Path]], list[Section]]


def verdict_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    entities = _count(len(data["entities"]), "disputed entity", "disputed entities")
    return [
        Section(
            "Verdict",
            "\n\n".join(verdict(data)) + f"\n\n{data['questions']} questions about {entities}. Tests run over "
            "entities (each retrieval's metric averaged over the entity's questions), with cluster-bootstrap 95% CIs; "
            "W1 is over the retrievals that found opinions on the entity, the miss rate is reported beside it.",
        )
    ]


def answers_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    """The answers (generation) section, when generation ran: what a reader cares about, so it comes second."""
    parts = generation_report.generation_parts(data["generation"]) if data.get("generation") else None
    if parts is None:
        return []
    return [Section(parts.title, parts.text, parts.headers, parts.rows, after=parts.after)]


def family_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    rows = [
        [
            comparison_label(r),
            str(r["n_entities"]),
            str(r["n_questions"]),
            _fmt(r["baseline_mean"]),
            _fmt(r["treatment_mean"]),
            f"{r['mean_difference']:+.2f}",
            _ci_text(r),
            change_text(r),
            _fmt(r["p_value"], "p"),
            _fmt(r["p_holm"], "p"),
        ]
        for r in family_rows(data)
    ]
    metric = data.get("primary_metric")
    return [
        Section(
            "Headline comparisons (declared family, Holm-corrected)",
            f"Metric: {METRIC_LABELS.get(metric, metric)} at k = 20, lower is closer. Effect sizes first: the mean "
            "over entities of the per-entity difference, with its 95% cluster-bootstrap CI; then the Wilcoxon "
            f"signed-rank p over entities and Holm's adjustment over the {len(rows)} comparisons of this family. "
            "Every other test in this report is exploratory.",
            [
                "comparison",
                "entities",
                "questions",
                "baseline",
                "treatment",
                "Δ",
                "95% CI Δ",
                "change",
                "p",
                "p Holm",
            ],
            rows,
            plots.get("headline_effects"),
        )
    ]


def _entity_table(data: dict[str, Any], metric: str) -> list[list[str]]:
    cells: dict[str, dict[tuple[str, str], float]] = {}
    for r in data["w1_by_entity"]:
        cells.setdefault(r["entity_name"], {})[(r["metric"], r["variant"])] = r["mean"]
    rows = []
    for entity in sorted(cells):
        row = [entity]
        for v in VARIANTS:
            w1, miss = cells[entity].get((metric, v)), cells[entity].get((f"{metric}_miss", v))
            text = _fmt(w1)
            if miss:
                text += f" (miss {miss:.0%})"
            row.append(text)
        rows.append(row)
    return rows


def per_entity_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    sections = []
    for metric in ("w1_gold", "w1"):
        rows = _entity_table(data, metric)
        if not any(any(c != "—" for c in row[1:]) for row in rows):
            continue
        sections.append(
            Section(
                f"{METRIC_LABELS[metric]} per entity (k = 20)",
                "Mean over the entity's questions whose retrieval found opinions on it; in brackets the share of "
                "its questions that found none; — where the entity has no "
                + ("gold labels." if metric == "w1_gold" else "opinion found."),
                ["entity", *[SHORT_LABELS[v] for v in VARIANTS]],
                rows,
            )
        )
    return sections


def coverage_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    return [
        Section(
            "Fidelity, relevance and coverage at k = 20",
            "Question means per retrieval variant. Relevance proxy: the mean rank of the hits in their KB's plain "
            "hybrid list of the question (top 60; a hit outside counts as 61) and the share inside it; a diversifier "
            "that reaches into text plain retrieval would not return shows a higher rank. Balanced retrieval takes "
            "its σ-level proportions from the extracted distribution, so its W1 to that distribution is small by "
            "construction; W1 to gold is the independent test.",
            SUMMARY_HEADERS,
            summary_rows(data),
            plots.get("kb_comparison"),
        )
    ]


def _key_metrics(data: Mapping[str, Any]) -> list[str]:
    """The metrics the report's tables dwell on: the primary W1 and its miss rate, W1 to the extracted
    distribution where that is not the primary, entity match and the relevance proxy."""
    primary = data.get("primary_metric") or "w1"
    return list(dict.fromkeys([primary, f"{primary}_miss", "w1", "w1_miss", "entity_match_rate",
                               "relevance_hybrid_rank"]))  # fmt: skip


def depth_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    curve = [{**r, "variant": variant(r["kb"], r["mode"])} for r in data["depth_curve"] if r["mode"] != "semantic"]
    shown = [m for m in _key_metrics(data) if any(r["metric"] == m for r in curve)]
    curve.sort(key=lambda r: (shown.index(r["metric"]) if r["metric"] in shown else 99, r["k"]))
    return [
        Section(
            "Retrieval depth",
            "Question means per k; the mart holds spread and emotion curves too.",
            ["metric", "k", *[SHORT_LABELS[v] for v in VARIANTS]],
            _pivot([r for r in curve if r["metric"] in shown], ("metric", "k"), "mean", key="variant"),
            plots.get("depth_curves"),
        )
    ]


def exploratory_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    rows = [
        [
            r["metric"],
            comparison_label(r),
            str(r["n_entities"]),
            _fmt(r["baseline_mean"]),
            _fmt(r["treatment_mean"]),
            f"{r['mean_difference']:+.2f} {_ci_text(r)}",
            _fmt(r["p_value"], "p"),
        ]
        for r in sorted(
            (r for r in data["significance"] if r["family"] != "headline" and r["k"] == 20),
            key=lambda r: _key_metrics(data).index(r["metric"]) if r["metric"] in _key_metrics(data) else 99,
        )
        if r["metric"] in _key_metrics(data)
    ]
    return [
        Section(
            "Exploratory comparisons (k = 20, uncorrected)",
            "Entity-level effects and Wilcoxon p-values without multiplicity correction: for orientation only. "
            "Shown for the key metrics; metric_significance in the warehouse holds every metric and depth.",
            ["metric", "comparison", "entities", "baseline", "treatment", "Δ [95% CI]", "p (uncorrected)"],
            rows,
        )
    ]


def mode_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    rows = [
        [r["metric"], VARIANT_LABELS[r["kb"]], _fmt(r["semantic"]), _fmt(r["hybrid"])]
        for r in data["mode_comparison"]
        if r["metric"] in METRIC_LABELS and r["kb"] in VARIANT_LABELS
    ]
    return [Section("Semantic vs hybrid (k = 20)", "", ["metric", "KB", "semantic", "hybrid"], rows)]


def question_type_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    primary = data.get("primary_metric") or "w1"
    qtype = [r for r in data["question_type"] if r["metric"] in ("entity_match_rate", primary)]
    return [
        Section(
            "By question type (k = 20)",
            "",
            ["metric", "question type", *[SHORT_LABELS[v] for v in VARIANTS]],
            _pivot(qtype, ("metric", "question_type"), "mean", key="variant"),
        )
    ]


def fairness_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    rows = [
        [r["attribute"], VARIANT_LABELS.get(r["variant"], r["variant"]), _fmt(r["overall"], "share"),
         _fmt(r["matched"], "share")]
        for r in data["fairness"]
    ]  # fmt: skip
    return [
        Section(
            "Fairness: demographic coverage (k = 20)",
            "Share of an author attribute's groups present among the hits, over all hits and among the hits that "
            "match the queried entity.",
            ["attribute", "variant", "overall", "entity-matched"],
            rows,
            plots.get("fairness"),
        )
    ]


def extraction_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    gold = data["extraction_vs_gold"]
    return [
        Section(
            "Extraction against gold labels",
            "" if gold else "This domain carries no gold labels.",
            ["gold source", "labels", "extracted", "recall", "sentiment agreement", "mean |Δσ|", "Pearson σ"],
            [
                [
                    r["source"],
                    str(r["gold_labels"]),
                    str(r["extracted"]),
                    _fmt(r["recall"], "share"),
                    _fmt(r["sentiment_agreement"], "share"),
                    _fmt(r["mean_abs_sigma_error"]),
                    _fmt(r["pearson_sigma"]),
                ]
                for r in gold
            ],
        )
    ]


def entities_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    return [
        Section(
            "Evaluated entities",
            "",
            ["entity", "category", "mentions", "H(e) bits", "compared with"],
            [
                [
                    e["entity_name"],
                    str(e["tier1_name"]),
                    str(e["mentions"]),
                    f"{e['entropy_bits']:.2f}",
                    str(e["comparison_name"]),
                ]
                for e in data["entities"]
            ],
        )
    ]


SECTIONS: list[SectionBuilder] = [
    verdict_section,
    answers_section,
    family_section,
    per_entity_section,
    coverage_section,
    depth_section,
    exploratory_section,
    mode_section,
    question_type_section,
    fairness_section,
    extraction_section,
    entities_section,
]
"""The report, in order. Append (or insert) a builder to add a section; the verdict, the answers and the family
stay first, the statistics below them."""


def _sections(data: dict[str, Any], plots: Sequence[Path], builders: Sequence[SectionBuilder]) -> list[Section]:
    by_stem = {p.stem: p for p in plots}
    return [section for build in builders for section in build(data, by_stem)]


def _pivot(rows: Sequence[dict[str, Any]], keys: Sequence[str], value: str, key: str) -> list[list[str]]:
    grouped: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        grouped.setdefault(tuple(r[k] for k in keys), {})[r[key]] = r[value]
    return [[str(v) for v in group] + [_fmt(cells.get(v)) for v in VARIANTS] for group, cells in grouped.items()]


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (floats to 4 significant digits, pipes escaped): the report's and the assets' metadata."""

    def cell(value: Any) -> str:
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def anchor(title: str, taken: set[str] | None = None) -> str:
    """The id of a heading, as GitHub and most Markdown renderers make it (lower case, punctuation dropped, spaces to
    hyphens; "-1", "-2" for repeats), so the contents' links resolve in report.md and report.html alike."""
    base = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
    slug, n = base, 0
    while taken is not None and slug in taken:
        n += 1
        slug = f"{base}-{n}"
    if taken is not None:
        taken.add(slug)
    return slug


@dataclass(frozen=True)
class Contents:
    """The report's headings in order, with their ids."""

    entries: list[tuple[str, str]]  # (title, anchor)

    @classmethod
    def of(cls, titles: Sequence[str]) -> Contents:
        taken: set[str] = set()
        return cls([(title, anchor(title, taken)) for title in titles])

    def markdown(self) -> str:
        lines = ["**Contents**", ""]
        lines += [f"{i}. [{title}](#{slug})" for i, (title, slug) in enumerate(self.entries, start=1)]
        return "\n".join(lines)

    def html(self) -> str:
        e = html.escape
        items = "".join(f"<li><a href='#{e(slug)}'>{e(title)}</a></li>" for title, slug in self.entries)
        return f"<nav class='toc' aria-label='Contents'><p><strong>Contents</strong></p><ol>{items}</ol></nav>"


_MD_H2 = re.compile(r"^## (.+?)\s*$", re.M)
_HTML_H2 = re.compile(r"<h2>(.*?)</h2>", re.S)


def markdown_titles(text: str) -> list[str]:
    """The second-level headings of Markdown (the analyses' sections)."""
    return _MD_H2.findall(text)


def _with_ids(page: str, slugs: Sequence[str]) -> str:
    """`<h2>` headings without an id (the analyses' HTML) given the contents' ids, in order."""
    remaining = iter(slugs)

    def add(match: re.Match[str]) -> str:
        slug = next(remaining, None)
        return match.group(0) if slug is None else f"<h2 id='{slug}'>{match.group(1)}</h2>"

    return _HTML_H2.sub(add, page)


def _markdown(
    domain: str,
    sections: Sequence[Section],
    *,
    embed_images: bool = False,
    lead: str = "",
    contents: Contents | None = None,
) -> str:
    """The report as Markdown; images as links next to the file, or embedded (`data:` URIs) for the Dagster UI,
    where a relative link does not render."""
    lines = [f"# Opinion-fidelity report: {domain}", ""]
    if lead:
        lines += [f"**{lead}**", ""]
    if contents is not None:
        lines += [contents.markdown(), ""]
    for s in sections:
        lines += [f"## {s.title}", ""]
        if s.text:
            lines += [s.text, ""]
        if s.headers and s.rows:
            lines += [markdown_table(s.headers, s.rows), ""]
        if s.after:
            lines += [s.after, ""]
        if s.image:
            lines += [embedded_png(s.image) if embed_images else f"![{s.title}]({s.image.name})", ""]
    return "\n".join(lines)


STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}img{max-width:100%}"
    ".lead{font-size:1.25em;border-left:4px solid #0072b2;padding:.4em .8em;background:#f4f8fb}"
    ".toc{border:1px solid #ddd;border-radius:6px;padding:.2em 1em;margin:1em 0;display:inline-block}"
)


def _html(domain: str, sections: Sequence[Section], *, lead: str = "", contents: Contents | None = None) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Opinion-fidelity report: {e(domain)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Opinion-fidelity report: {e(domain)}</h1>",
    ]
    if lead:
        parts.append(f"<p class='lead'>{e(lead)}</p>")
    if contents is not None:
        parts.append(contents.html())
    # the contents list these sections first, in this order: their ids are the contents' anchors
    slugs = [slug for _, slug in contents.entries] if contents is not None else []
    for index, s in enumerate(sections):
        slug = slugs[index] if index < len(slugs) else anchor(s.title)
        parts.append(f"<section id='{e(slug)}'>")
        parts.append(f"<h2>{e(s.title)}</h2>")
        parts += [f"<p>{e(paragraph)}</p>" for paragraph in s.text.split("\n\n") if paragraph]
        if s.headers and s.rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in s.headers) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in s.rows]
            parts.append("</table>")
        if s.after:
            parts.append(f"<p>{e(s.after)}</p>")
        if s.image:
            encoded = base64.b64encode(s.image.read_bytes()).decode("ascii")
            parts.append(f"<img src='data:image/png;base64,{encoded}' alt='{e(s.title)}'>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def embedded_png(path: Path) -> str:
    """A Markdown image with the PNG inline, so the Dagster UI shows the plot in the asset's metadata."""
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"![{path.stem}](data:image/png;base64,{encoded})"


@dataclass(frozen=True)
class RenderedReport:
    lead: str
    sections: list[Section]
    markdown: str
    html: str


def render(
    data: dict[str, Any],
    plots: Sequence[Path] = (),
    *,
    builders: Sequence[SectionBuilder] | None = None,
    analyses_markdown: str = "",
    analyses_html: str = "",
) -> RenderedReport:
    """report.md and report.html from the report's figures: the plain verdict, the contents (every section, the
    analyses' included, each linked to its heading's id), then the sections in order."""
    sections = _sections(data, plots, SECTIONS if builders is None else builders)
    lead = plain_verdict(data)
    own = [s.title for s in sections]
    contents_md = Contents.of([*own, *markdown_titles(analyses_markdown)])
    markdown = _markdown(data["domain"], sections, lead=lead, contents=contents_md) + analyses_markdown
    html_titles = [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in _HTML_H2.findall(analyses_html)]
    contents_html = Contents.of([*own, *html_titles])
    page = _html(data["domain"], sections, lead=lead, contents=contents_html)
    extra = _with_ids(analyses_html, [slug for _, slug in contents_html.entries[len(own) :]])
    closing = page.rfind("</body>")
    page = page[:closing] + extra + page[closing:] if closing >= 0 else page + extra
    return RenderedReport(lead, sections, markdown, page)


def write_report(
    conn: duckdb.DuckDBPyConnection, domain: str, out_dir: Path, sections: Sequence[SectionBuilder] | None = None
) -> WrittenReport:
    from oprag_pipeline.analysis.report import analysis_html, analysis_markdown  # the analyses' own sections

    data = collect(conn, domain)
    generation = generation_report.generation_section(conn, domain)
    if generation.markdown:  # generation ran: its figures join metrics.json (and the answers section)
        data["generation"] = generation.data
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = _plots(data, out_dir)
    metrics_json = out_dir / "metrics.json"
    metrics_json.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    rendered = render(
        data,
        plots,
        builders=sections,
        analyses_markdown=analysis_markdown(conn, domain),
        analyses_html=analysis_html(conn, domain),
    )
    markdown = out_dir / "report.md"
    markdown.write_text(rendered.markdown, encoding="utf-8")
    html_path = out_dir / "report.html"
    html_path.write_text(rendered.html, encoding="utf-8")
    rows = summary_rows(data)
    headline = [s for s in rendered.sections if s.title == "Verdict" or s.title.startswith("Headline comparisons")]
    summary = _markdown(domain, headline, embed_images=True, lead=rendered.lead).split("\n", 2)[2]
    verdict_lines = [rendered.lead, *verdict(data)]
    return WrittenReport(out_dir, markdown, html_path, metrics_json, plots, summary, rows, verdict_lines)
