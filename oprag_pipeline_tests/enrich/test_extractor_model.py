"""The multi-domain extractor model (``enrich/model_multidomain``, built by ``oprag_training.train_extractor``): what
its metadata says it was built from, how it reads plain opinions, its emotion and strength heads, determinism; and
that a changed model re-extracts the cached documents.

The sentences are written for these tests (none comes from a corpus)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from oprag_pipeline.enrich import aspect_model, offline
from oprag_pipeline.enrich.aspect_model import MODEL_DIR, AspectSentimentModel
from oprag_pipeline.enrich.offline import OfflineExtractor
from oprag_pipeline.schema import ExtractionOutcome


def span(text: str, target: str) -> tuple[str, int, int]:
    start = text.index(target)
    return text, start, start + len(target)


MULTIDOMAIN = MODEL_DIR.parent / "model_multidomain"


@pytest.fixture(scope="module")
def model() -> AspectSentimentModel:
    return AspectSentimentModel.load(MULTIDOMAIN, threads=2)


def test_metadata_names_every_training_set_with_its_licence_and_role() -> None:
    meta = json.loads((MULTIDOMAIN / "model_meta.json").read_text(encoding="utf-8"))
    data = meta["data"]
    assert set(data) == {"mams", "dmaste", "tsa_md", "newsmtsc", "goemotions", "vader"}
    for entry in data.values():
        assert entry["size"] > 0 and entry["role"] in {"polarity", "emotions", "strength"}
        assert "Apache-2.0" in entry["source"] or "MIT" in entry["source"]
    # the out-of-domain check stays unseen, and what the heads were trained on is recorded
    assert meta["unseen"]["dmaste"] == ["book", "grocery", "pet", "toy"]
    assert meta["heads"]["emotions_without_training_data"] == ["resignation"]
    cuts = meta["heads"]["strength_cuts"]
    assert 0 < cuts["medium_from"] < cuts["high_from"] < 1


EXPLICIT = [
    (span("The battery lasts all day and charges in an hour.", "battery"), "positive"),
    (span("Our waiter was attentive and friendly.", "waiter"), "positive"),
    (span("I love how light this stroller is.", "stroller"), "positive"),
    (span("The instructions were clear and easy to follow.", "instructions"), "positive"),
    (span("The zipper broke after two days.", "zipper"), "negative"),
    (span("The support agent never called me back, which was infuriating.", "support agent"), "negative"),
    (span("This cheese tasted stale and bitter.", "cheese"), "negative"),
    (span("The app crashes every time I open it.", "app"), "negative"),
]


def test_explicit_opinions_are_not_called_neutral(model: AspectSentimentModel) -> None:
    predictions = model.predict([item for item, _ in EXPLICIT])
    assert [p.sentiment for p in predictions] == [label for _, label in EXPLICIT]


def test_emotion_head_reads_the_feeling_of_the_window(model: AspectSentimentModel) -> None:
    furious = span("I was furious: the front desk lost our booking twice.", "front desk")
    grateful = span("So thankful for the nurse who stayed late to help us.", "nurse")
    worried = span("I'm really nervous the landlord will keep the deposit.", "landlord")
    plain = span("The lid is made of plastic.", "lid")
    probs, _ = model.heads([furious, grateful, worried, plain])
    at = {e: i for i, e in enumerate(model.emotion_labels)}
    assert max(probs[0][at["anger"]], probs[0][at["frustration"]]) >= 0.5
    assert max(probs[1][at["trust"]], probs[1][at["delight"]]) >= 0.5
    # anxiety is read by the cue lexicon: the head measured worse than the cues on GoEmotions test (the card)
    assert model.emotion_sources["anxiety"] == "cues" and probs[2][at["anxiety"]] > probs[3][at["anxiety"]]
    assert probs[3].max() < 0.5
    # the untrained emotion is never answered by the head
    predicted = model.predict([furious, grateful, worried])
    assert all("resignation" not in p.emotion_scores for p in predicted)


def test_strength_orders_mild_and_strong_praise(model: AspectSentimentModel) -> None:
    strong = span("The view from the balcony was absolutely breathtaking, the best I have ever seen!", "view")
    mild = span("The view from the balcony was fine.", "view")
    awful = span("The view from the balcony was a horrible, depressing wall of concrete.", "view")
    _, strength = model.heads([strong, mild, awful])
    assert strength[0] > strength[1] > strength[2]
    # the default level is the cue rule's (measured better against per-aspect stars); the head's when asked for:
    # strong praise and strong blame are "high" on it
    assert model.intensity_source == "cues"
    strength_levels = AspectSentimentModel.load(MULTIDOMAIN, threads=1)
    strength_levels.intensity_source = "strength"
    assert [p.intensity for p in strength_levels.predict([strong, awful])] == ["high", "high"]


def test_scores_do_not_depend_on_the_companions_or_the_order(model: AspectSentimentModel) -> None:
    items = [item for item, _ in EXPLICIT]
    first = model.predict(items)
    model._cache.clear()
    again = list(reversed(model.predict(list(reversed(items)))))
    alone = [model.predict([item])[0] for item in items]
    for a, b, c in zip(first, again, alone, strict=True):
        assert a == b == c


def test_a_changed_model_is_a_new_extractor_version_and_the_cache_re_extracts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oprag_pipeline.enrich import store
    from oprag_pipeline.warehouse import ensure_tables

    copy = tmp_path / "model"
    shutil.copytree(MODEL_DIR, copy)
    monkeypatch.setattr(aspect_model, "MODEL_DIR", copy)
    offline._model_fingerprint.cache_clear()
    before = OfflineExtractor(scorer=AspectSentimentModel.load(copy, threads=1)).version

    conn = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    ensure_tables(conn, "raw_documents")
    store.ensure_tables(conn)
    conn.execute(
        """INSERT INTO raw_documents (domain, doc_id, text, content_hash, source_file, source_row, first_ingest_id,
           changed_ingest_id) VALUES ('d', 'a', 'x', 'h1', 'f', 1, 1, 1), ('d', 'b', 'y', 'h2', 'f', 2, 1, 1)"""
    )
    key = store.CacheKey(1, "offline", before)
    store.commit_batch(
        conn, "d", key, [ExtractionOutcome(doc_id=d, content_hash=h) for d, h in (("a", "h1"), ("b", "h2"))], None
    )
    assert store.pending_doc_ids(conn, "d", key) == []

    meta = json.loads((copy / "model_meta.json").read_text(encoding="utf-8"))
    meta["temperature"] = float(meta["temperature"]) + 0.25
    (copy / "model_meta.json").write_text(json.dumps(meta), encoding="utf-8")
    offline._model_fingerprint.cache_clear()
    after = OfflineExtractor(scorer=AspectSentimentModel.load(copy, threads=1)).version
    assert after != before
    assert store.pending_doc_ids(conn, "d", store.CacheKey(1, "offline", after)) == ["a", "b"]
    offline._model_fingerprint.cache_clear()
