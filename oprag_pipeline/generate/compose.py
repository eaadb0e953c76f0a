"""The offline composer: a deterministic answer from real statistics and verbatim quotes. Not a language model.

Opinion-aware (any opinion-indexed KB): for each entity the question names, the corpus's distribution of views
(counts and shares from the `opinions` table, with the intensity mix of each side), then per side present among the
retrieved passages its strongest evidence as verbatim, cited quotes — the minority side included — and finally what
it could not cover. Plain (`kb="raw"`): what a plain RAG system has, the most relevant passages quoted and cited,
with no statistics, so the two can be read and measured side by side.
"""

from __future__ import annotations

from oprag_pipeline.generate.answer import SIDES, Answer, Quote, StatedShares
from oprag_pipeline.generate.context import AnswerContext, CorpusDistribution, Passage, side_of
from oprag_pipeline.generate.evidence import QuoteDeduplicator, quotable
from oprag_pipeline.index.balancing import proportional_quotas

WRITER = "offline"
# Per side: the strongest piece of evidence and one more. Two is enough to show a side is real and why; more turns
# an answer into a list of hits.
MAX_QUOTES_PER_SIDE = 2
# A plain RAG answer cites its few most relevant sources; five is what fits a screen beside the other answer.
PLAIN_PASSAGES = 5
# Below this many opinions one opinion moves a share by more than five points: the answer says the shares are thin.
# It is the evaluation's own minimum for a corpus distribution (`evaluation_entities.min_mentions`).
THIN_EVIDENCE = 20
# Long sentences are cut (at a word boundary, so the quote stays a verbatim prefix) to keep quotes readable.
MAX_QUOTE_CHARS = 320
INTENSITY_WORDS = {30: "strongly", 20: "moderately", 10: "mildly", -10: "mildly", -20: "moderately", -30: "strongly"}


def compose_offline(context: AnswerContext) -> Answer:
    if context.kb == "raw":
        return compose_plain(context)
    return compose_opinion_aware(context)


def percents(counts: dict) -> dict:
    """Whole percentages that add up to exactly 100 (largest remainder), as a reader expects of a breakdown.

    The counts are scaled by 100 first: the quota helper never hands out more slots than there are items, and a
    side of 19 opinions still needs its 100 points."""
    return proportional_quotas({key: 100 * n for key, n in counts.items() if n > 0}, 100)


def clip(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def _strength(passage: Passage, entity_id: str) -> tuple:
    opinion = passage.opinion_on(entity_id)
    assert opinion is not None
    return (-opinion.impact_score, -abs(opinion.sentiment_intensity), passage.rank)


def side_quotes(
    context: AnswerContext, entity_id: str, shown: QuoteDeduplicator | None = None
) -> dict[str, list[tuple[Quote, Passage]]]:
    """Per side, the strongest retrieved evidence about the entity: passages whose quotable sentence names the
    entity first, then those whose sentence does not read as the other side, then by impact, intensity and
    relevance; one quote per document, none repeated (`shown` carries the quotes already in the answer), none
    without an opinion of the entity (`evidence.quotable`)."""
    entity = context.registry.get(entity_id)
    shown = shown if shown is not None else QuoteDeduplicator()
    by_side: dict[str, list[tuple[Passage, list[str], tuple[bool, bool]]]] = {side: [] for side in SIDES}
    for passage in context.passages:
        opinion = passage.opinion_on(entity_id)
        if opinion is None:
            continue
        side = side_of(opinion.sentiment_intensity)
        candidates = quotable(passage.text, entity, side)
        if candidates:
            best = candidates[0]
            rank = (not best.names_entity, best.contradicts_side)
            by_side[side].append((passage, [clip(c.text) for c in candidates], rank))
    chosen: dict[str, list[tuple[Quote, Passage]]] = {}
    for side, found in by_side.items():
        seen: set[str] = set()
        picked = []
        for passage, texts, _rank in sorted(found, key=lambda f: (*f[2], _strength(f[0], entity_id))):
            if passage.doc_id in seen:
                continue
            text = shown.first_new(texts)
            if text is None:
                continue
            seen.add(passage.doc_id)
            picked.append((Quote(passage.doc_id, text, entity_id, side, passage.point_id), passage))
            if len(picked) == MAX_QUOTES_PER_SIDE:
                break
        chosen[side] = picked
    return chosen


def _distribution_lines(dist: CorpusDistribution) -> list[str]:
    counts = dist.side_counts()
    shown = percents(counts)
    parts = [f"{side} {shown.get(side, 0)}% ({counts[side]})" for side in SIDES if counts[side]]
    lines = [f"In the corpus: {' · '.join(parts)}."]
    for side in ("positive", "negative"):
        levels = {s: n for s, n in dist.sigma_counts.items() if n and side_of(s) == side}
        if sum(levels.values()) == 0:
            continue
        mix = percents(levels)
        words = ", ".join(
            f"{mix[s]}% {INTENSITY_WORDS[s]}" for s in sorted(levels, key=lambda s: -abs(s)) if mix.get(s)
        )
        lines.append(f"Of the {side} opinions: {words}.")
    return lines


def _describe(passage: Passage, entity_id: str) -> str:
    opinion = passage.opinion_on(entity_id)
    assert opinion is not None
    impact = {30: "high", 20: "medium", 10: "low"}.get(opinion.impact_score, str(opinion.impact_score))
    details = [f"{opinion.intensity} intensity", f"{impact} impact", *opinion.emotions]
    return ", ".join(details)


def compose_opinion_aware(context: AnswerContext) -> Answer:
    lines: list[str] = []
    gaps: list[str] = []
    stated: list[StatedShares] = []
    quotes: list[Quote] = []
    covered: list[str] = []
    quoted = QuoteDeduplicator()  # each quote once in the whole answer, whichever entity or side it came under
    if not context.named_in_question and not context.notice:
        # with a notice the answer already opens with this (`generate.api`); a reader is told once
        gaps.append("The question names no entity of this domain's registry.")
        if context.entities:
            gaps.append(
                f"The answer describes {context.entities[0].entity_name}, which most retrieved passages are about."
            )
    for dist in context.entities:
        if dist.total == 0:
            gaps.append(f"No opinions about {dist.entity_name} in the corpus: nothing is claimed about it.")
            continue
        covered.append(dist.entity_id)
        stated.append(
            StatedShares(dist.entity_id, dist.entity_name, dist.side_shares(), dist.sigma_shares(), dist.total)
        )
        lines.append(f"## {dist.entity_name}: {dist.total} opinions in the corpus")
        lines.extend(_distribution_lines(dist))
        if dist.total < THIN_EVIDENCE:
            gaps.append(f"Only {dist.total} opinions about {dist.entity_name}: its shares are uncertain.")
        about = [p for p in context.passages if p.opinion_on(dist.entity_id)]
        retrieved = dict.fromkeys(SIDES, 0)
        for passage in about:
            opinion = passage.opinion_on(dist.entity_id)
            assert opinion is not None
            retrieved[side_of(opinion.sentiment_intensity)] += 1
        lines.append(
            f"Retrieved: {len(about)} of {len(context.passages)} passages are about {dist.entity_name} ("
            + ", ".join(f"{retrieved[s]} {s}" for s in SIDES)
            + ")."
        )
        counts, shown = dist.side_counts(), percents(dist.side_counts())
        by_side = side_quotes(context, dist.entity_id, quoted)
        for side in sorted(SIDES, key=lambda s: (-counts[s], SIDES.index(s))):
            if counts[side] == 0:
                continue
            picked = by_side[side]
            lines.append("")
            lines.append(f"**{side.capitalize()} ({shown.get(side, 0)}% of the corpus)**, strongest evidence first:")
            if not picked:
                gaps.append(
                    f"{shown.get(side, 0)}% of the opinions about {dist.entity_name} are {side}, but no retrieved "
                    f"passage is: no quote for that side."
                )
                lines.append(f"- (no retrieved passage is {side})")
            for quote, passage in picked:
                quotes.append(quote)
                lines.append(f'- "{quote.text}" [{quote.doc_id}] ({_describe(passage, dist.entity_id)})')
        lines.append("")
    if not context.passages:
        gaps.append("Retrieval returned no passages.")
    if gaps:
        lines.append("**Not covered**")
        lines.extend(f"- {gap}" for gap in gaps)
    return Answer(
        question=context.question,
        domain=context.domain,
        kb=context.kb,
        mode=context.mode,
        k=context.k,
        writer=WRITER,
        text="\n".join(lines).strip(),
        entity_ids=covered,
        stated=stated,
        quotes=quotes,
        gaps=gaps,
    )


def compose_plain(context: AnswerContext) -> Answer:
    """Plain RAG: the top passages, quoted and cited, with no claim about how common each view is. The quoted
    sentence is chosen as in the opinion-aware answer (`evidence.quotable`), from the entity the passage is labelled
    with, else the question's first: a passage with nothing quotable, or only a repeat, gives way to the next."""
    quotes: list[Quote] = []
    entities = [d.entity_id for d in context.entities]
    shown = QuoteDeduplicator()
    items: list[str] = []
    seen: set[str] = set()
    for passage in context.passages:
        if passage.doc_id in seen:
            continue
        about = next((e for e in entities if passage.opinion_on(e)), entities[0] if entities else None)
        entity = context.registry.get(about) if about else None
        text = shown.first_new(clip(c.text) for c in quotable(passage.text, entity))
        if text is None:
            continue
        seen.add(passage.doc_id)
        quotes.append(Quote(passage.doc_id, text, about, None, passage.point_id))
        items.append(f'- "{text}" [{passage.doc_id}]')
        if len(quotes) == PLAIN_PASSAGES:
            break
    # the text names no pipeline: the preference study shows it to a judge blind
    lines = [f"The {len(quotes)} most relevant passages for the question:", *items]
    gaps = ["The passages are the ones most similar to the question, not a sample of the views, and carry no "
            "opinion statistics."]  # fmt: skip
    if not context.passages:
        gaps.append("Retrieval returned no passages.")
    elif not quotes:
        gaps.append("No retrieved passage states an opinion that could be quoted.")
    lines += ["", "**Not covered**", *(f"- {g}" for g in gaps)]
    return Answer(
        question=context.question,
        domain=context.domain,
        kb=context.kb,
        mode=context.mode,
        k=context.k,
        writer=WRITER,
        text="\n".join(lines),
        entity_ids=entities,
        quotes=quotes,
        gaps=gaps,
    )
