"""Which sentences of the retrieved passages an answer shows as evidence.

A passage is retrieved (and labelled with an opinion) as a whole, but an answer quotes one sentence of it, and not
every sentence of an opinionated post states that opinion: "New seller here, 2 months in." opens a complaint
without being one. A sentence is quotable evidence about an entity when it

- is not a question (a question asks for an opinion, it does not state one), and
- names the entity (its name or an alias), or carries evaluative words by VADER's general-English lexicon
  (|compound| at or above VADER's own neutral cut-off).

So greetings, self-introductions and bare facts that name nothing the question is about drop out, whatever the
domain, while "Breakfast was served from 7 to 10:30." stays quotable as a neutral statement about breakfast.

Among the quotable sentences of a passage the ones that name the entity come first (a reader can see what the quote
is about), those that also evaluate it before the others. Across an answer a quote is shown once: a sentence whose
normalised text equals, or nearly equals, one already chosen (the same review posted twice, a template answer
repeated by a seller) is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from oprag_pipeline.enrich.cues import VADER_POLARITY_THRESHOLD, vader_compound
from oprag_pipeline.generate.context import sentences
from oprag_pipeline.registry.matching import AliasMatcher
from oprag_pipeline.schema import RegistryEntity

NEAR_DUPLICATE_JACCARD = 0.8
"""Two quotes whose word sets overlap this much (Jaccard: shared words over all words) say the same thing: the same
review re-posted with a word changed, or a template reply with another number. At 0.8 a ten-word sentence may differ
in one word and still count as the same; two different sentences about the same entity ("The breakfast was cold." /
"The breakfast was lovely.", 0.6) stay apart."""

_WORD = re.compile(r"\w+")
_TRAILING = "\"'”’)]} \t\n"


def normalised(text: str) -> str:
    """Lower case, punctuation dropped, whitespace collapsed: the form two copies of a quote share."""
    return " ".join(_WORD.findall(text.lower()))


def near_duplicate(a: str, b: str) -> bool:
    """Same normalised text, or word sets at least `NEAR_DUPLICATE_JACCARD` alike."""
    if normalised(a) == normalised(b):
        return True
    words_a, words_b = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not words_a or not words_b:
        return False
    return len(words_a & words_b) / len(words_a | words_b) >= NEAR_DUPLICATE_JACCARD


def is_question(sentence: str) -> bool:
    return sentence.rstrip(_TRAILING).endswith("?")


def evaluative(sentence: str) -> bool:
    """Whether VADER finds an evaluation in the sentence (its compound score outside the neutral band)."""
    return abs(vader_compound(sentence)) >= VADER_POLARITY_THRESHOLD


@dataclass(frozen=True)
class Candidate:
    text: str
    names_entity: bool
    evaluative: bool


def quotable(text: str, entity: RegistryEntity | None) -> list[Candidate]:
    """The passage's sentences that may be quoted as evidence about `entity` (see the module docstring), best first:
    naming and evaluating it, naming it, evaluating without naming it; within each, in text order."""
    spans = sentences(text)
    mentions = AliasMatcher([entity]).mentions(text) if entity is not None else []
    found = []
    for lo, hi in spans:
        sentence = text[lo:hi]
        if is_question(sentence):
            continue
        names = any(lo <= start < hi for _, start, _ in mentions)
        judged = evaluative(sentence)
        if names or judged:
            found.append(Candidate(sentence, names, judged))
    return sorted(found, key=lambda c: (not c.names_entity, not c.evaluative))  # stable: text order within a rank


class QuoteDeduplicator:
    """The quotes an answer has shown so far, to skip exact and near-duplicate repeats."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def is_new(self, text: str) -> bool:
        return not any(near_duplicate(text, earlier) for earlier in self.shown)

    def first_new(self, candidates: Iterable[str]) -> str | None:
        """The first candidate not already shown (nor nearly); it is recorded as shown."""
        for text in candidates:
            if text and self.is_new(text):
                self.shown.append(text)
                return text
        return None
