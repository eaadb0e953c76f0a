"""The SDKs' own retries plus the event hooks that add what they lack, through the real anthropic / openai /
instructor clients against the local fake server; and the model table of llm_models.toml.

Every count is of HTTP requests the fake server received, so "retried by the SDK", "not retried" and "never sent"
are measured where they happen.
"""

from __future__ import annotations

import logging
import secrets
import threading
import tomllib
from pathlib import Path

import pytest

from oprag_pipeline.enrich.llm import (
    AnthropicExtractor,
    LLMOptions,
    OpenAICompatibleExtractor,
    TokenPrice,
    model_facts,
    parse_model_table,
    pricing,
    transport,
)
from oprag_pipeline.schema import DocumentInput, RegistryEntity, cost_label, total_cost
from oprag_pipeline_tests.fake_llm_server import (
    LLM_ENVIRONMENT,
    FakeLLMServer,
    auth_error,
    invalid_json,
    rate_limited,
    server_error,
)

ENTITIES = [RegistryEntity("ent-room", "room", ("bedroom",), "rooms", "comfort")]
FAST = {"timeout": 10.0, "validation_retries": 1, "max_attempts": 3}
REPO = Path(__file__).resolve().parents[2]


def documents(n: int) -> list[DocumentInput]:
    return [DocumentInput(doc_id=f"d{i}", text=f"The room {i} was clean.", content_hash=f"h{i}") for i in range(n)]


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LLM_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(8))


def anthropic(server: FakeLLMServer, **options: object) -> AnthropicExtractor:
    return AnthropicExtractor(base_url=server.anthropic_base_url, **{**FAST, **options})  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------------------------
# 429: the SDK retries after retry-after; the hook makes every other worker wait too
# --------------------------------------------------------------------------------------------------------------------


def test_a_429_pauses_every_worker_then_the_sdk_retry_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    # The order is set by events, not by latencies: d2's 429 is answered once the other worker's d1 has arrived,
    # and d1 is held in flight until the client's response hook has read that 429 (and so set the pause). Every
    # request sent after that, on any worker, must then wait out the pause.
    paused = threading.Event()
    read_response = transport._RequestGuard.on_response

    def watched(self: transport._RequestGuard, response: object) -> None:
        read_response(self, response)
        if getattr(response, "status_code", None) == 429:
            paused.set()

    monkeypatch.setattr(transport._RequestGuard, "on_response", watched)
    with FakeLLMServer() as server:
        server.fail_doc("d2", rate_limited(retry_after="1"))
        server.hold("d2", until=server.arrival("d1"))
        server.hold("d1", until=paused)
        outcomes = anthropic(server, max_concurrency=2).extract(documents(8), ENTITIES)
        requests = list(server.requests)

    assert paused.is_set() and not any(o.failed for o in outcomes)
    limited, retried = [r for r in requests if r.doc_id == "d2"]
    assert limited.fault == "rate_limit" and retried.fault is None
    assert limited.answered is not None and retried.started >= limited.answered + 1.0
    # d0 (alone) and d1 were sent before the 429; every other request was sent once the pause was known
    later = [r for r in requests if r.doc_id not in ("d0", "d1") and r is not limited]
    assert sorted(r.doc_id for r in later) == ["d2", "d3", "d4", "d5", "d6", "d7"]
    assert all(r.started >= limited.answered + 1.0 for r in later)


def test_a_retry_after_beyond_max_retry_wait_is_capped() -> None:
    with FakeLLMServer() as server:
        server.fail_doc("d0", rate_limited(retry_after="3600"))
        outcomes = anthropic(server, max_retry_wait=0.3).extract(documents(1), ENTITIES)
        first, second = server.requests_for("d0")
    assert not outcomes[0].failed
    assert 0.3 <= second.started - first.started < 600  # waited the cap, not the hour the server asked for


# --------------------------------------------------------------------------------------------------------------------
# 401 / 403 / 404: not retried by the SDK, and the hook aborts the batch
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 404])
def test_an_auth_or_unknown_model_error_aborts_without_retries(status: int) -> None:
    with FakeLLMServer() as server:
        server.always("d0", auth_error(status=status))
        outcomes = anthropic(server, max_attempts=4, max_concurrency=3).extract(documents(6), ENTITIES)
        sent = len(server.requests)
    assert sent == 1  # no SDK retry of the error, and nothing sent for the other five documents
    assert f"HTTP {status}" in outcomes[0].failure_reason
    assert all(o.failed and "not attempted" in o.failure_reason for o in outcomes[1:])
    assert f"HTTP {status}" in outcomes[1].failure_reason  # the reason tells why the batch stopped


def test_an_abort_stops_the_pending_sdk_retries_of_other_documents() -> None:
    # One worker's d0 gets a retryable 500, the other's d1 a 401: the SDK's retry of d0 is stopped by the request
    # hook instead of sent. The order is set by events: d1's 401 is answered once d0 has arrived, and d0's 500 only
    # once the extractor has recorded d1's failure (its log line), so the abort is known before the retry is due.
    # (A blank first document sends no probe, so the two workers' requests are the first the server sees.)
    recorded = threading.Event()

    class _Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("document d1 left pending"):
                recorded.set()

    watch = _Watch(logging.WARNING)
    logging.getLogger("oprag_pipeline").addHandler(watch)
    batch = [DocumentInput("blank", "   ", "h"), *documents(2)]
    try:
        with FakeLLMServer() as server:
            server.fail_doc("d0", server_error(500))
            server.always("d1", auth_error())
            server.hold("d1", until=server.arrival("d0"))
            server.hold("d0", until=recorded)
            outcomes = anthropic(server, max_attempts=3, max_concurrency=2).extract(batch, ENTITIES)
            requests = list(server.requests)
    finally:
        logging.getLogger("oprag_pipeline").removeHandler(watch)
    assert recorded.is_set()
    assert sorted((r.doc_id, r.fault) for r in requests) == [("d0", "server_error"), ("d1", "auth_error")]
    by_id = {o.doc_id: o for o in outcomes}
    assert by_id["d0"].failed and by_id["d0"].failure_reason.startswith("stopped after 1 request(s): HTTP 401")
    assert by_id["d1"].failed and "HTTP 401" in by_id["d1"].failure_reason


# --------------------------------------------------------------------------------------------------------------------
# The SDK's own policy stays in force: x-should-retry, and the attempt count
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["anthropic", "openai"])
def test_x_should_retry_false_is_obeyed(flavour: str) -> None:
    with FakeLLMServer() as server:
        server.always("d0", server_error(503, should_retry=False))
        if flavour == "anthropic":
            extractor: AnthropicExtractor | OpenAICompatibleExtractor = anthropic(server)
        else:
            extractor = OpenAICompatibleExtractor(model="local", base_url=server.openai_base_url, **FAST)
        outcome = extractor.extract(documents(1), ENTITIES)[0]
        assert server.count("d0") == 1  # a 503 is retryable, but the server said not to
    assert outcome.failed and "HTTP 503" in outcome.failure_reason


def test_a_200_whose_body_is_not_json_is_retried_then_reported_clearly() -> None:
    with FakeLLMServer() as server:
        server.always("d0", invalid_json())
        outcome = anthropic(server, max_attempts=3).extract(documents(1), ENTITIES)[0]
        assert server.count("d0") == 3  # retried by the SDK like a connection error, up to max_attempts
    assert outcome.failed
    assert outcome.failure_reason.startswith("response body is not valid JSON")
    assert "3 request(s)" in outcome.failure_reason


def test_options_are_built_once_and_shared_by_both_clients() -> None:
    options = LLMOptions(max_attempts=2, max_concurrency=3, timeout=7.0, max_tokens=1000)
    claude = AnthropicExtractor(options, model="claude-haiku-4-5")
    local = OpenAICompatibleExtractor(options, model="local", mode="json")
    for client in (claude, local):
        assert (client.max_attempts, client.max_concurrency, client.timeout, client.max_tokens) == (2, 3, 7.0, 1000)
        assert client._instructor.client.max_retries == 1  # max_attempts counts the first try
    assert AnthropicExtractor(options, max_attempts=5).max_attempts == 5  # a keyword overrides the options
    with pytest.raises(ValueError, match="max_attempts"):
        LLMOptions(max_attempts=0)


# --------------------------------------------------------------------------------------------------------------------
# Prices come from llm_models.toml
# --------------------------------------------------------------------------------------------------------------------


def test_prices_come_from_the_packaged_toml() -> None:
    with (REPO / "oprag_pipeline" / "enrich" / "llm_models.toml").open("rb") as handle:
        raw = tomllib.load(handle)["models"]
    assert raw["claude-haiku-4-5"] == {"input": 1.0, "output": 5.0}
    assert model_facts("claude-haiku-4-5") is not None
    assert model_facts("claude-haiku-4-5").price == TokenPrice(1.0, 5.0)
    assert model_facts("claude-haiku-4-5-20251001").price == TokenPrice(1.0, 5.0)  # a dated snapshot
    assert model_facts("claude-sonnet-5-5").forced_tool is False
    assert AnthropicExtractor(model="claude-opus-4-1").estimated_cost_usd(1_000_000, 100_000) == pytest.approx(22.5)
    with (REPO / "pyproject.toml").open("rb") as handle:
        package_data = tomllib.load(handle)["tool"]["setuptools"]["package-data"]["oprag_pipeline.enrich"]
    assert "llm_models.toml" in package_data  # it ships with the package


def test_a_changed_table_changes_the_price(monkeypatch: pytest.MonkeyPatch) -> None:
    table = parse_model_table('[models."claude-sonnet-4-5"]\ninput = 0.5\noutput = 2.5\n', "test.toml")
    monkeypatch.setattr(pricing, "model_table", lambda: table)  # looked up by pricing.model_facts
    assert AnthropicExtractor().estimated_cost_usd(2_000_000, 1_000_000) == pytest.approx(3.5)


def test_an_unknown_model_has_an_unknown_cost_not_zero() -> None:
    cost = AnthropicExtractor(model="claude-future-9").estimated_cost_usd(1_000, 1_000)
    assert cost is None
    assert cost_label(cost) == "cost unknown" and total_cost([0.5, cost]) is None
    assert OpenAICompatibleExtractor(model="m", price_per_mtok=(0.0, 0.0)).estimated_cost_usd(10, 10) == 0.0


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[models."m"]\ninput = 1.0\n', '[models."m"]: output must be a non-negative number'),
        ('[models."m"]\ninput = -1\noutput = 2\n', '[models."m"]: input must be a non-negative number'),
        ('[models."m"]\ninput = 1\noutput = 2\ncolour = "red"\n', '[models."m"]: unknown key(s) colour'),
        ('[models."m"]\ninput = 1\noutput = 2\nforced_tool = "no"\n', "forced_tool must be true or false"),
        ("[models\n", "not valid TOML"),
        ("[other]\n", "no [models."),
    ],
)
def test_a_bad_model_table_names_the_file_model_and_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_model_table(text, "prices.toml")
    message = str(raised.value)
    assert message.startswith("prices.toml: ") and reason in message and "\n" not in message
