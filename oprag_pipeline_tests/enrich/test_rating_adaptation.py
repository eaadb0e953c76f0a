"""Adaptation of the offline model from the corpus's own ratings (enrich/ratings.py): the rule that pairs ratings
with mentions, the guard, and the whole path through Dagster on an invented rated domain."""

from __future__ import annotations

import json
import random
from pathlib import Path

import duckdb
import numpy as np
import pytest
from dagster import AssetSelection, DagsterInstance, materialize

from oprag_pipeline.definitions import ALL_ASSETS
from oprag_pipeline.enrich.aspect_model import LABELS
from oprag_pipeline.enrich.ratings import (
    RatedMention,
    document_rated_mentions,
    fit_rating_offsets,
    rated_aspect_entities,
)
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
from oprag_pipeline.registry.matching import AliasMatcher
from oprag_pipeline.resources import ExtractorResource, build_resources
from oprag_pipeline.schema import RegistryEntity

# End-to-end: real processes or whole pipeline runs (minutes); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow

ENTITIES = [
    RegistryEntity("e1", "battery", ("battery", "batteries")),
    RegistryEntity("e2", "screen", ("screen", "display")),
    RegistryEntity("e3", "keyboard", ("keyboard",)),
]
ASPECTS = {"battery": ["battery"], "screen": ["screen", "display"]}


def test_aspect_ratings_label_the_mapped_entities_only() -> None:
    matcher = AliasMatcher(ENTITIES)
    text = "The battery died by noon. The keyboard is fine. The display is sharp."
    found, off = document_rated_mentions(
        "d1", text, 4.0, {"rating_battery": 1, "rating_screen": 5}, matcher, rated_aspect_entities(ENTITIES, ASPECTS)
    )
    assert off == 0
    assert [(m.entity_id, m.rating, m.source, text[m.start : m.end]) for m in found] == [
        ("e1", 1.0, "rating_battery", "battery"),
        ("e2", 5.0, "rating_screen", "display"),
    ]


def test_overall_rating_labels_a_lone_entity_and_nothing_else() -> None:
    matcher = AliasMatcher(ENTITIES)
    aspects = rated_aspect_entities(ENTITIES, ASPECTS)
    lone, _ = document_rated_mentions("d1", "The keyboard broke twice.", 1.0, {}, matcher, aspects)
    assert [(m.entity_id, m.source) for m in lone] == [("e3", "rating")]
    two, _ = document_rated_mentions("d2", "The keyboard broke but the screen is fine.", 2.0, {}, matcher, aspects)
    assert two == []
    extra = {"rating_battery": 0}
    off_scale, off = document_rated_mentions("d3", "The keyboard is fine.", 9.0, extra, matcher, aspects)
    assert off_scale == [] and off == 2  # both ratings are off the 1-5 scale: counted, not used


def test_too_few_rated_mentions_skip_with_a_reason() -> None:
    mentions = [RatedMention(str(i), "e1", "The battery is fine.", 4, 11, 5.0, "rating") for i in range(5)]
    result = fit_rating_offsets(lambda items: np.full((len(items), 3), 1 / 3), mentions, min_mentions=6)
    assert result.offsets is None and "5 rated mentions" in result.skipped_reason


def test_offsets_follow_the_weak_labels() -> None:
    """Uninformative probabilities and mostly-positive ratings: the positive offset must come out on top."""
    mentions = [RatedMention(str(i), "e1", "The battery.", 4, 11, 5.0 if i % 4 else 2.0, "rating") for i in range(200)]
    result = fit_rating_offsets(lambda items: np.full((len(items), 3), 1 / 3), mentions, min_mentions=100)
    offsets = dict(zip(LABELS, result.offsets, strict=True))
    assert offsets["positive"] > offsets["negative"] > offsets["neutral"]
    assert result.label_counts == {"negative": 50, "positive": 150}


# Invented laptop reviews. Most mentions are worded mildly or factually, while their aspect ratings are high: the
# corpus's own ratings say this domain is more positive than the unadapted model reads it.
MILD = {
    "battery": ["the battery lasts about seven hours", "the battery gets me through a workday", "battery is okay"],
    "screen": ["the screen is bright enough indoors", "the display is a standard matte panel", "screen does the job"],
}
STRONG = {
    "battery": ("the battery is fantastic", "the battery is terrible and dies fast"),
    "screen": ("the screen is gorgeous", "the screen is awful and dim"),
}


def write_domain(raw: Path, docs: int) -> None:
    rng = random.Random(5)
    rows = []
    for i in range(docs):
        parts, extra = [], {}
        for aspect in ("battery", "screen"):
            roll = rng.random()
            if roll < 0.7:
                parts.append(rng.choice(MILD[aspect]))
                extra[f"rating_{aspect}"] = 4
            elif roll < 0.85:
                parts.append(STRONG[aspect][0])
                extra[f"rating_{aspect}"] = 5
            else:
                parts.append(STRONG[aspect][1])
                extra[f"rating_{aspect}"] = rng.choice([1, 2])
        parts.append(rng.choice(["the keyboard is comfortable", "the keyboard has a numeric pad", "the trackpad"]))
        text = ". ".join(p[0].upper() + p[1:] for p in parts) + "."
        rows.append({"doc_id": f"lap{i:03d}", "text": text, "rating": rng.choice([3, 4, 5]), **extra})
    raw.mkdir(parents=True)
    (raw / "reviews.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (raw / "_rated_aspects.json").write_text(json.dumps(ASPECTS))


def run(data_dir: Path, instance: DagsterInstance, adapt: str, intensity: str | None = None) -> dict:
    resources = build_resources(data_dir)
    resources["extractor"] = ExtractorResource(kind="offline", adapt=adapt, intensity=intensity)
    result = materialize(
        ALL_ASSETS,
        partition_key="laptops",
        instance=instance,
        resources=resources,
        selection=AssetSelection.assets("opinions").upstream(),
    )
    assert result.success
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == "opinions"]
    return {k: v.value for k, v in event.step_materialization_data.materialization.metadata.items()}


def intensities(data_dir: Path) -> dict[str, list[str]]:
    """The intensity levels of positive opinions about the screen, by how the reviews word it (mild or strong)."""
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        rows = conn.execute(
            """SELECT evidence_text, intensity FROM opinions
               WHERE domain = 'laptops' AND entity_name = 'screen' AND sentiment = 'positive'"""
        ).fetchall()
    out: dict[str, list[str]] = {"mild": [], "strong": []}
    for text, level in rows:
        if STRONG["screen"][0] in text.lower():
            out["strong"].append(level)
        elif any(m in text.lower() for m in MILD["screen"]):
            out["mild"].append(level)
    return out


def opinions_table(data_dir: Path) -> dict[tuple[str, str], str]:
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        rows = conn.execute("SELECT doc_id, entity_name, sentiment FROM opinions WHERE domain = 'laptops'").fetchall()
    return {(d, e): s for d, e, s in rows}


def test_adaptation_from_ratings_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = 160
    data_dir = tmp_path / "data"
    write_domain(data_dir / "raw" / "laptops", docs)
    monkeypatch.setenv("OPRAG_DATA_DIR", str(data_dir))
    (tmp_path / "home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["laptops"])
        plain = run(data_dir, instance, "none")
        before = opinions_table(data_dir)
        adapted = run(data_dir, instance, "ratings")
        after = opinions_table(data_dir)
        again = run(data_dir, instance, "ratings")
        extra = data_dir / "raw" / "laptops" / "more.jsonl"
        extra.write_text(
            "".join(
                json.dumps({"doc_id": f"new{i}", "text": f"The battery died after {i + 2} hours."}) + "\n"
                for i in range(3)
            )
        )
        grown = run(data_dir, instance, "ratings")
        levels = intensities(data_dir)
        cues_only = run(data_dir, instance, "ratings", intensity="cues")

    assert plain["extracted_this_run"] == docs and "adapt_offsets" not in plain
    names = {e for _, e in before}
    assert {"battery", "screen"} <= names, names  # the registry the miner built names the rated aspects
    # the adapted model is a new extractor version: every document is re-extracted under it
    assert adapted["extractor"] != plain["extractor"] and "+adapted-" in adapted["extractor"]
    assert adapted["extracted_this_run"] == docs and adapted["cached"] == 0
    offsets = adapted["adapt_offsets"]
    assert adapted["adapt_sample_size"] >= 100
    assert offsets["positive"] > offsets["negative"]  # the ratings are mostly high
    # the student changed, and each changed opinion moved toward a class the offsets favour over its old one
    changed = [(k, before[k], after[k]) for k in before if k in after and before[k] != after[k]]
    assert changed
    assert all(offsets[new] > offsets[old] for _, old, new in changed), changed
    # the next run reads the fit back: the same offsets, the same version, and nothing to re-extract
    assert not adapted["adapt_reused"] and again["adapt_reused"]
    assert again["adapt_offsets"] == offsets and again["extractor"] == adapted["extractor"]
    assert again["extracted_this_run"] == 0 and again["cached"] == docs
    # documents added later are extracted by the same adapted model, and only they are
    assert grown["adapt_reused"] and grown["extractor"] == adapted["extractor"]
    assert grown["extracted_this_run"] == 3 and grown["cached"] == docs
    # intensity levels were learnt from the same ratings (OPRAG_INTENSITY defaults to ratings), are part of the
    # version, and are read back with the offsets; the reviews' strong praise ("gorgeous", rated 5) comes out high
    # far more often than their mild wording (rated 4 or 5 at random)
    assert adapted["adapt_intensity"].startswith("learnt from") and "+intensity-" in adapted["extractor"]
    assert again["adapt_intensity"] == adapted["adapt_intensity"]
    high = {kind: found.count("high") / len(found) for kind, found in levels.items()}
    assert len(levels["strong"]) >= 10 and len(levels["mild"]) >= 30, levels
    assert high["strong"] > high["mild"] + 0.3, high
    # with OPRAG_INTENSITY=cues the same offsets are fitted, but the cue rule's levels: another version
    assert "adapt_intensity" not in cues_only and "+intensity-" not in cues_only["extractor"]
    assert cues_only["adapt_offsets"] == offsets and cues_only["extracted_this_run"] == docs + 3
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        stored = conn.execute(
            """SELECT adapted_version, offsets, sample_size, residual_head FROM extractor_adaptations
               WHERE domain = 'laptops' AND intensity_source = 'ratings'"""
        ).fetchall()
        calibrations = conn.execute(
            """SELECT intensity_source, intensity_calibration IS NOT NULL, intensity_opinions
               FROM extractor_adaptations WHERE domain = 'laptops' ORDER BY intensity_source"""
        ).fetchall()
    assert [row[:2] for row in calibrations] == [("cues", False), ("ratings", True)]
    assert f"learnt from {calibrations[1][2]} rated opinions" == adapted["adapt_intensity"]
    assert len(stored) == 1
    version, stored_offsets, size, head = stored[0]
    assert adapted["extractor"].endswith(version) and json.loads(stored_offsets) == offsets
    assert size == adapted["adapt_sample_size"]
    # the committed model exposes its head features, so the fit is a residual head on them (768 x 3 weights), stored
    # with the offsets and read back (the reused run's version above is the same)
    weights = json.loads(head)
    assert len(weights) == 768 and {len(row) for row in weights} == {3}
    assert adapted["adapt_residual_head_weights"] == 768 * 3 == again["adapt_residual_head_weights"]
    assert any(abs(v) > 0 for row in weights for v in row)


def test_self_training_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default adaptation, from the domain's own text: no rating is read (the same invented laptops without
    their rating columns), the fit is recorded as `self`, the extractor version changes, and the next run reuses it."""
    docs = 160
    data_dir = tmp_path / "data"
    write_domain(data_dir / "raw" / "laptops", docs)
    reviews = data_dir / "raw" / "laptops" / "reviews.jsonl"
    rows = [json.loads(line) for line in reviews.read_text().splitlines()]
    reviews.write_text("".join(json.dumps({"doc_id": r["doc_id"], "text": r["text"]}) + "\n" for r in rows))
    (data_dir / "raw" / "laptops" / "_rated_aspects.json").unlink()
    monkeypatch.setenv("OPRAG_DATA_DIR", str(data_dir))
    monkeypatch.delenv("OPRAG_ADAPT", raising=False)
    assert build_resources(data_dir)["extractor"].adapt == "self"  # the default
    (tmp_path / "home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["laptops"])
        plain = run(data_dir, instance, "none")
        adapted = run(data_dir, instance, "self")
        again = run(data_dir, instance, "self")

    assert "adapt_offsets" not in plain
    assert adapted["adapt"] == "self" and not adapted["adapt_reused"], adapted.get("adapt_skipped")
    assert adapted["extractor"] != plain["extractor"] and "+adapted-" in adapted["extractor"]
    assert adapted["extracted_this_run"] == docs
    sources = adapted["adapt_sources"]
    examined = sources["lexicon_agrees"] + sources["lexicon_disagrees"]
    assert adapted["adapt_sample_size"] == sources["lexicon_agrees"] >= 100
    assert sources["lexicon_disagrees"] > 0  # the lexicon filters: not every answer of the model teaches
    assert examined <= 1000
    assert sum(adapted["adapt_weak_labels"].values()) == adapted["adapt_sample_size"]
    assert {"positive", "negative"} <= set(adapted["adapt_weak_labels"])
    assert adapted["adapt_residual_head_weights"] == 768 * 3
    assert again["adapt_reused"] and again["extractor"] == adapted["extractor"] and again["extracted_this_run"] == 0
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        methods = conn.execute("SELECT method FROM extractor_adaptations WHERE domain = 'laptops'").fetchall()
    assert methods == [("self",)]
