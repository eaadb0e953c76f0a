"""The evaluation report of one domain: `metrics.json`, `report.md`, `report.html` and PNG plots.

Everything is read from the marts and `metric_significance`, so the report shows exactly what the SQL models and
tests computed. The Markdown and HTML are rendered from one list of sections, so they cannot disagree.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from oprag_pipeline.generate import report as generation_report

KB_LABELS = {
    "raw": "raw KB",
    "entity_split": "entity-split KB",
    "enriched": "enriched KB",
    "enriched_balanced": "enriched KB, balanced",
}
KBS = ("raw", "entity_split", "enriched")
VARIANTS = tuple(KB_LABELS)
HEADLINE_METRICS = (
    ("entity_match_rate", "entity match rate", "share", "higher"),
    ("sentiment_intensity_std", "sentiment-intensity std (σ)", "num", "higher"),
    ("impact_std", "impact std", "num", "higher"),
    ("distinct_emotions", "distinct emotional markers", "num", "higher"),
    ("w1", "W1 to corpus distribution", "num", "lower"),
    ("w1_gold", "W1 to gold distribution", "num", "lower"),
)


@dataclass
class Section:
    title: str
    text: str = ""
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    image: Path | None = None


@dataclass
class WrittenReport:
    directory: Path
    markdown: Path
    html: Path
    metrics_json: Path
    plots: list[Path]
    summary_markdown: str
    summary_rows: list[list[str]]


def _fmt(value: Any, kind: str = "num") -> str:
    if value is None:
        return "—"
    if kind == "share":
        return f"{value:.1%}"
    if kind == "p":
        return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"
    return f"{value:.2f}"


def _query(conn: duckdb.DuckDBPyConnection, sql: str, domain: str) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, [domain])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _table_exists(conn: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(
        conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()[0]
    )


def collect(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[str, Any]:
    """Every figure of the report as plain data (this is `metrics.json`)."""
    needed = ["mart_coverage_k20", "metric_significance", "evaluation_questions", "mart_depth_curve"]
    missing = [t for t in needed if not _table_exists(conn, t)]
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
        "coverage_k20_hybrid": q("SELECT * EXCLUDE (domain) FROM mart_coverage_k20 WHERE domain = ? ORDER BY metric"),
        "significance": q(
            "SELECT * EXCLUDE (domain) FROM metric_significance WHERE domain = ? ORDER BY metric, mode, k, treatment"
        ),
        "w1_by_category": q(
            "SELECT * EXCLUDE (domain) FROM mart_w1_by_category WHERE domain = ? "
            "ORDER BY metric, entity_category, variant"
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
    return data


def _significance(
    data: dict[str, Any], metric: str, treatment: tuple[str, str], baseline: tuple[str, str], k: int = 20
) -> dict[str, Any] | None:
    for row in data["significance"]:
        if (
            row["metric"] == metric
            and row["k"] == k
            and (row["treatment"], row["mode"]) == treatment
            and (row["baseline"], row["baseline_mode"]) == baseline
        ):
            return row
    return None


def summary_rows(data: dict[str, Any]) -> list[list[str]]:
    """The headline table: each KB at k=20 (hybrid), balanced retrieval, and both changes over raw with p."""
    coverage = {r["metric"]: r for r in data["coverage_k20_hybrid"]}
    rows = []
    for metric, label, kind, better in HEADLINE_METRICS:
        r = coverage.get(metric)
        if r is None:
            continue
        plain = _significance(data, metric, ("enriched", "hybrid"), ("raw", "hybrid"))
        balanced = _significance(data, metric, ("enriched", "balanced"), ("raw", "hybrid"))
        rows.append(
            [
                f"{label} ({better} is better)",
                _fmt(r["raw"], kind),
                _fmt(r["entity_split"], kind),
                _fmt(r["enriched"], kind),
                _fmt(r["enriched_balanced"], kind),
                plain["relative_change_label"] if plain else "—",
                _fmt(plain["p_value"], "p") if plain else "—",
                balanced["relative_change_label"] if balanced else "—",
                _fmt(balanced["p_value"], "p") if balanced else "—",
            ]
        )
    return rows


SUMMARY_HEADERS = [
    "metric (k=20)",
    "raw",
    "entity-split",
    "enriched",
    "enriched, balanced",
    "enriched vs raw",
    "p",
    "balanced vs raw",
    "p",
]


def _plots(data: dict[str, Any], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = []
    curve = data["depth_curve"]
    metrics = [
        m
        for m in ("entity_match_rate", "w1", "w1_gold", "sentiment_intensity_std")
        if any(r["metric"] == m for r in curve)
    ]
    if metrics:
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
        for ax, metric in zip(axes[0], metrics, strict=True):
            for kb in KBS:
                for mode, style in (("hybrid", "-"), ("semantic", ":"), ("balanced", "--")):
                    points = sorted(
                        (r["k"], r["mean"]) for r in curve if (r["metric"], r["kb"], r["mode"]) == (metric, kb, mode)
                    )
                    if points:
                        ax.plot(*zip(*points, strict=True), style, marker="o", label=f"{KB_LABELS[kb]}, {mode}")
            ax.set_title(metric.replace("_", " "))
            ax.set_xlabel("k")
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"{data['domain']}: retrieval depth")
        fig.tight_layout()
        path = out_dir / "depth_curves.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        plots.append(path)
    coverage = [r for r in data["coverage_k20_hybrid"] if r["metric"] in ("entity_match_rate", "w1", "w1_gold")]
    if coverage:
        fig, axes = plt.subplots(1, len(coverage), figsize=(3.6 * len(coverage), 3.2), squeeze=False)
        for ax, row in zip(axes[0], coverage, strict=True):
            values = [row[v] or 0.0 for v in VARIANTS]
            labels = ["raw", "split", "enriched", "balanced"]
            ax.bar(labels, values, color=["#999", "#6a9fd4", "#2d6a4f", "#e09f3e"])
            ax.set_title(f"{row['metric'].replace('_', ' ')} (k=20, hybrid)")
            ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path = out_dir / "kb_comparison.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        plots.append(path)
    fairness = data["fairness"]
    if fairness:
        attributes = sorted({r["attribute"] for r in fairness})
        fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(attributes) * 2), 3.4))
        width = 0.1
        for i, variant in enumerate(VARIANTS):
            for j, scope in enumerate(("overall", "matched")):
                xs = [a + (i * 2 + j - 3.5) * width for a in range(len(attributes))]
                ys = [
                    next((r[scope] or 0.0 for r in fairness if (r["attribute"], r["variant"]) == (a, variant)), 0.0)
                    for a in attributes
                ]
                ax.bar(xs, ys, width, label=f"{KB_LABELS[variant]}, {scope}", hatch="" if scope == "overall" else "//")
        ax.set_xticks(range(len(attributes)), attributes)
        ax.set_ylabel("share of groups present")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=6, ncol=3)
        ax.set_title(f"{data['domain']}: demographic coverage at k=20 (hybrid)")
        fig.tight_layout()
        path = out_dir / "fairness.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        plots.append(path)
    return plots


def _sections(data: dict[str, Any], plots: Sequence[Path]) -> list[Section]:
    plot = {p.stem: p for p in plots}
    sections = [
        Section(
            "Coverage and fidelity at k = 20 (hybrid retrieval)",
            f"{data['questions']} questions about {len(data['entities'])} disputed entities. Paired Wilcoxon "
            "signed-rank test over questions (enriched vs raw); 95% bootstrap CI of the mean difference.",
            SUMMARY_HEADERS,
            summary_rows(data),
            plot.get("kb_comparison"),
        )
    ]
    sig_rows = [
        [
            r["metric"],
            f"{r['treatment']} ({r['mode']}) vs {r['baseline']} ({r['baseline_mode']})",
            str(r["n_questions"]),
            _fmt(r["baseline_mean"]),
            _fmt(r["treatment_mean"]),
            r["relative_change_label"],
            f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]",
            _fmt(r["p_value"], "p"),
        ]
        for r in data["significance"]
        if r["mode"] in ("hybrid", "balanced") and r["k"] == 20
    ]
    sections.append(
        Section(
            "All paired comparisons (k = 20)",
            "Balanced retrieval takes its σ-level proportions from the extracted corpus distribution, so its `w1` "
            "against that same distribution is small by construction; `w1_gold` (gold labels on both sides) is "
            "the independent test.",
            ["metric", "comparison", "n", "baseline", "treatment", "change", "95% CI Δ", "p"],
            sig_rows,
        )
    )
    sections.append(
        Section(
            "W1 per entity category (k = 20, hybrid)",
            "Entity category = the taxonomy's top tier. `w1_gold` uses gold labels for both distributions.",
            ["metric", "category", "entities", *[KB_LABELS[v] for v in VARIANTS]],
            _pivot(data["w1_by_category"], ("metric", "entity_category", "entities"), "mean", key="variant"),
        )
    )
    depth = [
        {**r, "variant": f"{r['kb']}_balanced" if r["mode"] == "balanced" else r["kb"]}
        for r in data["depth_curve"]
        if r["mode"] in ("hybrid", "balanced")
    ]
    sections.append(
        Section(
            "Retrieval depth (hybrid; balanced on the enriched KB)",
            "",
            ["metric", "k", *[KB_LABELS[v] for v in VARIANTS]],
            _pivot(depth, ("metric", "k"), "mean", key="variant"),
            plot.get("depth_curves"),
        )
    )
    mode_rows = [
        [r["metric"], KB_LABELS[r["kb"]], _fmt(r["semantic"]), _fmt(r["hybrid"]), _fmt(r["balanced"])]
        for r in data["mode_comparison"]
        if r["metric"] in dict.fromkeys(m for m, *_ in HEADLINE_METRICS)
    ]
    sections.append(
        Section("Semantic vs hybrid (k = 20)", "", ["metric", "KB", "semantic", "hybrid", "balanced"], mode_rows)
    )
    qtype = [r for r in data["question_type"] if r["metric"] in ("entity_match_rate", "w1", "w1_gold")]
    sections.append(
        Section(
            "By question type (k = 20, hybrid)",
            "",
            ["metric", "question type", *[KB_LABELS[v] for v in VARIANTS]],
            _pivot(qtype, ("metric", "question_type"), "mean", key="variant"),
        )
    )
    fair_rows = [
        [r["attribute"], KB_LABELS[r["variant"]], _fmt(r["overall"], "share"), _fmt(r["matched"], "share")]
        for r in data["fairness"]
    ]
    sections.append(
        Section(
            "Fairness: demographic coverage (k = 20, hybrid)",
            "Share of an author attribute's groups present among the hits, over all hits and among the hits that "
            "match the queried entity.",
            ["attribute", "KB", "overall", "entity-matched"],
            fair_rows,
            plot.get("fairness"),
        )
    )
    gold = data["extraction_vs_gold"]
    sections.append(
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
    )
    sections.append(
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
    )
    return sections


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


def _markdown(domain: str, sections: Sequence[Section]) -> str:
    lines = [f"# Opinion-fidelity report: {domain}", ""]
    for s in sections:
        lines += [f"## {s.title}", ""]
        if s.text:
            lines += [s.text, ""]
        if s.headers and s.rows:
            lines += [markdown_table(s.headers, s.rows), ""]
        if s.image:
            lines += [f"![{s.title}]({s.image.name})", ""]
    return "\n".join(lines)


def _html(domain: str, sections: Sequence[Section]) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Opinion-fidelity report: {e(domain)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}img{max-width:100%}</style></head><body>",
        f"<h1>Opinion-fidelity report: {e(domain)}</h1>",
    ]
    for s in sections:
        parts.append(f"<h2>{e(s.title)}</h2>")
        if s.text:
            parts.append(f"<p>{e(s.text)}</p>")
        if s.headers and s.rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in s.headers) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in s.rows]
            parts.append("</table>")
        if s.image:
            parts.append(f"<img src='{e(s.image.name)}' alt='{e(s.title)}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


def embedded_png(path: Path) -> str:
    """A Markdown image with the PNG inline, so the Dagster UI shows the plot in the asset's metadata."""
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"![{path.stem}](data:image/png;base64,{encoded})"


def write_report(conn: duckdb.DuckDBPyConnection, domain: str, out_dir: Path) -> WrittenReport:
    data = collect(conn, domain)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = _plots(data, out_dir)
    sections = _sections(data, plots)
    metrics_json = out_dir / "metrics.json"
    metrics_json.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    markdown = out_dir / "report.md"
    markdown.write_text(_markdown(domain, sections), encoding="utf-8")
    html_path = out_dir / "report.html"
    html_path.write_text(_html(domain, sections), encoding="utf-8")
    generation_report.append_to_report(conn, domain, markdown, html_path, metrics_json)
    rows = summary_rows(data)
    summary = _markdown(domain, sections[:1]).split("\n", 2)[2]
    return WrittenReport(out_dir, markdown, html_path, metrics_json, plots, summary, rows)
