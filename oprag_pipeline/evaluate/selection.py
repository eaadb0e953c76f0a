"""Which entities are worth asking about: those the corpus genuinely disagrees on.

A question about an entity everyone loves has a one-point answer distribution; any retriever reproduces it, so it
measures nothing. Entities are kept when their sentiment entropy H(e) reaches a threshold (0.6 bits by default, as
in the reference study) and they have enough mentions for a corpus distribution to mean something.

The candidates are the registry's entities, and the registry holds only what opinion words are about (see
`registry.candidates`): "stay", "weekend" or "my wife" never reach this stage, so no stop list is needed here.
What this module adds is spread: when slots are scarce, they go to different tier-2 groups first, so the questions
ask about several targets ("breakfast", "wifi", "front desk") rather than two names of one area ("food", "dishes").

Where the domain has gold labels (`evaluate.gold`), the headline metric is W1 to gold, and it exists only for
entities the labels cover. So the disputed entities gold supports — enough gold mentions, and both a positive and a
negative one, so the gold distribution has a dispute to reproduce too — take the slots first; the other disputed
entities fill what is left. A domain without gold, or where gold supports none of them, gets the plain choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class EntityStats:
    entity_id: str
    entity_name: str
    tier1_name: str | None
    tier2_name: str | None
    mentions: int
    entropy_bits: float


@dataclass(frozen=True)
class GoldSupport:
    """An entity's gold labels: how many documents label it, and how many of those positively and negatively."""

    mentions: int
    positive: int
    negative: int

    def supports(self, min_mentions: int) -> bool:
        """Enough gold for a distribution (`min_mentions`), with both sides of the dispute present."""
        return self.mentions >= min_mentions and self.positive > 0 and self.negative > 0


@dataclass(frozen=True)
class EvaluationEntity:
    entity_id: str
    entity_name: str
    tier1_name: str | None
    tier2_name: str | None
    mentions: int
    entropy_bits: float
    comparison_id: str | None  # a sibling to compare with (same tier-2, else tier-1, else the most mentioned)
    comparison_name: str | None


def choose_evaluation_entities(
    stats: Sequence[EntityStats],
    *,
    min_entropy: float,
    min_mentions: int,
    max_entities: int,
    gold: Mapping[str, GoldSupport] | None = None,
    min_gold_mentions: int = 10,
) -> list[EvaluationEntity]:
    """Disputed entities, the most talked-about first (ties: higher entropy, then id — deterministic); where `gold`
    supports some of them (`GoldSupport.supports(min_gold_mentions)`), those first and the rest after them.

    Among entities over the entropy threshold, ranking by mentions rather than by entropy matters on real text:
    the very highest entropies belong to vague nouns ("work", "matter", "idea") whose extracted sentiment is close
    to noise, while the entities people discuss most (the room, the staff, the fee) are what users ask about.

    The comparison partner is chosen among all entities with enough mentions, not only the disputed ones: "how does
    the breakfast compare with the restaurant" is a fair question even when everyone likes the restaurant.
    """
    eligible = [s for s in stats if s.mentions >= min_mentions]
    ranked = sorted(
        (s for s in eligible if s.entropy_bits >= min_entropy),
        key=lambda s: (-s.mentions, -round(s.entropy_bits, 9), s.entity_id),
    )
    backed = [s for s in ranked if gold_supports(gold, s.entity_id, min_gold_mentions)]
    first = _spread_over_groups(backed, max_entities)
    backed_ids = {s.entity_id for s in backed}
    rest = [s for s in ranked if s.entity_id not in backed_ids]
    chosen = first + _spread_over_groups(rest, max_entities - len(first), {_group(e) for e in first})
    by_mentions = sorted(eligible, key=lambda s: (-s.mentions, s.entity_id))
    result = []
    for entity in chosen:
        partner = _comparison_partner(entity, by_mentions)
        result.append(
            EvaluationEntity(
                entity_id=entity.entity_id,
                entity_name=entity.entity_name,
                tier1_name=entity.tier1_name,
                tier2_name=entity.tier2_name,
                mentions=entity.mentions,
                entropy_bits=entity.entropy_bits,
                comparison_id=partner.entity_id if partner else None,
                comparison_name=partner.entity_name if partner else None,
            )
        )
    return result


def gold_supports(gold: Mapping[str, GoldSupport] | None, entity_id: str, min_mentions: int) -> bool:
    """Whether gold labels support measuring W1 to gold on the entity (see `GoldSupport.supports`)."""
    support = (gold or {}).get(entity_id)
    return support is not None and support.supports(min_mentions)


def _group(entity: EntityStats) -> str:
    return entity.tier2_name or entity.entity_id


def _spread_over_groups(
    ranked: Sequence[EntityStats], limit: int, taken: set[str] | frozenset[str] = frozenset()
) -> list[EntityStats]:
    """The first `limit` of `ranked`, taking one entity per tier-2 group before a second of any group (a group in
    `taken` already has one), returned in the ranked order."""
    first: list[EntityStats] = []
    rest: list[EntityStats] = []
    groups: set[str] = set(taken)
    for entity in ranked:
        group = _group(entity)
        (rest if group in groups else first).append(entity)
        groups.add(group)
    picked = {id(e) for e in [*first, *rest][:limit]}
    return [e for e in ranked if id(e) in picked]


def _comparison_partner(entity: EntityStats, by_mentions: Sequence[EntityStats]) -> EntityStats | None:
    others = [s for s in by_mentions if s.entity_id != entity.entity_id and s.entity_name != entity.entity_name]
    for same in (
        lambda s: entity.tier2_name is not None and s.tier2_name == entity.tier2_name,
        lambda s: entity.tier1_name is not None and s.tier1_name == entity.tier1_name,
        lambda s: True,
    ):
        for candidate in others:
            if same(candidate):
                return candidate
    return None
