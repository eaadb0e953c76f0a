"""A 401 from the LLM API stops the worker pool at once: the real anthropic / instructor clients against the fake.

Once, a wrong key cost one request per worker (the pool had `max_concurrency` requests in flight before the
first 401 came back); now the first document goes alone, and no worker sends anything once the abort is known.
"""

from __future__ import annotations

import secrets

import pytest

from oprag_pipeline.enrich.llm import AnthropicExtractor
from oprag_pipeline.schema import DocumentInput, RegistryEntity
from oprag_pipeline_tests.fake_llm_server import FakeLLMServer, auth_error

ENTITIES = [RegistryEntity("ent-room", "room", ("bedroom",), "rooms", "comfort")]
FAST = {"timeout": 10.0, "validation_retries": 1, "max_attempts": 3}


def documents(n: int) -> list[DocumentInput]:
    return [DocumentInput(doc_id=f"d{i}", text=f"The room {i} was clean.", content_hash=f"h{i}") for i in range(n)]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OPRAG_ANTHROPIC_MODEL", "OPRAG_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(8))


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_wrong_key_costs_one_request_whatever_the_pool_size(workers: int) -> None:
    with FakeLLMServer(api_key="sk-ant-the-server-wants-another-key", latency=0.05) as server:
        extractor = AnthropicExtractor(base_url=server.anthropic_base_url, max_concurrency=workers, **FAST)
        outcomes = extractor.extract(documents(24), ENTITIES)
        sent = len(server.requests)
    assert sent == 1
    assert all(o.failed for o in outcomes)
    assert "HTTP 401" in outcomes[0].failure_reason
    assert all("not attempted" in o.failure_reason for o in outcomes[1:])


def test_key_revoked_mid_batch_sends_nothing_after_the_401() -> None:
    # 1 s per answer: the thread that read the 401 has that long to raise the abort before the other worker is free.
    with FakeLLMServer(latency=1.0) as server:
        server.always("d3", auth_error())  # answered at once, while the other worker waits on its slow answer
        extractor = AnthropicExtractor(base_url=server.anthropic_base_url, max_concurrency=2, **FAST)
        outcomes = extractor.extract(documents(12), ENTITIES)
        requests = list(server.requests)
    rejected = next(r for r in requests if r.doc_id == "d3")
    # A request the other worker sent while the 401 was on its way back was already in flight; none may start once
    # the 401 has been answered (a loaded machine may still take a moment to read it, hence the margin).
    after = [r.doc_id for r in requests if r.started > rejected.answered + 0.2]
    assert after == []
    sent = {r.doc_id for r in requests}
    assert len(sent) <= 5 and "d11" not in sent  # the probe, two rounds of two workers, then nothing
    for outcome in outcomes:
        if outcome.doc_id not in sent:
            assert outcome.failed and "not attempted" in outcome.failure_reason
