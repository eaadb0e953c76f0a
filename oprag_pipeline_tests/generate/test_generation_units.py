"""The offline composer and the fidelity metric, on invented contexts whose right answers are worked out by hand."""

from __future__ import annotations

import dataclasses
import re

import pytest

from oprag_pipeline.generate.answer import Answer, Quote, StatedShares
from oprag_pipeline.generate.compose import MAX_QUOTES_PER_SIDE, PLAIN_PASSAGES, compose_offline, percents
from oprag_pipeline.generate.context import AnswerContext, CorpusDistribution, Passage, PassageOpinion
from oprag_pipeline.generate.fidelity import (
    WORST_W1,
    answer_fidelity,
    check_quotes,
    conveyed_by_scores,
    conveyed_by_shares,
    distribution_from_shares,
    erased_minorities,
    minority_sides,
    read_back,
    w1_between,
)
from oprag_pipeline.schema import RegistryEntity

BREAKFAST = RegistryEntity("e1", "breakfast", ("breakfast buffet",))
PARKING = RegistryEntity("e2", "parking", ("car park",))
# 100 opinions: 60 positive (50 at +20, 10 at +10), 15 neutral, 25 negative (20 at −20, 5 at −30)
CORPUS = CorpusDistribution("e1", "breakfast", {20: 50, 10: 10, 0: 15, -20: 20, -30: 5})
LEVEL = {30: "high", 20: "medium", 10: "low", 0: "low", -10: "low", -20: "medium", -30: "high"}


def opinion(sigma: int, impact: int = 10) -> PassageOpinion:
    sentiment = "positive" if sigma > 0 else "negative" if sigma < 0 else "neutral"
    return PassageOpinion("e1", "breakfast", sentiment, LEVEL[sigma], sigma, impact)


def passage(rank: int, text: str, sigma: int | None, impact: int = 10) -> Passage:
    opinions = (opinion(sigma, impact),) if sigma is not None else ()
    return Passage(rank, f"p{rank}", f"doc-{rank}", 1.0 - rank / 100, text, opinions)


def context(passages: list[Passage], entities=(CORPUS,), kb: str = "enriched") -> AnswerContext:
    return AnswerContext(
        question="What do guests think of the breakfast?",
        domain="hotels",
        kb=kb,
        mode="balanced" if kb == "enriched" else "hybrid",
        k=len(passages),
        entities=list(entities),
        passages=passages,
        registry={"e1": BREAKFAST, "e2": PARKING},
    )


# The hits lean positive (7 of 9 about breakfast); the single negative passage is ranked low.
PASSAGES = [
    *(passage(r, f"We stayed in May. The breakfast was lovely on day {r}. Rooms were fine.", 20) for r in range(1, 7)),
    passage(7, "Check-out was quick.", None),
    passage(8, "The breakfast buffet opened at seven.", 0),
    passage(9, "Honestly the breakfast was cold and the coffee stale. We ate out after that.", -30, impact=30),
    passage(10, "Superb breakfast, the best part of the stay!", 30, impact=20),
]


def test_stated_shares_are_the_corpus_shares_and_add_up() -> None:
    answer = compose_offline(context(PASSAGES))
    stated = answer.stated_for("e1")
    assert stated is not None and stated.basis == 100
    assert stated.shares == pytest.approx({"positive": 0.60, "neutral": 0.15, "negative": 0.25})  # not the hits' 7:1:1
    assert sum(stated.shares.values()) == pytest.approx(1.0)
    assert sum(stated.sigma_shares.values()) == pytest.approx(1.0)
    assert stated.sigma_shares[-30] == pytest.approx(0.05)
    printed = re.search(r"In the corpus: (.*)\.", answer.text).group(1)
    assert sum(int(p) for p in re.findall(r"(\d+)%", printed)) == 100
    assert "positive 60% (60)" in printed and "negative 25% (25)" in printed


@pytest.mark.parametrize(
    "counts", [{"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 1}, {"a": 19}, {"a": 7, "b": 5, "c": 1}, {"a": 333, "b": 1}]
)
def test_printed_percentages_always_add_up_to_100(counts) -> None:
    assert sum(percents(counts).values()) == 100


def test_every_side_is_quoted_the_minority_included_verbatim_and_cited() -> None:
    answer = compose_offline(context(PASSAGES))
    by_doc = {p.doc_id: p for p in PASSAGES}
    sides = {q.sentiment for q in answer.quotes}
    assert sides == {"positive", "neutral", "negative"}
    negative = [q for q in answer.quotes if q.sentiment == "negative"]
    assert [q.doc_id for q in negative] == ["doc-9"]  # the low-ranked minority passage is quoted
    assert negative[0].text == "Honestly the breakfast was cold and the coffee stale."  # its sentence, verbatim
    for quote in answer.quotes:
        assert quote.text in by_doc[quote.doc_id].text
        assert f'"{quote.text}" [{quote.doc_id}]' in answer.text
    positive = [q.doc_id for q in answer.quotes if q.sentiment == "positive"]
    assert positive[0] == "doc-10"  # the strongest reason first (higher impact and intensity than rank 1)
    assert len(positive) == MAX_QUOTES_PER_SIDE
    assert all(q.grounded for q in check_quotes(answer.quotes, PASSAGES))


def test_nothing_is_claimed_for_an_entity_without_evidence() -> None:
    parking = CorpusDistribution("e2", "parking", {})
    answer = compose_offline(context(PASSAGES, entities=(CORPUS, parking)))
    assert answer.stated_for("e2") is None and answer.entity_ids == ["e1"]
    assert not any(q.entity_id == "e2" for q in answer.quotes)
    assert "## parking" not in answer.text
    assert any("parking" in gap and "nothing is claimed" in gap for gap in answer.gaps)


def test_a_side_of_the_corpus_missing_from_the_hits_is_named_as_not_covered() -> None:
    without_negative = [p for p in PASSAGES if p.doc_id != "doc-9"]
    answer = compose_offline(context(without_negative))
    assert answer.stated_for("e1").shares["negative"] == pytest.approx(0.25)  # still stated from the corpus
    assert not any(q.sentiment == "negative" for q in answer.quotes)
    assert any("25%" in gap and "negative" in gap and "no quote" in gap for gap in answer.gaps)
    thin = compose_offline(context(PASSAGES, entities=(CorpusDistribution("e1", "breakfast", {20: 5, -20: 3}),)))
    assert any("Only 8 opinions" in gap for gap in thin.gaps)


def test_plain_answer_quotes_top_passages_without_statistics() -> None:
    answer = compose_offline(context(PASSAGES, kb="raw"))
    assert answer.stated == [] and "%" not in answer.text
    assert [q.doc_id for q in answer.quotes] == [f"doc-{r}" for r in range(1, PLAIN_PASSAGES + 1)]
    assert all(q.sentiment is None and q.text in PASSAGES[int(q.doc_id[4:]) - 1].text for q in answer.quotes)


# ---- fidelity: hand-computed cases --------------------------------------------------------------------------------


def shares(mapping: dict[int, float]):
    return distribution_from_shares(mapping, 100)


def test_w1_hand_computed() -> None:
    assert w1_between(shares({20: 1.0}), shares({-20: 1.0})) == pytest.approx(40.0)
    # half the mass must move 40 points: 20
    assert w1_between(shares({20: 1.0}), shares({20: 0.5, -20: 0.5})) == pytest.approx(20.0)
    # sides only (mass at ±20) against ±10: every unit moves 10
    told = conveyed_by_shares(StatedShares("e1", "x", {"positive": 0.8, "negative": 0.2}))
    assert w1_between(told, shares({10: 0.8, -10: 0.2})) == pytest.approx(10.0)
    # per-level shares stated: exact
    exact = conveyed_by_shares(StatedShares("e1", "x", {}, {10: 0.8, -10: 0.2}))
    assert w1_between(exact, shares({10: 0.8, -10: 0.2})) == 0.0
    # read back 3 statements (+20, +20, −20) against a 50/50 corpus at ±20: one sixth of the mass moves 40
    assert w1_between(conveyed_by_scores([20, 20, -20]), shares({20: 0.5, -20: 0.5})) == pytest.approx(40 / 6)
    assert w1_between(conveyed_by_scores([]), shares({0: 1.0})) == WORST_W1 == 60.0


def test_minority_erasure_hand_computed() -> None:
    truth = {"positive": 0.70, "neutral": 0.05, "negative": 0.25}
    assert minority_sides(truth) == ["negative"]  # neutral at 5% is below the 10% threshold
    assert erased_minorities(truth, {"positive": 1.0}) == ["negative"]
    assert erased_minorities(truth, {"positive": 0.9, "negative": 0.1}) == []
    assert erased_minorities(truth, {"positive": 0.9, "neutral": 0.1}) == ["negative"]


def test_answer_fidelity_row() -> None:
    corpus = shares({20: 0.6, 0: 0.1, -20: 0.3})
    quotes = [Quote("d1", "a", grounded=True), Quote("d2", "b", grounded=False)]
    row = answer_fidelity(shares({20: 1.0}), corpus, quotes, gold=shares({20: 0.5, -20: 0.5}))
    assert row["w1"] == pytest.approx(0.1 * 20 + 0.3 * 40)  # neutral mass moves 20, negative 40
    assert row["w1_gold"] == pytest.approx(20.0)
    assert row["minority_erased"] == 1.0 and row["has_minority"] == 1.0
    assert row["share_error"] == pytest.approx(0.4) and row["shares_within_tolerance"] == 0.0
    assert row["grounded_quote_rate"] == 0.5
    faithful = answer_fidelity(corpus, corpus, [])
    assert faithful["w1"] == 0.0 and faithful["minority_erased"] == 0.0 and faithful["shares_within_tolerance"] == 1.0
    assert "grounded_quote_rate" not in faithful and "w1_gold" not in faithful  # nothing to check, not a perfect 1


def test_quotes_are_checked_against_the_document_they_cite() -> None:
    quotes = [
        Quote("doc-9", "the BREAKFAST was  cold"),  # case and spacing differ: still verbatim
        Quote("doc-1", "the breakfast was cold"),  # in another document than the one cited
        Quote("doc-404", "Rooms were fine."),  # a document that was not retrieved
    ]
    assert [q.grounded for q in check_quotes(quotes, PASSAGES)] == [True, False, False]


def test_free_text_is_read_back_with_the_offline_extractor() -> None:
    from oprag_pipeline.enrich.offline import OfflineExtractor

    text = "- The breakfast was delicious and fresh. [doc-1]\n- The breakfast buffet was cold and awful. [doc-2]\n"
    scores = read_back(text, OfflineExtractor(), [BREAKFAST, PARKING])
    assert sorted(s > 0 for s in scores["e1"]) == [False, True] and all(s != 0 for s in scores["e1"])
    assert "e2" not in scores


def test_answers_survive_their_json_form() -> None:
    answer = compose_offline(context(PASSAGES))
    again = Answer.from_dict(answer.to_dict())
    assert again == answer


def test_the_page_escapes_what_documents_say() -> None:
    from oprag_pipeline.generate.api import AskResult
    from oprag_pipeline.generate.web import answer_panel

    hostile = passage(11, "The breakfast was <script>alert(1)</script> great & <b>bold</b>.", 20, impact=30)
    ctx = context([*PASSAGES, hostile])
    html_text = answer_panel("Opinion-aware answer", AskResult(compose_offline(ctx), ctx))
    assert "<script>" not in html_text and "<b>bold" not in html_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text
    assert html_text.count("<svg") == 1 and 'class="bar-negative"' in html_text


# ---- which sentences are quoted: invented posts about a phone's battery ------------------------------------------

BATTERY = RegistryEntity("e3", "battery", ("battery life",))
BATTERY_CORPUS = CorpusDistribution("e3", "battery", {20: 40, 0: 10, -20: 30})


def battery_passage(rank: int, text: str, sigma: int, impact: int = 10, doc: str | None = None) -> Passage:
    sentiment = "positive" if sigma > 0 else "negative" if sigma < 0 else "neutral"
    opinion = PassageOpinion("e3", "battery", sentiment, LEVEL[sigma], sigma, impact)
    return Passage(rank, f"p{rank}", doc or f"post-{rank}", 1.0 - rank / 100, text, (opinion,))


BATTERY_PASSAGES = [
    # the strongest negative post opens with a self-introduction that names the entity: still not its evidence
    battery_passage(1, "New battery owner here, 2 weeks in. The battery dies before lunch every day.", -20, impact=30),
    # nothing in it states an opinion: a question and an introduction
    battery_passage(2, "Retired teacher, 3 phones so far. Is it normal that it gets warm?", -20, impact=30),
    # higher impact than post-4, but it never says what it is about
    battery_passage(3, "Honestly a terrible purchase, I regret it.", -20, impact=30),
    battery_passage(4, "Battery life is poor compared with my old phone.", -20, impact=10),
    # the same sentence posted three times, twice word for word (case and punctuation aside), once near-verbatim
    battery_passage(5, "The battery lasts two full days, which is great.", 20, impact=20),
    battery_passage(6, "the battery lasts two full days which is great!!", 20, impact=20),
    battery_passage(7, "The battery lasts two full days, which is really great.", 20, impact=20),
    battery_passage(8, "I like that the battery charges fast.", 20, impact=10),
    battery_passage(9, "The battery is 4000 mAh.", 0),
    battery_passage(10, "The battery is 4000 mAh.", 0, doc="post-9-copy"),
]


def battery_context(kb: str = "enriched") -> AnswerContext:
    return AnswerContext(
        question="Is the battery any good?",
        domain="phones",
        kb=kb,
        mode="balanced" if kb == "enriched" else "hybrid",
        k=len(BATTERY_PASSAGES),
        entities=[BATTERY_CORPUS],
        passages=BATTERY_PASSAGES,
        registry={"e3": BATTERY},
    )


def test_sentences_without_an_opinion_of_the_entity_are_not_quoted() -> None:
    from oprag_pipeline.generate.evidence import quotable

    assert quotable("Retired teacher, 3 phones so far. Is it normal that it gets warm?", BATTERY) == []
    # naming the entity is not enough: a verbless fragment states nothing about it; a pleasantry evaluates nothing
    assert quotable("Battery collector here, 5 phones in. Thanks in advance.", BATTERY) == []
    statement = quotable("Thanks in advance. The battery is 4000 mAh. It broke after a week.", BATTERY)
    assert [c.text for c in statement] == ["The battery is 4000 mAh.", "It broke after a week."]
    # a sentence that reads as the other side gives way to one that does not
    mixed = "The battery looked great in the shop. The battery died within a week."
    assert quotable(mixed, BATTERY, "negative")[0].text == "The battery died within a week."
    assert quotable(mixed, BATTERY, "positive")[0].text == "The battery looked great in the shop."
    # a plain fact that names the entity is no evidence of a side: the evaluation in the side's direction comes first
    fact_then_praise = "We bought the battery in March. It has been wonderful so far."
    assert quotable(fact_then_praise, BATTERY, "positive")[0].text == "It has been wonderful so far."
    assert quotable(fact_then_praise, BATTERY, "neutral")[0].text == "We bought the battery in March."
    for kb in ("enriched", "raw"):
        texts = [q.text for q in compose_offline(battery_context(kb)).quotes]
        assert "The battery dies before lunch every day." in texts  # its opinion, not its introduction
        assert not any("owner here" in t or "teacher" in t or t.endswith("?") for t in texts), (kb, texts)
        assert "post-2" not in [q.doc_id for q in compose_offline(battery_context(kb)).quotes]


def test_no_quote_is_shown_twice_even_from_different_documents() -> None:
    from oprag_pipeline.generate.evidence import near_duplicate, normalised

    assert near_duplicate(BATTERY_PASSAGES[4].text, BATTERY_PASSAGES[5].text)  # exact once normalised
    assert near_duplicate(BATTERY_PASSAGES[4].text, BATTERY_PASSAGES[6].text)  # one word added: Jaccard 8/9
    assert not near_duplicate("The battery was cold.", "The battery was lovely.")
    for kb in ("enriched", "raw"):
        answer = compose_offline(battery_context(kb))
        seen = [normalised(q.text) for q in answer.quotes]
        assert len(seen) == len(set(seen)), (kb, seen)
        assert sum("two full days" in q.text for q in answer.quotes) == 1
        assert sum("4000 mAh" in q.text for q in answer.quotes) <= 1
        for a_index, a in enumerate(answer.quotes):
            assert not any(near_duplicate(a.text, b.text) for b in answer.quotes[a_index + 1 :])
    positive = [q.doc_id for q in compose_offline(battery_context()).quotes if q.sentiment == "positive"]
    assert positive == ["post-5", "post-8"]  # the repeats give way to the next different evidence


def test_quotes_that_name_the_entity_come_first() -> None:
    answer = compose_offline(battery_context())
    negative = [q for q in answer.quotes if q.sentiment == "negative"]
    # post-3 has the same impact as post-1 and more than post-4, but does not say what it is about
    assert [q.doc_id for q in negative] == ["post-1", "post-4"]
    assert all("battery" in q.text.lower() for q in negative)
    no_name = battery_context()
    no_name.passages = [BATTERY_PASSAGES[2]]  # with nothing better, an evaluative sentence without the name is kept
    assert [q.text for q in compose_offline(no_name).quotes] == ["Honestly a terrible purchase, I regret it."]


def test_the_page_shows_each_quote_once_and_names_plain_rag_passages() -> None:
    from oprag_pipeline.generate.api import AskResult
    from oprag_pipeline.generate.web import PLAIN_QUOTES_HEADING, answer_panel

    for kb in ("enriched", "raw"):
        ctx = battery_context(kb)
        answer = compose_offline(ctx)
        page = answer_panel("answer", AskResult(answer, ctx))
        for quote in answer.quotes:
            assert page.count(f"<q>{quote.text}</q>") == 1, (kb, quote.text)
        assert "unlabelled" not in page
    plain = compose_offline(battery_context("raw"))
    page = answer_panel("answer", AskResult(plain, battery_context("raw")))
    # on the page, as a heading (its first letter capitalised); the answer text itself stays blind for the judge
    assert page.count(PLAIN_QUOTES_HEADING[0].upper() + PLAIN_QUOTES_HEADING[1:]) == 1
    assert "plain" not in plain.text.lower()
    # quotes an LLM lists beside its prose (not in it) are shown once, under a heading that says what they are
    listed = dataclasses.replace(plain, text="Mixed views.", quotes=[*plain.quotes, plain.quotes[0]])
    page = answer_panel("answer", AskResult(listed, battery_context("raw")))
    assert PLAIN_QUOTES_HEADING in page and page.count(f"<q>{plain.quotes[0].text}</q>") == 1
    # a quote already inside the prose is not listed again
    first = plain.quotes[0].text
    inline = dataclasses.replace(plain, text=f"One owner wrote: '{first.lower()}' Others disagree.")
    page = answer_panel("answer", AskResult(inline, battery_context("raw")))
    assert f"<q>{first}</q>" not in page and page.count("<q>") == len(plain.quotes) - 1
