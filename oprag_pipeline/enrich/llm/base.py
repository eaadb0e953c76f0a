"""The shared extractor machinery: `LLMOptions`, and `_LLMExtractor` (batching, concurrency, grounding, token
accounting, the instructor plumbing); the provider modules say how to talk to their API.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

import pydantic
from pydantic import BaseModel

from oprag_pipeline import config
from oprag_pipeline.enrich.llm.grounding import RegistryIndex, to_opinions
from oprag_pipeline.enrich.llm.pricing import TokenPrice
from oprag_pipeline.enrich.llm.prompts import (
    PROMPT_REVISION,
    SYSTEM_PROMPT_TEMPLATE,
    TOOL_ANSWER,
    USER_PROMPT_TEMPLATE,
    OpinionExtraction,
    render_system_prompt,
    render_user_prompt,
)
from oprag_pipeline.enrich.llm.transport import (
    MAX_REASON_CHARS,
    Diagnosis,
    LLMRequestFailed,
    _RequestGuard,
    _Usage,
    diagnose,
    redact,
)
from oprag_pipeline.schema import DocumentInput, ExtractionOutcome, RegistryEntity

logger = logging.getLogger(__package__)  # the package's one logger (see transport._REDACTED_LOGGERS)


# --------------------------------------------------------------------------------------------------------------------
# The shared extractor machinery
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LLMOptions:
    """What both LLM clients take, in one place; the constructors accept these fields as keywords too.

    `timeout` is seconds per request (default: `OPRAG_LLM_TIMEOUT`'s; the extractor resource passes its value).
    `max_attempts` is the HTTP attempts of one request, i.e. the SDK's `max_retries` + 1; `validation_retries` the
    re-asks of a schema-invalid answer (instructor); `max_retry_wait` caps any `retry-after` a server asks for.
    `price_per_mtok` (input, output USD per million tokens) overrides the environment and llm_models.toml.
    """

    model: str | None = None
    base_url: str | None = None
    max_concurrency: int = 4
    timeout: float = config.declared("OPRAG_LLM_TIMEOUT").default
    max_attempts: int = 5
    validation_retries: int = 2
    max_retry_wait: float = 120.0
    max_tokens: int = 4096
    max_document_chars: int = 30_000
    price_per_mtok: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.max_concurrency < 1 or self.max_attempts < 1 or self.validation_retries < 0:
            raise ValueError("max_concurrency and max_attempts must be >= 1, validation_retries >= 0")


class _LLMExtractor:
    """Batching, concurrency, grounding and accounting; subclasses say how to talk to their API."""

    name: ClassVar[str]
    version: str
    model: str

    def __init__(self, options: LLMOptions, model: str, price: TokenPrice | None, sdk_error: type[Exception]) -> None:
        self.options = options
        self.model = model
        self.max_concurrency = options.max_concurrency
        self.timeout = options.timeout
        self.max_attempts = options.max_attempts
        self.validation_retries = options.validation_retries
        self.max_tokens = options.max_tokens
        self.max_document_chars = options.max_document_chars
        self.price = price
        self._guard = _RequestGuard(sdk_error, options.max_retry_wait)

    def _sdk_client(self, sdk: Any, client_class: type, **arguments: Any) -> Any:
        """The SDK's client with its own retries (`max_attempts` - 1) and timeout, and the guard's event hooks on the
        HTTP client it is handed (the SDK's `DefaultHttpxClient` keeps the SDK's connection limits)."""
        return client_class(
            timeout=self.timeout,
            max_retries=self.max_attempts - 1,
            http_client=sdk.DefaultHttpxClient(event_hooks=self._guard.event_hooks()),
            **arguments,
        )

    # -- identity ------------------------------------------------------------------------------------------------

    def _fingerprint(self, **settings: Any) -> str:
        payload = {
            "revision": PROMPT_REVISION,
            "system": SYSTEM_PROMPT_TEMPLATE,
            "user": USER_PROMPT_TEMPLATE,
            "answer": self._answer_instruction(),
            "schema": OpinionExtraction.model_json_schema(),
            "model": self.model,
            "max_document_chars": self.max_document_chars,
            **settings,
        }
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode("utf-8")).hexdigest()
        return f"llm1-{digest[:16]}"

    def estimated_cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        """An estimate from list prices (see llm_models.toml); not a bill. None: the model's price is unknown."""
        return None if self.price is None else self.price.cost(input_tokens, output_tokens)

    def user_prompt(self, document: DocumentInput) -> str:
        """The user message extraction sends for `document` (its text cut at `max_document_chars`)."""
        return render_user_prompt(document, self.max_document_chars)

    # -- provider hooks ------------------------------------------------------------------------------------------

    def _answer_instruction(self) -> str:
        return TOOL_ANSWER

    def _create(
        self, system: str, user: str, hooks: Any, retrying: Any, response_model: type[BaseModel] = OpinionExtraction
    ) -> Any:
        raise NotImplementedError

    @staticmethod
    def _usage_of(response: Any) -> tuple[int, int]:
        raise NotImplementedError

    # -- the batch -----------------------------------------------------------------------------------------------

    def extract(
        self, documents: Sequence[DocumentInput], entities: Sequence[RegistryEntity]
    ) -> list[ExtractionOutcome]:
        """One outcome per document, in input order; failures are outcomes, never exceptions."""
        if not documents:
            return []
        system = render_system_prompt(entities, self._answer_instruction())
        index = RegistryIndex(entities)
        abort = threading.Event()
        abort_reason: list[str] = []
        started = time.monotonic()

        def work(document: DocumentInput) -> ExtractionOutcome:
            try:
                return self._extract_one(document, system, index, abort, abort_reason)
            except Exception as exc:  # a bug here must not lose the document either
                logger.exception("unexpected error extracting document %s", document.doc_id)
                return ExtractionOutcome(
                    doc_id=document.doc_id,
                    content_hash=document.content_hash,
                    failed=True,
                    failure_reason=redact(f"unexpected {type(exc).__name__}: {exc}")[:MAX_REASON_CHARS],
                )

        # The first document goes alone: a wrong key or model then costs one request, not one per worker (the
        # pool would have `max_concurrency` requests in flight before the first 401 came back).
        outcomes = [work(documents[0])]
        with ThreadPoolExecutor(
            max_workers=min(self.max_concurrency, max(1, len(documents) - 1)), thread_name_prefix="oprag-llm"
        ) as pool:
            outcomes += list(pool.map(work, documents[1:]))
        input_tokens = sum(o.input_tokens for o in outcomes)
        output_tokens = sum(o.output_tokens for o in outcomes)
        cost = self.estimated_cost_usd(input_tokens, output_tokens)
        logger.info(
            "%s extractor (%s): %d documents, %d failed, %d input / %d output tokens, %s, %.1fs",
            self.name,
            self.model,
            len(outcomes),
            sum(o.failed for o in outcomes),
            input_tokens,
            output_tokens,
            "cost unknown" if cost is None else f"~${cost:.4f}",
            time.monotonic() - started,
        )
        return outcomes

    def _extract_one(
        self,
        document: DocumentInput,
        system: str,
        index: RegistryIndex,
        abort: threading.Event,
        abort_reason: list[str],
    ) -> ExtractionOutcome:
        outcome = ExtractionOutcome(doc_id=document.doc_id, content_hash=document.content_hash)
        if not document.text.strip():
            return outcome
        user = render_user_prompt(document, self.max_document_chars)
        usage = _Usage()
        answer, diagnosis = self._call(
            f"document {document.doc_id}", system, user, OpinionExtraction, usage, abort, abort_reason
        )
        outcome.input_tokens, outcome.output_tokens = usage.input_tokens, usage.output_tokens
        if answer is not None:
            outcome.opinions = to_opinions(answer, document, index)
            ungrounded = [o.entity_name for o in outcome.opinions if not o.grounded]
            if ungrounded:
                logger.warning("document %s: ungrounded opinions flagged: %s", document.doc_id, ", ".join(ungrounded))
            return outcome
        outcome.failed = True
        outcome.failure_reason = diagnosis.reason
        logger.warning("document %s left pending: %s", document.doc_id, outcome.failure_reason)
        return outcome

    def _call(
        self,
        label: str,
        system: str,
        user: str,
        response_model: type[BaseModel],
        usage: _Usage,
        abort: threading.Event | None = None,
        abort_reason: list[str] | None = None,
    ) -> tuple[Any | None, Diagnosis]:
        """One structured answer: the SDK retries transport faults, instructor re-asks schema-invalid answers, the
        guard's hooks pause and abort. The answer is None when it failed, and the diagnosis (redacted) says why."""
        abort = abort if abort is not None else threading.Event()
        abort_reason = abort_reason if abort_reason is not None else []
        if abort.is_set():  # an earlier 401/403/404 means this request would fail too
            return None, Diagnosis("fail", f"not attempted: {abort_reason[0] if abort_reason else 'batch aborted'}")
        try:
            with self._guard.track(usage, abort, abort_reason):
                answer = self._create(
                    system, user, self._instructor_hooks(usage), self._validation_retrying(), response_model
                )
            return answer, Diagnosis("fail", "")
        except Exception as exc:
            diagnosis = diagnose(exc, timeout=self.timeout, max_tokens=self.max_tokens)
            reason = diagnosis.reason
            if reason.startswith("batch aborted: "):  # the hook stopped it before (another) request was sent
                cause = reason.removeprefix("batch aborted: ")
                reason = (
                    f"stopped after {usage.requests} request(s): {cause}"
                    if usage.requests
                    else f"not attempted: {cause}"
                )
            elif usage.requests:
                reason += f" (gave up after {usage.requests} request(s))"
            logger.debug("%s failed: %s", label, redact(reason)[:200])
            return None, Diagnosis(diagnosis.action, redact(reason)[:MAX_REASON_CHARS])

    def ask(
        self,
        system: str,
        user: str,
        response_model: type[BaseModel],
        *,
        label: str | None = None,
        abort: threading.Event | None = None,
    ) -> tuple[Any, int, int]:
        """A structured answer to any prompt through the same client and retry policy as extraction (used by the
        evaluation's LLM question generation and the registry bootstrap): (answer, input tokens, output tokens);
        `LLMRequestFailed` (a RuntimeError carrying the tokens spent) on failure. `abort`, shared by the calls of one
        batch, is set by an authentication or unknown-model error so the other calls stop instead of repeating it."""
        usage = _Usage()
        answer, diagnosis = self._call(label or response_model.__name__, system, user, response_model, usage, abort)
        if answer is None:
            raise LLMRequestFailed(diagnosis.reason, usage.input_tokens, usage.output_tokens)
        return answer, usage.input_tokens, usage.output_tokens

    # -- instructor plumbing -------------------------------------------------------------------------------------

    def _instructor_hooks(self, usage: _Usage) -> Any:
        """Tokens of every answer, including the schema-invalid ones instructor re-asks: they cost too."""
        from instructor.core.hooks import Hooks

        def on_response(response: Any) -> None:
            try:
                input_tokens, output_tokens = self._usage_of(response)
            except Exception:  # a response without usage costs something we cannot see; never fail over it
                return
            usage.input_tokens += input_tokens
            usage.output_tokens += output_tokens

        hooks = Hooks()
        hooks.on("completion:response", on_response)
        return hooks

    def _validation_retrying(self) -> Any:
        """instructor re-asks only on schema-invalid answers; transport faults are the SDK's to retry."""
        from instructor.core import ResponseParsingError
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

        return Retrying(
            stop=stop_after_attempt(self.validation_retries + 1),
            retry=retry_if_exception_type((pydantic.ValidationError, ResponseParsingError)),
            reraise=True,
        )
