"""LLM opinion extractors: Anthropic's Messages API, and any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp).

Both send one request per document through instructor, so the answer is validated against the same closed vocabulary
(`schema.py`) the warehouse accepts, and map it onto the registry. What they add over a bare API call, and why:

- **Registry-anchored prompt.** The system prompt lists the registry's entities (id, name, aliases, tiers) so answers
  reuse existing ids; the model may still propose a new target (`is_new_entity`), which comes back `proposed=True`.
- **Documents are data.** The text travels inside `<document id="...">…</document>` in the user turn, never in the
  system prompt, and the instructions say never to follow instructions found inside it. Tag look-alikes inside the
  text are neutralised so a document cannot close its own delimiter.
- **Grounding.** An answer whose quoted evidence is not in the text (whitespace-, case- and quote-style-insensitive)
  *and* whose entity is not mentioned either (the shared matcher of `registry.matching`, as the offline extractor
  finds mentions) is kept but flagged `grounded=False`, so callers can report it instead of
  indexing a hallucination as a good opinion.
- **The SDKs' retry policy, plus hooks.** Each SDK retries transport faults itself (408/409/429/5xx, connection
  errors, timeouts, `retry-after-ms` / `retry-after`, and the server's `x-should-retry`), with `max_retries` =
  `max_attempts` - 1 and `timeout` from `LLMOptions`; instructor only re-asks a schema-invalid answer, at most
  `validation_retries` times. What the SDKs lack is added by httpx event hooks on the client they are handed
  (`_RequestGuard`): a 401, 403 or 404 (bad key, no permission, unknown model) aborts the batch, as every further
  request would fail the same way; a 429 pauses every worker until its `retry-after` has passed, so the pool does not
  keep hammering a rate-limited endpoint; a 200 whose JSON body does not parse is retried like a connection error. A
  document that still fails is returned `failed=True` with a `failure_reason` and stays pending for the next run; one
  bad document never raises and never takes the batch down.
- **Cost visibility.** Token counts of every answer (schema-invalid ones cost too) are summed into the outcome, and
  `estimated_cost_usd` prices them from `llm_models.toml` (list-price *estimates* in USD per million tokens); override
  them with `price_per_mtok=` or `OPRAG_ANTHROPIC_PRICE_PER_MTOK` / `OPRAG_OPENAI_PRICE_PER_MTOK` ("input,output"). A
  model the table does not know has an unknown cost (None), never a silent zero. Anthropic prompt-cache reads and
  writes are counted as ordinary input tokens (reads really cost a tenth, writes a quarter more), so over a batch the
  estimate runs high.
- **Cache identity.** `version` hashes the prompt templates, the response schema, the model id and the sampling
  settings, because results are cached by (content hash, registry version, extractor name, extractor version).

Secrets: API keys come only from the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`; in a Dagster run through
the extractor resource's `EnvVar` field, resolved in the run's process), are never stored on the extractor, never
logged, and are redacted from failure reasons and from the log records of the libraries involved.

The modules: `prompts` (the response schema and the prompts), `grounding` (answers mapped onto the registry and the
text), `pricing` (llm_models.toml and the cost estimate), `transport` (secret redaction, failure diagnosis, the HTTP
guard), `base` (`LLMOptions` and the shared extractor machinery), and one module per provider: `anthropic_api`
(Messages and Message Batches) and `openai_compatible`. The names below are re-exported from them.
"""

from __future__ import annotations

from oprag_pipeline.enrich.llm.anthropic_api import DEFAULT_ANTHROPIC_MODEL, AnthropicBatchExtractor, AnthropicExtractor
from oprag_pipeline.enrich.llm.base import LLMOptions
from oprag_pipeline.enrich.llm.grounding import RegistryIndex, to_opinions
from oprag_pipeline.enrich.llm.openai_compatible import DEFAULT_OPENAI_BASE_URL, OpenAICompatibleExtractor
from oprag_pipeline.enrich.llm.pricing import TokenPrice, model_facts, parse_model_table
from oprag_pipeline.enrich.llm.prompts import (
    JSON_ANSWER,
    OpinionAnswer,
    OpinionExtraction,
    neutralise_document_text,
    render_system_prompt,
    render_user_prompt,
)
from oprag_pipeline.enrich.llm.transport import LLMRequestFailed, MissingCredentialsError
from oprag_pipeline.registry.matching import fold  # imported from here before the split

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_BASE_URL",
    "JSON_ANSWER",
    "AnthropicBatchExtractor",
    "AnthropicExtractor",
    "LLMOptions",
    "LLMRequestFailed",
    "MissingCredentialsError",
    "OpenAICompatibleExtractor",
    "OpinionAnswer",
    "OpinionExtraction",
    "RegistryIndex",
    "TokenPrice",
    "fold",
    "model_facts",
    "neutralise_document_text",
    "parse_model_table",
    "render_system_prompt",
    "render_user_prompt",
    "to_opinions",
]
