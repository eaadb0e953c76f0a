"""report.md: the report's sections as Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from oprag_pipeline.rendering import embedded_png, markdown_table
from oprag_pipeline.report.contents import Contents
from oprag_pipeline.report.sections import Section


def markdown_page(
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
