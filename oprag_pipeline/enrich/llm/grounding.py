"""Grounding: map a validated answer onto the registry and check its evidence and entity against the text."""

from __future__ import annotations

import re
from collections.abc import Sequence

from oprag_pipeline.enrich.llm.prompts import OpinionExtraction
from oprag_pipeline.registry.matching import AliasMatcher, fold, fold_with_offsets, locate_phrase, locate_quote
from oprag_pipeline.schema import DocumentInput, ExtractedOpinion, RegistryEntity

# --------------------------------------------------------------------------------------------------------------------
# Grounding: map answers onto the registry and check them against the text
# --------------------------------------------------------------------------------------------------------------------


class RegistryIndex:
    """Registry look-up of an answer's entity: by name or alias through the shared matcher (inflection-, case- and
    determiner-insensitive), else by id, so a name that happens to equal another entity's id keeps its meaning."""

    def __init__(self, entities: Sequence[RegistryEntity]):
        self.matcher = AliasMatcher(entities)
        self._by_id = {e.entity_id: e for e in entities}
        self._by_id_folded = {fold(e.entity_id).strip(): e for e in entities}

    def find(self, name: str) -> RegistryEntity | None:
        entity_id = self.matcher.entity_named(name)
        if entity_id is not None:
            return self._by_id[entity_id]
        return self._by_id_folded.get(fold(name).strip())


def to_opinions(answer: OpinionExtraction, document: DocumentInput, index: RegistryIndex) -> list[ExtractedOpinion]:
    """Map a validated answer onto the registry and the text. The registry wins over the model's `is_new_entity`.

    Confidence records how well the answer is anchored: 1.0 when the evidence is quoted from the text, 0.5 when only
    the entity is mentioned, 0.0 when neither (`grounded=False`).
    """
    folded = fold_with_offsets(document.text)
    mentioned = set(index.matcher.entities_in(document.text))
    by_target: dict[str, ExtractedOpinion] = {}
    for item in answer.opinions:
        entity = index.find(item.entity)
        name = entity.name if entity else re.sub(r"\s+", " ", item.entity).strip()
        span = locate_quote(document.text, item.evidence, folded)
        entity_seen = entity.entity_id in mentioned if entity else locate_phrase(document.text, name) is not None
        grounded = span is not None or entity_seen
        opinion = ExtractedOpinion(
            entity_id=entity.entity_id if entity else None,
            entity_name=name,
            sentiment=item.sentiment.value,
            intensity=item.intensity.value,
            impact=item.impact.value,
            emotions=list(dict.fromkeys(e.value for e in item.emotions)),
            evidence_type=item.evidence_type.value,
            evidence_text=document.text[span[0] : span[1]] if span else item.evidence.strip(),
            span_start=span[0] if span else None,
            span_end=span[1] if span else None,
            confidence=1.0 if span else 0.5 if entity_seen else 0.0,
            grounded=grounded,
            proposed=entity is None,
        )
        key = entity.entity_id if entity else "new:" + fold(name)
        previous = by_target.get(key)
        if previous is None or opinion.confidence > previous.confidence:
            by_target[key] = opinion
    opinions = list(by_target.values())
    opinions.sort(key=lambda o: (o.span_start if o.span_start is not None else len(document.text), o.entity_name))
    return opinions
