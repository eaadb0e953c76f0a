"""Anthropic: `AnthropicExtractor` (the Messages API with a forced tool call, and `extract_batch` through the Message
Batches API) and `AnthropicBatchExtractor` (`OPRAG_EXTRACTOR=anthropic-batch`, whose `extract` is the batch).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pydantic
from pydantic import BaseModel

from oprag_pipeline import config
from oprag_pipeline.enrich.llm.base import LLMOptions, _LLMExtractor
from oprag_pipeline.enrich.llm.grounding import RegistryIndex, to_opinions
from oprag_pipeline.enrich.llm.pricing import batch_price_factor, model_facts, resolve_price
from oprag_pipeline.enrich.llm.prompts import OpinionExtraction, render_system_prompt, render_user_prompt
from oprag_pipeline.enrich.llm.transport import (
    MAX_REASON_CHARS,
    MissingCredentialsError,
    _register_secret,
    _validation_summary,
    redact,
)
from oprag_pipeline.schema import DocumentInput, ExtractionOutcome, RegistryEntity

logger = logging.getLogger(__package__)  # the package's one logger (see transport._REDACTED_LOGGERS)

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"


# --------------------------------------------------------------------------------------------------------------------
# Anthropic
# --------------------------------------------------------------------------------------------------------------------


def _custom_id(document: DocumentInput) -> str:
    """A Message Batches custom_id (at most 64 of [A-Za-z0-9_-]) naming the document and its content."""
    return hashlib.sha256(f"{document.doc_id}\0{document.content_hash}".encode()).hexdigest()[:40]


def _empty(document: DocumentInput) -> ExtractionOutcome:
    return ExtractionOutcome(doc_id=document.doc_id, content_hash=document.content_hash)


def _failed(document: DocumentInput, reason: str) -> ExtractionOutcome:
    return ExtractionOutcome(
        doc_id=document.doc_id,
        content_hash=document.content_hash,
        failed=True,
        failure_reason=redact(reason)[:MAX_REASON_CHARS],
    )


class AnthropicExtractor(_LLMExtractor):
    """Claude through the Messages API with a forced tool call (instructor TOOLS mode).

    No temperature is sent: the installed SDK (anthropic 2.x) speaks API version 2026-10-21, which removed
    `temperature` / `top_p` / `top_k` and answers any of them, at any value, with HTTP 400 on every model. Run-to-run
    stability comes from the forced tool call, the closed schema and the extraction cache instead.

    Environment: `ANTHROPIC_API_KEY` (required, the only source of the key), `ANTHROPIC_BASE_URL` (optional, honoured
    by the SDK). The extractor resource passes `OPRAG_ANTHROPIC_MODEL` (default `claude-sonnet-4-5`),
    `OPRAG_ANTHROPIC_PRICE_PER_MTOK` and `OPRAG_LLM_TIMEOUT` (seconds, default 60) as `model`, `price_per_mtok` and
    `timeout`.
    """

    name: ClassVar[str] = "anthropic"

    def __init__(
        self,
        options: LLMOptions | None = None,
        *,
        force_tool: bool | None = None,
        prompt_cache: bool = True,
        api_key: str | None = None,
        **settings: Any,
    ) -> None:
        """`settings` are `LLMOptions` fields, applied over `options`. `api_key` is the resolved value of the
        extractor resource's `EnvVar("ANTHROPIC_API_KEY")`; None reads that variable here. It goes to the SDK client
        only: it is not kept on the extractor, where a repr or a log line could show it."""
        options = replace(options or LLMOptions(), **settings)
        api_key = api_key or config.raw("ANTHROPIC_API_KEY")
        if not api_key:
            raise MissingCredentialsError(
                "ANTHROPIC_API_KEY is not set: the anthropic extractor reads its API key only from the environment "
                "(set ANTHROPIC_BASE_URL too to use a proxy or gateway)"
            )
        import anthropic
        import instructor

        model = options.model or DEFAULT_ANTHROPIC_MODEL
        price = resolve_price(model, options.price_per_mtok, "OPRAG_ANTHROPIC_PRICE_PER_MTOK")
        super().__init__(options, model, price, anthropic.AnthropicError)
        if force_tool is None:
            facts = model_facts(model)
            force_tool = facts.forced_tool if facts is not None else True
        self.forced_tool = force_tool
        self.prompt_cache = prompt_cache
        self.version = self._fingerprint(provider="anthropic", forced_tool=self.forced_tool)

        _register_secret(api_key)
        client = self._sdk_client(anthropic, anthropic.Anthropic, api_key=api_key, base_url=options.base_url)
        self._instructor = instructor.from_anthropic(client, mode=instructor.Mode.TOOLS)

    def _create(
        self, system: str, user: str, hooks: Any, retrying: Any, response_model: type[BaseModel] = OpinionExtraction
    ) -> Any:
        system_blocks: list[dict[str, Any]] = [{"type": "text", "text": system}]
        if self.prompt_cache:  # the registry prompt is identical for every document of a run
            system_blocks[0]["cache_control"] = {"type": "ephemeral"}
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "system": system_blocks}
        if not self.forced_tool:
            kwargs["tool_choice"] = {"type": "auto"}
        return self._instructor.create(
            response_model=response_model,
            messages=[{"role": "user", "content": user}],
            max_retries=retrying,
            hooks=hooks,
            strict=False,
            **kwargs,
        )

    # -- Message Batches: bulk extraction at half the price, resumable across runs ----------------------------------

    def extract_batch(
        self,
        documents: Sequence[DocumentInput],
        entities: Sequence[RegistryEntity],
        ledger_dir: Path,
        *,
        poll_seconds: float = 30.0,
        max_wait: float = 0.0,
    ) -> list[ExtractionOutcome]:
        """One outcome per document, in input order, through the Message Batches API.

        The batch id is written to a ledger under `ledger_dir` (keyed by the extractor version, the prompt and the
        documents' content hashes) before anything is awaited, so a run that stops while the batch is processing
        resumes it on the next run instead of paying for it twice. Waits up to `max_wait` seconds for the batch to
        end; if it has not, every document comes back failed ("still processing") and stays pending. There are no
        re-asks in a batch: a schema-invalid answer fails its document, which the next run sends again.
        """
        if not documents:
            return []
        system = render_system_prompt(entities, self._answer_instruction())
        index = RegistryIndex(entities)
        ids = {_custom_id(d): d for d in documents if d.text.strip()}  # an empty document is not sent
        if not ids:
            return [_empty(d) for d in documents]
        key = hashlib.sha256(
            json.dumps([self.version, system, sorted(ids)], sort_keys=True).encode("utf-8")
        ).hexdigest()[:24]
        ledger = Path(ledger_dir) / f"batch-{key}.json"
        client = self._instructor.client
        if ledger.exists():
            batch_id = json.loads(ledger.read_text(encoding="utf-8"))["batch_id"]
            logger.info("resuming message batch %s (%d documents) from %s", batch_id, len(ids), ledger)
        else:
            requests = [
                {"custom_id": custom_id, "params": self._batch_params(system, document)}
                for custom_id, document in ids.items()
            ]
            batch_id = client.messages.batches.create(requests=requests).id
            ledger.parent.mkdir(parents=True, exist_ok=True)
            ledger.write_text(json.dumps({"batch_id": batch_id, "documents": len(ids)}), encoding="utf-8")
        deadline = time.monotonic() + max_wait
        batch = client.messages.batches.retrieve(batch_id)
        while batch.processing_status != "ended" and time.monotonic() < deadline:
            time.sleep(min(poll_seconds, max(0.0, deadline - time.monotonic())))
            batch = client.messages.batches.retrieve(batch_id)
        if batch.processing_status != "ended":
            reason = f"message batch {batch_id} still processing; the next run resumes it"
            return [_failed(d, reason) if d.text.strip() else _empty(d) for d in documents]
        outcomes: dict[str, ExtractionOutcome] = {}
        for item in client.messages.batches.results(batch_id):
            document = ids.get(item.custom_id)
            if document is not None:
                outcomes[item.custom_id] = self._batch_outcome(document, item.result, index)
        ledger.unlink(missing_ok=True)  # done: a later run with the same documents starts a new batch
        return [
            _empty(d) if not d.text.strip() else outcomes.get(_custom_id(d)) or _failed(d, f"no result in {batch_id}")
            for d in documents
        ]

    def _batch_params(self, system: str, document: DocumentInput) -> dict[str, Any]:
        system_blocks: list[dict[str, Any]] = [{"type": "text", "text": system}]
        if self.prompt_cache:
            system_blocks[0]["cache_control"] = {"type": "ephemeral"}
        tool_name = OpinionExtraction.__name__
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system_blocks,
            "messages": [{"role": "user", "content": render_user_prompt(document, self.max_document_chars)}],
            "tools": [
                {
                    "name": tool_name,
                    "description": OpinionExtraction.__doc__ or tool_name,
                    "input_schema": OpinionExtraction.model_json_schema(),
                }
            ],
            "tool_choice": {"type": "tool", "name": tool_name} if self.forced_tool else {"type": "auto"},
        }

    def _batch_outcome(self, document: DocumentInput, result: Any, index: RegistryIndex) -> ExtractionOutcome:
        if result.type != "succeeded":
            error = getattr(getattr(result, "error", None), "error", None)
            detail = f": {getattr(error, 'message', '')}" if error is not None else ""
            return _failed(document, f"batch request {result.type}{detail}")
        message = result.message
        input_tokens, output_tokens = self._usage_of(message)
        tool_input = next((b.input for b in message.content if getattr(b, "type", "") == "tool_use"), None)
        try:
            answer = OpinionExtraction.model_validate(tool_input)
        except pydantic.ValidationError as exc:
            outcome = _failed(document, f"schema-invalid answer: {_validation_summary(exc)}")
        else:
            outcome = _empty(document)
            outcome.opinions = to_opinions(answer, document, index)
        outcome.input_tokens, outcome.output_tokens = input_tokens, output_tokens
        return outcome

    @staticmethod
    def _usage_of(response: Any) -> tuple[int, int]:
        usage = response.usage
        prompt = (
            (usage.input_tokens or 0)
            + (getattr(usage, "cache_creation_input_tokens", None) or 0)
            + (getattr(usage, "cache_read_input_tokens", None) or 0)
        )
        return int(prompt), int(usage.output_tokens or 0)


class AnthropicBatchExtractor(AnthropicExtractor):
    """`OPRAG_EXTRACTOR=anthropic-batch`: `extract` goes through the Message Batches API (bulk extraction at the
    batch price, results within 24 h), resumable through a ledger under `<data dir>/llm_batches`. It waits up to
    `OPRAG_LLM_BATCH_WAIT` seconds (default 3600) per run; documents of a batch still processing stay pending and the
    next run picks the same batch up. `ask` (registry bootstrap, questions, writing) stays on the Messages API.
    Same prompts and model as `anthropic`, hence the same name and version: cached extractions are shared."""

    def __init__(
        self,
        options: LLMOptions | None = None,
        *,
        ledger_dir: Path | None = None,
        max_wait: float = config.declared("OPRAG_LLM_BATCH_WAIT").default,
        poll_seconds: float = 30.0,
        **settings: Any,
    ) -> None:
        super().__init__(options, **settings)
        if ledger_dir is None:
            from oprag_pipeline import settings as oprag_settings

            ledger_dir = oprag_settings.data_dir() / "llm_batches"
        self.ledger_dir = ledger_dir
        self.max_wait = max_wait
        self.poll_seconds = poll_seconds

    def extract(
        self, documents: Sequence[DocumentInput], entities: Sequence[RegistryEntity]
    ) -> list[ExtractionOutcome]:
        return self.extract_batch(
            documents, entities, self.ledger_dir, poll_seconds=self.poll_seconds, max_wait=self.max_wait
        )

    def estimated_cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        cost = super().estimated_cost_usd(input_tokens, output_tokens)
        return None if cost is None else cost * batch_price_factor()
