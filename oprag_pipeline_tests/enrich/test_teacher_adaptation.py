"""Adaptation of the offline model from an LLM-labelled sample (enrich/teacher.py): the labelling rule with an
in-process teacher, and the whole path through Dagster with the real Anthropic client against the local fake
server (the teacher) and the committed offline model (the student)."""

from __future__ import annotations

import secrets
from pathlib import Path

import duckdb
import numpy as np
import pytest
from dagster import AssetSelection, DagsterInstance, materialize

from oprag_pipeline.definitions import ALL_ASSETS
from oprag_pipeline.enrich.aspect_model import LABELS
from oprag_pipeline.enrich.ratings import fit_teacher_offsets
from oprag_pipeline.enrich.teacher import teacher_labelled_mentions
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
from oprag_pipeline.resources import ExtractorResource, build_resources
from oprag_pipeline.schema import ExtractedOpinion, ExtractionOutcome, RegistryEntity
from oprag_pipeline_tests.enrich.test_rating_adaptation import write_domain
from oprag_pipeline_tests.fake_llm_server import FakeLLMServer

ENTITIES = [
    RegistryEntity("e1", "battery", ("battery",)),
    RegistryEntity("e2", "screen", ("screen", "display")),
]


class ScriptedTeacher:
    """A teacher that answers every registry entity of a document with one label, and one it cannot anchor."""

    name = "scripted"
    version = "1"

    def __init__(self, label_of: dict[str, str]) -> None:
        self.label_of = label_of
        self.seen: list[str] = []

    def extract(self, documents, entities):
        out = []
        for document in documents:
            self.seen.append(document.doc_id)
            opinions = [
                ExtractedOpinion(e.entity_id, e.name, self.label_of[document.doc_id], "medium", "medium")
                for e in entities
                if e.name in document.text
            ]
            opinions.append(ExtractedOpinion("ghost", "keyboard", "positive", "medium", "medium", grounded=False))
            out.append(ExtractionOutcome(document.doc_id, "h", opinions, input_tokens=10, output_tokens=5))
        return out

    def estimated_cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        return input_tokens * 1e-6 + output_tokens * 2e-6


def documents_table(rows: list[tuple[str, str]]) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect()
    conn.execute(
        "CREATE TABLE raw_documents (domain VARCHAR, doc_id VARCHAR, text VARCHAR, content_hash VARCHAR, "
        "title VARCHAR, entity_scope VARCHAR)"
    )
    conn.executemany("INSERT INTO raw_documents VALUES ('d', ?, ?, 'h', NULL, NULL)", rows)
    return conn


def test_teacher_labels_the_first_mention_of_each_entity_it_judged() -> None:
    text = "The battery is fine. The battery again. The display too."
    conn = documents_table([("a", text), ("b", "Nothing here."), ("c", "The screen.")])
    teacher = ScriptedTeacher({"a": "negative", "b": "positive", "c": "positive"})
    sample = teacher_labelled_mentions(conn, "d", ENTITIES, teacher)
    assert sorted(teacher.seen) == ["a", "b", "c"] and sample.documents == 3
    labelled = {(m.doc_id, m.entity_id): (m.start, m.end, LABELS[m.label]) for m in sample.mentions}
    battery = text.index("battery")
    assert labelled == {
        ("a", "e1"): (battery, battery + len("battery"), "negative"),  # the first of its two mentions
        ("c", "e2"): (4, 10, "positive"),
    }
    # "a" names the display, which the scripted teacher did not judge (its name is "screen"): no label for it;
    # the ghost opinion of every document names no entity the matcher finds: counted, never a label
    assert sample.unanchored_opinions == 3
    assert (sample.input_tokens, sample.output_tokens) == (30, 15)
    assert sample.cost_usd == pytest.approx(30e-6 + 15 * 2e-6)
    capped = ScriptedTeacher({"a": "negative", "b": "positive", "c": "positive"})
    assert teacher_labelled_mentions(conn, "d", ENTITIES, capped, max_documents=2).documents == 2
    assert len(capped.seen) == 2


def test_teacher_offsets_follow_its_labels_and_too_few_labels_skip() -> None:
    rows = [(f"d{i:03d}", f"The battery, item {i}.") for i in range(150)]
    labels = {doc_id: ("positive" if i % 5 else "negative") for i, (doc_id, _) in enumerate(rows)}
    flat = lambda items: np.full((len(items), 3), 1 / 3)  # noqa: E731 - an uninformative student
    result = fit_teacher_offsets(flat, ScriptedTeacher(labels), documents_table(rows), "d", ENTITIES, min_mentions=100)
    offsets = dict(zip(LABELS, result.offsets, strict=True))
    assert offsets["positive"] > offsets["negative"] > offsets["neutral"]
    assert result.label_counts == {"negative": 30, "positive": 120} and result.input_tokens == 1500
    few = fit_teacher_offsets(flat, ScriptedTeacher(labels), documents_table(rows[:20]), "d", ENTITIES, 1000, 100)
    assert few.offsets is None and "20 teacher-labelled mentions in 20 documents" in few.skipped_reason
    assert few.input_tokens == 200  # what the teacher cost is reported even when the fit is skipped


def opinions_metadata(result) -> dict:
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == "opinions"]
    return {k: v.value for k, v in event.step_materialization_data.materialization.metadata.items()}


@pytest.mark.slow
def test_llm_teacher_adapts_the_offline_student_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = 160
    data_dir = tmp_path / "data"
    write_domain(data_dir / "raw" / "laptops", docs)
    monkeypatch.setenv("OPRAG_DATA_DIR", str(data_dir))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["laptops"])
    resources = build_resources(data_dir)
    resources["extractor"] = ExtractorResource(kind="offline")
    upstream = AssetSelection.assets("opinions").upstream()
    plain = opinions_metadata(
        materialize(ALL_ASSETS, partition_key="laptops", instance=instance, resources=resources, selection=upstream)
    )
    assert plain["extracted_this_run"] == docs

    for name in ("ANTHROPIC_AUTH_TOKEN", "OPRAG_ANTHROPIC_MODEL", "OPRAG_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(12))
    with FakeLLMServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        resources["extractor"] = ExtractorResource(kind="anthropic", adapt="llm", adapt_min_mentions=50)
        only_opinions = AssetSelection.assets("opinions")

        def run() -> dict:
            result = materialize(
                ALL_ASSETS, partition_key="laptops", instance=instance, resources=resources, selection=only_opinions
            )
            assert result.success
            return opinions_metadata(result)

        adapted = run()
        asked = len(server.requests)
        again = run()
        assert len(server.requests) == asked  # the stored fit is reused: the teacher is not asked again

    # the teacher labelled the sample only (one request per document, the corpus being smaller than the cap)
    assert asked == docs and adapted["adapt"] == "llm" and not adapted["adapt_reused"]
    usage = [r.usage for r in server.requests if r.usage is not None]
    assert adapted["adapt_teacher_input_tokens"] == sum(u[0] for u in usage) > 0
    assert adapted["adapt_teacher_output_tokens"] == sum(u[1] for u in usage) > 0
    assert adapted["adapt_teacher_cost_usd"] > 0
    # the student extracted the corpus under a new version, so every document was redone
    assert adapted["extractor"].startswith("offline ") and "+adapted-" in adapted["extractor"]
    assert adapted["extractor"] != plain["extractor"] and adapted["extracted_this_run"] == docs
    assert adapted["estimated_cost_usd"] == 0.0
    assert sum(adapted["adapt_weak_labels"].values()) == adapted["adapt_sample_size"] >= 50
    assert again["adapt_reused"] and again["extractor"] == adapted["extractor"] and again["extracted_this_run"] == 0
