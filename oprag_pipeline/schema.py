"""The opinion vocabulary and records every stage shares (registry, enrich, generate, index, demo).

Closed fields are enums so an LLM's answer can be validated against exactly the values the warehouse accepts,
and so the offline extractor cannot drift from them either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class Sentiment(StrEnum):
    positive = "positive"
    neutral = "neutral"
    negative = "negative"


class Level(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


class Emotion(StrEnum):
    frustration = "frustration"
    disappointment = "disappointment"
    anxiety = "anxiety"
    resignation = "resignation"
    hope = "hope"
    relief = "relief"
    delight = "delight"
    trust = "trust"
    anger = "anger"


class EvidenceType(StrEnum):
    personal_experience = "personal_experience"
    anecdotal = "anecdotal"
    data_driven = "data_driven"


SIGMA_SCALE = {
    (Sentiment.positive, Level.high): 30,
    (Sentiment.positive, Level.medium): 20,
    (Sentiment.positive, Level.low): 10,
    (Sentiment.negative, Level.low): -10,
    (Sentiment.negative, Level.medium): -20,
    (Sentiment.negative, Level.high): -30,
}


def sentiment_intensity(sentiment: str, intensity: str) -> int:
    """The σ-scale score of docs/design.md: ±10/20/30 by intensity, 0 for neutral whatever its intensity."""
    if sentiment == Sentiment.neutral:
        return 0
    return SIGMA_SCALE[(Sentiment(sentiment), Level(intensity))]


@dataclass(frozen=True)
class RegistryEntity:
    """What an extractor needs to know of the registry: ids, names, aliases and where they sit in the taxonomy."""

    entity_id: str
    name: str
    aliases: tuple[str, ...]
    tier1_name: str = ""
    tier2_name: str = ""


@dataclass(frozen=True)
class DocumentInput:
    doc_id: str
    text: str
    content_hash: str
    title: str | None = None
    entity_scope: str | None = None


@dataclass
class ExtractedOpinion:
    """One (document, entity) opinion. `entity_id` is None for a new entity the extractor proposes."""

    entity_id: str | None
    entity_name: str
    sentiment: str
    intensity: str
    impact: str
    emotions: list[str] = field(default_factory=list)
    evidence_type: str = EvidenceType.personal_experience.value
    evidence_text: str = ""  # the span of the document the opinion rests on
    span_start: int | None = None
    span_end: int | None = None
    confidence: float = 1.0
    grounded: bool = True  # False when neither the entity nor the evidence can be found in the text
    proposed: bool = False  # True for an entity the registry does not have yet

    @property
    def sentiment_intensity(self) -> int:
        return sentiment_intensity(self.sentiment, self.intensity)


@dataclass
class ExtractionOutcome:
    """The result for one document: opinions, or a failure that leaves the document pending for the next run."""

    doc_id: str
    content_hash: str
    opinions: list[ExtractedOpinion] = field(default_factory=list)
    failed: bool = False
    failure_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


def rounded_cost(cost: float | None, digits: int = 4) -> float | None:
    """A cost estimate for metadata and tables: an unknown cost stays None rather than reading as free."""
    return None if cost is None else round(cost, digits)


def total_cost(costs: Iterable[float | None]) -> float | None:
    """The sum of cost estimates; unknown as soon as one of them is."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total


def cost_label(cost: float | None) -> str:
    """'~$0.0123', or 'cost unknown' for a model without a known price."""
    return "cost unknown" if cost is None else f"~${cost:.4f}"
