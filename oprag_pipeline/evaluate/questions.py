"""Offline question generation: several questions per entity and type, worded differently, stable across runs.

Why templates and not an LLM by default: the evaluation must run offline and reproduce bit for bit. Variety comes
from three independent choices per question — the template (six or more per type, written as people ask, not as
a form), the name used for the entity (its registry aliases, so "the front desk" and "reception" are both asked
about) and, for comparisons, the partner entity — picked by a hash of (entity, type, index), so adding an entity
never changes the questions of another. Question ids hash the domain, entity, type and index: the same question
keeps its id when the text generator improves, and retrieval runs can be compared across versions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from oprag_pipeline.registry.candidates import ATTRIBUTE_ADJECTIVES, normalise_word

QUESTION_TYPES = ("experience", "impact", "emotional", "comparison", "suggestion")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "experience": (
        "What do people say about {e}?",
        "What has been people's experience with {e}?",
        "How {was} {e} for most people?",
        "{Is} {e} any good?",
        "What are the opinions on {e}?",
        "How do people rate {e}?",
        "Tell me what others thought of {e}.",
    ),
    "impact": (
        "How {does} {e} affect people in practice?",
        "What practical difference {does} {e} make?",
        "{Does} {e} cause problems or make things easier?",
        "What impact {has} {e} had on people?",
        "How much {does} {e} matter to people?",
        "What are the consequences of {e} for people?",
    ),
    "emotional": (
        "How do people feel about {e}?",
        "{Does} {e} frustrate or delight people?",
        "What emotions come up when people talk about {e}?",
        "Are people happy or upset about {e}?",
        "{Is} {e} a source of stress or of relief?",
        "What is the mood around {e}?",
    ),
    "comparison": (
        "How {does} {e} compare with {o}?",
        "{Is} {e} better or worse than {o}?",
        "Which gets more praise, {e} or {o}?",
        "Do people prefer {e} or {o}?",
        "How do opinions on {e} differ from those on {o}?",
        "Between {e} and {o}, which disappoints people more?",
    ),
    "suggestion": (
        "What should be improved about {e}?",
        "What would people change about {e}?",
        "What advice do people give about {e}?",
        "Any tips regarding {e}?",
        "How could {e} be better?",
        "What do people recommend doing about {e}?",
    ),
}

# The verbs that agree with {e}: "Is the breakfast any good?", "Are the rooms any good?".
_VERBS = {
    "is": ("is", "are"),
    "was": ("was", "were"),
    "does": ("does", "do"),
    "has": ("has", "have"),
}


def is_plural(phrase: str) -> bool:
    """Whether a noun phrase is plural, judged by its head (last) word with the registry's own plural fold, so that
    "the rooms" and "the policies" take "are" and "the glass" and "the wifi" take "is"."""
    words = phrase.split()
    return bool(words) and normalise_word(words[-1]) != words[-1].lower().strip("'-")


def _verbs_for(phrase: str) -> dict[str, str]:
    plural = is_plural(phrase)
    verbs = {key: forms[plural] for key, forms in _VERBS.items()}
    return {**verbs, **{key.capitalize(): verb.capitalize() for key, verb in verbs.items()}}


def question_names(entity_name: str, aliases: Sequence[str]) -> list[str]:
    """The names a question may call the entity by: its name and aliases, without the evaluative adjectives that a
    quality is also found by ("spotless" finds cleanliness, but "Is the spotless any good?" is no question)."""
    names = [n for n in dict.fromkeys([entity_name, *aliases]) if n.lower() not in ATTRIBUTE_ADJECTIVES]
    return names or [entity_name]


# Without a partner entity a comparison is made with expectations or the past.
COMPARISON_FALLBACK = (
    "How {does} {e} compare with what people expected?",
    "{Has} {e} got better or worse over time?",
    "{Is} {e} better or worse than people hoped?",
)


@dataclass(frozen=True)
class QuestionEntity:
    entity_id: str
    entity_name: str
    aliases: tuple[str, ...]
    comparison_name: str | None


@dataclass(frozen=True)
class Question:
    question_id: str
    entity_id: str
    question_type: str
    variant: int
    template_id: str
    entity_phrase: str
    text: str


def _digest(*parts: object) -> int:
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def with_article(phrase: str) -> str:
    """ "the front desk" for a bare noun phrase; phrases that already start with a determiner stay as they are."""
    words = phrase.split()
    if words and words[0].lower() in {"the", "a", "an", "my", "our", "their", "your", "this", "that", "these"}:
        return phrase
    return f"the {phrase}"


def question_id(domain: str, entity_id: str, question_type: str, variant: int) -> str:
    return f"q-{_digest(domain, entity_id, question_type, variant):016x}"


def generate_questions(domain: str, entity: QuestionEntity, *, per_type: int = 2) -> list[Question]:
    """`per_type` questions of every type, each with a different template and (where there are) a different alias."""
    names = question_names(entity.entity_name, entity.aliases)
    questions = []
    for question_type in QUESTION_TYPES:
        templates = TEMPLATES[question_type]
        if question_type == "comparison" and not entity.comparison_name:
            templates = COMPARISON_FALLBACK
        start = _digest(domain, entity.entity_id, question_type) % len(templates)
        name_start = _digest(domain, entity.entity_id, question_type, "alias") % len(names)
        for variant in range(min(per_type, len(templates))):
            template_index = (start + variant) % len(templates)
            phrase = with_article(names[(name_start + variant) % len(names)])
            partner = with_article(entity.comparison_name) if entity.comparison_name else ""
            text = templates[template_index].format(e=phrase, o=partner, **_verbs_for(phrase))
            questions.append(
                Question(
                    question_id=question_id(domain, entity.entity_id, question_type, variant),
                    entity_id=entity.entity_id,
                    question_type=question_type,
                    variant=variant,
                    template_id=f"{question_type}.{template_index}",
                    entity_phrase=phrase,
                    text=text[0].upper() + text[1:],
                )
            )
    return questions


def generate_all(domain: str, entities: Sequence[QuestionEntity], *, per_type: int = 2) -> list[Question]:
    return [q for e in entities for q in generate_questions(domain, e, per_type=per_type)]
