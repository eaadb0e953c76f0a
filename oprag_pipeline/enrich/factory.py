"""Choosing an extractor by name, so config and environment select it without code changes."""

from __future__ import annotations

from typing import Any, get_args

from oprag_pipeline import config
from oprag_pipeline.enrich.schema import Extractor

EXTRACTORS: tuple[str, ...] = get_args(config.ExtractorKind)
OFFLINE_SCORERS: tuple[str, ...] = get_args(config.OfflineScorer)
TONE_CHOICES: tuple[str, ...] = get_args(config.DocumentTone)
DEFAULT_OFFLINE_SCORER: config.OfflineScorer = config.declared("OPRAG_OFFLINE_SCORER").default
DEFAULT_DOCUMENT_TONE: config.DocumentTone = config.declared("OPRAG_DOCUMENT_TONE").default


def build_extractor(
    kind: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    max_concurrency: int = 4,
    offline_scorer: config.OfflineScorer = DEFAULT_OFFLINE_SCORER,
    document_tone: config.DocumentTone = DEFAULT_DOCUMENT_TONE,
    timeout: float | None = None,
    openai_mode: config.OpenAIMode | None = None,
    price_per_mtok: tuple[float, float] | None = None,
    api_key: str | None = None,
    batch_wait: float | None = None,
) -> Extractor:
    """The extractor `kind` names, with the declared defaults of `config.py` (the extractor resource passes the
    environment's values); an LLM option left None takes the LLM extractor's default.

    `api_key` is the LLM extractors' key as the resource resolved it (never logged; None reads the environment).
    `batch_wait` is the seconds an `anthropic-batch` run waits for its Message Batch."""
    tone = config.choice("OPRAG_DOCUMENT_TONE", document_tone)
    if kind == "offline":
        from oprag_pipeline.enrich.offline import OfflineExtractor, VaderClauseScorer

        # OPRAG_OFFLINE_SCORER=vader runs the lexicon baseline the benchmarks compare against
        scorer = config.choice("OPRAG_OFFLINE_SCORER", offline_scorer)
        return OfflineExtractor(VaderClauseScorer() if scorer == "vader" else None, review_tone=tone == "read")
    options: dict[str, Any] = {"max_concurrency": max_concurrency}
    for name, chosen in (
        ("model", model),
        ("timeout", timeout),
        ("price_per_mtok", price_per_mtok),
        ("api_key", api_key),
    ):
        if chosen is not None:
            options[name] = chosen
    if kind in ("anthropic", "anthropic-batch"):
        from oprag_pipeline.enrich.llm.anthropic_api import AnthropicBatchExtractor, AnthropicExtractor

        if kind == "anthropic-batch" and batch_wait is not None:
            options["max_wait"] = batch_wait
        engine: Any = (AnthropicBatchExtractor if kind == "anthropic-batch" else AnthropicExtractor)(**options)
    elif kind == "openai-compatible":
        from oprag_pipeline.enrich.llm.openai_compatible import OpenAICompatibleExtractor

        if base_url:
            options["base_url"] = base_url
        if openai_mode:
            options["mode"] = openai_mode
        engine = OpenAICompatibleExtractor(**options)
    else:
        raise ValueError(f"unknown extractor {kind!r}; choose one of {', '.join(EXTRACTORS)} (env OPRAG_EXTRACTOR)")
    # With OPRAG_ADAPT=llm this engine labels a sample and an offline student extracts the corpus
    # (`ratings._student`): the student reads the document's tone as configured here.
    engine.student_review_tone = tone == "read"
    return engine
