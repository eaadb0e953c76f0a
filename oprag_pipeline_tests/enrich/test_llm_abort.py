"""A 401 from the LLM API stops the worker pool at once: the real anthropic / instructor clients against the fake.

Once, a wrong key cost one request per worker (the pool had `max_concurrency` requests in flight before the
first 401 came back); now the first document goes alone, and no worker sends anything once the abort is known.
"""

from __future__ import annotations

import logging
import secrets
import threading

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
    # d0 goes alone; then one worker's d1 is held in flight while the other worker's d2 gets the 401 (answered only
    # once d1 has arrived, so both are sent before the abort). d1 is released only once the extractor has recorded
    # d2's failure (its log line), so the abort is known by then: the worker freed by d1, and the one that read the
    # 401, must both send nothing more.
    recorded = threading.Event()

    class _Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("document d2 left pending"):
                recorded.set()

    watch = _Watch(logging.WARNING)
    logging.getLogger("oprag_pipeline").addHandler(watch)
    try:
        with FakeLLMServer() as server:
            server.always("d2", auth_error())
            server.hold("d1", until=recorded)
            server.hold("d2", until=server.arrival("d1"))
            extractor = AnthropicExtractor(base_url=server.anthropic_base_url, max_concurrency=2, **FAST)
            outcomes = extractor.extract(documents(12), ENTITIES)
            requests = list(server.requests)
    finally:
        logging.getLogger("oprag_pipeline").removeHandler(watch)
    assert recorded.is_set(), "the 401 was never recorded as d2's failure"
    assert sorted(r.doc_id for r in requests) == ["d0", "d1", "d2"]
    by_id = {o.doc_id: o for o in outcomes}
    assert not by_id["d0"].failed and not by_id["d1"].failed
    assert "HTTP 401" in by_id["d2"].failure_reason
    for doc_id in (f"d{i}" for i in range(3, 12)):
        assert by_id[doc_id].failed and "not attempted" in by_id[doc_id].failure_reason
