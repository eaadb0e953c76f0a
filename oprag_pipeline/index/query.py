"""`oprag query`: retrieve, show each hit's opinion and author, and compare the entity's retrieved distribution
of sentiment with the corpus's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from oprag_pipeline.enrich.documents import own_words
from oprag_pipeline.index.fairness import concentration, source_map
from oprag_pipeline.index.retrieval import (
    DIVERSIFIED,
    FAIR,
    OPINION_MODES,
    OpinionProfile,
    RetrievedHit,
    Retriever,
    attach_opinions,
)
from oprag_pipeline.index.vector_store import RRF_K
from oprag_pipeline.sources import source_key

SENTIMENTS = ("positive", "neutral", "negative")
BAR_WIDTH = 30


def histogram(label: str, counts: Counter, total: int) -> list[str]:
    lines = [f"{label} (n={total})"]
    for sentiment in SENTIMENTS:
        share = counts.get(sentiment, 0) / total if total else 0.0
        lines.append(f"  {sentiment:<9} {'█' * round(share * BAR_WIDTH):<{BAR_WIDTH}} {share:6.1%}")
    return lines


def run_query(
    *,
    warehouse: Path,
    store,
    embedder,
    domain: str,
    query: str,
    k: int,
    mode: str,
    kb: str,
    entity: str | None = None,
    profile: Callable[[duckdb.DuckDBPyConnection], OpinionProfile] | None = None,
    footer: Callable[[duckdb.DuckDBPyConnection, str], list[str]] | None = None,
    fair_weight: float | None = None,
    search: Callable[[duckdb.DuckDBPyConnection, Retriever], list[RetrievedHit]] | None = None,
    scope: str | None = None,
) -> str:
    """`profile` builds what balanced mode balances on (default: all-time counts); `footer` adds lines about the
    focus entity (the analyses' timeline); `fair_weight` is fair mode's knob (default: the retriever's); `search`
    replaces the Retriever's own modes by one the analyses define (it gets the warehouse and a Retriever that holds
    the opinion profile, and `mode` is then only its label). Every mode
    reports how concentrated its hits are on their authors, so a fair list can be set beside a plain one. `scope`
    (an `entity_scope` as stored) restricts the hits, the profile and the corpus counts to that scope's documents."""
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        build = profile or (lambda c: OpinionProfile.load(c, domain, scope))
        profiles = {domain: build(conn)} if mode in OPINION_MODES or search else None
        sources = {domain: source_map(conn, domain)} if mode == FAIR else None
        retriever = Retriever(store, embedder, profiles=profiles, sources=sources)
        if search is not None:  # a mode defined downstream (the analyses' group-fair retrieval)
            hits = search(conn, retriever)
        else:
            scoped = {"entity_scope": scope} if scope is not None else None
            hits = retriever.search(domain, query, k=k, mode=mode, kb=kb, fair_weight=fair_weight, filters=scoped)
        attach_opinions(conn, domain, kb, hits)
        spread = concentration(_hit_sources(conn, domain, hits)) if hits else None
        focus = entity or _main_entity(hits)
        corpus = (
            Counter(
                dict(
                    conn.execute(
                        "SELECT sentiment, count(*) FROM opinions WHERE domain = ? AND entity_id = ? "
                        "AND (? IS NULL OR entity_scope = ?) GROUP BY 1",
                        [domain, focus, scope, scope],
                    ).fetchall()
                )
            )
            if focus
            else Counter()
        )
        focus_name = (
            conn.execute(
                "SELECT name FROM entity_registry WHERE domain = ? AND entity_id = ?", [domain, focus]
            ).fetchone()
            if focus
            else None
        )
        footer_lines = footer(conn, focus) if footer and focus else []
    where = f"{domain}/{kb}" + (f", scope {scope!r}" if scope is not None else "")
    lines = [f'{len(hits)} hits for "{query}" in {where} ({mode}, k={k})', f"[score]: {score_legend(mode)}", ""]
    for rank, hit in enumerate(hits, start=1):
        lines.extend(_render_hit(rank, hit, kb))
    if spread:
        lines += ["", f"Authors: {spread.describe('authors')}"]
    if focus:
        retrieved = Counter(o["sentiment"] for h in hits for o in h.opinions if o["entity_id"] == focus)
        name = focus_name[0] if focus_name else focus
        lines.append("")
        whole = f"the documents of scope {scope!r}" if scope is not None else "the whole corpus"
        lines.append(f"Entity {focus} ({name}): sentiment of retrieved opinions vs {whole}")
        lines.extend(histogram("retrieved", retrieved, sum(retrieved.values())))
        lines.extend(histogram("corpus", corpus, sum(corpus.values())))
    if footer_lines:
        lines.append("")
        lines.extend(footer_lines)
    return "\n".join(lines)


def score_legend(mode: str) -> str:
    """What the bracketed number of a hit means in this mode, so a reader can compare hits (and not modes: a cosine
    and a fused rank score are different scales)."""
    if mode == "semantic":
        return "cosine similarity of the question and the text (MiniLM vectors, higher is closer, at most 1)"
    fused = (
        f"reciprocal-rank fusion of the dense and BM25 rankings: the sum over both lists of 1/({RRF_K} + position), "
        f"position 0 for a list's first hit (at most {2 / RRF_K:.3f}: first in both; not comparable across questions)"
    )
    if mode == "hybrid":
        return fused
    if mode in DIVERSIFIED:  # re-rankers: their order is not the score's
        return f"the hit's hybrid score, {fused}; the order is {mode}'s, not the score's"
    return f"the hit's hybrid score, {fused}; {mode} chose which hits"


def _hit_sources(conn: duckdb.DuckDBPyConnection, domain: str, hits: Sequence[RetrievedHit]) -> list[str]:
    """The source (author, or the document itself) of each hit, in hit order."""
    doc_ids = [str(h.payload.get("doc_id")) for h in hits]
    sources = source_map(conn, domain, doc_ids)
    return [sources.get(d) or source_key(d, None) for d in doc_ids]


def _main_entity(hits: Sequence[RetrievedHit]) -> str | None:
    counts = Counter(o["entity_id"] for h in hits for o in h.opinions)
    return counts.most_common(1)[0][0] if counts else None


def _render_hit(rank: int, hit: RetrievedHit, kb: str) -> list[str]:
    opinions = (
        ", ".join(
            f"{o['entity_name']}: {o['sentiment']}/{o['intensity']} ({o['sentiment_intensity']:+d})"
            for o in hit.opinions
        )
        or "no opinion"
    )
    author = ", ".join(f"{k}={v}" for k, v in sorted(hit.author.items())) or "unknown author"
    text = hit.payload.get("text", "")
    if kb == "enriched":
        text = own_words(text)
    snippet = " ".join(text.split())[:160]
    return [
        f"{rank:>3}. [{hit.score:.3f}] {hit.payload.get('doc_id')}  {opinions}",
        f"     {author}",
        f"     {snippet}",
    ]
