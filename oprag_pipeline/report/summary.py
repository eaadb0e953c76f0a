"""The summary table (each headline metric at k = 20 for every variant): in the report, in the asset's metadata and,
compacted, in the terminal."""

from __future__ import annotations

from typing import Any

from oprag_pipeline.report.data import coverage_means
from oprag_pipeline.report.labels import HEADLINE_METRICS, SHORT_LABELS, VARIANT_LABELS, VARIANTS, fmt


def summary_rows(data: dict[str, Any]) -> list[list[str]]:
    """Each headline metric at k = 20 for every variant (question means; the tests are entity-level)."""
    coverage = coverage_means(data)
    rows = []
    for metric, label, kind, better in HEADLINE_METRICS:
        if not any((metric, v) in coverage for v in VARIANTS):
            continue
        rows.append([f"{label} ({better} is better)", *[fmt(coverage.get((metric, v)), kind) for v in VARIANTS]])
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
