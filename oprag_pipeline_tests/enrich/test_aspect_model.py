"""The offline aspect-sentiment model and its cues, on sentences written for these tests.

Why these cases: they are where lexicon scoring fails (contrast inside one sentence, negation, implied negatives,
comparisons with the past), so they check that the committed model, not a word list, is doing the work. They run
from the committed files alone; the MAMS test-split check, which reads MAMS with the trainer's reader, is in
``oprag_pipeline_tests/training/test_train_aspect_model.py``.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from oprag_pipeline.enrich.aspect_model import (
    LABELS,
    MODEL_DIR,
    MODEL_FILE,
    REVIEW_TARGET_PRIOR,
    AspectItem,
    AspectPrediction,
    AspectSentimentModel,
    sentence_window,
)
from oprag_pipeline.enrich.cues import emotions, evidence_type, intensity_features, intensity_score


@pytest.fixture(scope="module")
def model() -> AspectSentimentModel:
    return AspectSentimentModel.load()


def span(text: str, term: str, nth: int = 0) -> tuple[str, int, int]:
    """(text, start, end) of the nth occurrence of ``term``."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(term, start + 1)
    return text, start, start + len(term)


def sentiments(model: AspectSentimentModel, items: list[tuple[str, int, int]]) -> list[str]:
    return [p.sentiment for p in model.predict(items)]


def test_committed_model_files_exist() -> None:
    for name in (MODEL_FILE, "tokenizer.json", "model_meta.json", "MODEL_CARD.md"):
        assert (MODEL_DIR / name).is_file(), name
    size_mb = (MODEL_DIR / MODEL_FILE).stat().st_size / 1e6
    assert size_mb < 40, f"model is {size_mb:.0f} MB; the committed artifact must stay small"


def test_runtime_needs_no_torch() -> None:
    """Import and predict with torch made unimportable: inference is onnxruntime + tokenizers only."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from oprag_pipeline.enrich.aspect_model import AspectSentimentModel\n"
        "m = AspectSentimentModel.load()\n"
        "p = m.predict([('The soup was delicious.', 4, 8)])[0]\n"
        "assert p.sentiment == 'positive', p\n"
        "assert 'torch' not in sys.modules or sys.modules['torch'] is None\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "ok" in res.stdout


def test_contrast_in_one_sentence(model: AspectSentimentModel) -> None:
    text = "The staff were lovely but the room was filthy."
    assert sentiments(model, [span(text, "staff"), span(text, "room")]) == ["positive", "negative"]
    text = "Great coffee, shame about the pastries, which tasted a week old."
    assert sentiments(model, [span(text, "coffee"), span(text, "pastries")]) == ["positive", "negative"]


def test_negation(model: AspectSentimentModel) -> None:
    assert sentiments(model, [span("Honestly, the bathroom was not clean at all.", "bathroom")]) == ["negative"]
    assert sentiments(model, [span("The shower was never warm, not once in four days.", "shower")]) == ["negative"]


def test_implied_negative(model: AspectSentimentModel) -> None:
    text = "We waited 45 minutes for check-in and nobody apologised."
    assert sentiments(model, [span(text, "check-in")]) == ["negative"]


def test_comparison_with_the_past(model: AspectSentimentModel) -> None:
    text = "The breakfast used to be so much better; this year it was a sad affair."
    assert sentiments(model, [span(text, "breakfast")]) == ["negative"]


def test_neutral_mention(model: AspectSentimentModel) -> None:
    text = "We asked the waiter for the menu and ordered two pizzas, which were superb."
    got = sentiments(model, [span(text, "menu"), span(text, "pizzas")])
    assert got == ["neutral", "positive"]


def test_category_aspect_and_item_forms(model: AspectSentimentModel) -> None:
    text = "The waiters ignored us for half an hour, though the pasta was excellent."
    by_cat = model.predict([(text, "staff"), AspectItem(text, category="food")])
    assert [p.sentiment for p in by_cat] == ["negative", "positive"]


def test_prediction_fields_and_sigma(model: AspectSentimentModel) -> None:
    text = "The view from our balcony was absolutely breathtaking!"
    (pred,) = model.predict([span(text, "view")])
    assert isinstance(pred, AspectPrediction)
    assert set(pred.scores) == set(LABELS)
    assert abs(sum(pred.scores.values()) - 1.0) < 1e-4
    assert pred.confidence == max(pred.scores.values())
    assert pred.sentiment == "positive" and pred.intensity == "high"
    assert pred.sentiment_intensity == 30


def test_intensity_orders_mild_and_strong(model: AspectSentimentModel) -> None:
    mild = "The room was decent, a bit small but fine."
    strong = "The room was absolutely perfect, the best we have ever had!"
    p_mild, p_strong = model.predict([span(mild, "room"), span(strong, "room")])
    assert p_mild.sentiment == p_strong.sentiment == "positive"
    assert p_mild.intensity_score < p_strong.intensity_score
    assert p_mild.intensity in {"low", "medium"} and p_strong.intensity == "high"


def test_batching_and_cache_are_consistent(model: AspectSentimentModel) -> None:
    text = "Parking was cheap and easy, but the wifi kept dropping."
    items = [span(text, "Parking"), span(text, "wifi")] * 20
    model._cache.clear()
    first = model.logits(items)
    again = model.logits(items)
    np.testing.assert_allclose(first, again, rtol=1e-5)
    single = np.vstack([model.logits([it]) for it in items[:2]])
    np.testing.assert_allclose(first[:2], single, atol=1e-4)


def test_a_prediction_does_not_depend_on_what_it_is_scored_with(model: AspectSentimentModel) -> None:
    """The int8 layers quantize with one scale per input tensor: scored in a padded batch, an item's logits moved
    with its companions. Each item is scored alone, so the same review gets the same label in every run."""
    item = span("The room was small but the view was great.", "room")
    companions = [
        span("Breakfast was cold and the coffee was awful, really terrible!!!", "coffee"),
        span("The staff at the front desk were incredibly helpful with our luggage and our tours.", "staff"),
    ]
    model._cache.clear()
    alone = model.logits([item])[0]
    model._cache.clear()
    together = model.logits([*companions, item, *companions])[2]
    np.testing.assert_array_equal(alone, together)


def test_sentence_window_keeps_short_neighbours() -> None:
    text = "Loved it. The pool was freezing. Never again."
    lo, hi = sentence_window(text, text.index("pool"), text.index("pool") + 4)
    assert "pool" in text[lo:hi]
    lo, hi = sentence_window(text, text.index("Loved"), text.index("Loved") + 5)
    assert text[lo:hi].startswith("Loved it.") and "pool" in text[lo:hi]  # a 2-word sentence gets its neighbour


def test_emotions_with_negation_scope() -> None:
    assert emotions("I was so disappointed with the breakfast.") == ["disappointment"]
    assert "disappointment" not in emotions("I was not disappointed with the breakfast.")
    assert emotions("We can't wait to come back next summer.") == ["hope"]
    assert "anger" in emotions("Absolutely unacceptable, never again.")
    assert "relief" in emotions("Thankfully the manager sorted it out.")
    assert emotions("Oh well, what can you do.") == ["resignation"]
    assert emotions("The room was on the third floor.") == []


def test_evidence_type() -> None:
    assert evidence_type("A friend told me the spa is overpriced.") == "anecdotal"
    assert evidence_type("Check-in took 45 minutes and cost us 30 dollars in parking.") == "data_driven"
    assert evidence_type("We loved our room.") == "personal_experience"


def test_intensity_cues_move_the_score() -> None:
    plain = intensity_score(0.9, intensity_features("the room was good"))
    strong = intensity_score(0.9, intensity_features("the room was absolutely amazing!!"))
    soft = intensity_score(0.9, intensity_features("the room was a bit small but okay"))
    assert soft < plain < strong


def test_implied_polarity_patterns() -> None:
    from oprag_pipeline.enrich.cues import implied_polarity

    assert implied_polarity("we waited 50 minutes at the front desk") == "negative"
    assert implied_polarity("check-in took over an hour") == "negative"
    assert implied_polarity("we had our keys within 3 minutes") == "positive"
    assert implied_polarity("the pool used to be much nicer") == "negative"
    assert implied_polarity("the breakfast has improved a lot since last year") == "positive"
    assert implied_polarity("we spent two days in the old town") is None
    assert implied_polarity("the room was on the fifth floor") is None


def test_predicate_polarity_patterns() -> None:
    from oprag_pipeline.enrich.cues import predicate_polarity

    def of(text: str, aspect: str) -> str | None:
        return predicate_polarity(text, text.index(aspect) + len(aspect))

    assert of("The rooms were spotless and bright.", "rooms") == "positive"
    assert of("Staff were always very courteous.", "Staff") == "positive"
    assert of("The staff weren't very helpful.", "staff") == "negative"
    assert of("The street was not noisy at all.", "street") == "positive"
    assert of("The room was on the fifth floor.", "room") is None
    assert of("The room was cheap.", "room") is None  # no fixed polarity: left to the model
    assert of("The rooms, which were spotless, faced the sea.", "rooms") is None  # not a predicate of the aspect


def test_contrast_polarity_patterns() -> None:
    from oprag_pipeline.enrich.cues import contrast_polarity

    def of(text: str, aspect: str) -> str | None:
        start = text.index(aspect)
        return contrast_polarity(text, start, start + len(aspect))

    # two predicates of the aspect joined by "but": the second decides, read by VADER
    assert of("The cabin was small but very clean.", "cabin") == "positive"
    assert of("The guide was friendly but impatient and rude.", "guide") == "negative"
    assert of("The manual is short but perfectly clear.", "manual") == "positive"
    assert of("A cramped but comfortable seat.", "seat") == "positive"
    assert of("The charger was cheap but it is excellent.", "charger") == "positive"
    # not a second predicate of the aspect: a new subject, an additive "but also", a second part that is not
    # evaluative, or no "but" at all
    assert of("The cabin was small, but the bed was comfortable.", "cabin") is None
    assert of("The guide was friendly but also told us about the town.", "guide") is None
    assert of("The cabin was small but had two windows.", "cabin") is None
    assert of("The ending was slow, but still a good novel.", "ending") is None
    assert of("The cabin was clean and bright.", "cabin") is None


def test_the_second_of_two_contrasted_predicates_decides(model: AspectSentimentModel) -> None:
    for text, aspect, expected in [
        ("The cabin was small but very clean.", "cabin", "positive"),
        ("The guide was pleasant but terribly disorganised.", "guide", "negative"),
    ]:
        assert model.predict([span(text, aspect)])[0].sentiment == expected, text


def test_an_evaluative_predicate_decides(model: AspectSentimentModel) -> None:
    # the committed network reads "im-maculate" and "spot-less" as negative; the predicate rule overrules it
    cases = [("The rooms were immaculate.", "rooms"), ("The rooms were spotless with a full bar.", "rooms")]
    for text, aspect in [*cases, ("The room was quiet.", "room")]:
        assert model.predict([span(text, aspect)])[0].sentiment == "positive", text


def test_rules_can_be_switched_off(model: AspectSentimentModel) -> None:
    text = "We waited 45 minutes for check-in and nobody apologised."
    model.use_rules = False
    try:
        plain = model.predict([span(text, "check-in")])[0]
    finally:
        model.use_rules = True
    ruled = model.predict([span(text, "check-in")])[0]
    assert ruled.sentiment == "negative"
    assert plain.scores["negative"] < ruled.scores["negative"]


# ------------------------------------------------------------------------------------ calibration out of domain
# Invented sentences from domains the network never saw (apps, clothing, books, phones, hotels).
EXPLICIT_OPINIONS = [
    ("I would recommend the app to anyone.", "app", "positive"),
    ("The material pills after one wash.", "material", "negative"),
    ("The parking is a joke.", "parking", "negative"),
    ("The battery life on this phone is fantastic.", "battery life", "positive"),
    ("Honestly the plot of this novel is dull and predictable.", "plot", "negative"),
    ("The sleeves are too short for me.", "sleeves", "negative"),
]
FACTUAL_STATEMENTS = [
    ("The book has about three hundred pages.", "book"),
    ("The charger comes in a separate box.", "charger"),
    ("We took the lift to the third floor.", "lift"),
    ("I ordered the phone on Tuesday.", "phone"),
]


def test_explicit_opinions_out_of_domain_are_not_neutral(model: AspectSentimentModel) -> None:
    items = [span(text, aspect) for text, aspect, _ in EXPLICIT_OPINIONS]
    assert sentiments(model, items) == [gold for _, _, gold in EXPLICIT_OPINIONS]


def test_the_calibration_is_what_commits_them(model: AspectSentimentModel) -> None:
    """The first three fixtures are ones the network as trained on MAMS calls neutral: switching the calibration
    off must bring the neutral answers back, so the test above measures the calibration, not the network."""
    items = [span(text, aspect) for text, aspect, _ in EXPLICIT_OPINIONS[:3]]
    model.correct_prior, model.use_lexicon = False, False
    try:
        plain = sentiments(model, items)
    finally:
        model.correct_prior, model.use_lexicon = True, True
    assert plain.count("neutral") >= 2, plain


def test_factual_statements_stay_neutral(model: AspectSentimentModel) -> None:
    assert sentiments(model, [span(text, aspect) for text, aspect in FACTUAL_STATEMENTS]) == ["neutral"] * 4


def test_a_clause_about_another_aspect_does_not_lend_its_opinion(model: AspectSentimentModel) -> None:
    """MAMS's neutrals: the clause's praise belongs to a neighbour. With the neighbour scored in the same call the
    lexicon tie-break stays out; the neighbour itself gets the praise."""
    text = "We ordered the set menu and the dessert was wonderful."
    menu, dessert = model.predict([span(text, "set menu"), span(text, "dessert")])
    assert dessert.sentiment == "positive"
    assert menu.sentiment != "negative"
    from oprag_pipeline.enrich.aspect_model import alone_in_clause

    items = [AspectItem(*span(text, "set menu")), AspectItem(*span(text, "dessert"))]
    assert alone_in_clause(items) == [False, False]
    assert alone_in_clause(items[:1]) == [True]
    assert alone_in_clause(items[:1], others=[span(text, "dessert")]) == [False]


def test_prior_correction_is_label_shift() -> None:
    from oprag_pipeline.enrich.aspect_model import prior_corrected_probabilities

    logits = np.array([[0.2, 1.0, 0.4], [2.0, 0.0, -1.0]])
    plain = prior_corrected_probabilities(logits, temperature=2.0)
    np.testing.assert_allclose(plain.sum(axis=1), 1.0)
    uniform = prior_corrected_probabilities(logits, temperature=2.0, train_prior=[1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(plain, uniform, atol=1e-12)  # equal training shares change nothing
    heavy = prior_corrected_probabilities(logits, temperature=2.0, train_prior=[0.25, 0.5, 0.25])
    neutral = LABELS.index("neutral")
    assert (heavy[:, neutral] < plain[:, neutral]).all()  # a neutral-heavy training set is discounted
    # the ratio of the two polar classes is untouched when their training shares are equal
    pos, neg = LABELS.index("positive"), LABELS.index("negative")
    np.testing.assert_allclose(heavy[:, pos] / heavy[:, neg], plain[:, pos] / plain[:, neg])


def test_lexicon_tiebreak_only_swaps_when_both_agree() -> None:
    from oprag_pipeline.enrich.aspect_model import lexicon_tiebreak

    neg, neu, pos = (LABELS.index(x) for x in ("negative", "neutral", "positive"))
    leaning_pos = np.zeros(3)
    leaning_pos[[neg, neu, pos]] = [0.1, 0.6, 0.3]
    swapped = lexicon_tiebreak(leaning_pos, 0.6)
    assert swapped[pos] == 0.6 and swapped[neu] == 0.3 and swapped[neg] == 0.1
    np.testing.assert_array_equal(lexicon_tiebreak(leaning_pos, -0.6), leaning_pos)  # the network leans the other way
    np.testing.assert_array_equal(lexicon_tiebreak(leaning_pos, 0.01), leaning_pos)  # below VADER's threshold
    committed = np.zeros(3)
    committed[[neg, neu, pos]] = [0.5, 0.3, 0.2]
    np.testing.assert_array_equal(lexicon_tiebreak(committed, 0.9), committed)  # the network already committed


def test_review_prior_moves_off_neutral_only_with_the_sentences_support() -> None:
    from oprag_pipeline.enrich.aspect_model import prior_corrected_probabilities, review_prior_gate

    neg, neu, pos = (LABELS.index(x) for x in ("negative", "neutral", "positive"))
    logits = np.zeros(3)
    logits[[neg, neu, pos]] = [0.0, 1.6, 0.9]  # a near call the network gives to neutral
    train = [0.26, 0.44, 0.30]
    equal = prior_corrected_probabilities(logits, 1.0, train)
    review = prior_corrected_probabilities(logits, 1.0, train, REVIEW_TARGET_PRIOR)
    assert int(np.argmax(equal)) == neu and int(np.argmax(review)) == pos  # the smaller neutral prior tips it
    assert review[pos] / review[neg] == pytest.approx(equal[pos] / equal[neg])  # the prior takes no side
    praised = review_prior_gate(review, equal, "Honestly a lovely little thing to own.")
    np.testing.assert_array_equal(praised, review)
    for sentence in ("It arrived on a Monday in a brown box.", "What a terrible, disappointing thing."):
        np.testing.assert_array_equal(review_prior_gate(review, equal, sentence), equal)  # no support, or the other way
    committed = prior_corrected_probabilities(np.array([0.0, 0.0, 2.0])[[neg, neu, pos]], 1.0, train)
    np.testing.assert_array_equal(review_prior_gate(committed, committed, "A box."), committed)


def test_predictions_do_not_depend_on_other_documents(model: AspectSentimentModel) -> None:
    """Calibrated predictions (prior, rules, lexicon) are the same whether a document is scored alone or among
    others, and in any order: companions only count within the same text."""
    docs = [
        "The parking is a joke. The lobby was grand but the room was tiny.",
        "I would recommend the app to anyone, though the login screen is slow.",
        "The sleeves are too short for me and the zip feels cheap.",
    ]
    terms = [("parking", "lobby", "room"), ("app", "login screen"), ("sleeves", "zip")]
    per_doc = [[span(d, t) for t in ts] for d, ts in zip(docs, terms, strict=True)]
    model._cache.clear()
    alone = [[(p.sentiment, p.scores) for p in model.predict(items)] for items in per_doc]
    model._cache.clear()
    mixed = [it for items in reversed(per_doc) for it in items]
    together = dict(zip(mixed, [(p.sentiment, p.scores) for p in model.predict(mixed)], strict=True))
    for items, expected in zip(per_doc, alone, strict=True):
        assert [together[it] for it in items] == expected


def test_label_bias_learns_a_domain_class_share() -> None:
    """A domain where the network's neutral answers are mostly positive in truth: the fitted offsets lower neutral
    and raise positive; no labels leave the model as it is."""
    from oprag_pipeline.enrich.calibration import fit_label_bias

    neg, neu, pos = (LABELS.index(x) for x in ("negative", "neutral", "positive"))
    probs = np.zeros((200, 3))
    probs[:, [neg, neu, pos]] = [0.1, 0.55, 0.35]
    labels = [pos] * 160 + [neu] * 20 + [neg] * 20
    bias = fit_label_bias(probs, labels)
    assert bias[pos] > 0 > bias[neu]
    assert abs(bias.sum()) < 1e-9
    np.testing.assert_array_equal(fit_label_bias(probs, []), np.zeros(3))


def test_an_adapted_model_changes_labels_and_the_extractor_version() -> None:
    """Adaptation end to end on invented text: offsets fitted on a small labelled sample change the student's
    answers and the extractor version, so the opinion cache re-extracts what the adapted model would label."""
    from oprag_pipeline.enrich.calibration import fit_label_bias
    from oprag_pipeline.enrich.offline import OfflineExtractor

    student = AspectSentimentModel.load()
    base_version = OfflineExtractor(scorer=student).version
    sample = [span(text, aspect) for text, aspect in FACTUAL_STATEMENTS[:3]]
    target = span(*FACTUAL_STATEMENTS[3])
    before = student.predict([target])[0]
    # the teacher says such mentions are praised in this domain
    student.label_bias = fit_label_bias(student.probabilities(sample * 40), [LABELS.index("positive")] * 120)
    try:
        after = student.predict([target])[0]
        adapted_version = OfflineExtractor(scorer=student).version
    finally:
        student.label_bias = None
    assert before.sentiment == "neutral" and after.sentiment == "positive"
    assert adapted_version != base_version and adapted_version.startswith(base_version)


def test_rating_weak_labels_read_the_scale_by_its_ends() -> None:
    from oprag_pipeline.enrich.calibration import rating_weak_label

    assert [LABELS[rating_weak_label(r)] for r in (1, 2, 3, 4, 5)] == [
        "negative",
        "negative",
        "neutral",
        "positive",
        "positive",
    ]
    assert LABELS[rating_weak_label(9, scale_max=10)] == "positive"
    assert LABELS[rating_weak_label(5.5, scale_max=10)] == "neutral"
    assert LABELS[rating_weak_label(2, scale_max=10)] == "negative"


# ------------------------------------------------------------------------------------------------ self-training
def test_self_training_keeps_only_answers_the_lexicon_agrees_with() -> None:
    from oprag_pipeline.enrich.calibration import lexicon_agreement_label

    neg, neu, pos = (LABELS.index(x) for x in ("negative", "neutral", "positive"))
    assert lexicon_agreement_label("positive", 0.6, 0.6) == pos
    assert lexicon_agreement_label("negative", -0.4, 0.2) == neg  # the clause decides, not the sentence
    assert lexicon_agreement_label("positive", -0.4, 0.5) is None  # the clause reads the other way
    assert lexicon_agreement_label("positive", 0.0, 0.5) is None  # the clause is not evaluative
    assert lexicon_agreement_label("neutral", 0.0, 0.0) == neu  # a plain statement of fact
    assert lexicon_agreement_label("neutral", 0.0, -0.7) is None  # the sentence is evaluative: maybe about it
    assert lexicon_agreement_label("neutral", 0.3, 0.3) is None


def test_a_residual_head_without_bias_moves_no_class_at_the_sample_mean() -> None:
    """Self-training fits the head with its bias held at zero: on a sample whose labels are mostly one class, the
    head still learns from the features, but its average logit shift over the sample is the same for every class
    (no class is favoured as such); with the bias learnt, the majority class is."""
    from oprag_pipeline.enrich.calibration import fit_residual_head

    rng = np.random.default_rng(3)
    n, pos = 300, LABELS.index("positive")
    features = rng.normal(size=(n, 6))
    probs = np.full((n, 3), 1 / 3)
    labels = np.where(features[:, 0] > -0.5, pos, LABELS.index("negative"))  # about 70% positive

    def mean_shift(w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (features @ w + b).mean(axis=0)

    w_fixed, b_fixed = fit_residual_head(features, probs, labels, learn_bias=False)
    w_learnt, b_learnt = fit_residual_head(features, probs, labels)
    assert np.ptp(mean_shift(w_fixed, b_fixed)) < 1e-9
    shift = mean_shift(w_learnt, b_learnt)
    assert int(np.argmax(shift)) == pos and np.ptp(shift) > 0.1
    # both read the informative feature the same way: it raises positive against negative
    for w in (w_fixed, w_learnt):
        assert w[0, pos] - w[0, LABELS.index("negative")] > 0.1


def test_an_adapted_model_reads_intensity_on_the_shipped_scale(model: AspectSentimentModel) -> None:
    """The domain's adaptation decides the polarity; intensity is read on the unadapted probabilities, the scale
    the intensity cuts were set on, so a head that sharpens every answer does not make every opinion "high"."""
    items = [span(text, aspect) for text, aspect, gold in EXPLICIT_OPINIONS if gold == "positive"]
    items += [span(text, aspect) for text, aspect in FACTUAL_STATEMENTS]
    before = model.predict(items)
    bias = np.zeros(3)
    bias[LABELS.index("positive")] = 3.0
    model.label_bias = bias - bias.mean()
    try:
        after = model.predict(items)
        model.intensity_on_base = False
        sharpened = model.predict(items)
    finally:
        model.label_bias = None
        model.intensity_on_base = True
    assert all(a.sentiment == "positive" for a in after)  # the offsets moved the facts too
    assert [a.scores for a in after] != [b.scores for b in before]
    for b, a in zip(before, after, strict=True):
        if b.sentiment == "positive":
            assert a.intensity_score == b.intensity_score and a.intensity == b.intensity
    assert any(
        s.intensity_score > b.intensity_score
        for s, b in zip(sharpened, before, strict=True)
        if b.sentiment == "positive"
    )
