"""A fake LLM endpoint on 127.0.0.1 that speaks the Anthropic Messages API and the OpenAI Chat Completions API.

Why a real HTTP server rather than mocks: the point is to run the *real* anthropic / openai / instructor clients, so
timeouts, status codes, `retry-after` headers, error bodies and malformed payloads go through exactly the code paths
production traffic does, and the number of HTTP calls is counted where it happens.

The fake behaves like a model that follows its system prompt: it reads the registry from the system prompt (one JSON
object per line), reads the document only from between the `<document ...>` / `</document>` delimiters of the user
turn, and answers one opinion per registry entity whose name or alias occurs in the text, quoting the sentence that
mentions it. Instructions written inside a document are ignored, as a well-behaved model would ignore them.

Answers to the registry bootstrap's `TargetExtraction` tool are scripted per document id (`script_targets`): a
document without a script gets no targets.

Faults are scripted per request sequence (`fail_next`) or per document id (`fail_doc` for the next requests of that
document, `always` until `heal`): 429 with `retry-after` / `retry-after-ms`, 5xx, a hang past the client timeout, a
200 with an invalid JSON body, a schema-invalid tool input, an authentication error, and extra opinions appended to an
otherwise normal answer (for ungrounded or proposed entities).

Ordering without clocks: `hold(doc_id, until)` keeps a document's request in flight until an event is set, and
`arrival(doc_id)` is an event set when a request for a document arrives; tests of concurrency and aborts use them to
put requests in a known order, instead of a latency and a margin that a loaded machine can overrun.
"""

from __future__ import annotations

import html
import itertools
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DOCUMENT_BLOCK = re.compile(r"<document\s+([^>]*)>\n(.*)\n</document>", re.DOTALL)
ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
POSITIVE = {"great", "friendly", "clean", "excellent", "lovely", "delicious", "comfortable", "helpful", "good", "best"}
NEGATIVE = {"cold", "awful", "rude", "dirty", "slow", "terrible", "bad", "broken", "noisy", "worst", "stale", "late"}


# The environment variables that steer the LLM clients: tests clear them so a developer's shell cannot change what
# they send or expect.
LLM_ENVIRONMENT = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_BASE_URL",
    "OPRAG_ANTHROPIC_MODEL",
    "OPRAG_ANTHROPIC_PRICE_PER_MTOK",
    "OPRAG_OPENAI_BASE_URL",
    "OPRAG_OPENAI_MODEL",
    "OPRAG_OPENAI_MODE",
    "OPRAG_OPENAI_PRICE_PER_MTOK",
    "OPRAG_LLM_TIMEOUT",
)


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour; build them with the helpers below."""

    kind: str
    status: int = 500
    retry_after: str | None = None
    retry_after_ms: str | None = None
    opinions: tuple[dict[str, Any], ...] = ()
    echo_key: bool = False
    answer: dict[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers, e.g. x-should-retry


def rate_limited(retry_after: str | None = "1", retry_after_ms: str | None = None) -> Fault:
    return Fault("rate_limit", status=429, retry_after=retry_after, retry_after_ms=retry_after_ms)


def server_error(status: int = 500, should_retry: bool | None = None) -> Fault:
    """A 5xx; `should_retry` sends the `x-should-retry` header the SDKs obey over their status-code policy."""
    headers = () if should_retry is None else (("x-should-retry", "true" if should_retry else "false"),)
    return Fault("server_error", status=status, headers=headers)


def hang() -> Fault:
    return Fault("hang")


def invalid_json() -> Fault:
    return Fault("invalid_json", status=200)


def schema_invalid() -> Fault:
    return Fault("schema_invalid", status=200)


def auth_error(echo_key: bool = False, status: int = 401) -> Fault:
    """401 (bad key) by default; 403 (no permission) and 404 (unknown model) fail every request the same way."""
    return Fault("auth_error", status=status, echo_key=echo_key)


def extra_opinions(*opinions: dict[str, Any]) -> Fault:
    return Fault("extra", status=200, opinions=tuple(opinions))


def scripted(answer: dict[str, Any]) -> Fault:
    """A 200 whose tool input is exactly `answer`: what a model that misbehaves in a given way would answer (an
    invented quote, shares it was not given, obedience to an instruction planted in a document)."""
    return Fault("scripted", status=200, answer=answer)


@dataclass
class RecordedRequest:
    """What the server saw; `document_message` is the user turn that carried the document."""

    api: str
    path: str
    started: float
    headers: dict[str, str]
    body: Any
    system: str = ""
    document_message: str = ""
    doc_id: str | None = None
    fault: str | None = None
    usage: tuple[int, int] | None = None
    answered: float | None = None  # just before an error answer was written (same clock as `started`)


@dataclass
class _Script:
    next_any: deque[Fault] = field(default_factory=deque)
    next_by_doc: dict[str, deque[Fault]] = field(default_factory=dict)
    always_by_doc: dict[str, Fault] = field(default_factory=dict)


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text blocks of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))
    return ""


def registry_from_system(system: str) -> list[dict[str, Any]]:
    entities = []
    for line in system.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "id" in record and "name" in record:
            entities.append(record)
    return entities


def parse_document(message: str) -> tuple[str | None, str]:
    match = DOCUMENT_BLOCK.search(message)
    if not match:
        return None, ""
    attributes = {k: html.unescape(v) for k, v in ATTRIBUTE.findall(match.group(1))}
    return attributes.get("id"), match.group(2)


def model_answer(system: str, document_text: str) -> dict[str, Any]:
    """What a system-prompt-following model would answer: registry entities mentioned in the text, quoted."""
    sentences = [s.strip() for s in SENTENCE_END.split(document_text) if s.strip()]
    opinions = []
    for entity in registry_from_system(system):
        names = [entity["name"], *entity.get("aliases", [])]
        pattern = re.compile("|".join(r"(?<!\w)" + re.escape(n) + r"(?!\w)" for n in names), re.IGNORECASE)
        sentence = next((s for s in sentences if pattern.search(s)), None)
        if sentence is None:
            continue
        words = set(re.findall(r"[a-z]+", sentence.lower()))
        positive, negative = len(words & POSITIVE), len(words & NEGATIVE)
        sentiment = "positive" if positive > negative else "negative" if negative > positive else "neutral"
        opinions.append(
            {
                "entity": entity["name"],
                "is_new_entity": False,
                "sentiment": sentiment,
                "intensity": "high" if max(positive, negative) >= 2 else "medium",
                "impact": "medium",
                "emotions": ["frustration"]
                if sentiment == "negative"
                else ["delight"]
                if sentiment == "positive"
                else [],
                "evidence_type": "personal_experience",
                "evidence": sentence,
            }
        )
    return {"opinions": opinions}


def question_answer(message: str) -> dict[str, Any]:
    """What a model would answer to the evaluation's question-generation prompt: two questions of every kind that
    name the entity, plus one that does not (a careless model; the pipeline must drop it)."""
    match = re.search(r"<entity>(.*?)</entity>", message, re.S)
    entity = json.loads(match.group(1)) if match else {"name": "it"}
    name, partner = entity["name"], entity.get("partner") or "what people expected"
    wordings = {
        "experience": (f"What happened to people who tried the {name}?", f"How did the {name} work out for guests?"),
        "impact": (f"Did the {name} change anyone's plans?", f"What does the {name} cost people in time?"),
        "emotional": (f"Does the {name} make people angry?", f"Who is happy with the {name}, and why?"),
        "comparison": (f"Is the {name} better than {partner}?", f"Do people rank the {name} above {partner}?"),
        "suggestion": (f"How should the {name} be fixed?", f"What would improve the {name} first?"),
    }
    questions = [{"question_type": t, "text": text} for t, pair in wordings.items() for text in pair]
    questions.insert(1, {"question_type": "experience", "text": "What is the weather like in town?"})
    return {"questions": questions}


ALL_DOCUMENTS = re.compile(r'<document\s+id="([^"]*)"[^>]*>\n(.*?)\n</document>', re.DOTALL)
CORPUS_DISTRIBUTION = re.compile(r"<corpus_distribution>(.*?)</corpus_distribution>", re.DOTALL)


def _side_of(sentence: str) -> str:
    words = set(re.findall(r"[a-z]+", sentence.lower()))
    positive, negative = len(words & POSITIVE), len(words & NEGATIVE)
    return "positive" if positive > negative else "negative" if negative > positive else "neutral"


def written_answer(message: str) -> dict[str, Any]:
    """What a prompt-following model would answer to the generation prompt: the corpus shares exactly as given (or,
    without them, the balance of the sentences it quotes, for each entity listed), and the first sentence of up to
    three documents, quoted verbatim with their ids. Instructions inside documents are ignored."""
    documents = [(html.unescape(i), text) for i, text in ALL_DOCUMENTS.findall(message)]
    quotes = []
    for doc_id, text in documents[:3]:
        sentence = next((s.strip() for s in SENTENCE_END.split(text) if s.strip()), "")
        if len(sentence) >= 3:
            quotes.append({"doc_id": doc_id, "text": sentence[:400], "side": _side_of(sentence)})
    match = CORPUS_DISTRIBUTION.search(message)
    shares = []
    if match:
        for entity in json.loads(match.group(1)):
            total = entity["opinions"] or 1
            shares.append(
                {"entity": entity["entity"], **{s: entity[s] / total for s in ("positive", "neutral", "negative")}}
            )
    elif quotes:
        counts = {s: sum(q["side"] == s for q in quotes) / len(quotes) for s in ("positive", "neutral", "negative")}
        named = re.search(r"<entities>(.*?)</entities>", message, re.DOTALL)
        shares.extend({"entity": name, **counts} for name in (json.loads(named.group(1)) if named else []))
    prose = " ".join(
        f"On {s['entity']}: {s['positive']:.0%} positive, {s['neutral']:.0%} neutral, {s['negative']:.0%} negative."
        for s in shares
    )
    return {"prose": prose or "The documents say nothing about this.", "shares": shares, "quotes": quotes}


def preference_verdict(message: str) -> dict[str, Any]:
    """A judge that prefers the answer stating more of the distribution (its share figures and the sides it
    names), whichever position it is in; equal answers are a tie."""

    def weight(label: str) -> int:
        match = re.search(rf"<answer_{label}>(.*?)</answer_{label}>", message, re.DOTALL)
        text = match.group(1).lower() if match else ""
        return text.count("%") + sum(side in text for side in ("positive", "neutral", "negative"))

    a, b = weight("a"), weight("b")
    better = "A" if a > b else "B" if b > a else "tie"
    return {"better": better, "reason": f"answer A states {a} distribution cues, answer B {b}"}


def requested_tool(api: str, body: dict[str, Any]) -> str:
    if api == "anthropic":
        choice = body.get("tool_choice") or {}
        return choice.get("name") or (body.get("tools") or [{}])[0].get("name", "")
    tools = body.get("tools") or []
    return tools[0]["function"]["name"] if tools else ""


class FakeLLMServer:
    """`with FakeLLMServer() as server:`, then point clients at `server.anthropic_base_url` / `openai_base_url`.

    Like the real Messages API at version 2026-10-21, the Anthropic route rejects `temperature`, `top_p` and `top_k`
    with a 400, so a client that sends them fails here as it would in production.
    """

    def __init__(self, *, hang_seconds: float = 3.0, latency: float = 0.0, api_key: str | None = None) -> None:
        self.hang_seconds = hang_seconds
        self.latency = latency
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._script = _Script()
        self._targets: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ids = itertools.count(1)
        self._in_flight = 0
        self.max_in_flight = 0
        self._holds: dict[str, threading.Event] = {}
        self.hold_timeout = 60.0
        self._arrivals: dict[str, threading.Event] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # Message Batches: id -> (requests, results as JSONL lines); a batch reads "in_progress" for the first
        # `batch_polls_before_end` retrieves, as a real batch does for minutes to hours
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self._batch_results: dict[str, list[str]] = {}
        self._batch_polls: dict[str, int] = {}
        self.batch_polls_before_end = 0

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                server._handle(self)

            def do_GET(self) -> None:
                server._handle_get(self)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.root_url  # the SDK appends /v1/messages

    @property
    def openai_base_url(self) -> str:
        return self.root_url + "/v1"  # the SDK appends /chat/completions

    # -- scripting -------------------------------------------------------------------------------------------------

    def fail_next(self, *faults: Fault) -> None:
        """The next requests, whatever their document, misbehave in this order."""
        with self._lock:
            self._script.next_any.extend(faults)

    def fail_doc(self, doc_id: str, *faults: Fault) -> None:
        """The next requests for this document misbehave in this order, then it is answered normally."""
        with self._lock:
            self._script.next_by_doc.setdefault(doc_id, deque()).extend(faults)

    def always(self, doc_id: str, fault: Fault) -> None:
        """Every request for this document misbehaves until `heal`."""
        with self._lock:
            self._script.always_by_doc[doc_id] = fault

    def script_targets(self, doc_id: str, *targets: dict[str, Any]) -> None:
        """What the model answers to a `TargetExtraction` request for this document: `{target, evidence}` items."""
        with self._lock:
            self._targets[doc_id] = [dict(t) for t in targets]

    def hold(self, doc_id: str, until: threading.Event, timeout: float = 60.0) -> None:
        """Requests for this document stay in flight (unanswered) until `until` is set; after `timeout` seconds
        they are answered anyway, so a client that never sets it fails the test's assertions instead of hanging."""
        with self._lock:
            self._holds[doc_id] = until
        self.hold_timeout = timeout

    def arrival(self, doc_id: str) -> threading.Event:
        """An event set as soon as a request for this document has been received."""
        with self._lock:
            return self._arrivals.setdefault(doc_id, threading.Event())

    def heal(self) -> None:
        with self._lock:
            self._script = _Script()

    def _fault_for(self, doc_id: str | None) -> Fault | None:
        with self._lock:
            if self._script.next_any:
                return self._script.next_any.popleft()
            if doc_id is not None:
                queue = self._script.next_by_doc.get(doc_id)
                if queue:
                    return queue.popleft()
                return self._script.always_by_doc.get(doc_id)
            return None

    # -- inspection ------------------------------------------------------------------------------------------------

    def requests_for(self, doc_id: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.doc_id == doc_id]

    def count(self, doc_id: str) -> int:
        return len(self.requests_for(doc_id))

    def usage_for(self, doc_id: str) -> tuple[int, int]:
        pairs = [r.usage for r in self.requests_for(doc_id) if r.usage is not None]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    # -- HTTP ------------------------------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            self._dispatch(handler)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): nothing to answer
            pass
        finally:
            with self._lock:
                self._in_flight -= 1

    def _dispatch(self, handler: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        path = handler.path.split("?")[0]
        if path.endswith("/v1/messages/batches"):
            self._create_batch(handler, raw)
            return
        if path.endswith("/v1/messages"):
            api = "anthropic"
        elif path.endswith("/v1/chat/completions"):
            api = "openai"
        else:
            self._send_json(handler, 404, {"error": {"message": f"no route {path}", "type": "not_found_error"}})
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = None
        record = RecordedRequest(api=api, path=path, started=started, headers=headers, body=body)
        if isinstance(body, dict):
            record.system, record.document_message = self._prompt_parts(api, body)
            record.doc_id, _ = parse_document(record.document_message)
        with self._lock:
            self.requests.append(record)
            arrived = self._arrivals.setdefault(record.doc_id or "", threading.Event())
            held = self._holds.get(record.doc_id or "")
        arrived.set()
        if held is not None:
            held.wait(self.hold_timeout)
        if not isinstance(body, dict):
            self._send_error(handler, api, 400, "invalid_request_error", "body is not a JSON object")
            return
        if self.api_key is not None and self._presented_key(api, headers) != self.api_key:
            self._send_error(handler, api, 401, "authentication_error", "invalid x-api-key")
            return
        if api == "anthropic":
            problem = self._anthropic_request_problem(body)
            if problem:
                self._send_error(handler, api, 400, "invalid_request_error", problem)
                return

        fault = self._fault_for(record.doc_id)
        record.fault = fault.kind if fault else None
        if fault is not None and fault.kind == "rate_limit":
            extra = {}
            if fault.retry_after is not None:
                extra["retry-after"] = fault.retry_after
            if fault.retry_after_ms is not None:
                extra["retry-after-ms"] = fault.retry_after_ms
            # stamped before the answer is written, so no client can have read it earlier than `answered`
            record.answered = time.monotonic()
            self._send_error(handler, api, 429, "rate_limit_error", "rate limited: slow down", extra)
            return
        if fault is not None and fault.kind == "server_error":
            kind = "overloaded_error" if fault.status == 529 else "api_error"
            self._send_error(handler, api, fault.status, kind, "internal server error", dict(fault.headers))
            return
        if fault is not None and fault.kind == "auth_error":
            key = self._presented_key(api, headers) or ""
            message = f"invalid api key {key}" if fault.echo_key else "invalid api key"
            kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}[fault.status]
            record.answered = time.monotonic()
            self._send_error(handler, api, fault.status, kind, message)
            return
        if fault is not None and fault.kind == "invalid_json":
            payload = b'{"id": "msg_truncated", "type": "message", "content": [{"type": "tool_u'
            self._send_raw(handler, 200, payload, {"content-type": "application/json"})
            return
        if fault is not None and fault.kind == "hang":
            if self._stop.wait(self.hang_seconds):
                return
        elif self.latency:
            time.sleep(self.latency)

        _, document_text = parse_document(record.document_message)
        tool = requested_tool(api, body)
        if tool == "QuestionDrafts":
            answer = question_answer(record.document_message)
        elif tool == "TargetExtraction":
            with self._lock:
                answer = {"targets": list(self._targets.get(record.doc_id or "", []))}
        elif tool == "WrittenAnswer":
            answer = written_answer(record.document_message)
        elif tool == "PreferenceVerdict":
            answer = preference_verdict(record.document_message)
        else:
            answer = model_answer(record.system, document_text)
        if fault is not None and fault.kind == "scripted" and fault.answer is not None:
            answer = json.loads(json.dumps(fault.answer))
        if fault is not None and fault.kind == "extra" and "opinions" in answer:
            answer["opinions"].extend(dict(o) for o in fault.opinions)
        if fault is not None and fault.kind == "schema_invalid" and "questions" in answer:
            answer["questions"] = [{"question_type": "rumour", "text": "not a kind of question we asked for"}]
        elif fault is not None and fault.kind == "schema_invalid" and "targets" in answer:
            answer["targets"] = [{"target": "", "quote": "a field the schema does not have"}]
        elif fault is not None and fault.kind == "schema_invalid":
            first = (
                answer["opinions"][0]
                if answer["opinions"]
                else {
                    "entity": "anything",
                    "intensity": "low",
                    "impact": "low",
                    "emotions": [],
                    "evidence_type": "anecdotal",
                    "evidence": "anything",
                }
            )
            answer["opinions"] = [{**first, "sentiment": "ecstatic"}]
        input_tokens = max(1, len(raw) // 4)
        output_tokens = max(1, len(json.dumps(answer)) // 4)
        record.usage = (input_tokens, output_tokens)
        if api == "anthropic":
            self._send_json(handler, 200, self._anthropic_message(body, answer, input_tokens, output_tokens))
        else:
            self._send_json(handler, 200, self._openai_completion(body, answer, input_tokens, output_tokens))

    # -- Message Batches -------------------------------------------------------------------------------------------

    def _create_batch(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        """Answers every request of the batch at once, as `/v1/messages` would (a scripted `server_error` for a
        document makes its result `errored`); the batch then reads as ended after `batch_polls_before_end` polls."""
        body = json.loads(raw)
        batch_id = f"msgbatch_{next(self._ids):06d}"
        lines = []
        for item in body["requests"]:
            params = item["params"]
            system, message = self._prompt_parts("anthropic", params)
            doc_id, text = parse_document(message)
            fault = self._fault_for(doc_id)
            if fault is not None and fault.kind == "server_error":
                result: dict[str, Any] = {
                    "type": "errored",
                    "error": {"type": "error", "error": {"type": "api_error", "message": "internal server error"}},
                }
            else:
                answer = model_answer(system, text)
                n_in, n_out = max(1, len(json.dumps(params)) // 4), max(1, len(json.dumps(answer)) // 4)
                result = {"type": "succeeded", "message": self._anthropic_message(params, answer, n_in, n_out)}
            lines.append(json.dumps({"custom_id": item["custom_id"], "result": result}))
        with self._lock:
            self.batches[batch_id] = list(body["requests"])
            self._batch_results[batch_id] = lines
            self._batch_polls[batch_id] = 0
        self._send_json(handler, 200, self._batch_object(batch_id, ended=False))

    def _batch_object(self, batch_id: str, *, ended: bool) -> dict[str, Any]:
        results = [json.loads(line)["result"]["type"] for line in self._batch_results[batch_id]]
        counts = {kind: results.count(kind) if ended else 0 for kind in ("succeeded", "errored", "canceled", "expired")}
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else len(results), **counts},
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z" if ended else None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"{self.root_url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _handle_get(self, handler: BaseHTTPRequestHandler) -> None:
        match = re.fullmatch(r"/v1/messages/batches/([\w-]+)(/results)?", handler.path.split("?")[0])
        if match is None or match.group(1) not in self.batches:
            self._send_json(handler, 404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}})
            return
        batch_id = match.group(1)
        with self._lock:
            if match.group(2):
                payload = ("\n".join(self._batch_results[batch_id]) + "\n").encode("utf-8")
                ended = None
            else:
                self._batch_polls[batch_id] += 1
                ended = self._batch_polls[batch_id] > self.batch_polls_before_end
        if ended is None:
            self._send_raw(handler, 200, payload, {"content-type": "application/binary"})
        else:
            self._send_json(handler, 200, self._batch_object(batch_id, ended=ended))

    @staticmethod
    def _prompt_parts(api: str, body: dict[str, Any]) -> tuple[str, str]:
        messages = body.get("messages") or []
        if api == "anthropic":
            system = _text_of(body.get("system"))
        else:
            system = "\n".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system")
        user_texts = [_text_of(m.get("content")) for m in messages if m.get("role") == "user"]
        document_message = next((t for t in user_texts if "<document" in t), user_texts[0] if user_texts else "")
        return system, document_message

    @staticmethod
    def _presented_key(api: str, headers: dict[str, str]) -> str | None:
        """Anthropic SDK 2.x sends `Authorization: Bearer`; older clients and proxies send `x-api-key`."""
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return headers.get("x-api-key") if api == "anthropic" else None

    @staticmethod
    def _anthropic_request_problem(body: dict[str, Any]) -> str | None:
        for required in ("model", "max_tokens", "messages"):
            if required not in body:
                return f"{required}: Field required"
        for removed in ("temperature", "top_p", "top_k"):
            if removed in body:
                return f"{removed}: Extra inputs are not permitted"
        return None

    def _anthropic_message(self, body: dict[str, Any], answer: dict[str, Any], n_in: int, n_out: int) -> dict:
        choice = body.get("tool_choice") or {}
        tools = body.get("tools") or [{}]
        tool_name = choice.get("name") if choice.get("type") == "tool" else tools[0].get("name", "tool")
        return {
            "id": f"msg_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [{"type": "tool_use", "id": f"toolu_{next(self._ids):06d}", "name": tool_name, "input": answer}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": n_in, "output_tokens": n_out},
        }

    def _openai_completion(self, body: dict[str, Any], answer: dict[str, Any], n_in: int, n_out: int) -> dict:
        tools = body.get("tools")
        if tools:
            name = tools[0]["function"]["name"]
            call = {"id": f"call_{next(self._ids):06d}", "type": "function"}
            call["function"] = {"name": name, "arguments": json.dumps(answer)}
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": json.dumps(answer)}, "stop"
        return {
            "id": f"chatcmpl-{next(self._ids):06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }

    def _send_error(
        self,
        handler: BaseHTTPRequestHandler,
        api: str,
        status: int,
        kind: str,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        if api == "anthropic":
            payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            payload = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
        self._send_json(handler, status, payload, headers)

    def _send_json(
        self, handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        self._send_raw(
            handler,
            status,
            json.dumps(payload).encode("utf-8"),
            {"content-type": "application/json", **(headers or {})},
        )

    @staticmethod
    def _send_raw(handler: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict[str, str]) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()
