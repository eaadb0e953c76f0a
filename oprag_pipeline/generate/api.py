"""The Python API behind `oprag ask` and `oprag serve`: retrieve, then answer, for one question of one domain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from oprag_pipeline import settings
from oprag_pipeline.generate.answer import Answer
from oprag_pipeline.generate.compose import compose_offline
from oprag_pipeline.generate.context import AnswerContext, DomainKnowledge, gather
from oprag_pipeline.generate.fidelity import check_quotes
from oprag_pipeline.generate.scope import ScopeMatch, domain_scopes, resolve_scope, scope_in_question
from oprag_pipeline.index.fairness import DEFAULT_FAIR_WEIGHT
from oprag_pipeline.index.retrieval import ALL_MODES, OPINION_MODES, PM2, Retriever

WRITERS = ("offline", "anthropic", "openai-compatible")
ASK_MODES = ALL_MODES
"""Every retrieval mode of the evaluation grid, plus source-fair retrieval: semantic, hybrid, balanced, MMR, xQuAD,
PM-2, fair. Balanced, xQuAD and PM-2 read the enriched KB's opinion payload."""
DEFAULT_MODE = PM2
"""PM-2 on the enriched KB: the mode that measured closest to the corpus's opinions across the corpora with gold
(docs/design.md, "Which retrieval `ask` uses")."""


def default_mode(kb: str) -> str:
    """PM-2 where the opinion payload allows it (the enriched KB), hybrid elsewhere."""
    return DEFAULT_MODE if kb == "enriched" else "hybrid"


def check_mode(mode: str, kb: str) -> None:
    """A mode `ask` offers, on a KB that carries what it reads; ValueError with the choices otherwise."""
    if mode not in ASK_MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(ASK_MODES)}")
    if mode in OPINION_MODES and kb != "enriched":
        raise ValueError(f"mode {mode!r} reads the opinion payload of the enriched KB; use --kb enriched")


def build_writer(kind: str) -> Callable[[AnswerContext], Answer]:
    """A function from context to answer. LLM writers reuse the extractor's clients (keys from the environment)."""
    if kind == "offline":
        return compose_offline
    if kind in ("anthropic", "openai-compatible"):
        from oprag_pipeline.generate.llm_writer import write_with_llm
        from oprag_pipeline.resources import llm_client

        client = llm_client(kind)
        return lambda context: write_with_llm(client, context)
    raise ValueError(f"unknown writer {kind!r}; choose one of {', '.join(WRITERS)}")


def answer_in_context(context: AnswerContext, writer: Callable[[AnswerContext], Answer]) -> Answer:
    """Write, then check every quote against the retrieved text, whoever wrote it. What the reader must know
    before the answer (the question named no entity, or was read as a group of them) comes first."""
    answer = writer(context)
    answer.quotes = check_quotes(answer.quotes, context.passages)
    if context.notice and not answer.text.startswith(context.notice):
        answer.text = f"{context.notice}\n\n{answer.text}"
    if context.scope is not None:
        answer.scope = context.scope
        line = scope_line(context.scope)
        if not answer.text.startswith(line):
            answer.text = f"{line}\n\n{answer.text}"
    return answer


def scope_line(scope: str) -> str:
    """The first line of a scoped answer: which product or hotel it covers."""
    return f"Scope: {scope} only. Retrieval, the corpus shares and the quotes come from the documents about it."


@dataclass
class AskResult:
    answer: Answer
    context: AnswerContext
    scope_match: ScopeMatch | None = None  # the scope recognised in the question, when none was given


def ask(
    question: str,
    *,
    domain: str,
    kb: str = "enriched",
    mode: str | None = None,
    k: int = 20,
    writer: str | Callable[[AnswerContext], Answer] = "offline",
    data_dir: Path | None = None,
    store: Any = None,
    embedder: Any = None,
    fair_weight: float = DEFAULT_FAIR_WEIGHT,
    scope: str | None = None,
) -> AskResult:
    """Answer one question from the domain's warehouse and vector store (opened read-only, closed again).
    `mode` is one of `ASK_MODES` (default: `default_mode(kb)`); `fair_weight` is the source cap's knob of mode
    "fair" (see index/fairness.py). `scope` (any case) restricts retrieval, the corpus shares and the quotes to the
    documents whose `entity_scope` it is; without it, a scope the question names is used (`AskResult.scope_match`),
    its words taken out of the question before its entities are read. LookupError for a scope no document has."""
    from oprag_pipeline.resources import EmbedderResource, open_configured_store

    root = data_dir or settings.data_dir()
    warehouse = settings.warehouse_path(root) if data_dir else settings.warehouse_path()
    if not warehouse.exists():
        raise FileNotFoundError(f"no warehouse at {warehouse}: run `oprag run` first")
    mode = mode or default_mode(kb)
    check_mode(mode, kb)
    write = build_writer(writer) if isinstance(writer, str) else writer
    own_store = store is None
    store = store or open_configured_store(root)
    try:
        with duckdb.connect(str(warehouse), read_only=True) as conn:
            match, asked = None, question
            if scope is not None:
                scope = resolve_scope(conn, domain, scope)
            else:
                match = scope_in_question(question, [s.scope for s in domain_scopes(conn, domain)])
                if match is not None:
                    scope, asked = match.scope, match.without(question)
            knowledge = DomainKnowledge.load(conn, domain, scope)
            if not knowledge.entities:
                raise LookupError(f"domain {domain!r} has no entity registry in {warehouse}: run `oprag run` first")
            retriever = Retriever(store, embedder or EmbedderResource().embedder(), fair_weight=fair_weight)
            context = gather(conn, retriever, knowledge, asked, kb=kb, mode=mode, k=k)
            context.question, context.scope = question, scope
    finally:
        if own_store:
            store.close()
    return AskResult(answer_in_context(context, write), context, match)
