"""Bulk extraction through Anthropic's Message Batches API: the real anthropic client against the fake server's batch
endpoints, with the resume ledger on disk."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from oprag_pipeline.enrich.llm import AnthropicExtractor
from oprag_pipeline.schema import DocumentInput, RegistryEntity
from oprag_pipeline_tests.fake_llm_server import FakeLLMServer, server_error

ENTITIES = [
    RegistryEntity("ent-room", "room", ("bedroom",), "rooms", "comfort"),
    RegistryEntity("ent-desk", "front desk", ("reception",), "service", "staff"),
]
DOCUMENTS = [
    DocumentInput("b1", "The room was clean. Reception was rude.", "h1"),
    DocumentInput("b2", "Our bedroom was noisy.", "h2"),
    DocumentInput("b3", "   ", "h3"),
    DocumentInput("b4", "The front desk was friendly.", "h4"),
]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OPRAG_ANTHROPIC_MODEL", "OPRAG_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(8))


def extractor(server: FakeLLMServer) -> AnthropicExtractor:
    return AnthropicExtractor(base_url=server.anthropic_base_url, timeout=10.0, max_attempts=2)


def test_a_batch_extracts_every_document_in_one_submission(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        outcomes = extractor(server).extract_batch(DOCUMENTS, ENTITIES, tmp_path)
        batches = dict(server.batches)
        messages_sent = len(server.requests)
    assert [o.doc_id for o in outcomes] == ["b1", "b2", "b3", "b4"]
    assert not any(o.failed for o in outcomes)
    assert len(batches) == 1 and messages_sent == 0  # one batch, no per-document Messages calls
    (requests,) = batches.values()
    assert len(requests) == 3  # the blank document is not sent
    params = requests[0]["params"]
    assert params["tool_choice"] == {"type": "tool", "name": "OpinionExtraction"} and "temperature" not in params
    b1 = {o.entity_id: o.sentiment for o in outcomes[0].opinions}
    assert b1 == {"ent-room": "positive", "ent-desk": "negative"}
    assert all(o.grounded for o in outcomes[0].opinions)
    assert outcomes[0].input_tokens > 0 and outcomes[0].output_tokens > 0
    assert outcomes[2].opinions == [] and outcomes[2].input_tokens == 0
    assert list(tmp_path.iterdir()) == []  # the ledger is removed once the results are in


def test_a_batch_still_processing_is_resumed_by_the_next_run_not_resubmitted(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.batch_polls_before_end = 1
        first = extractor(server).extract_batch(DOCUMENTS, ENTITIES, tmp_path, max_wait=0.0)
        assert all(o.failed and "still processing" in o.failure_reason for o in first if o.doc_id != "b3")
        (ledger,) = tmp_path.iterdir()  # the batch id survives the run
        second = extractor(server).extract_batch(DOCUMENTS, ENTITIES, tmp_path)  # a new process, same documents
        assert len(server.batches) == 1  # resumed, not paid for twice
    assert not any(o.failed for o in second)
    assert not ledger.exists()


def test_an_errored_request_fails_its_document_alone(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.always("b2", server_error())
        outcomes = extractor(server).extract_batch(DOCUMENTS, ENTITIES, tmp_path)
    failed = {o.doc_id: o.failure_reason for o in outcomes if o.failed}
    assert list(failed) == ["b2"] and "errored" in failed["b2"] and "internal server error" in failed["b2"]


def test_the_batch_extractor_is_chosen_by_name_and_keeps_its_ledger_under_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oprag_pipeline.enrich.llm import AnthropicBatchExtractor
    from oprag_pipeline.resources import ExtractorResource

    monkeypatch.setenv("OPRAG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("OPRAG_LLM_BATCH_WAIT", "0")
    with FakeLLMServer() as server:
        server.batch_polls_before_end = 1
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        batch = ExtractorResource(kind="anthropic-batch").build()
        assert isinstance(batch, AnthropicBatchExtractor)
        outcomes = batch.extract(DOCUMENTS[:1], ENTITIES)
        assert outcomes[0].failed and "still processing" in outcomes[0].failure_reason
        assert len(list((tmp_path / "llm_batches").glob("batch-*.json"))) == 1
        online = ExtractorResource(kind="anthropic").build()
    # same prompts and model as the online extractor: cached extractions are shared, at the batch price
    assert (batch.name, batch.version) == (online.name, online.version)
    assert batch.estimated_cost_usd(1_000_000, 0) == pytest.approx(online.estimated_cost_usd(1_000_000, 0) / 2)


def test_batch_mode_commits_large_batches_and_needs_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oprag_pipeline import config
    from oprag_pipeline.resources import build_resources

    monkeypatch.setenv("OPRAG_EXTRACTOR", "anthropic-batch")
    monkeypatch.delenv("OPRAG_EXTRACT_BATCH_SIZE", raising=False)
    extractor = build_resources(tmp_path)["extractor"]
    assert extractor.kind == "anthropic-batch"
    assert extractor.batch_size == 10_000  # one Message Batch per committed batch: few, large ones
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert any("anthropic-batch needs ANTHROPIC_API_KEY" in p for p in config.problems())
