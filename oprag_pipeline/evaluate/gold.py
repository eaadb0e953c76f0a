"""Human (or planted) labels mapped onto the registry, so fidelity can be measured against them.

Two kinds of gold travel in `raw_documents.extra`, put there by the importers and the demo generator:

* `gold_opinions`: a list of `{target, category, polarity, strength, from, to}` (SemEval ABSA, MEMD-ABSA, Hu & Liu,
  OpinioBank, the demo corpus). A target maps to an entity through the shared matcher, as the extractor would find
  it in text (`AliasMatcher.entity_for_target`: the whole target up to inflection, determiner and leading modifiers,
  else its head). Category-only labels (no target) and `conflict` polarities have no place on the σ-scale and are
  counted as unmapped.
* `rating_<aspect>`: per-aspect stars (TripAdvisor's). Which entities an aspect covers is data, not code: the
  importer that knows the source writes `{aspect: [entity names]}` next to the documents (`RATED_ASPECTS_FILE`).
  An aspect maps to the registry entities whose *name* is one of its terms — by name only, because aliases are
  clustered by embedding and an entity "hotel" may carry the alias "hotel room", which would drag every opinion
  about the hotel into Rooms.

The σ-scale of gold: a polarity with a strength of 1, 2, 3 becomes ±10, ±20, ±30 (no strength: ±20, medium);
neutral 0. Stars: 5 → +30, 4 → +20, 3 → 0, 2 → −20, 1 → −30 — symmetric, because a 4 and a 2 are equally far
from the middle of the scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oprag_pipeline.enrich.ratings import load_rated_aspects, rated_aspect_entities
from oprag_pipeline.registry.matching import AliasMatcher

__all__ = ["GoldMapper", "GoldOpinion", "RegistryEntry", "load_rated_aspects", "map_gold"]

STAR_SIGMA = {5: 30, 4: 20, 3: 0, 2: -20, 1: -30}
POLARITY_SIGN = {"positive": 1, "negative": -1, "neutral": 0}


@dataclass(frozen=True)
class RegistryEntry:
    entity_id: str
    name: str
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class GoldOpinion:
    doc_id: str
    entity_id: str
    sentiment: str
    sentiment_intensity: int
    span_start: int | None
    span_end: int | None
    source: str  # "gold_opinions" or "rating_<aspect>"


class GoldMapper:
    """Maps gold labels of one domain onto its registry, with the shared matcher (`registry.matching`)."""

    def __init__(
        self, registry: Sequence[RegistryEntry], aspect_terms: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        self.matcher = AliasMatcher(registry)
        # A rated aspect maps by entity *name* only (see the module docstring), as the rating adaptation maps it.
        self.aspect_entities = rated_aspect_entities(registry, aspect_terms or {})
        self.unmapped = 0

    def entity_for_target(self, target: str) -> str | None:
        return self.matcher.entity_for_target(target)

    def map_document(self, doc_id: str, extra: Mapping[str, Any]) -> Iterator[GoldOpinion]:
        seen: set[str] = set()
        for label in extra.get("gold_opinions") or []:
            sign = POLARITY_SIGN.get(str(label.get("polarity", "")).lower())
            target = label.get("target")
            entity_id = self.entity_for_target(target) if target and sign is not None else None
            if entity_id is None or entity_id in seen:
                # One gold opinion per (document, entity), as in `opinions`: the first label wins.
                self.unmapped += entity_id is None
                continue
            seen.add(entity_id)
            strength = label.get("strength")
            level = min(3, max(1, abs(int(strength)))) if isinstance(strength, int | float) and strength else 2
            yield GoldOpinion(
                doc_id,
                entity_id,
                "neutral" if sign == 0 else "positive" if sign > 0 else "negative",
                sign * level * 10,
                label.get("from"),
                label.get("to"),
                "gold_opinions",
            )
        for aspect, entity_ids in self.aspect_entities.items():
            stars = extra.get(f"rating_{aspect}")
            if not isinstance(stars, int | float) or round(stars) not in STAR_SIGMA:
                continue
            sigma = STAR_SIGMA[round(stars)]
            sentiment = "positive" if sigma > 0 else "negative" if sigma < 0 else "neutral"
            for entity_id in entity_ids:
                if entity_id not in seen:
                    seen.add(entity_id)
                    yield GoldOpinion(doc_id, entity_id, sentiment, sigma, None, None, f"rating_{aspect}")


def map_gold(
    registry: Sequence[RegistryEntry],
    documents: Iterable[tuple[str, Mapping[str, Any]]],
    aspect_terms: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[GoldOpinion], int]:
    """(gold opinions on registry entities, count of labels that mapped to no entity)."""
    mapper = GoldMapper(registry, aspect_terms)
    rows = [g for doc_id, extra in documents for g in mapper.map_document(doc_id, extra)]
    return rows, mapper.unmapped
