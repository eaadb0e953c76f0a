"""The one interface every extractor implements; the vocabulary it speaks is in `oprag_pipeline/schema.py`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from oprag_pipeline.schema import DocumentInput, ExtractionOutcome, RegistryEntity


class Extractor(Protocol):
    """Every extractor: deterministic identity (for the cache key) and a batch call."""

    name: str
    version: str

    def extract(
        self, documents: Sequence[DocumentInput], entities: Sequence[RegistryEntity]
    ) -> list[ExtractionOutcome]:
        """One outcome per input document, in input order; never raises for a single bad document."""
        ...

    def estimated_cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        """Zero for local extractors; None when the model's price is unknown (never a silent zero)."""
        ...
