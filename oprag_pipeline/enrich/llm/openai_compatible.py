"""Any OpenAI-compatible Chat Completions endpoint (Ollama, vLLM, llama.cpp server, or OpenAI itself):
`OpenAICompatibleExtractor`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from oprag_pipeline import config
from oprag_pipeline.enrich.llm.base import LLMOptions, _LLMExtractor
from oprag_pipeline.enrich.llm.pricing import resolve_price
from oprag_pipeline.enrich.llm.prompts import JSON_ANSWER, TOOL_ANSWER, OpinionExtraction
from oprag_pipeline.enrich.llm.transport import OPENAI_PLACEHOLDER_KEY, _register_secret

DEFAULT_OPENAI_BASE_URL = "http://localhost:11434/v1"  # Ollama's OpenAI-compatible endpoint


# --------------------------------------------------------------------------------------------------------------------
# OpenAI-compatible endpoints
# --------------------------------------------------------------------------------------------------------------------

OpenAIMode = Literal["tools", "json", "json_schema"]


class OpenAICompatibleExtractor(_LLMExtractor):
    """Any Chat Completions endpoint: Ollama, vLLM, llama.cpp server, or OpenAI itself.

    `mode` picks how the schema is enforced: "tools" (a forced function call; needs a server with tool support, e.g.
    llama.cpp with --jinja), "json" (response_format json_object plus the schema in the prompt; the widest support),
    or "json_schema" (response_format json_schema; vLLM, recent Ollama, OpenAI).

    Environment: `OPENAI_API_KEY` (optional: a placeholder is sent when the local server needs none). The extractor
    resource passes `OPRAG_OPENAI_BASE_URL` (else `OPENAI_BASE_URL`; unset here: Ollama's `http://localhost:11434/v1`),
    `OPRAG_OPENAI_MODEL` (required), `OPRAG_OPENAI_MODE` (default tools), `OPRAG_OPENAI_PRICE_PER_MTOK` (else
    llm_models.toml, else the cost is unknown; "0,0" for a local server) and `OPRAG_LLM_TIMEOUT` as `base_url`,
    `model`, `mode`, `price_per_mtok` and `timeout`.
    """

    name: ClassVar[str] = "openai-compatible"

    def __init__(
        self,
        options: LLMOptions | None = None,
        *,
        mode: OpenAIMode | None = None,
        temperature: float | None = 0.0,
        api_key: str | None = None,
        **settings: Any,
    ) -> None:
        """`settings` are `LLMOptions` fields, applied over `options`. `api_key` is the resolved value of the
        extractor resource's `EnvVar("OPENAI_API_KEY")`; None reads that variable here (a placeholder when unset).
        It goes to the SDK client only, never onto the extractor."""
        options = replace(options or LLMOptions(), **settings)
        model = options.model
        if not model:
            raise ValueError(
                "no model for the openai-compatible extractor: set OPRAG_OPENAI_MODEL (e.g. the name `ollama list` "
                "shows) or pass model="
            )
        chosen_mode = mode or "tools"
        if chosen_mode not in ("tools", "json", "json_schema"):
            raise ValueError(f"OPRAG_OPENAI_MODE must be tools, json or json_schema, not {chosen_mode!r}")
        import instructor
        import openai

        self.base_url = options.base_url or DEFAULT_OPENAI_BASE_URL
        price = resolve_price(model, options.price_per_mtok, "OPRAG_OPENAI_PRICE_PER_MTOK")
        super().__init__(options, model, price, openai.OpenAIError)
        self.mode: str = chosen_mode
        self.temperature = temperature
        # The endpoint is not part of the identity: the same model served by Ollama or vLLM answers the same.
        self.version = self._fingerprint(provider="openai-compatible", mode=chosen_mode, temperature=temperature)

        api_key = api_key or config.raw("OPENAI_API_KEY") or OPENAI_PLACEHOLDER_KEY
        _register_secret(api_key)
        client = self._sdk_client(openai, openai.OpenAI, api_key=api_key, base_url=self.base_url)
        instructor_mode = {
            "tools": instructor.Mode.TOOLS,
            "json": instructor.Mode.JSON,
            "json_schema": instructor.Mode.JSON_SCHEMA,
        }[chosen_mode]
        self._instructor = instructor.from_openai(client, mode=instructor_mode)

    def _answer_instruction(self) -> str:
        return TOOL_ANSWER if self.mode == "tools" else JSON_ANSWER

    def _create(
        self, system: str, user: str, hooks: Any, retrying: Any, response_model: type[BaseModel] = OpinionExtraction
    ) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        return self._instructor.create(
            response_model=response_model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_retries=retrying,
            hooks=hooks,
            strict=False,
            **kwargs,
        )

    @staticmethod
    def _usage_of(response: Any) -> tuple[int, int]:
        usage = response.usage
        return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
