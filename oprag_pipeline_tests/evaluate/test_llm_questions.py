"""LLM question generation through the real Anthropic client against the local fake Messages API server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from oprag_pipeline.enrich.llm import AnthropicExtractor
from oprag_pipeline.evaluate.llm_questions import generate_with_llm
from oprag_pipeline.evaluate.questions import QUESTION_TYPES, QuestionEntity, generate_questions
from oprag_pipeline_tests.fake_llm_server import FakeLLMServer, rate_limited, schema_invalid, server_error

# No test here scripts a hang, so the timeout only has to outlast a loaded machine: a short one would turn a
# happy path into a retry and break the request counts.
FAST = {"timeout": 10.0, "validation_retries": 1, "max_attempts": 3}
ENTITIES = [
    QuestionEntity("e1", "breakfast", ("breakfast buffet",), "restaurant"),
    QuestionEntity("e2", "front desk", ("reception",), None),
]


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeLLMServer, AnthropicExtractor]]:
    for name in ("ANTHROPIC_BASE_URL", "OPRAG_ANTHROPIC_MODEL", "OPRAG_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(8))
    with FakeLLMServer(hang_seconds=1.0) as server:
        yield server, AnthropicExtractor(base_url=server.anthropic_base_url, **FAST)  # type: ignore[arg-type]


def test_llm_writes_the_wording_the_pipeline_keeps_types_and_ids(client) -> None:
    server, extractor = client
    questions, report = generate_with_llm(extractor, "hotels", ENTITIES, per_type=2)
    offline = [q for e in ENTITIES for q in generate_questions("hotels", e, per_type=2)]
    assert [q.question_id for q in questions] == [q.question_id for q in offline]  # same questions exist
    assert [q.question_type for q in questions] == [q.question_type for q in offline]
    assert report.from_llm == 20 and report.completed_from_templates == 0 and report.failed_entities == 0
    assert all(q.template_id.startswith("llm.") for q in questions)
    assert not any("weather" in q.text for q in questions)  # the question that does not name the entity is dropped
    assert {q.question_type for q in questions if q.entity_id == "e1"} == set(QUESTION_TYPES)
    assert report.input_tokens > 0 and report.output_tokens > 0
    assert len(server.requests) == 2  # one request per entity
    assert all(r.body["tools"][0]["name"] == "QuestionDrafts" for r in server.requests)


def test_rate_limits_and_invalid_answers_are_retried(client) -> None:
    server, extractor = client
    server.fail_next(rate_limited("0"), schema_invalid())
    _, report = generate_with_llm(extractor, "hotels", ENTITIES[:1], per_type=2)
    assert report.from_llm == 10 and report.failed_entities == 0
    assert len(server.requests) == 3  # 429, then a schema-invalid answer re-asked, then a valid one


def test_an_entity_the_llm_keeps_failing_falls_back_to_templates(client) -> None:
    server, extractor = client
    server.fail_next(*[server_error(500)] * 3)  # every attempt for the first entity
    questions, report = generate_with_llm(extractor, "hotels", ENTITIES, per_type=2)
    assert report.failed_entities == 1 and report.completed_from_templates == 10 and report.from_llm == 10
    templated = [q for q in questions if q.entity_id == "e1"]
    assert [q.text for q in templated] == [q.text for q in generate_questions("hotels", ENTITIES[0], per_type=2)]
