"""Rendering helpers below every stage: a Markdown table, a PNG inline in Markdown, a change as a reader should see
it. The stages' assets use them for their metadata and the report (`report/`) for its pages, so no stage imports
the report to print a table."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (floats to 4 significant digits, pipes escaped): the report's and the assets' metadata."""

    def cell(value: Any) -> str:
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def embedded_png(path: Path) -> str:
    """A Markdown image with the PNG inline, so the Dagster UI shows the plot in the asset's metadata."""
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"![{path.stem}](data:image/png;base64,{encoded})"


def points(difference: float) -> str:
    """A difference of two rates or shares, in percentage points: "+24.0 points"."""
    return f"{difference * 100:+.1f} points"


def change_label(treatment: float | None, baseline: float | None, relative_label: str, *, rate: bool) -> str:
    """The change from baseline to treatment as a reader should see it: for a rate or a share the difference in
    points (a rate going from 1% to 25% is "+24.0 points", not "+2400.0%"), else the relative change as stored."""
    if not rate:
        return relative_label
    if treatment is None or baseline is None:
        return "n/a"
    return points(treatment - baseline)
