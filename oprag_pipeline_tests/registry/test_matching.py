"""The one alias matcher (`registry.matching`), and that every caller finds the same entity on the same wording."""

from __future__ import annotations

import pytest

from oprag_pipeline.enrich.llm import OpinionAnswer, OpinionExtraction, RegistryIndex, to_opinions
from oprag_pipeline.enrich.offline import OfflineExtractor, SimplePrediction
from oprag_pipeline.evaluate.gold import GoldMapper, RegistryEntry
from oprag_pipeline.index.retrieval import OpinionProfile
from oprag_pipeline.registry.matching import AliasMatcher, locate_phrase, locate_quote, phrase_key, word_key
from oprag_pipeline.schema import DocumentInput, RegistryEntity

ENTITIES = [
    RegistryEntity("e1", "dish", ("dishes", "main course")),
    RegistryEntity("e2", "battery", ("battery life",)),
    RegistryEntity("e3", "front desk", ("front desk staff", "reception")),
    RegistryEntity("e4", "staff", ("waiters",)),
    RegistryEntity("e5", "check-in", ()),
    RegistryEntity("e6", "knife", ()),
    RegistryEntity("e7", "glass", ()),
    RegistryEntity("e8", "service", ()),
    RegistryEntity("e9", "room", ()),
]


def spans(matcher: AliasMatcher, text: str) -> list[tuple[str, str]]:
    return [(m.entity_id, text[m.start : m.end]) for m in matcher.mentions(text)]


@pytest.mark.parametrize(
    ("plural", "singular"),
    [("dishes", "dish"), ("batteries", "battery"), ("knives", "knife"), ("Policies", "policy"), ("hotel's", "hotel")],
)
def test_inflections_fold_to_one_form(plural: str, singular: str) -> None:
    assert word_key(plural) == word_key(singular) == singular


def test_words_that_only_look_plural_stay_whole() -> None:
    assert [word_key(w) for w in ("glass", "glasses", "bus", "news", "us", "as")] == [
        "glass",
        "glass",
        "bus",
        "news",
        "us",
        "as",
    ]


def test_plural_and_singular_find_each_other_in_both_directions() -> None:
    matcher = AliasMatcher(ENTITIES)
    # the alias "dishes" finds "dish", the name "battery" finds "batteries", "waiters" finds "waiter"
    text = "One dish was cold, the batteries died, our waiter smiled, both knives were blunt."
    assert spans(matcher, text) == [("e1", "dish"), ("e2", "batteries"), ("e4", "waiter"), ("e6", "knives")]


def test_longest_alias_wins_and_consumes_its_words() -> None:
    matcher = AliasMatcher(ENTITIES)
    text = "The front desk staff were kind, the staff at the front-desk less so; battery life is poor."
    assert spans(matcher, text) == [
        ("e3", "front desk staff"),
        ("e4", "staff"),
        ("e3", "front-desk"),
        ("e2", "battery life"),
    ]


def test_word_boundaries_hyphenated_compounds_and_punctuation() -> None:
    matcher = AliasMatcher(ENTITIES)
    assert spans(matcher, "The bedrooms and the storeroom.") == []  # "room" inside a word is not a room
    assert spans(matcher, "A self-service bar, a non-glass cup.") == []  # inside a hyphenated compound
    assert spans(matcher, "The check in was quick.") == [("e5", "check in")]  # space = hyphen inside an alias
    assert spans(matcher, "It is at the front. Desk staff were away.") == [("e4", "staff")]  # not across a stop


def test_a_possessive_is_not_part_of_the_mention() -> None:
    matcher = AliasMatcher(ENTITIES)
    assert spans(matcher, "The room's door and the staff\u2019s smiles.") == [("e9", "room"), ("e4", "staff")]


def test_a_name_beats_another_entitys_alias() -> None:
    matcher = AliasMatcher([RegistryEntity("a", "hotel", ("room",)), RegistryEntity("b", "room", ())])
    assert matcher.entities_in("the rooms of the hotel") == ["b", "a"]


def test_whole_phrase_and_head_lookup_for_targets() -> None:
    matcher = AliasMatcher(ENTITIES)
    assert matcher.entity_named("The great dishes") == "e1"  # determiner, modifier and plural
    assert matcher.entity_named("room service") is None  # the whole phrase names nothing
    assert matcher.entity_for_target("room service") == "e8"  # ... but its head does, never the modifier "room"
    assert matcher.entity_for_target("the room key") is None  # the head "key" is not registered
    assert phrase_key("The Front-Desk") == "front desk"


def test_grounding_of_phrases_and_quotes() -> None:
    text = "Our “deluxe” rooms had   two beds… the Wi-Fi dropped."
    assert locate_phrase(text, "deluxe room") is None  # a quote mark between the words: not that phrase
    start, end = locate_phrase(text, "rooms")
    assert text[start:end] == "rooms"
    assert locate_phrase(text, "bed") == (text.index("beds"), text.index("beds") + 4)
    assert locate_phrase(text, "pool") is None
    start, end = locate_quote(text, 'our "deluxe" rooms had two beds')
    assert text[start:end] == "Our “deluxe” rooms had   two beds"
    assert locate_quote(text, "rooms had ... wi-fi dropped") is not None
    assert locate_quote(text, "the pool was dirty") is None


class NeutralScorer:
    name = "neutral"

    def predict(self, items, other_aspects=()):
        scores = {"negative": 0.1, "neutral": 0.8, "positive": 0.1}
        return [SimplePrediction("neutral", "low", 0.8, scores) for _ in items]


@pytest.mark.parametrize(
    "wording",
    ["the dishes", "our waiters", "batteries", "the front-desk staff", "check in", "the knives", "glasses"],
)
def test_every_caller_finds_the_same_entity_on_the_same_wording(wording: str) -> None:
    """The offline extractor (text), the LLM extractor's grounding, balanced retrieval (question) and the gold
    mapping (target) all ask the one matcher, so none can disagree with another about which entity is meant."""
    document = DocumentInput("d1", f"I have to say {wording} disappointed me.", "h")
    (outcome,) = OfflineExtractor(scorer=NeutralScorer()).extract([document], ENTITIES)
    extracted = [o.entity_id for o in outcome.opinions]
    assert len(extracted) == 1, extracted

    profile = OpinionProfile(AliasMatcher(ENTITIES), {})
    question = f"What do people think about {wording}?"
    assert profile.finder.entities_in(question) == extracted

    gold = GoldMapper([RegistryEntry(e.entity_id, e.name, e.aliases) for e in ENTITIES])
    assert [gold.entity_for_target(wording)] == extracted

    answer = OpinionExtraction(
        opinions=[
            OpinionAnswer(
                entity=wording,
                sentiment="negative",
                intensity="low",
                impact="low",
                evidence_type="personal_experience",
                evidence="disappointed me",
            )
        ]
    )
    (opinion,) = to_opinions(answer, document, RegistryIndex(ENTITIES))
    assert [opinion.entity_id] == extracted and opinion.grounded
