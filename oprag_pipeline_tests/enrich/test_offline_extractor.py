"""The offline extractor's own logic — alias matching and how mentions of one entity pool into one opinion — with a
scripted scorer, so each case says exactly which mention carries which polarity (the model is tested on its own in
test_aspect_model.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from oprag_pipeline.enrich.aspect_model import LABELS
from oprag_pipeline.enrich.offline import OfflineExtractor, SimplePrediction
from oprag_pipeline.registry.matching import AliasMatcher
from oprag_pipeline.schema import DocumentInput, RegistryEntity

ROOM = RegistryEntity(entity_id="e1", name="room", aliases=("rooms", "hotel room"))
STAFF = RegistryEntity(entity_id="e2", name="staff", aliases=("front desk staff",))


class ScriptedScorer:
    """Answers by keyword in the mention's sentence: 'spotless' positive, 'filthy' negative, else neutral, each
    with the probability given in `strengths`."""

    name = "scripted"

    def __init__(self, strengths: dict[str, float] | None = None) -> None:
        self.strengths = {"positive": 0.9, "negative": 0.9, "neutral": 0.9, **(strengths or {})}
        self.calls: list[str] = []

    def predict(
        self, items: Sequence[tuple[str, int, int]], other_aspects: Sequence[tuple[str, int, int]] = ()
    ) -> list[SimplePrediction]:
        out = []
        for text, start, _end in items:
            lo = text.rfind(".", 0, start) + 1
            hi = text.find(".", start)
            sentence = text[lo : hi if hi >= 0 else len(text)]
            self.calls.append(sentence.strip())
            label = "positive" if "spotless" in sentence else "negative" if "filthy" in sentence else "neutral"
            strength = self.strengths[label]
            scores = {name: (strength if name == label else (1.0 - strength) / 2) for name in LABELS}
            out.append(SimplePrediction(label, "medium", strength, scores))
        return out


def extract_one(text: str, scorer: ScriptedScorer | None = None) -> dict[str, str]:
    extractor = OfflineExtractor(scorer=scorer or ScriptedScorer())
    outcome = extractor.extract([DocumentInput(doc_id="d1", text=text, content_hash="h")], [ROOM, STAFF])[0]
    return {opinion.entity_id: opinion.sentiment for opinion in outcome.opinions}


def test_a_factual_mention_does_not_outvote_the_opinion() -> None:
    text = "Our room was on the fifth floor next to the lift. The room was spotless."
    assert extract_one(text) == {"e1": "positive"}


def test_only_factual_mentions_stay_neutral() -> None:
    text = "Our room was on the fifth floor. We asked for another room in the morning."
    assert extract_one(text) == {"e1": "neutral"}


def extract_opinions(text: str, review_tone: bool = True) -> dict[str, tuple[str, str, list[str]]]:
    extractor = OfflineExtractor(scorer=ScriptedScorer(), review_tone=review_tone)
    outcome = extractor.extract([DocumentInput(doc_id="d1", text=text, content_hash="h")], [ROOM, STAFF])[0]
    return {o.entity_id: (o.sentiment, o.intensity, o.emotions) for o in outcome.opinions}


def test_an_entity_named_without_an_opinion_takes_the_rest_of_the_review_s_tone() -> None:
    # the room is only named; the rest of the review is plainly positive, then plainly negative
    liked = "Our room was on the fifth floor. We loved this hotel and would happily come back!"
    hated = "Our room was on the fifth floor. It was an awful stay, the worst hotel we have ever booked."
    assert extract_opinions(liked) == {"e1": ("positive", "low", [])}
    assert extract_opinions(hated) == {"e1": ("negative", "low", [])}
    # stated opinions only: the same text leaves the room neutral
    assert extract_opinions(liked, review_tone=False) == {"e1": ("neutral", "low", [])}


def test_the_feeling_stated_after_the_fact_belongs_to_it_until_another_entity_is_named() -> None:
    # two short sentences of feeling after the complaint are both read; the staff's sentence and what follows it
    # are not the room's
    text = "The room was filthy. Such a hassle. I was furious. The staff were spotless. We were delighted."
    opinions = extract_opinions(text)
    assert opinions["e1"] == ("negative", "medium", ["frustration", "anger"])
    assert opinions["e2"][2] == ["delight"]
    # a feeling three sentences on is too far to be read as this one's
    assert extract_opinions("The room was filthy. We went out. It rained. I was furious.")["e1"][2] == []


def test_the_review_tone_ignores_the_entity_s_own_sentences_and_needs_an_evaluative_rest() -> None:
    # both sentences are scored neutral by the scripted scorer, though VADER finds the staff's positive: the staff's
    # tone is read outside their sentence, from a rest that states no opinion, so they stay neutral; the room's
    # rest is the praise of the staff
    text = "The staff were wonderful and we loved them. Our room was on the fifth floor, facing the street."
    assert extract_opinions(text) == {"e1": ("positive", "low", []), "e2": ("neutral", "low", [])}
    # an opinion the model reads is never overruled by the tone of the rest
    text = "We loved this hotel and would happily come back! Sadly the room was filthy."
    assert extract_opinions(text)["e1"][0] == "negative"


class GradedScorer(ScriptedScorer):
    """The scripted answers, each with the intensity level named in the sentence ("mildly", "utterly")."""

    def predict(
        self, items: Sequence[tuple[str, int, int]], other_aspects: Sequence[tuple[str, int, int]] = ()
    ) -> list[SimplePrediction]:
        out = []
        for (text, start, _end), prediction in zip(items, super().predict(items, other_aspects), strict=True):
            sentence = text[text.rfind(".", 0, start) + 1 :].split(".")[0]
            level = "low" if "mildly" in sentence else "high" if "utterly" in sentence else "medium"
            out.append(replace(prediction, intensity=level))
        return out


def graded(text: str, review_tone: bool = True) -> tuple[str, str]:
    extractor = OfflineExtractor(scorer=GradedScorer(), review_tone=review_tone)
    opinion = extractor.extract([DocumentInput(doc_id="d1", text=text, content_hash="h")], [ROOM])[0].opinions[0]
    return opinion.sentiment, opinion.intensity


def test_an_opinion_against_the_rest_of_the_review_is_held_one_level_less_strongly() -> None:
    praise = "We loved this hotel, a wonderful stay with great food."
    complaint = "It was an awful stay, the worst hotel we have ever booked."
    # against the tone of the rest: one level down, never below low
    assert graded(f"{praise} The room was utterly filthy.") == ("negative", "medium")
    assert graded(f"{praise} The room was filthy.") == ("negative", "low")
    assert graded(f"{praise} The room was mildly filthy.") == ("negative", "low")
    # with the tone, or with the tone ignored: as the model reads it
    assert graded(f"{complaint} The room was utterly filthy.") == ("negative", "high")
    assert graded(f"{praise} The room was utterly filthy.", review_tone=False) == ("negative", "high")
    assert graded(f"{complaint} The room was utterly spotless.") == ("positive", "medium")


def test_an_entity_praised_in_one_sentence_and_faulted_in_another_is_held_one_level_less_strongly() -> None:
    # no tone to read (every sentence names the room): the mixed verdict alone lowers the level, whichever side
    # the pooled probabilities take, with the tone read or not
    mixed = "The room was utterly spotless. The room was filthy and utterly cramped."
    for review_tone in (True, False):
        assert graded(mixed, review_tone=review_tone)[1] == "medium"
        assert graded("The room was utterly spotless. The room was utterly spotless again.", review_tone)[1] == "high"
    # a factual mention beside the opinion is no second side
    assert graded("The room was utterly spotless. Our room was on the fifth floor.") == ("positive", "high")


def test_the_tone_setting_is_part_of_the_extractor_version() -> None:
    scorer = ScriptedScorer()
    assert OfflineExtractor(scorer, review_tone=True).version != OfflineExtractor(scorer, review_tone=False).version


def test_opposite_opinions_pool_by_probability() -> None:
    text = "The room we had at first was spotless. The room they moved us to was filthy."
    assert extract_one(text, ScriptedScorer({"positive": 0.55, "negative": 0.95})) == {"e1": "negative"}
    assert extract_one(text, ScriptedScorer({"positive": 0.95, "negative": 0.55})) == {"e1": "positive"}


def test_each_entity_gets_its_own_opinion_and_sentence() -> None:
    scorer = ScriptedScorer()
    text = "The front desk staff were filthy-mouthed. The room was spotless."
    assert extract_one(text, scorer) == {"e1": "positive", "e2": "negative"}
    assert len(scorer.calls) == 2


def test_alias_matcher_prefers_the_longest_alias_and_accepts_plurals() -> None:
    matcher = AliasMatcher([ROOM, STAFF])
    text = "The hotel rooms were fine; the front desk staff less so, unlike other staff."
    found = [(entity_id, text[start:end]) for entity_id, start, end in matcher.mentions(text)]
    assert found == [("e1", "hotel rooms"), ("e2", "front desk staff"), ("e2", "staff")]


CLEANLINESS = RegistryEntity(entity_id="e3", name="cleanliness", aliases=("clean", "spotless", "dirty", "filthy"))
NOISE = RegistryEntity(entity_id="e4", name="noise", aliases=("noisy", "quiet", "loud"))


def test_a_quality_named_by_its_adjective_takes_the_adjective_polarity() -> None:
    """The scripted scorer would call these sentences neutral: the polarity comes from the word, flipped under
    negation, mild under a hedged negation, and the scorer is never asked about the adjective itself."""
    scorer = ScriptedScorer()
    extractor = OfflineExtractor(scorer=scorer)
    texts = {
        "d1": "Everything was immaculate and clean. Our room faced the park.",
        "d2": "It was not very quiet at night.",
        "d3": "Staff were helpful, and the corridors were never dirty.",
        "d4": "We stayed in May. The street was not too noisy.",
    }
    documents = [DocumentInput(doc_id=d, text=t, content_hash=d) for d, t in texts.items()]
    outcomes = extractor.extract(documents, [ROOM, STAFF, CLEANLINESS, NOISE])
    got = {(o.doc_id, op.entity_id): (op.sentiment, op.intensity) for o in outcomes for op in o.opinions}
    assert got[("d1", "e3")][0] == "positive"
    # the scorer still answers for the room; the rest of the review's praise gives it a weak positive stance
    assert got[("d1", "e1")] == ("positive", "low")
    assert got[("d2", "e4")] == ("negative", "low")
    assert got[("d3", "e3")][0] == "positive"
    assert got[("d4", "e4")] == ("positive", "low")
    assert all("clean" not in call and "noisy" not in call and "quiet" not in call for call in scorer.calls)
    assert len(scorer.calls) == 2  # the room in d1 and the staff in d3


def test_the_model_learns_which_mentions_share_a_clause() -> None:
    """Adjective mentions are read off the word, not scored, but they are aspects of the same text: the scorer is
    given them as `other_aspects`, so the aspect model knows "room" is not alone in "the room was clean"."""
    seen: list[list[tuple[str, int, int]]] = []

    class Recording(ScriptedScorer):
        def predict(
            self, items: Sequence[tuple[str, int, int]], other_aspects: Sequence[tuple[str, int, int]] = ()
        ) -> list[SimplePrediction]:
            seen.append(list(other_aspects))
            return super().predict(items, other_aspects)

    text = "The room was clean and the staff were kind."
    extractor = OfflineExtractor(scorer=Recording())
    extractor.extract([DocumentInput(doc_id="d1", text=text, content_hash="h")], [ROOM, STAFF, CLEANLINESS])
    assert seen == [[(text, text.index("clean"), text.index("clean") + len("clean"))]]


def test_the_aspect_model_ignores_lexicon_evidence_about_a_neighbour() -> None:
    """End to end with the committed model: the clause's praise is about the dessert; the set menu, scored with
    it, is not lifted off neutral by the lexicon tie-break, while on its own in a clause it would be.

    Under equal priors, so that the tie-break alone is measured: the review prior (`review_prior_gate`) reads the
    whole sentence and does call the set menu positive here, the cost it pays on MAMS-style sentences for the
    product-review neighbours that share their sentence's praise (model card, "Runtime behaviour")."""
    from oprag_pipeline.enrich.aspect_model import AspectSentimentModel, alone_in_clause, as_item

    model = AspectSentimentModel.load()
    model.target_prior = None
    text = "We ordered the set menu and the dessert was wonderful."
    menu = (text, text.index("set menu"), text.index("set menu") + len("set menu"))
    dessert = (text, text.index("dessert"), text.index("dessert") + len("dessert"))
    assert alone_in_clause([as_item(menu)], others=[dessert]) == [False]
    with_neighbour = model.predict([menu], other_aspects=[dessert])[0]
    assert with_neighbour.sentiment == "neutral"
    alone = model.predict([menu])[0]  # as if the dessert were no aspect: the tie-break swaps neutral and positive
    assert alone.sentiment == "positive"
    assert alone.scores["positive"] == with_neighbour.scores["neutral"]


def test_the_document_tone_setting_reaches_the_offline_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    from oprag_pipeline.enrich.factory import build_extractor
    from oprag_pipeline.resources import ExtractorResource

    monkeypatch.delenv("OPRAG_DOCUMENT_TONE", raising=False)
    assert build_extractor("offline").review_tone is True  # read by default
    assert ExtractorResource(kind="offline").build().review_tone is True
    monkeypatch.setenv("OPRAG_DOCUMENT_TONE", "ignore")
    assert ExtractorResource(kind="offline").build().review_tone is False
    assert build_extractor("offline").review_tone is True  # the library reads no environment
    assert ExtractorResource(kind="offline", document_tone="read").build().review_tone is True
    with pytest.raises(ValueError, match="OPRAG_DOCUMENT_TONE must be one of read, ignore"):
        build_extractor("offline", document_tone="sometimes")


def test_the_llm_teachers_offline_student_reads_the_tone_as_the_run_configures_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With OPRAG_ADAPT=llm the offline student extracts the corpus: the resource's field reaches it, over the
    environment, as it reaches the offline extractor."""
    from oprag_pipeline.enrich.ratings import _student
    from oprag_pipeline.resources import ExtractorResource

    monkeypatch.setenv("OPRAG_DOCUMENT_TONE", "read")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + "0" * 24)
    teacher = ExtractorResource(kind="anthropic", adapt="llm", document_tone="ignore").build()
    assert _student(teacher, "llm").review_tone is False
    assert _student(ExtractorResource(kind="anthropic", adapt="llm").build(), "llm").review_tone is True
    with pytest.raises(ValueError, match="OPRAG_DOCUMENT_TONE must be one of read, ignore"):
        ExtractorResource(kind="anthropic", document_tone="sometimes").build()
