"""Which sentences of the retrieved passages an answer shows as evidence.

A passage is retrieved (and labelled with an opinion) as a whole, but an answer quotes one sentence of it, and not
every sentence of an opinionated post states that opinion: "New seller here, 2 months in." opens a complaint
without being one, even about sellers. A sentence is quotable evidence about an entity when it is not a question (a
question asks for an opinion, it does not state one), and

- it names the entity (its name or an alias) and either evaluates something (VADER's general-English lexicon finds
  an evaluation: |compound| at or above VADER's own neutral cut-off) or makes a statement (it has a finite verb, by
  TextBlob's bundled part-of-speech tagger): "Breakfast was served from 7 to 10:30." is a neutral statement about
  breakfast, while a verbless fragment that names it without judging it ("New seller here, 2 months in.",
  "EU seller (Spain).") is an introduction; or
- it does not name the entity but evaluates and makes a statement ("It broke after a week."): a verbless pleasantry
  ("Thanks in advance.") evaluates nothing the reader asked about.

These are grammar and a general lexicon, not word lists of a domain. Among the quotable sentences of a passage
quoted for a positive or negative side, those that evaluate in that side's direction come first (a plain fact is no
evidence of a side), naming the entity first within each rank, and those whose tone contradicts the side come last.
For the neutral side (or none), the ones that name the entity come first (a reader can see what the quote is
about), then those whose tone does not contradict the side, then those that evaluate. Across an answer a quote is
shown once: a sentence whose normalised text equals, or nearly equals, one already chosen (the same review posted
twice, a template reply repeated) is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

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


def contradicts(sentence: str, side: str | None) -> bool:
    """Whether the sentence's tone (VADER) is the opposite of the side it would be quoted for."""
    compound = vader_compound(sentence)
    if side == "positive":
        return compound <= -VADER_POLARITY_THRESHOLD
    if side == "negative":
        return compound >= VADER_POLARITY_THRESHOLD
    return False


@lru_cache(maxsize=1)
def _tagger() -> Any:
    """TextBlob's English module (its pattern tagger needs no corpus download); imported on first use, as it loads
    nltk."""
    import textblob.en

    return textblob.en


# Penn tags of a finite verb: past, present (3rd person and other), modal. A base form (VB) counts only first in the
# sentence, where it is an imperative ("Avoid the breakfast."); elsewhere the tagger gives it to nouns it misreads.
_FINITE = frozenset({"VBD", "VBZ", "VBP", "MD"})


@lru_cache(maxsize=4096)
def makes_statement(sentence: str) -> bool:
    """Whether the sentence has a finite verb (or opens with an imperative): a statement, not a verbless fragment."""
    tags = [tag for _, tag in _tagger().tag(sentence) if tag[:1].isalpha()]
    return any(tag in _FINITE for tag in tags) or (bool(tags) and tags[0] == "VB")


@dataclass(frozen=True)
class Candidate:
    text: str
    names_entity: bool
    evaluative: bool
    contradicts_side: bool = False


def quotable(text: str, entity: RegistryEntity | None, side: str | None = None) -> list[Candidate]:
    """The passage's sentences that may be quoted as evidence about `entity` for `side` (see the module docstring),
    best first: naming the entity, then not contradicting the side, then evaluating; within each, in text order."""
    spans = sentences(text)
    mentions = AliasMatcher([entity]).mentions(text) if entity is not None else []
    found = []
    for lo, hi in spans:
        sentence = text[lo:hi]
        if is_question(sentence):
            continue
        names = any(lo <= start < hi for _, start, _ in mentions)
        judged = evaluative(sentence)
        if (names and (judged or makes_statement(sentence))) or (judged and makes_statement(sentence)):
            found.append(Candidate(sentence, names, judged, contradicts(sentence, side)))
    # stable sort: text order within a rank
    if side in ("positive", "negative"):
        # a quote for a side shows that side: an evaluation in its direction outranks a plain fact that names the
        # entity ("Stayed 9 nights at the hotel." is no evidence that guests liked it)
        # (a sentence that contradicts the side is evaluative by definition, so the second key only orders the rest)
        return sorted(found, key=lambda c: (c.contradicts_side, not c.evaluative, not c.names_entity))
    return sorted(found, key=lambda c: (not c.names_entity, c.contradicts_side, not c.evaluative))


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
