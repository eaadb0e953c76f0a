"""The report's sections, in order: `SECTIONS`, a list of functions `(data, plots) -> list[Section]`. The verdict,
the answers (generation) and the declared family come first; the statistics follow: W1 per entity, coverage,
depth and the exploratory rest. A new analysis adds its section by appending a function (and, if it needs more
tables, a query to `data.extra_queries`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oprag_pipeline.generate.answers_report import generation_parts
from oprag_pipeline.report.data import family_rows
from oprag_pipeline.report.labels import (
    METRIC_LABELS,
    SHORT_LABELS,
    VARIANT_LABELS,
    VARIANTS,
    change_text,
    ci_text,
    comparison_label,
    count_phrase,
    fmt,
    variant,
)
from oprag_pipeline.report.summary import SUMMARY_HEADERS, summary_rows
from oprag_pipeline.report.verdict import verdict


@dataclass
class Section:
    title: str
    text: str = ""  # paragraphs separated by blank lines
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    image: Path | None = None
    after: str = ""  # a paragraph after the table


SectionBuilder = Callable[[dict[str, Any], Mapping[str, Path]], list[Section]]


def verdict_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    entities = count_phrase(len(data["entities"]), "disputed entity", "disputed entities")
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
    parts = generation_parts(data["generation"]) if data.get("generation") else None
    if parts is None:
        return []
    return [Section(parts.title, parts.text, parts.headers, parts.rows, after=parts.after)]


def family_section(data: dict[str, Any], plots: Mapping[str, Path]) -> list[Section]:
    rows = [
        [
            comparison_label(r),
            str(r["n_entities"]),
            str(r["n_questions"]),
            fmt(r["baseline_mean"]),
            fmt(r["treatment_mean"]),
            f"{r['mean_difference']:+.2f}",
            ci_text(r),
            change_text(r),
            fmt(r["p_value"], "p"),
            fmt(r["p_holm"], "p"),
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
            text = fmt(w1)
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
            fmt(r["baseline_mean"]),
            fmt(r["treatment_mean"]),
            f"{r['mean_difference']:+.2f} {ci_text(r)}",
            fmt(r["p_value"], "p"),
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
        [r["metric"], VARIANT_LABELS[r["kb"]], fmt(r["semantic"]), fmt(r["hybrid"])]
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
        [r["attribute"], VARIANT_LABELS.get(r["variant"], r["variant"]), fmt(r["overall"], "share"),
         fmt(r["matched"], "share")]
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
                    fmt(r["recall"], "share"),
                    fmt(r["sentiment_agreement"], "share"),
                    fmt(r["mean_abs_sigma_error"]),
                    fmt(r["pearson_sigma"]),
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


def build_sections(data: dict[str, Any], plots: Sequence[Path], builders: Sequence[SectionBuilder]) -> list[Section]:
    by_stem = {p.stem: p for p in plots}
    return [section for build in builders for section in build(data, by_stem)]


def _pivot(rows: Sequence[dict[str, Any]], keys: Sequence[str], value: str, key: str) -> list[list[str]]:
    grouped: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        grouped.setdefault(tuple(r[k] for k in keys), {})[r[key]] = r[value]
    return [[str(v) for v in group] + [fmt(cells.get(v)) for v in VARIANTS] for group, cells in grouped.items()]
