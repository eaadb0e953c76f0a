"""The report of one domain, put together: `render` lays the sections out as report.md and report.html (the
Markdown and HTML come from one list of sections, so they cannot disagree), `write_report` writes them with
`metrics.json` and the plots, the generation and the analyses' sections included."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from oprag_pipeline.analysis.section_store import analysis_html, analysis_markdown
from oprag_pipeline.generate.answers_report import generation_section
from oprag_pipeline.report.contents import HTML_H2, Contents, markdown_titles
from oprag_pipeline.report.data import collect
from oprag_pipeline.report.figures import write_plots
from oprag_pipeline.report.html_page import html_page, with_ids
from oprag_pipeline.report.markdown_page import markdown_page
from oprag_pipeline.report.sections import SECTIONS, Section, SectionBuilder, build_sections
from oprag_pipeline.report.summary import summary_rows
from oprag_pipeline.report.verdict import plain_verdict, verdict


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
    sections = build_sections(data, plots, SECTIONS if builders is None else builders)
    lead = plain_verdict(data)
    own = [s.title for s in sections]
    contents_md = Contents.of([*own, *markdown_titles(analyses_markdown)])
    markdown = markdown_page(data["domain"], sections, lead=lead, contents=contents_md) + analyses_markdown
    html_titles = [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in HTML_H2.findall(analyses_html)]
    contents_html = Contents.of([*own, *html_titles])
    page = html_page(data["domain"], sections, lead=lead, contents=contents_html)
    extra = with_ids(analyses_html, [slug for _, slug in contents_html.entries[len(own) :]])
    closing = page.rfind("</body>")
    page = page[:closing] + extra + page[closing:] if closing >= 0 else page + extra
    return RenderedReport(lead, sections, markdown, page)


def write_report(
    conn: duckdb.DuckDBPyConnection, domain: str, out_dir: Path, sections: Sequence[SectionBuilder] | None = None
) -> WrittenReport:
    data = collect(conn, domain)
    generation = generation_section(conn, domain)
    if generation.markdown:  # generation ran: its figures join metrics.json (and the answers section)
        data["generation"] = generation.data
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = write_plots(data, out_dir)
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
    summary = markdown_page(domain, headline, embed_images=True, lead=rendered.lead).split("\n", 2)[2]
    verdict_lines = [rendered.lead, *verdict(data)]
    return WrittenReport(out_dir, markdown, html_path, metrics_json, plots, summary, rows, verdict_lines)
