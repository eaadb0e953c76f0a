"""Prices and model quirks, read from `oprag_pipeline/enrich/llm_models.toml` (package data of `oprag_pipeline.enrich`),
overridable per deployment; a model the table does not know has an unknown cost (None), never a silent zero.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import tomllib
from dataclasses import dataclass

logger = logging.getLogger(__package__)  # the package's one logger (see transport._REDACTED_LOGGERS)


# --------------------------------------------------------------------------------------------------------------------
# Prices and model quirks: data in llm_models.toml, not code
# --------------------------------------------------------------------------------------------------------------------

MODELS_FILE = "llm_models.toml"


@dataclass(frozen=True)
class TokenPrice:
    """USD per million tokens. Estimates from published list prices; override per deployment."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1_000_000


@dataclass(frozen=True)
class ModelFacts:
    """One `[models."…"]` table of llm_models.toml."""

    price: TokenPrice
    forced_tool: bool = True


def parse_model_table(text: str, source: str = MODELS_FILE) -> dict[str, ModelFacts]:
    """The model table from TOML text; a bad entry raises one line naming the file, the model and the reason."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{source}: not valid TOML: {exc}") from exc
    models = document.get("models")
    if not isinstance(models, dict):
        raise ValueError(f'{source}: no [models."<model id>"] tables')
    table: dict[str, ModelFacts] = {}
    for name, entry in models.items():
        where = f'{source}: [models."{name}"]'
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: must be a table with input and output prices")
        unknown = set(entry) - {"input", "output", "forced_tool"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        prices = []
        for key in ("input", "output"):
            value = entry.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{where}: {key} must be a non-negative number of USD per million tokens")
            prices.append(float(value))
        forced_tool = entry.get("forced_tool", True)
        if not isinstance(forced_tool, bool):
            raise ValueError(f"{where}: forced_tool must be true or false")
        table[name] = ModelFacts(TokenPrice(*prices), forced_tool)
    return table


@functools.cache
def model_table() -> dict[str, ModelFacts]:
    """The packaged llm_models.toml, read once per process."""
    resource = importlib.resources.files("oprag_pipeline.enrich") / MODELS_FILE
    return parse_model_table(resource.read_text(encoding="utf-8"), str(resource))


@functools.cache
def batch_price_factor() -> float:
    """What a Message Batches request costs relative to list price (`[batch] price_factor` of llm_models.toml)."""
    resource = importlib.resources.files("oprag_pipeline.enrich") / MODELS_FILE
    factor = tomllib.loads(resource.read_text(encoding="utf-8")).get("batch", {}).get("price_factor")
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 <= factor <= 1:
        raise ValueError(f"{resource}: [batch] price_factor must be a number between 0 and 1")
    return float(factor)


def model_facts(model: str) -> ModelFacts | None:
    """Longest prefix wins, so dated snapshots ("claude-sonnet-4-5-20250929") price like their alias."""
    table = model_table()
    matches = [key for key in table if model == key or model.startswith(key + "-")]
    return table[max(matches, key=len)] if matches else None


def resolve_price(model: str, override: tuple[float, float] | None, env_variable: str) -> TokenPrice | None:
    """`price_per_mtok=` (the extractor resource passes `env_variable`'s value), else llm_models.toml; None (cost
    unknown) when neither knows it, so a model missing from the table is reported as of unknown cost rather than as
    free."""
    if override is not None:
        return TokenPrice(*override)
    facts = model_facts(model)
    if facts is None:
        logger.warning(
            "no price known for model %s (not in %s, %s unset): its cost is reported as unknown",
            model,
            MODELS_FILE,
            env_variable,
        )
        return None
    return facts.price
