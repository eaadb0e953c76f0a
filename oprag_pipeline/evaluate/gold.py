"""Human (or planted) labels mapped onto the registry, so fidelity can be measured against them.

Two kinds of gold travel in `raw_documents.extra`, put there by the importers and the demo generator:

* `gold_opinions`: a list of `{target, category, polarity, strength, from, to}` (SemEval ABSA, Hu & Liu,
  OpinioBank, the demo corpus). A target maps to the registry entity that has it among its aliases, compared the
  way the candidate miner normalises phrases (determiner and leading modifiers dropped, plurals folded). Category-only
  labels (no target) and `conflict` polarities have no place on the σ-scale and are counted as unmapped.
* `rating_<aspect>`: TripAdvisor's per-aspect stars. An aspect maps to the registry entities whose *name* is one of
  the aspect's terms (`ASPECT_TERMS`) — by name only, because aliases are clustered by embedding and an entity
  "hotel" may carry the alias "hotel room", which would drag every opinion about the hotel into Rooms.

The σ-scale of gold: a polarity with a strength of 1, 2, 3 becomes ±10, ±20, ±30 (no strength: ±20, medium);
neutral 0. Stars: 5 → +30, 4 → +20, 3 → 0, 2 → −20, 1 → −30 — symmetric, because a 4 and a 2 are equally far
from the middle of the scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oprag_pipeline.registry.candidates import DETERMINERS, MODIFIERS, candidate_key

# TripAdvisor's rated aspects -> the registry entity names that honestly name that aspect.
# rooms: the room itself (bed, bathroom, view are separate entities). cleanliness: only nouns that name cleaning
# ("clean" is an adjective, never an entity). service: staff and service roles; the front desk belongs to
# check-in, which TripAdvisor rates separately. value: what the stay cost and whether it was worth it.
ASPECT_TERMS: dict[str, tuple[str, ...]] = {
    "rooms": ("room", "rooms", "hotel room", "guest room", "bedroom", "suite"),
    "cleanliness": ("cleanliness", "housekeeping", "housekeeping staff", "maid", "maid service", "housekeeper"),
    "service": ("service", "staff", "hotel staff", "customer service", "employee", "personnel", "concierge"),
    "location": ("location", "neighborhood", "neighbourhood", "surroundings", "area"),
    "value": ("value", "value for money", "price", "rate", "room rate", "cost", "deal", "bargain"),
    "checkin": (
        "check-in",
        "check in",
        "checkin",
        "check-in process",
        "front desk",
        "desk",
        "reception",
        "reception desk",
        "receptionist",
        "front desk staff",
        "registration",
    ),
}

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


def phrase_keys(phrase: str) -> set[str]:
    """Keys of a phrase without its determiner and also without leading modifiers ("the new fee" -> "fee")."""
    words = phrase.lower().split()
    if words and words[0] in DETERMINERS:
        words = words[1:]
    keys = {candidate_key(" ".join(words))}
    while len(words) > 1 and words[0] in MODIFIERS:
        words = words[1:]
        keys.add(candidate_key(" ".join(words)))
    return keys - {""}


class GoldMapper:
    """Maps gold labels of one domain onto its registry."""

    def __init__(self, registry: Sequence[RegistryEntry]) -> None:
        self._by_key: dict[str, str] = {}
        # Names first, then aliases, in registry order: a key claimed by an entity's name is never re-assigned.
        for entry in registry:
            for key in phrase_keys(entry.name):
                self._by_key.setdefault(key, entry.entity_id)
        for entry in registry:
            for alias in entry.aliases:
                for key in phrase_keys(alias):
                    self._by_key.setdefault(key, entry.entity_id)
        terms = {aspect: {candidate_key(t) for t in words} for aspect, words in ASPECT_TERMS.items()}
        self.aspect_entities: dict[str, list[str]] = {}
        for entry in registry:
            key = candidate_key(entry.name)
            matches = [aspect for aspect, words in terms.items() if key in words]
            if len(matches) == 1:
                self.aspect_entities.setdefault(matches[0], []).append(entry.entity_id)
        self.unmapped = 0

    def entity_for_target(self, target: str) -> str | None:
        for key in sorted(phrase_keys(target), key=len, reverse=True):
            if key in self._by_key:
                return self._by_key[key]
        return None

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
    registry: Sequence[RegistryEntry], documents: Iterable[tuple[str, Mapping[str, Any]]]
) -> tuple[list[GoldOpinion], int]:
    """(gold opinions on registry entities, count of labels that mapped to no entity)."""
    mapper = GoldMapper(registry)
    rows = [g for doc_id, extra in documents for g in mapper.map_document(doc_id, extra)]
    return rows, mapper.unmapped
