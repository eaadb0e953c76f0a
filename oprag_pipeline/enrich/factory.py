"""Choosing an extractor by name, so config and environment select it without code changes."""

from __future__ import annotations

import os

from oprag_pipeline.enrich.schema import Extractor

EXTRACTORS = ("offline", "anthropic", "anthropic-batch", "openai-compatible")


def build_extractor(
    kind: str, *, model: str | None = None, base_url: str | None = None, max_concurrency: int = 4
) -> Extractor:
    if kind == "offline":
        from oprag_pipeline.enrich.offline import OfflineExtractor, VaderClauseScorer

        # OPRAG_OFFLINE_SCORER=vader runs the lexicon baseline the benchmarks compare against
        scorer = os.environ.get("OPRAG_OFFLINE_SCORER", "model")
        if scorer not in ("model", "vader"):
            raise ValueError(f"OPRAG_OFFLINE_SCORER must be 'model' or 'vader', not {scorer!r}")
        return OfflineExtractor(VaderClauseScorer() if scorer == "vader" else None)
    if kind in ("anthropic", "anthropic-batch"):
        from oprag_pipeline.enrich.llm import AnthropicBatchExtractor, AnthropicExtractor

        options = {"max_concurrency": max_concurrency}
        if model:
            options["model"] = model
        return (AnthropicBatchExtractor if kind == "anthropic-batch" else AnthropicExtractor)(**options)
    if kind == "openai-compatible":
        from oprag_pipeline.enrich.llm import OpenAICompatibleExtractor

        options = {"max_concurrency": max_concurrency}
        if model:
            options["model"] = model
        if base_url:
            options["base_url"] = base_url
        return OpenAICompatibleExtractor(**options)
    raise ValueError(f"unknown extractor {kind!r}; choose one of {', '.join(EXTRACTORS)} (env OPRAG_EXTRACTOR)")
