"""`oprag serve`: one local page to ask a question of a domain (Starlette, served by uvicorn on 127.0.0.1).

It shows what the pipeline built and keeps nothing of its own: every request reads the warehouse and the vector
store afresh (read-only), answers with the opinion-aware pipeline and with plain RAG, and renders both side by
side with the corpus-vs-retrieved distribution as inline SVG (no scripts, no CDN: the page works offline).
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from oprag_pipeline import settings
from oprag_pipeline.generate.answer import SIDES, Answer, Quote
from oprag_pipeline.generate.api import ASK_MODES, AskResult, ask, default_mode
from oprag_pipeline.generate.context import AnswerContext, side_of
from oprag_pipeline.generate.evidence import QuoteDeduplicator, normalised
from oprag_pipeline.schema import cost_label

SIDE_COLOURS = {"positive": "#3a923a", "neutral": "#9a9a9a", "negative": "#c8453b"}
MAX_QUESTION_CHARS = 500
# One question at a time: the embedded vector store admits one open handle per shard, and 2 cores gain nothing from
# answering two questions at once.
_ASK_LOCK = threading.Lock()
e = html.escape


def retrieved_side_counts(context: AnswerContext, entity_id: str) -> dict[str, int]:
    counts = dict.fromkeys(SIDES, 0)
    for passage in context.passages:
        opinion = passage.opinion_on(entity_id)
        if opinion is not None:
            counts[side_of(opinion.sentiment_intensity)] += 1
    return counts


def distribution_svg(title: str, rows: Sequence[tuple[str, dict[str, int]]]) -> str:
    """Stacked horizontal bars (one per distribution) of side shares, labelled with percentages and counts."""
    width, bar, gap, label = 560, 26, 14, 120
    height = 30 + len(rows) * (bar + gap) + 24
    parts = [
        f'<svg class="chart" role="img" aria-label="{e(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="0" y="16" font-size="14" font-weight="bold">{e(title)}</text>',
    ]
    span = width - label - 10
    for index, (name, counts) in enumerate(rows):
        y = 30 + index * (bar + gap)
        total = sum(counts.values())
        parts.append(f'<text x="0" y="{y + 18}" font-size="13">{e(name)} (n={total})</text>')
        x = float(label)
        for side in SIDES:
            share = counts.get(side, 0) / total if total else 0.0
            w = share * span
            if w <= 0:
                continue
            parts.append(
                f'<rect class="bar-{side}" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar}" '
                f'fill="{SIDE_COLOURS[side]}"><title>{side}: {share:.0%} ({counts.get(side, 0)})</title></rect>'
            )
            if w > 34:
                parts.append(f'<text x="{x + 4:.1f}" y="{y + 18}" font-size="12" fill="white">{share:.0%}</text>')
            x += w
    legend_y = height - 8
    for i, side in enumerate(SIDES):
        parts.append(
            f'<rect x="{label + i * 110}" y="{legend_y - 10}" width="10" height="10" fill="{SIDE_COLOURS[side]}"/>'
            f'<text x="{label + i * 110 + 14}" y="{legend_y}" font-size="12">{side}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


_BOLD = re.compile(r"\*\*(.+?)\*\*")
# A quote as the offline composer writes it in its text: - "verbatim words" [doc id] (what it shows)
_QUOTE_ITEM = re.compile(r'^"(?P<text>.+)" \[(?P<doc>[^\]]+)\](?P<rest>.*)$')
PLAIN_QUOTES_HEADING = "passages retrieved by plain RAG (no opinion labels)"


def _quote_html(quote: Quote, rest: str = "") -> str:
    mark = "" if quote.grounded else ' <span class="flag">not found in the source</span>'
    return f"<q>{e(quote.text)}</q> <cite>{e(quote.doc_id)}</cite>{e(rest)}{mark}"


def render_text(text: str, quotes: Sequence[Quote] = ()) -> tuple[str, set[int]]:
    """The composer's few Markdown forms (headings, bullets, bold) as HTML, everything else escaped; a bullet that
    is one of `quotes` (`- "words" [doc]`) is shown as that quote, cited and flagged when not grounded. Returns the
    HTML and the indices of the quotes it showed, so the page does not show them again."""
    by_key = {(q.text, q.doc_id): i for i, q in enumerate(quotes)}
    shown: set[int] = set()
    out: list[str] = []
    in_list = False
    list_start = 0
    has_quote = False

    def close() -> None:
        if has_quote:
            out[list_start] = '<ul class="quotes">'
        out.append("</ul>")

    for line in text.splitlines():
        stripped = line.strip()
        is_item = stripped.startswith("- ")
        if in_list and not is_item:
            close()
            in_list = False
        if not stripped:
            continue
        quoted = _QUOTE_ITEM.match(stripped[2:]) if is_item else None
        index = by_key.get((quoted["text"], quoted["doc"])) if quoted else None
        if index is not None and quoted is not None:
            body = _quote_html(quotes[index], quoted["rest"])
            shown.add(index)
        else:
            body = _BOLD.sub(r"<strong>\1</strong>", e(stripped[2:] if is_item else stripped.lstrip("# ")))
        if stripped.startswith("#"):
            out.append(f"<h3>{body}</h3>")
        elif is_item:
            if not in_list:
                list_start, has_quote = len(out), False
                out.append("<ul>")
                in_list = True
            has_quote = has_quote or index is not None
            out.append(f"<li>{body}</li>")
        else:
            out.append(f"<p>{body}</p>")
    if in_list:
        close()
    return "\n".join(out), shown


def quotes_by_side(answer: Answer, skip: Collection[int] = ()) -> str:
    """The answer's quotes not already shown in its text (as a quote line or within its prose), each once, grouped by
    the side they are quoted for; a plain RAG answer's quotes carry no side and are headed as what they are. A quote
    not found in its source is flagged where it is shown, and in the answer's flags."""
    groups: dict[str, list[str]] = {}
    unique = QuoteDeduplicator()
    unique.shown.extend(answer.quotes[i].text for i in skip)  # a quote the text shows is not listed again
    prose = f" {normalised(answer.text)} "
    unlabelled = PLAIN_QUOTES_HEADING if answer.kb == "raw" else "quotes without a side"
    for index, quote in enumerate(answer.quotes):
        if index in skip or f" {normalised(quote.text)} " in prose or not unique.first_new([quote.text]):
            continue  # shown already: as a quote of the text, inside its prose, or as a repeat
        groups.setdefault(quote.sentiment or unlabelled, []).append(f"<li>{_quote_html(quote)}</li>")
    parts = []
    for side in (*SIDES, unlabelled):
        if side in groups:
            css = side if side in SIDES else "none"
            parts.append(f'<h4 class="side-{css}">{e(side)} ({len(groups[side])})</h4><ul class="quotes">')
            parts.extend(groups[side])
            parts.append("</ul>")
    return "".join(parts)


def answer_panel(title: str, result: AskResult) -> str:
    answer, context = result.answer, result.context
    text, shown = render_text(answer.text, answer.quotes)
    others = quotes_by_side(answer, shown)  # quotes the text does not show itself (an LLM's prose): each quote once
    charts = []
    for dist in context.entities:
        if dist.total:
            rows = [("corpus", dist.side_counts()), ("retrieved", retrieved_side_counts(context, dist.entity_id))]
            charts.append(distribution_svg(f"{dist.entity_name}: corpus vs retrieved", rows))
    flags = "".join(f"<li>{e(f)}</li>" for f in answer.flags)
    usage = (
        f"<p class='usage'>{answer.input_tokens:,} input + {answer.output_tokens:,} output tokens, "
        f"{cost_label(answer.cost_usd)}</p>"
        if answer.input_tokens or answer.output_tokens
        else ""
    )
    return (
        f'<section class="panel"><h2>{e(title)}</h2>'
        f"<p class='meta'>{e(context.kb)} KB, {e(context.mode)} retrieval, k={context.k}, writer {e(answer.writer)}</p>"
        + "".join(charts)
        + (
            f'<h4 class="side-none">{e(PLAIN_QUOTES_HEADING.capitalize())}</h4>'
            if context.kb == "raw" and shown
            else ""
        )
        + f'<div class="answer">{text}</div>'
        + (f"<ul class='flags'>{flags}</ul>" if flags else "")
        + usage
        + (f"<h3>Quotes the answer uses</h3>{others}" if others else "")
        + ("" if answer.quotes else "<p>No quotes.</p>")
        + "</section>"
    )


STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:1400px}form{margin-bottom:1em}
input[type=text]{width:40em;padding:4px}.columns{display:flex;gap:2em;align-items:flex-start}
.panel{flex:1;min-width:0;border:1px solid #ddd;padding:0 1em 1em;border-radius:6px}.meta,.usage{color:#666}
q{font-style:italic}cite{color:#555;font-size:90%}.flag,.flags{color:#b00}.error{color:#b00}
.side-positive{color:#2c7a2c}.side-negative{color:#b3362c}.side-neutral{color:#666}"""


def _options(values: Sequence[str], chosen: str) -> str:
    return "".join(f"<option value='{e(v)}'{' selected' if v == chosen else ''}>{e(v)}</option>" for v in values)


def page(
    domains: Sequence[str],
    domain: str,
    question: str,
    body: str,
    mode: str = "",
    scope: str = "",
    scopes: Sequence[str] = (),
) -> str:
    options = _options(domains, domain)
    modes = _options(ASK_MODES, mode or default_mode("enriched"))
    known = "".join(f"<option value='{e(s)}'>" for s in scopes)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>oprag: ask</title>"
        f"<style>{STYLE}</style></head><body><h1>Ask the opinions of a domain</h1>"
        "<form method='get' action='/'>"
        f"<label>Domain <select name='domain'>{options}</select></label> "
        f"<label>Retrieval <select name='mode'>{modes}</select></label> "
        f"<label>Scope <input type='text' name='scope' value='{e(scope)}' list='scopes' "
        "placeholder='all (or named in the question)'></label>"
        f"<datalist id='scopes'>{known}</datalist> "
        f"<label>Question <input type='text' name='q' value='{e(question)}' maxlength='{MAX_QUESTION_CHARS}'></label> "
        "<button type='submit'>Ask</button></form>"
        f"{body}</body></html>"
    )


@dataclass(frozen=True)
class Asked:
    """What the page's form asks for, validated."""

    domains: list[str]
    domain: str
    question: str
    mode: str
    scope: str  # "" for every scope (or the one the question names)
    problem: str | None


def domain_scopes_of(root: Path, domain: str) -> list[str]:
    """The domain's scopes, most documents first, for the page's scope field (none when the warehouse lacks them)."""
    import duckdb

    from oprag_pipeline.generate.scope import domain_scopes

    warehouse = settings.warehouse_path(root)
    if not domain or not warehouse.exists():
        return []
    try:
        with duckdb.connect(str(warehouse), read_only=True) as conn:
            return [s.scope for s in domain_scopes(conn, domain)]
    except duckdb.Error:
        return []


def create_app(data_dir: Path | None = None, k: int = 20) -> Starlette:
    root = data_dir or settings.data_dir()

    def answer_both(asked: Asked) -> tuple[AskResult, AskResult]:
        scope = asked.scope or None
        with _ASK_LOCK:
            aware = ask(
                asked.question, domain=asked.domain, kb="enriched", mode=asked.mode, k=k, data_dir=root, scope=scope
            )
            plain = ask(asked.question, domain=asked.domain, kb="raw", k=k, data_dir=root, scope=scope)
        return aware, plain

    def validated(request: Request) -> Asked:
        params = request.query_params
        domains = settings.list_domains(root)
        domain = params.get("domain") or (domains[0] if domains else "")
        question = " ".join(params.get("q", "").split())[:MAX_QUESTION_CHARS]
        mode = params.get("mode") or default_mode("enriched")
        scope = " ".join(params.get("scope", "").split())[:MAX_QUESTION_CHARS]
        problem = None
        if domain not in domains:
            problem = f"unknown domain {domain!r}; domains: {', '.join(domains) or 'none (run oprag run first)'}"
        elif mode not in ASK_MODES:
            problem = f"unknown retrieval mode {mode!r}; modes: {', '.join(ASK_MODES)}"
        return Asked(domains, domain, question, mode, scope, problem)

    def render(asked: Asked, body: str) -> str:
        scopes = domain_scopes_of(root, asked.domain) if not asked.problem else []
        return page(asked.domains, asked.domain, asked.question, body, asked.mode, asked.scope, scopes)

    async def index(request: Request) -> HTMLResponse:
        from starlette.concurrency import run_in_threadpool

        asked = validated(request)
        body = ""
        if asked.problem and asked.question:
            body = f"<p class='error'>{e(asked.problem)}</p>"
        elif asked.question:
            try:
                aware, plain = await run_in_threadpool(answer_both, asked)
            except (LookupError, FileNotFoundError, ValueError) as error:
                return HTMLResponse(render(asked, f"<p class='error'>{e(str(error))}</p>"), 400)
            body = (
                scope_banner(aware)
                + "<div class='columns'>"
                + answer_panel("Opinion-aware answer", aware)
                + answer_panel("Plain RAG answer", plain)
                + "</div>"
            )
        return HTMLResponse(render(asked, body))

    async def api(request: Request) -> JSONResponse:
        from starlette.concurrency import run_in_threadpool

        asked = validated(request)
        if asked.problem or not asked.question:
            return JSONResponse({"error": asked.problem or "no question (parameter q)"}, 400)
        try:
            aware, plain = await run_in_threadpool(answer_both, asked)
        except (LookupError, FileNotFoundError, ValueError) as error:
            return JSONResponse({"error": str(error)}, 400)
        return JSONResponse({"opinion_aware": aware.answer.to_dict(), "plain": plain.answer.to_dict()})

    return Starlette(routes=[Route("/", index), Route("/api/ask", api)])


def scope_banner(result: AskResult) -> str:
    """Which scope both answers cover, and whether the question named it."""
    scope = result.context.scope
    if scope is None:
        return ""
    how = " (named in the question)" if result.scope_match is not None else ""
    return f"<p class='scope'>Both answers cover <strong>{e(scope)}</strong> only{e(how)}.</p>"


def serve(host: str = "127.0.0.1", port: int = 8000, data_dir: Path | None = None) -> None:
    import uvicorn

    uvicorn.run(create_app(data_dir), host=host, port=port, log_level="info")
