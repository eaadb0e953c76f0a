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
from oprag_pipeline.generate.api import ASK_MODES, AskResult, ask, default_mode, scope_line
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


def answer_panel(title: str, result: AskResult, kind: str = "") -> str:
    answer, context = result.answer, result.context
    body = answer.text
    if answer.scope is not None and body.startswith(scope_line(answer.scope)):
        body = body[len(scope_line(answer.scope)) :].lstrip()  # the page says it once, above both answers
    text, shown = render_text(body, answer.quotes)
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
        f'<section class="panel {e(kind)}"><h2>{e(title)}</h2>'
        f"<p class='meta'>{e(context.kb)} KB, {e(context.mode)} retrieval, k={context.k}, writer {e(answer.writer)}</p>"
        + "".join(charts)
        + (
            f'<h4 class="side-none">{e(PLAIN_QUOTES_HEADING[:1].upper() + PLAIN_QUOTES_HEADING[1:])}</h4>'
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


STYLE = """
:root{--ink:#1f2933;--muted:#5f6b7a;--line:#dde3ea;--bg:#f4f6f9;--card:#fff;--accent:#2456a6;
--pos:#2c7a2c;--neg:#b3362c;--neu:#6b7280}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
header{background:#1d3557;color:#fff;padding:.8em 2em}header h1{margin:0;font-size:1.3em;font-weight:600}
header p{margin:.15em 0 0;color:#c9d6ea;font-size:.9em}
main{padding:1.2em 2em 2em;max-width:1700px;margin:0 auto}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:1em 1.2em;
box-shadow:0 1px 2px rgba(16,24,40,.05)}
form.ask{display:grid;grid-template-columns:minmax(10em,1fr) minmax(10em,1fr) minmax(12em,1.4fr);gap:.7em 1em}
form.ask label{display:flex;flex-direction:column;font-size:.8em;font-weight:600;color:var(--muted);
text-transform:uppercase;letter-spacing:.03em}
form.ask select,form.ask input{margin-top:.3em;font:inherit;font-size:15px;text-transform:none;letter-spacing:0;
color:var(--ink);padding:.45em .6em;border:1px solid #c5ced8;border-radius:6px;background:#fff}
form.ask .question{grid-column:1/-1;display:flex;gap:.7em;align-items:flex-end}
form.ask .question label{flex:1}
button{font:inherit;font-weight:600;background:var(--accent);color:#fff;border:0;border-radius:6px;
padding:.55em 1.6em;cursor:pointer}button:hover{background:#1b4488}
.examples{margin:.9em 0 0;display:flex;flex-wrap:wrap;gap:.45em;align-items:center}
.examples span{font-size:.85em;color:var(--muted);margin-right:.2em}
.examples a{font-size:.88em;text-decoration:none;color:var(--accent);background:#eef3fb;border:1px solid #d3e0f3;
border-radius:999px;padding:.2em .8em}.examples a:hover{background:#dfe9f8}
.intro{color:var(--muted);margin:.2em 0 .8em}
.scope{margin:1em 0 0;padding:.5em .9em;background:#fff8e1;border:1px solid #f0dfa6;border-radius:8px}
.columns{display:grid;grid-template-columns:1fr 1fr;gap:1.2em;margin-top:1.2em;align-items:start}
@media (max-width:900px){.columns{grid-template-columns:1fr}form.ask{grid-template-columns:1fr}}
.panel{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:.2em 1.3em 1.2em;min-width:0;
box-shadow:0 1px 2px rgba(16,24,40,.05)}
.panel h2{font-size:1.15em;margin:.8em 0 .1em}.panel.aware{border-top:4px solid var(--accent)}
.panel.plain{border-top:4px solid #9aa5b1}
.meta,.usage{color:var(--muted);font-size:.85em;margin:0 0 .6em}
.panel h3{font-size:1.02em;margin:1.1em 0 .3em;padding-bottom:.2em;border-bottom:1px solid var(--line)}
.panel h4{margin:.9em 0 .2em}
svg.chart{width:100%;max-width:640px;height:auto;display:block;margin:.4em 0}
ul{padding-left:1.2em}li{margin:.25em 0}ul.quotes{list-style:none;padding-left:0}
ul.quotes li{border-left:3px solid var(--line);padding:.15em 0 .15em .7em;margin:.4em 0}
q{font-style:italic}cite{color:var(--muted);font-size:.82em;font-style:normal;margin-left:.3em;
font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.flag,.flags{color:#b00}.error{color:#b00;background:#fdecea;border:1px solid #f5c2bd;border-radius:8px;
padding:.6em .9em;margin-top:1em}
.side-positive{color:var(--pos)}.side-negative{color:var(--neg)}.side-neutral,.side-none{color:var(--neu)}
footer{color:var(--muted);font-size:.8em;padding:0 2em 1.5em;max-width:1700px;margin:0 auto}
"""

MODE_LABELS = {
    "pm2": "PM-2 (opinion-proportional)",
    "balanced": "balanced (opinion quotas)",
    "xquad": "xQuAD (opinion diversity)",
    "mmr": "MMR (semantic diversity)",
    "hybrid": "hybrid (dense + BM25)",
    "semantic": "semantic (dense)",
    "fair": "fair (no author dominates)",
}
EXAMPLE_TEMPLATES = (
    "What do people think of the {name}?",
    "How do people feel about the {name}?",
    "Is the {name} any good?",
)


def _options(values: Sequence[str], chosen: str, labels: dict[str, str] | None = None) -> str:
    return "".join(
        f"<option value='{e(v)}'{' selected' if v == chosen else ''}>{e((labels or {}).get(v, v))}</option>"
        for v in values
    )


def example_questions(names: Sequence[str], scopes: Sequence[str] = ()) -> list[str]:
    """Questions about the domain's disputed entities (the evaluation's rule: sentiment entropy >= 0.6), in a few
    wordings; with scopes, one asks about an entity of the largest scope by naming it, as a user would."""
    questions = [EXAMPLE_TEMPLATES[i % len(EXAMPLE_TEMPLATES)].format(name=n) for i, n in enumerate(names)]
    if names and scopes:
        questions.append(f"What do people say about the {scopes[0]}'s {names[min(1, len(names) - 1)]}?")
    return questions


def example_links(domain: str, mode: str, questions: Sequence[str]) -> str:
    from urllib.parse import urlencode

    if not questions:
        return ""
    links = "".join(
        f"<a href='/?{e(urlencode({'domain': domain, 'mode': mode, 'q': q}))}'>{e(q)}</a>" for q in questions
    )
    return f"<div class='examples'><span>Try:</span>{links}</div>"


def page(
    domains: Sequence[str],
    domain: str,
    question: str,
    body: str,
    mode: str = "",
    scope: str = "",
    scopes: Sequence[str] = (),
    examples: Sequence[str] = (),
) -> str:
    mode = mode or default_mode("enriched")
    known = "".join(f"<option value='{e(s)}'>" for s in scopes)
    intro = (
        ""
        if question
        else "<p class='intro'>Ask what people think of something the documents discuss. The opinion-aware answer "
        "gives the corpus's real mix of positive, neutral and negative views with quotes from every side; plain RAG "
        "answers from the most similar passages, beside it.</p>"
    )
    scope_hint = f"any of {len(scopes):,}, or one the question names" if scopes else "none: the documents name no scope"
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>oprag: ask</title>"
        f"<style>{STYLE}</style></head><body>"
        "<header><h1>oprag: ask the opinions of a domain</h1>"
        "<p>Opinion-aware retrieval beside plain RAG, from the pipeline's own index</p></header><main>"
        "<section class='card'>" + intro + "<form class='ask' method='get' action='/'>"
        f"<label>Domain <select name='domain'>{_options(domains, domain)}</select></label>"
        f"<label>Retrieval <select name='mode'>{_options(ASK_MODES, mode, MODE_LABELS)}</select></label>"
        f"<label>Scope <input type='text' name='scope' value='{e(scope)}' list='scopes' "
        f"placeholder='{e(scope_hint)}'></label><datalist id='scopes'>{known}</datalist>"
        "<div class='question'><label>Question "
        f"<input type='text' name='q' value='{e(question)}' maxlength='{MAX_QUESTION_CHARS}' "
        "placeholder='What do people think of …?' autofocus></label>"
        "<button type='submit'>Ask</button></div></form>" + example_links(domain, mode, examples) + "</section>"
        f"{body}</main><footer>Shares count every opinion in the corpus (or the scope); quotes are verbatim, cited by "
        "document id. Nothing here leaves this machine.</footer></body></html>"
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


DISPUTED_ENTROPY = 0.6
"""The evaluation's threshold of a disputed entity (`evaluation_entities.min_entropy`): sentiment entropy in bits."""
EVALUATED_MENTIONS = 20  # the evaluation's `min_mentions`: entities with that many opinions are offered first
EXAMPLES = 4


@dataclass(frozen=True)
class DomainOverview:
    """What the page offers for a domain: its scopes (most documents first) and example questions."""

    scopes: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


def disputed_entities(conn, domain: str, limit: int = EXAMPLES) -> list[str]:
    """Names of the domain's disputed entities, most discussed first: the ones the evaluation picked when it ran,
    else those with sentiment entropy >= `DISPUTED_ENTROPY` (at least `EVALUATED_MENTIONS` opinions first); the
    domain's container ("hotel" in hotel reviews) is left out, as a question about it is about everything."""
    import duckdb

    from oprag_pipeline.registry.question import load_question_matcher
    from oprag_pipeline.registry.store import registry_entities

    _, entities = registry_entities(conn, domain)
    containers = load_question_matcher(conn, domain, entities).containers if entities else set()
    try:
        rows = conn.execute(
            "SELECT entity_id, entity_name FROM evaluation_entities WHERE domain = ? ORDER BY mentions DESC, 1",
            [domain],
        ).fetchall()
    except duckdb.CatalogException:
        rows = []
    if not rows:
        rows = conn.execute(
            """SELECT entity_id, entity_name FROM entity_opinion_stats WHERE domain = ? AND entropy_bits >= ?
               ORDER BY mentions >= ? DESC, mentions DESC, 1""",
            [domain, DISPUTED_ENTROPY, EVALUATED_MENTIONS],
        ).fetchall()
    return [name for entity_id, name in rows if entity_id not in containers][:limit]


def domain_overview(root: Path, domain: str) -> DomainOverview:
    """The domain's scopes and example questions; empty where the warehouse lacks what they need."""
    import duckdb

    from oprag_pipeline.generate.scope import domain_scopes

    warehouse = settings.warehouse_path(root)
    if not domain or not warehouse.exists():
        return DomainOverview()
    try:
        with duckdb.connect(str(warehouse), read_only=True) as conn:
            scopes = tuple(s.scope for s in domain_scopes(conn, domain))
            names = disputed_entities(conn, domain)
    except duckdb.Error:
        return DomainOverview()
    return DomainOverview(scopes, tuple(example_questions(names, scopes)))


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

    overviews: dict[tuple[str, float], DomainOverview] = {}

    def overview(domain: str) -> DomainOverview:
        """Cached per domain until the warehouse changes (a run rewrites it)."""
        warehouse = settings.warehouse_path(root)
        key = (domain, warehouse.stat().st_mtime if warehouse.exists() else 0.0)
        if key not in overviews:
            overviews.clear()
            overviews[key] = domain_overview(root, domain)
        return overviews[key]

    def render(asked: Asked, body: str) -> str:
        known = overview(asked.domain) if not asked.problem else DomainOverview()
        return page(
            asked.domains, asked.domain, asked.question, body, asked.mode, asked.scope, known.scopes, known.examples
        )

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
                + answer_panel("Opinion-aware answer", aware, "aware")
                + answer_panel("Plain RAG answer", plain, "plain")
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
