"""The LLM-bootstrapped registry: the real anthropic / openai / instructor clients against the local fake server,
which answers the `TargetExtraction` tool with scripted targets per document."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance

from oprag_pipeline.enrich.llm import AnthropicExtractor, OpenAICompatibleExtractor
from oprag_pipeline.registry.assets import entity_candidates, extraction_sample
from oprag_pipeline.registry.llm_bootstrap import TargetExtraction, bootstrap_candidates, grounded_targets
from oprag_pipeline_tests.conftest import materialize_domain, write_lines
from oprag_pipeline_tests.fake_llm_server import FakeLLMServer, auth_error, schema_invalid, server_error

# Invented reviews of a gadget shop; each scripted answer has grounded targets and one the text never names.
TEXTS = {
    "g1": "The batteries die by noon, but the screen is gorgeous.",
    "g2": "Battery life is poor. The screen scratches easily.",
    "g3": "My battery swelled after a month. Support never answered.",
    "g4": "Great screen, and the battery lasts two days.",
}
TARGETS = {
    "g1": [("battery", "The batteries die by noon"), ("the screen", "the screen is gorgeous"), ("price", "cheap")],
    "g2": [("battery life", "Battery life is poor"), ("screen", "The screen scratches easily")],
    "g3": [("battery", "My battery swelled"), ("customer support team", "Support never answered")],
    "g4": [("Screen", "Great screen"), ("battery", "the battery lasts two days")],
}
# No test here scripts a hang, so the timeout only has to outlast a loaded machine: a short one would turn a
# happy path into a retry and break the request counts.
FAST = {"timeout": 10.0, "validation_retries": 1, "max_attempts": 3}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(hang_seconds=2.0) as fake:
        for doc_id, targets in TARGETS.items():
            fake.script_targets(doc_id, *({"target": t, "evidence": e} for t, e in targets))
        yield fake


@pytest.fixture(autouse=True)
def _clean_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_BASE_URL", "OPRAG_ANTHROPIC_MODEL", "OPRAG_ANTHROPIC_PRICE_PER_MTOK", "OPRAG_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(12))


def test_targets_count_only_where_the_text_names_them() -> None:
    answer = TargetExtraction.model_validate(
        {"targets": [{"target": t, "evidence": e} for t, e in TARGETS["g1"]] + [{"target": "Screens", "evidence": "x"}]}
    )
    surfaces, dropped = grounded_targets(TEXTS["g1"], answer)
    # the document's own words are kept ("batteries"), one per target however often the model repeats it
    assert surfaces == ["batteries", "screen"]
    assert dropped == ["price"]


def _candidates(result) -> dict[str, tuple[int, dict[str, int]]]:
    return {c.key: (c.doc_frequency, dict(c.aliases)) for c in result.candidates}


@pytest.mark.parametrize("provider", ["anthropic", "openai-compatible"])
def test_bootstrap_through_the_real_clients(server: FakeLLMServer, provider: str) -> None:
    if provider == "anthropic":
        client = AnthropicExtractor(base_url=server.anthropic_base_url, price_per_mtok=(3.0, 15.0), **FAST)
    else:
        client = OpenAICompatibleExtractor(
            model="qwen2.5:7b-instruct", base_url=server.openai_base_url, price_per_mtok=(0.5, 1.5), **FAST
        )
    result = bootstrap_candidates(sorted(TEXTS.items()), client, min_doc_frequency=2, min_share=0.0, limit=50)
    # "battery life" (one document) and the ungrounded targets stay out; "battery" is named by three documents
    assert _candidates(result) == {
        "battery": (3, {"batteries": 1, "battery": 2}),
        "screen": (3, {"screen": 3}),
    }
    assert (result.targets_proposed, result.targets_ungrounded, result.failed_documents) == (9, 2, 0)
    assert len(server.requests) == 4
    input_tokens = sum(r.usage[0] for r in server.requests)
    output_tokens = sum(r.usage[1] for r in server.requests)
    assert (result.input_tokens, result.output_tokens) == (input_tokens, output_tokens)
    assert result.estimated_cost_usd == pytest.approx(client.estimated_cost_usd(input_tokens, output_tokens))
    assert result.estimated_cost_usd > 0
    # the document travels as data between delimiters, never in the system prompt
    assert all("<document" in r.document_message and TEXTS[r.doc_id] in r.document_message for r in server.requests)
    assert all(TEXTS[r.doc_id] not in r.system for r in server.requests)


def test_failed_documents_are_counted_and_their_tokens_too(server: FakeLLMServer) -> None:
    client = AnthropicExtractor(base_url=server.anthropic_base_url, **FAST)
    server.always("g4", server_error(500))
    server.fail_doc("g2", schema_invalid())  # re-asked once by instructor, then answered
    result = bootstrap_candidates(sorted(TEXTS.items()), client, min_doc_frequency=2, min_share=0.0, limit=50)
    assert result.failed_documents == 1 and result.failures[0].startswith("g4: HTTP 500")
    assert server.count("g4") == FAST["max_attempts"] and server.count("g2") == 2
    # g4's screen and battery are lost with it
    assert _candidates(result) == {"battery": (2, {"batteries": 1, "battery": 1}), "screen": (2, {"screen": 2})}
    assert result.input_tokens == sum(r.usage[0] for r in server.requests if r.usage)


def test_an_authentication_error_stops_the_sample_and_fails_loudly(server: FakeLLMServer) -> None:
    client = AnthropicExtractor(base_url=server.anthropic_base_url, max_concurrency=1, **FAST)
    server.fail_next(auth_error())
    with pytest.raises(RuntimeError, match="could not read any of the 4 sampled documents"):
        bootstrap_candidates(sorted(TEXTS.items()), client)
    assert len(server.requests) == 1  # the other three were never sent


def test_candidate_asset_uses_the_llm_when_it_is_the_extractor(
    server: FakeLLMServer, data_dir: Path, dagster_instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oprag_pipeline.ingest.assets import raw_documents

    write_lines(
        data_dir / "raw" / "gadgets" / "reviews.jsonl",
        [json.dumps({"doc_id": d, "text": t}) for d, t in TEXTS.items()],
    )
    selection = [raw_documents, extraction_sample, entity_candidates]
    offline = materialize_domain(selection, data_dir, dagster_instance, "gadgets")["entity_candidates"]
    assert "llm_input_tokens" not in offline and len(server.requests) == 0  # offline stays the default

    monkeypatch.setenv("OPRAG_EXTRACTOR", "anthropic")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    metadata = materialize_domain(selection, data_dir, dagster_instance, "gadgets")["entity_candidates"]
    assert metadata["source"] == "llm" and metadata["documents"] == 4
    assert (metadata["targets_proposed"], metadata["targets_ungrounded"]) == (9, 2)
    assert metadata["llm_input_tokens"] == sum(r.usage[0] for r in server.requests)
    assert metadata["llm_estimated_cost_usd"] > 0
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        rows = conn.execute(
            "SELECT candidate_key, doc_frequency FROM entity_candidates WHERE domain = 'gadgets' ORDER BY 1"
        ).fetchall()
    assert rows == [("battery", 3), ("screen", 3)]
