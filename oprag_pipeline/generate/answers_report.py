"""The report's generation (answers) section, as Markdown and HTML, read from the generation tables.

The report (`report/`) lays the section out with its own (`generation_parts`, placed near the top: the answers are
what a reader cares about); `generation_section` renders it alone, and an empty one (both strings empty) means
generation never ran for the domain.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import duckdb

from oprag_pipeline.rendering import change_label
from oprag_pipeline.warehouse import table_exists

# (metric, label, better direction): the order of the table. Every metric but the two W1s is a rate or a share of
# answers (`RATES`): its change is printed in points, never as a percent change of a percentage.
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
RATES = frozenset(m for m, _, _ in METRICS) - {"w1", "w1_gold"}
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


def _value(value: Any, rate: bool) -> str:
    return f"{value:.1%}" if rate and isinstance(value, float) else _num(value)


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
        rate = metric in RATES
        entities = t.get("n_entities")
        # one entity gives nothing to resample: no interval is claimed (as in the retrieval tables)
        if (entities or 0) < 2:
            ci = "no CI (1 entity)"
        elif rate and t["ci_low"] is not None and t["ci_high"] is not None:
            ci = f"[{t['ci_low'] * 100:+.1f}, {t['ci_high'] * 100:+.1f}] points"
        else:
            ci = f"[{_num(t['ci_low'])}, {_num(t['ci_high'])}]"
        change = change_label(t["treatment_mean"], t["baseline_mean"], t["relative_change_label"], rate=rate)
        rows.append(
            [label, better, _value(t["baseline_mean"], rate), _value(t["treatment_mean"], rate), change, ci,
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


TITLE = "Generation: does the answer carry the spread of opinions?"


@dataclass(frozen=True)
class GenerationParts:
    """The section's pieces, for a report that lays out its own sections (`report/`)."""

    title: str
    text: str  # paragraphs separated by blank lines, before the table
    headers: list[str]
    rows: list[list[str]]
    after: str  # the paragraph after the table


def generation_parts(data: dict[str, Any]) -> GenerationParts | None:
    """None when generation never ran for the domain (no tests)."""
    if not data["tests"]:
        return None
    writer = f"Writer: {data['writer']}." if data["writer"] else ""
    if data["writer"] == "offline":
        writer += (
            " The offline writer is a template filled with real statistics and verbatim quotes, not a language model."
        )
    text = "\n\n".join(part for part in (TEXT, writer) if part)
    return GenerationParts(TITLE, text, list(HEADERS), _rows(data), _preference_text(data))


def generation_section(conn: duckdb.DuckDBPyConnection, domain: str) -> GenerationSection:
    data = collect(conn, domain)
    parts_of = generation_parts(data)
    if parts_of is None:
        return GenerationSection("", "", data)
    rows = parts_of.rows
    table = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    table += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    markdown = "\n".join(["", f"## {TITLE}", "", parts_of.text, "", *table, "", parts_of.after, ""])
    e = html.escape
    parts = [f"<h2>{e(TITLE)}</h2>", *(f"<p>{e(p)}</p>" for p in parts_of.text.split("\n\n")), "<table>"]
    parts.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in HEADERS) + "</tr>")
    parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows]
    parts += ["</table>", f"<p>{e(parts_of.after)}</p>"]
    return GenerationSection(markdown, "\n".join(parts), data)
