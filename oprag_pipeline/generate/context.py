"""What an answer may rest on: the passages a retrieval returned, and the corpus's distribution of views on each
entity the question names.

The distribution comes from the whole `opinions` table, not from the k hits: a reader asking "what do guests think
of check-in?" is asking about everyone who wrote about it, and k passages are a sample of that (a biased one when
retrieval is not opinion-aware). The passages supply the evidence (quotes, reasons) the answer shows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import duckdb

from oprag_pipeline.enrich.documents import TEXT_MARKER
from oprag_pipeline.generate.answer import SIDES
from oprag_pipeline.generate.scope import SCOPE_FIELD
from oprag_pipeline.index.fairness import source_map
from oprag_pipeline.index.retrieval import (
    BALANCED,
    FAIR,
    OPINION_MODES,
    OpinionProfile,
    RetrievedHit,
    Retriever,
    attach_opinions,
)
from oprag_pipeline.registry.question import QuestionMatcher, QuestionTargets, load_question_matcher
from oprag_pipeline.registry.store import registry_entities
from oprag_pipeline.schema import RegistryEntity

# The enriched KB embeds rendered metadata before the document's own words ("Entity: …\nText: …"); an answer quotes
# only the words, which are verbatim from the document.
ENRICHED_TEXT_MARKER = TEXT_MARKER
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def side_of(sigma: int) -> str:
    """The side of a σ-score: the sign of the σ-scale (docs/design.md)."""
    return "positive" if sigma > 0 else "negative" if sigma < 0 else "neutral"


@dataclass(frozen=True)
class CorpusDistribution:
    """One entity's opinions in the whole corpus, counted per σ-level."""

    entity_id: str
    entity_name: str
    sigma_counts: Mapping[int, int]

    @property
    def total(self) -> int:
        return sum(self.sigma_counts.values())

    def side_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(SIDES, 0)
        for sigma, n in self.sigma_counts.items():
            counts[side_of(sigma)] += n
        return counts

    def side_shares(self) -> dict[str, float]:
        total = self.total
        return {side: (n / total if total else 0.0) for side, n in self.side_counts().items()}

    def sigma_shares(self) -> dict[int, float]:
        total = self.total
        return {sigma: n / total for sigma, n in sorted(self.sigma_counts.items()) if n > 0} if total else {}


@dataclass(frozen=True)
class PassageOpinion:
    entity_id: str
    entity_name: str
    sentiment: str
    intensity: str
    sentiment_intensity: int
    impact_score: int
    emotions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Passage:
    """One retrieved point as a writer sees it: its document id and its verbatim text."""

    rank: int
    point_id: str
    doc_id: str
    score: float
    text: str
    opinions: tuple[PassageOpinion, ...] = ()

    def opinion_on(self, entity_id: str) -> PassageOpinion | None:
        return next((o for o in self.opinions if o.entity_id == entity_id), None)


@dataclass
class AnswerContext:
    question: str
    domain: str
    kb: str
    mode: str
    k: int
    entities: list[CorpusDistribution]  # named by the question (or given), each with its corpus distribution
    passages: list[Passage]
    registry: Mapping[str, RegistryEntity] = field(default_factory=dict)
    named_in_question: bool = True  # False: the question named no registry entity; `entities` came from the hits
    notice: str = ""  # what the reader must know first: the question named no entity, or was read as a group
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # group id → member ids, for groups answered
    set_aside: tuple[str, ...] = ()  # the domain's container (or the opinion holder) that gave way to a named entity
    scope: str | None = None  # the one `entity_scope` retrieval and the corpus counts were restricted to


@dataclass(frozen=True)
class DomainKnowledge:
    """A domain's registry and corpus counts, loaded once and shared by every question asked of it."""

    domain: str
    profile: OpinionProfile
    entities: Mapping[str, RegistryEntity]
    questions: QuestionMatcher | None = None  # question → entities or groups (`registry/question.py`)
    scope: str | None = None  # one `entity_scope`: retrieval and corpus counts restricted to it (`generate/scope.py`)

    @classmethod
    def load(cls, conn: duckdb.DuckDBPyConnection, domain: str, scope: str | None = None) -> DomainKnowledge:
        """`scope` (its stored spelling, `scope.resolve_scope`) restricts the corpus counts to its documents."""
        profile = OpinionProfile.load(conn, domain, scope)
        _, entities = registry_entities(conn, domain)
        matcher = load_question_matcher(conn, domain, entities)
        return cls(domain, profile, {e.entity_id: e for e in entities}, matcher, scope)

    def distribution(self, entity_id: str) -> CorpusDistribution:
        entity = self.entities.get(entity_id)
        name = entity.name if entity else entity_id
        return CorpusDistribution(entity_id, name, dict(self.profile.sigma_counts.get(entity_id, {})))

    def named_entities(self, question: str) -> list[str]:
        return self.profile.finder.entities_in(question)

    def group_distribution(self, group_id: str) -> CorpusDistribution:
        """A group's opinions as one distribution: the union of its members' (`registry/question.py`)."""
        assert self.questions is not None
        counts: dict[int, int] = {}
        for member in self.questions.groups[group_id].members:
            for sigma, n in self.profile.sigma_counts.get(member, {}).items():
                counts[sigma] = counts.get(sigma, 0) + n
        return CorpusDistribution(group_id, self.questions.display_name(group_id), dict(sorted(counts.items())))


def passage_text(kb: str, payload: Mapping[str, object]) -> str:
    """The document's own words in a hit (the enriched KB's rendered metadata stripped)."""
    text = str(payload.get("text", ""))
    if kb == "enriched" and ENRICHED_TEXT_MARKER in text:
        text = text.split(ENRICHED_TEXT_MARKER, 1)[1]
    return text


def to_passages(kb: str, hits: Sequence[RetrievedHit]) -> list[Passage]:
    return [
        Passage(
            rank=rank,
            point_id=str(hit.point_id),
            doc_id=str(hit.payload.get("doc_id", "")),
            score=float(hit.score),
            text=passage_text(kb, hit.payload),
            opinions=tuple(
                PassageOpinion(
                    entity_id=o["entity_id"],
                    entity_name=o["entity_name"],
                    sentiment=o["sentiment"],
                    intensity=o["intensity"],
                    sentiment_intensity=int(o["sentiment_intensity"]),
                    impact_score=int(o["impact_score"]),
                    emotions=tuple(o["emotions"] or ()),
                )
                for o in hit.opinions
            ),
        )
        for rank, hit in enumerate(hits, start=1)
    ]


def gather(
    conn: duckdb.DuckDBPyConnection,
    retriever: Retriever,
    knowledge: DomainKnowledge,
    question: str,
    *,
    kb: str = "enriched",
    mode: str = BALANCED,
    k: int = 20,
    entity_ids: Sequence[str] = (),
) -> AnswerContext:
    """Retrieve and collect the context of one answer. `entity_ids` puts entities first (the evaluation knows which
    entity a question is about); the ones the question names follow. With neither, the entity most retrieved
    opinions are about stands in, and the context says so."""
    if mode in OPINION_MODES and (knowledge.domain not in retriever.profiles or knowledge.scope is not None):
        retriever.profiles[knowledge.domain] = knowledge.profile  # a scope's own proportions
    if mode == FAIR and knowledge.domain not in retriever.sources:
        retriever.sources[knowledge.domain] = source_map(conn, knowledge.domain)
    scoped = {SCOPE_FIELD: knowledge.scope} if knowledge.scope is not None else None
    hits = retriever.search(knowledge.domain, question, k=k, mode=mode, kb=kb, filters=scoped)
    attach_opinions(conn, knowledge.domain, kb, hits)
    passages = to_passages(kb, hits)
    if not entity_ids and knowledge.questions is not None:
        return _answer_context(knowledge, question, kb, mode, k, passages, knowledge.questions.resolve(question))
    chosen = list(dict.fromkeys([*entity_ids, *knowledge.named_entities(question)]))
    named = bool(chosen)
    if not chosen:
        chosen = _most_retrieved(passages)
    return AnswerContext(
        question=question,
        domain=knowledge.domain,
        kb=kb,
        mode=mode,
        k=k,
        entities=[knowledge.distribution(e) for e in chosen],
        passages=passages,
        registry=knowledge.entities,
        named_in_question=named,
    )


def _most_retrieved(passages: Sequence[Passage]) -> list[str]:
    counts: dict[str, int] = {}
    for passage in passages:
        for opinion in passage.opinions:
            counts[opinion.entity_id] = counts.get(opinion.entity_id, 0) + 1
    return [min(counts, key=lambda e: (-counts[e], e))] if counts else []


def _with_group_opinions(passages: Sequence[Passage], groups: Mapping[str, tuple[str, ...]]) -> list[Passage]:
    """Each passage with, for every group answered, a copy of its opinion on a member filed under the group."""
    member_of = {m: g for g, members in groups.items() for m in members}
    out = []
    for passage in passages:
        extra = []
        for opinion in passage.opinions:
            group = member_of.get(opinion.entity_id)
            if group is not None and all(o.entity_id != group for o in (*passage.opinions, *extra)):
                extra.append(
                    PassageOpinion(
                        group,
                        opinion.entity_name,
                        opinion.sentiment,
                        opinion.intensity,
                        opinion.sentiment_intensity,
                        opinion.impact_score,
                        opinion.emotions,
                    )
                )
        out.append(replace(passage, opinions=(*passage.opinions, *extra)) if extra else passage)
    return out


def _answer_context(
    knowledge: DomainKnowledge,
    question: str,
    kb: str,
    mode: str,
    k: int,
    passages: list[Passage],
    resolved: QuestionTargets,
) -> AnswerContext:
    """The context of a user's question: the entities (or groups) it names, container and holder set aside, or,
    when it names none, the entity most retrieved passages are about, with a notice saying so first."""
    matcher = knowledge.questions
    assert matcher is not None
    chosen = resolved.targets
    notice = ""
    if not chosen:
        chosen = _most_retrieved(passages)
        what = (
            f"this answer is about {matcher.display_name(chosen[0])} instead, the entity most retrieved passages "
            "are about"
            if chosen
            else "and no retrieved passage carries an opinion to answer from"
        )
        notice = (
            f"The question names none of the {len(knowledge.entities)} entities of {knowledge.domain} "
            f"(`oprag entities --domain {knowledge.domain}` lists them): {what}."
        )
    elif not resolved.named:
        first = chosen[0]
        word = resolved.via_head.get(first, "")
        notice = (
            f"The question names no entity of {knowledge.domain} exactly: it is read as {word!r}, and answered about "
            f"{matcher.display_name(first)}."
        )
    groups = {g: matcher.groups[g].members for g in chosen if g in matcher.groups}
    if groups and not notice:
        notice = (
            "; ".join(
                f"{matcher.groups[g].head!r} is answered from {len(members)} entities that name it in different words: "
                f"{', '.join(matcher.groups[g].member_names)}"
                for g, members in groups.items()
            )
            + "."
        )
    registry = dict(knowledge.entities)
    registry.update({g: matcher.group_entity(g) for g in groups})
    return AnswerContext(
        question=question,
        domain=knowledge.domain,
        kb=kb,
        mode=mode,
        k=k,
        entities=[knowledge.group_distribution(e) if e in groups else knowledge.distribution(e) for e in chosen],
        passages=_with_group_opinions(passages, groups) if groups else passages,
        registry=registry,
        named_in_question=bool(resolved.targets),
        notice=notice,
        groups=groups,
        set_aside=tuple(resolved.set_aside),
    )


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, whitespace trimmed; a text without end punctuation is one sentence."""
    spans = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    out = []
    for lo, hi in spans:
        while lo < hi and text[lo].isspace():
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        if hi > lo:
            out.append((lo, hi))
    return out
