"""The report's generation section, as Markdown and HTML, read from the generation tables.

The evaluation report calls `generation_section` and appends what it returns; an empty section (both strings
empty) means generation never ran for the domain.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from oprag_pipeline.warehouse import table_exists

# (metric, label, better direction): the order of the table.
METRICS = (
    ("w1", "W1 to corpus σ distribution", "lower"),
    ("w1_gold", "W1 to gold σ distribution", "lower"),
    ("minority_erased", "minority-erasure rate", "lower"),
    ("grounded_quote_rate", "grounded-quote rate", "higher"),
    ("share_error", "largest share error", "lower"),
    ("shares_within_tolerance", "shares within ±5 points", "higher"),
    ("conveys_entity", "answers conveying the entity", "higher"),
    ("flagged", "answers flagged by validation", "lower"),
)
HEADERS = [
    "metric", "better", "plain RAG", "opinion-aware", "change", "95% CI of difference", "p (Wilcoxon)", "entities",
    "questions",
]  # fmt: skip
TEXT = (
    "One answer per evaluation question from each pipeline: opinion-aware (balanced retrieval on the enriched KB; "
    "the answer states the corpus shares and quotes every side present) and plain RAG (hybrid retrieval of raw "
    "chunks; the answer quotes the most relevant passages). What an answer conveys is read from the shares it "
    "states, else by running the offline extractor on its sentences; W1 is on the σ-scale. Minority erasure: a side "
    "held by at least 10% of the corpus's opinions that the answer does not convey. As in the retrieval tables, the "
    "tests run over entities: each pipeline's metric is averaged over the entity's questions, then a paired Wilcoxon "
    "signed-rank test and a cluster-bootstrap 95% CI of the mean difference (opinion-aware − plain) over entities; "
    "means are over entities."
)


@dataclass(frozen=True)
class GenerationSection:
    markdown: str
    html: str
    data: dict[str, Any]


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def collect(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[str, Any]:
    data: dict[str, Any] = {"tests": {}, "preference": None, "writer": None}
    if not table_exists(conn, "generation_significance"):
        return data
    columns = [
        "metric", "n_questions", "treatment_mean", "baseline_mean", "relative_change_label", "ci_low", "ci_high",
        "p_value", "n_entities",
    ]  # fmt: skip
    for row in conn.execute(
        f"SELECT {', '.join(columns)} FROM generation_significance WHERE domain = ?", [domain]
    ).fetchall():
        data["tests"][row[0]] = dict(zip(columns, row, strict=True))
    if table_exists(conn, "generated_answers"):
        writer = conn.execute("SELECT any_value(writer) FROM generated_answers WHERE domain = ?", [domain]).fetchone()
        data["writer"] = writer[0] if writer else None
    if table_exists(conn, "answer_preferences"):
        values = [
            r[0]
            for r in conn.execute(
                "SELECT treatment_preferred FROM answer_preferences WHERE domain = ? ORDER BY question_id", [domain]
            ).fetchall()
        ]
        if values:
            from oprag_pipeline.evaluate.stats import bootstrap_ci

            low, high = bootstrap_ci(values)
            judge = conn.execute(
                "SELECT any_value(judge) FROM answer_preferences WHERE domain = ?", [domain]
            ).fetchone()
            data["preference"] = {
                "judge": judge[0],
                "pairs": len(values),
                "rate": sum(values) / len(values),
                "ci_low": low,
                "ci_high": high,
            }
    return data


def _rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for metric, label, better in METRICS:
        t = data["tests"].get(metric)
        if t is None:
            continue
        entities = t.get("n_entities")
        # one entity gives nothing to resample: no interval is claimed (as in the retrieval tables)
        ci = "no CI (1 entity)" if (entities or 0) < 2 else f"[{_num(t['ci_low'])}, {_num(t['ci_high'])}]"
        rows.append(
            [label, better, _num(t["baseline_mean"]), _num(t["treatment_mean"]), t["relative_change_label"], ci,
             _num(t["p_value"]), _num(entities), str(t["n_questions"])]
        )  # fmt: skip
    return rows


def _preference_text(data: dict[str, Any]) -> str:
    p = data["preference"]
    if p is None:
        return "Pairwise preference: not run (no LLM judge configured; set OPRAG_JUDGE)."
    return (
        f"Pairwise preference ({p['judge']}, blind A/B, randomised positions, 'which answer better conveys the range "
        f"of opinions?'): the opinion-aware answer was preferred in {p['rate']:.1%} of {p['pairs']} pairs "
        f"(ties count half; bootstrap 95% CI {p['ci_low']:.1%}–{p['ci_high']:.1%})."
    )


def generation_section(conn: duckdb.DuckDBPyConnection, domain: str) -> GenerationSection:
    data = collect(conn, domain)
    if not data["tests"]:
        return GenerationSection("", "", data)
    title = "Generation: does the answer carry the spread of opinions?"
    writer = f"Writer: {data['writer']}." if data["writer"] else ""
    if data["writer"] == "offline":
        writer += (
            " The offline writer is a template filled with real statistics and verbatim quotes, not a language model."
        )
    rows = _rows(data)
    table = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    table += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    markdown = "\n".join(["", f"## {title}", "", TEXT, "", writer, "", *table, "", _preference_text(data), ""])
    e = html.escape
    parts = [f"<h2>{e(title)}</h2>", f"<p>{e(TEXT)}</p>", f"<p>{e(writer)}</p>", "<table>"]
    parts.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in HEADERS) + "</tr>")
    parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows]
    parts += ["</table>", f"<p>{e(_preference_text(data))}</p>"]
    return GenerationSection(markdown, "\n".join(parts), data)


def append_to_report(
    conn: duckdb.DuckDBPyConnection, domain: str, markdown: Path, html_page: Path, metrics: Path
) -> None:
    """Append the section to an evaluation report already written (report.md, report.html, metrics.json), so the
    evaluation report needs one call and knows nothing of generation's tables."""
    section = generation_section(conn, domain)
    if not section.markdown:
        return
    markdown.write_text(markdown.read_text(encoding="utf-8").rstrip("\n") + "\n" + section.markdown, encoding="utf-8")
    page = html_page.read_text(encoding="utf-8")
    closing = page.rfind("</body>")
    page = page[:closing] + section.html + "\n" + page[closing:] if closing >= 0 else page + section.html
    html_page.write_text(page, encoding="utf-8")
    figures = json.loads(metrics.read_text(encoding="utf-8"))
    figures["generation"] = section.data
    metrics.write_text(json.dumps(figures, indent=2, default=str), encoding="utf-8")
