"""The analyses' report sections: each asset stores its Markdown section in the warehouse, and the report
(`report/`) appends them, so the report reads the warehouse like everything else and needs no knowledge of them."""

from __future__ import annotations

import duckdb

from oprag_pipeline.warehouse import ensure_tables, replace_rows, table_exists

ORDER = ("fairness", "drift", "flooding")


def save_section(conn: duckdb.DuckDBPyConnection, domain: str, section: str, markdown: str) -> None:
    """Replace the domain's `section` in `analysis_sections` (declared in `oprag_pipeline/warehouse.py`)."""
    ensure_tables(conn, "analysis_sections")
    rows = [{"markdown": markdown}] if markdown else []
    replace_rows(conn, "analysis_sections", rows, domain=domain, section=section)


def analysis_markdown(conn: duckdb.DuckDBPyConnection, domain: str) -> str:
    """Every stored section of the domain, in a fixed order ("" when no analysis ran)."""
    if not table_exists(conn, "analysis_sections"):
        return ""
    rows = dict(conn.execute("SELECT section, markdown FROM analysis_sections WHERE domain = ?", [domain]).fetchall())
    parts = [rows[name] for name in ORDER if name in rows] + [rows[n] for n in sorted(rows) if n not in ORDER]
    return "\n" + "\n".join(parts) if parts else ""


def analysis_html(conn: duckdb.DuckDBPyConnection, domain: str) -> str:
    """The same sections as HTML for report.html, rendered by markdown-it (already installed: rich, which Dagster
    depends on, requires it), so report.md and report.html say the same thing."""
    from markdown_it import MarkdownIt

    text = analysis_markdown(conn, domain)
    return MarkdownIt("commonmark").enable("table").render(text) if text else ""
