"""What every provider's requests share below the SDK: secrets kept out of logs and failure reasons, the diagnosis of
a call that failed once the SDK's own retries were spent, and the httpx event hooks (`_RequestGuard`) that add what
the SDKs lack: abort the batch on 401/403/404, pause every worker on a 429, retry a 2xx whose JSON body is cut short.
"""

from __future__ import annotations

import email.utils
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

MAX_REASON_CHARS = 600
OPENAI_PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key, but the SDK insists on having one


# --------------------------------------------------------------------------------------------------------------------
# Secrets: never logged, never in a failure reason
# --------------------------------------------------------------------------------------------------------------------


class MissingCredentialsError(RuntimeError):
    """An extractor that needs an API key was built without one in the environment."""


class LLMRequestFailed(RuntimeError):
    """`ask` gave up; the tokens of its failed attempts still cost money, so they travel with the error."""

    def __init__(self, reason: str, input_tokens: int = 0, output_tokens: int = 0) -> None:
        super().__init__(reason)
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens


_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
# Loggers of the libraries on the request path. Logger filters do not apply to records propagated from child loggers,
# so known names are listed and, at registration, every existing logger under these prefixes is covered too.
_REDACTED_PREFIXES = ("anthropic", "openai", "instructor", "httpx", "httpx2", "httpcore", "httpcore2")
_REDACTED_LOGGERS = (
    __package__,  # "oprag_pipeline.enrich.llm": the one logger every module of this package logs to
    "instructor.v2",
    "instructor.v2.retry",
    "anthropic._base_client",
    "openai._base_client",
    "httpcore2.http11",
    "httpcore2.connection",
    *_REDACTED_PREFIXES,
)


def redact(text: str) -> str:
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, "***")
    return text


class _RedactSecrets(logging.Filter):
    """Rewrites a record whose message would contain a registered API key (e.g. a proxy echoing it in an error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _SECRETS:
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if (
            record.exc_info
            and record.exc_info[1] is not None
            and redact(str(record.exc_info[1])) != str(record.exc_info[1])
        ):
            record.exc_info, record.exc_text = None, None
        return True


_REDACT_FILTER = _RedactSecrets()


def _register_secret(secret: str) -> None:
    """Remember a key for redaction; short placeholders are not secrets and would redact ordinary words."""
    if len(secret) < 8 or secret == OPENAI_PLACEHOLDER_KEY:
        return
    with _SECRETS_LOCK:
        _SECRETS.add(secret)
        existing = [name for name in list(logging.root.manager.loggerDict) if name.split(".")[0] in _REDACTED_PREFIXES]
        for name in {*_REDACTED_LOGGERS, *existing}:
            target = logging.getLogger(name)
            if _REDACT_FILTER not in target.filters:
                target.addFilter(_REDACT_FILTER)


# --------------------------------------------------------------------------------------------------------------------
# Failure classification: what the SDK raised once its own retries were spent
# --------------------------------------------------------------------------------------------------------------------

Action = Literal["fail", "abort"]
_ABORT_STATUS = frozenset({401, 403, 404})  # wrong key, no permission, unknown model/path: every document would fail


@dataclass(frozen=True)
class Diagnosis:
    action: Action
    reason: str


class RunAborted(Exception):
    """Raised by the request hook once the batch is aborted. The concrete class also derives from the SDK's own
    error base (`anthropic.AnthropicError` / `openai.OpenAIError`), which both SDKs propagate without retrying."""


class NotJSONBody(ValueError):
    """A 2xx answer whose JSON body does not parse (a proxy cutting the body short). Raised inside the HTTP send, so
    the SDK counts it as a connection error and retries it within `max_attempts`."""


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` (non-standard, precise) or `retry-after` (seconds or an HTTP date),
    read the way the SDKs read them, for the pause every worker shares."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def _validation_summary(exc: pydantic.ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}" for err in exc.errors()[:3]]
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def _body_reason(status: int, body: Any, fallback: str) -> str:
    """'HTTP 429 rate_limit_error: slow down' from either API's error body, else `fallback`."""
    if isinstance(body, dict):
        detail = body.get("error") if isinstance(body.get("error"), dict) else body
        message = detail.get("message")
        if message:
            kind = detail.get("type")
            return f"HTTP {status} {kind}: {message}" if kind else f"HTTP {status}: {message}"
    return f"HTTP {status}: {fallback}"


def diagnose(exc: BaseException, *, timeout: float, max_tokens: int) -> Diagnosis:
    """Why a call failed, after the SDK's retries: the document fails, or (bad key, unknown model) the batch aborts."""
    import anthropic
    import openai
    from instructor.core import IncompleteOutputException, ResponseParsingError

    chain = _chain(exc)
    for cause in chain:  # our own hook errors first: the SDK wraps NotJSONBody in its connection error
        if isinstance(cause, RunAborted):
            return Diagnosis("fail", f"batch aborted: {cause}")
        if isinstance(cause, NotJSONBody):
            return Diagnosis("fail", str(cause))
    status_errors = (anthropic.APIStatusError, openai.APIStatusError)
    timeout_errors = (anthropic.APITimeoutError, openai.APITimeoutError)
    connection_errors = (anthropic.APIConnectionError, openai.APIConnectionError)
    for cause in chain:
        if isinstance(cause, status_errors):
            reason = _body_reason(cause.status_code, cause.body, getattr(cause, "message", "") or str(cause))
            return Diagnosis("abort" if cause.status_code in _ABORT_STATUS else "fail", reason)
        if isinstance(cause, timeout_errors):
            return Diagnosis("fail", f"request timed out after {timeout:g}s")
        if isinstance(cause, connection_errors):
            detail = cause.__cause__ or cause
            return Diagnosis("fail", f"connection error: {type(detail).__name__}: {detail}")
        if isinstance(cause, json.JSONDecodeError):
            return Diagnosis("fail", f"response body is not valid JSON ({cause.msg} at position {cause.pos})")
        if isinstance(cause, IncompleteOutputException):
            return Diagnosis("fail", f"answer truncated at max_tokens={max_tokens}")
        if isinstance(cause, pydantic.ValidationError):
            return Diagnosis("fail", f"schema-invalid answer: {_validation_summary(cause)}")
        if isinstance(cause, ResponseParsingError):
            return Diagnosis("fail", f"unparseable answer: {cause}")
    return Diagnosis("fail", f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------------------------------------------------
# What the SDKs lack, as httpx event hooks on the client handed to them
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class _Usage:
    """HTTP requests (counted by the request hook) and tokens (from instructor's hooks) of one call."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class _CallState:
    usage: _Usage
    abort: threading.Event
    abort_reason: list[str]


class _RequestGuard:
    """Event hooks for the `httpx2.Client` given to the SDK as `http_client`. The SDK keeps its own retry policy
    (408/409/429/5xx, connection errors, timeouts, `retry-after`, `x-should-retry`); the hooks add what it lacks:

    - a 401, 403 or 404 aborts the batch: every further request, including the SDK's pending retries of other
      documents, raises `RunAborted` before it is sent (the SDKs never retry their own error types);
    - a 429 with `retry-after` pauses *every* worker of this client until it has passed (capped at
      `max_retry_wait`, and the header is capped too so the SDK's own wait never exceeds it);
    - a 2xx whose JSON body does not parse raises `NotJSONBody`, which the SDK retries as a connection error.

    The SDK calls the hooks in the thread that made the call, so the per-call state (the batch's abort flag, the
    request count) travels in a thread-local set by `track`.
    """

    def __init__(self, sdk_error: type[Exception], max_retry_wait: float) -> None:
        self._aborted: type[RunAborted] = type("RunAborted", (RunAborted, sdk_error), {})
        self.max_retry_wait = max_retry_wait
        self._pause_until = 0.0
        self._pause_lock = threading.Lock()
        self._local = threading.local()

    @contextmanager
    def track(self, usage: _Usage, abort: threading.Event, abort_reason: list[str]) -> Iterator[None]:
        self._local.state = _CallState(usage, abort, abort_reason)
        try:
            yield
        finally:
            self._local.state = None

    def event_hooks(self) -> dict[str, list[Callable[[Any], None]]]:
        return {"request": [self.on_request], "response": [self.on_response]}

    def _state(self) -> _CallState | None:
        return getattr(self._local, "state", None)

    def _raise_if_aborted(self, state: _CallState | None) -> None:
        if state is not None and state.abort.is_set():
            raise self._aborted(state.abort_reason[0] if state.abort_reason else "batch aborted")

    def on_request(self, request: Any) -> None:
        state = self._state()
        self._raise_if_aborted(state)  # an earlier 401/403/404 means this request would fail too
        with self._pause_lock:
            remaining = self._pause_until - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
            self._raise_if_aborted(state)  # the abort may have come while this worker was paused
        if state is not None:
            state.usage.requests += 1

    def on_response(self, response: Any) -> None:
        status = response.status_code
        if status == 429:
            retry_after = parse_retry_after(response.headers)
            if retry_after is not None:
                delay = min(retry_after, self.max_retry_wait)
                with self._pause_lock:  # every worker holds back, not just the one that was told to
                    self._pause_until = max(self._pause_until, time.monotonic() + delay)
                if retry_after > delay:
                    response.headers["retry-after-ms"] = str(int(delay * 1000))
            return
        if status in _ABORT_STATUS:
            response.read()
            try:
                body = json.loads(response.content)
            except ValueError:
                body = None
            state = self._state()
            if state is not None:
                if not state.abort_reason:
                    state.abort_reason.append(redact(_body_reason(status, body, response.reason_phrase)))
                state.abort.set()
            return
        if 200 <= status < 300 and "json" in response.headers.get("content-type", ""):
            response.read()
            try:
                json.loads(response.content)
            except ValueError as exc:
                position = getattr(exc, "pos", None)
                where = f" at position {position}" if position is not None else ""
                raise NotJSONBody(f"response body is not valid JSON ({getattr(exc, 'msg', exc)}{where})") from None
