"""The one alias matcher: every place that asks "which registry entity does this text name?" asks it here.

Callers: the offline extractor (text → entity mentions with spans), the LLM extractors (an answer's entity name →
entity, and whether the text really mentions it), opinion-balanced retrieval (question → entities), the gold
mapping (a human-labelled target → entity) and the LLM registry bootstrap (is a proposed target grounded in the
text?). One matcher means the question's entity and the extractor's entity are the same on the same wording.

How a phrase is compared, everywhere:

* **Words**, not characters: a match starts and ends on word boundaries, and never inside a hyphenated compound
  ("bedrooms" is not "room", "non-smoking" is not "smoking"). Spaces and hyphens between the words of an alias
  are interchangeable ("check-in" = "check in"), punctuation is not ("the front. Desk" is not "front desk").
* **Inflection-insensitive**: each word is reduced to its noun lemma with lemminflect's English dictionary (and
  its rules for unknown words), so "dishes" = "dish", "batteries" = "battery", "knives" = "knife", "children" =
  "child", while "glass", "bus" and "news" stay whole. A possessive "'s" is dropped ("the hotel's staff").
  Both sides go through the same reduction, so a plural alias finds a singular mention and the reverse.
* **Longest match**: at each position the alias with the most words wins ("front desk staff" over "staff"), and
  a match consumes its words, so "front desk staff" is one mention, not three.
* **Names before aliases**: when two entities claim the same phrase, an entity's name beats another's alias,
  then the earlier entity in the caller's order wins.

Quotes (an LLM's evidence) are grounded character-wise instead: case, whitespace and quote/dash styles folded,
'...' elisions matched fragment by fragment (`locate_quote`), because a quote is a copy, not a name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple, Protocol

from oprag_pipeline.registry.candidates import DETERMINERS, MODIFIERS, normalise_word

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
"""Letters and digits, with inner apostrophes ("don't", "hotel's"); hyphens split words (see the module doc)."""
_GAP_AND_WORD = re.compile(r"([\W_]*?)([^\W_]+(?:['\u2019][^\W_]+)*)")
_HYPHENS = "-\u2010\u2011"
_POSSESSIVES = frozenset({"'s", "'S", "\u2019s", "\u2019S"})
_HYPHENS_SET = frozenset(_HYPHENS)
_LINK_CHARS = " \t\r\n\u00a0" + _HYPHENS  # what may stand between the words of one alias
# Words of one or two letters are left as written: the lemma rules would turn "as" into "a" and "us" is no plural.
_MIN_LEMMA_LENGTH = 3
# The longest alias considered, in words: registry aliases are at most three content words, questions and gold
# targets sometimes carry a determiner and a modifier more.
MAX_ALIAS_WORDS = 6


class NamedEntity(Protocol):
    """What the matcher needs of a registry entity (`RegistryEntity`, `evaluate.gold.RegistryEntry`, …)."""

    entity_id: str
    name: str
    aliases: Sequence[str]


class Mention(NamedTuple):
    """One mention of an entity: `text[start:end]` is the words that named it."""

    entity_id: str
    start: int
    end: int


@lru_cache(maxsize=1 << 18)
def word_key(word: str) -> str:
    """The comparison form of one word: lower case, possessive dropped, noun lemma ("Batteries" → "battery")."""
    word = word.lower().replace("\u2019", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) < _MIN_LEMMA_LENGTH or not word.isalpha():
        return word
    return normalise_word(word)  # the registry's own plural fold, so an alias and its mention fold alike


def phrase_words(phrase: str) -> list[str]:
    """The comparison forms of a phrase's words, in order."""
    return [word_key(m.group(0)) for m in _WORD.finditer(phrase)]


def phrase_key(phrase: str) -> str:
    """The comparison form of a phrase, leading determiners dropped: "The front-desk Staff" → "front desk staff"."""
    words = phrase_words(phrase)
    while words and words[0] in DETERMINERS:
        words = words[1:]
    return " ".join(words)


def _stripped_keys(phrase: str) -> list[str]:
    """The phrase's key, then the keys without each leading modifier in turn ("great value breakfast" →
    "great value breakfast", "value breakfast", …), for phrases that name an entity with an opinion attached."""
    words = phrase_key(phrase).split()
    keys = [" ".join(words)]
    while len(words) > 1 and words[0] in MODIFIERS:
        words = words[1:]
        keys.append(" ".join(words))
    return [k for k in keys if k]


class _Words(NamedTuple):
    keys: list[str]
    spans: list[tuple[int, int]]
    run_end: list[int]  # run_end[i]: the first word after i not linked to its predecessor by space or hyphen
    glued: list[bool]  # glued[i]: word i continues a hyphenated compound ("smoking" in "non-smoking")


def _words(text: str) -> _Words:
    # One C-level pass: each item is (the non-word characters before a word, the word), so offsets are running sums
    # and no match object is built per word (this runs on every document).
    pairs = _GAP_AND_WORD.findall(text)
    keys = [word_key(word) for _, word in pairs]
    spans: list[tuple[int, int]] = []
    position = 0
    for gap, word in pairs:
        position += len(gap)
        # a possessive is not part of the name: "the hotel's staff" mentions "hotel" at the word itself
        possessive = 2 if word[-2:] in _POSSESSIVES else 0
        spans.append((position, position + len(word) - possessive))
        position += len(word)
    n = len(pairs)
    linked = [i > 0 and bool(gap) and not gap.strip(_LINK_CHARS) for i, (gap, _) in enumerate(pairs)]
    glued = [i > 0 and gap in _HYPHENS_SET for i, (gap, _) in enumerate(pairs)]
    run_end = [n] * n
    for i in range(n - 2, -1, -1):
        run_end[i] = run_end[i + 1] if linked[i + 1] else i + 1
    return _Words(keys, spans, run_end, glued)


class AliasMatcher:
    """Finds the entities of a registry in text; see the module docstring for how phrases compare."""

    def __init__(self, entities: Iterable[NamedEntity]) -> None:
        entries = list(entities)
        owner: dict[str, str] = {}
        # names first, then aliases, each in the caller's order: a phrase that is an entity's name keeps it
        for entry in entries:
            self._claim(owner, entry.name, entry.entity_id)
        for entry in entries:
            for alias in entry.aliases:
                self._claim(owner, alias, entry.entity_id)
        self._owner = owner
        self._first_words = frozenset(key.split(" ", 1)[0] for key in owner)
        self._longest = max((key.count(" ") + 1 for key in owner), default=0)

    @staticmethod
    def _claim(owner: dict[str, str], phrase: str, entity_id: str) -> None:
        key = phrase_key(phrase)
        if len(key) >= 2 and key.count(" ") < MAX_ALIAS_WORDS:
            owner.setdefault(key, entity_id)

    @classmethod
    def from_aliases(cls, aliases: Mapping[str, Sequence[str]]) -> AliasMatcher:
        """From `{entity id: [name, alias, ...]}` (the first phrase is the name)."""
        return cls(
            _Entry(entity_id, phrases[0], tuple(phrases[1:])) for entity_id, phrases in aliases.items() if phrases
        )

    def mentions(self, text: str) -> list[Mention]:
        """Every mention in `text`, in text order, longest alias first at each position, never overlapping."""
        if not self._owner:
            return []
        keys, spans, run_end, glued = _words(text)
        owner, first_words, longest = self._owner, self._first_words, self._longest
        n = len(keys)
        found: list[Mention] = []
        i = 0
        while i < n:
            if keys[i] not in first_words or glued[i]:
                i += 1
                continue
            for j in range(min(i + longest, run_end[i]), i, -1):
                if j < n and glued[j]:
                    continue  # the match would end inside a hyphenated compound
                entity_id = owner.get(keys[i] if j == i + 1 else " ".join(keys[i:j]))
                if entity_id is not None:
                    found.append(Mention(entity_id, spans[i][0], spans[j - 1][1]))
                    i = j
                    break
            else:
                i += 1
        return found

    def entities_in(self, text: str) -> list[str]:
        """Entity ids named in `text` (a question), in order of first mention, each once."""
        return list(dict.fromkeys(m.entity_id for m in self.mentions(text)))

    def entity_named(self, phrase: str) -> str | None:
        """The entity a whole phrase names: its name or an alias, up to inflection, a leading determiner and
        leading modifiers ("The great breakfasts" → breakfast); None when the phrase as a whole names none."""
        for key in _stripped_keys(phrase):
            entity_id = self._owner.get(key)
            if entity_id is not None:
                return entity_id
        return None

    def entity_for_target(self, target: str) -> str | None:
        """The entity an opinion target (a gold label's or an LLM's term) is about: the one the whole phrase names,
        else the one named by the phrase's head, its last words ("the hotel's breakfast buffet" → buffet, when
        only "buffet" is registered; "room service" → service, never room)."""
        entity_id = self.entity_named(target)
        if entity_id is not None:
            return entity_id
        found = self.mentions(target)
        last_word = _last_word_end(target)
        if found and last_word is not None and found[-1].end == last_word:
            return found[-1].entity_id
        return None


class _Entry(NamedTuple):
    entity_id: str
    name: str
    aliases: tuple[str, ...]


def _last_word_end(text: str) -> int | None:
    ends = [m.end() for m in _WORD.finditer(text)]
    return ends[-1] if ends else None


def locate_phrase(text: str, phrase: str) -> tuple[int, int] | None:
    """Span of the first whole-word, inflection-insensitive occurrence of `phrase` in `text` (grounding of a target
    name), compared exactly as registry aliases are; None when the text never says it."""
    found = AliasMatcher([_Entry("phrase", phrase, ())]).mentions(text)
    return (found[0].start, found[0].end) if found else None


# --------------------------------------------------------------------------------------------------------------------
# Quotes: character-wise grounding of a copied passage
# --------------------------------------------------------------------------------------------------------------------

_FOLD = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "`": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u2033": '"',
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
    "\u2026": "...",
    "\u00a0": " ",
    "\uff1c": "<",  # the full-width bracket the LLM prompt puts in place of a '<document' look-alike
}


def fold_with_offsets(text: str) -> tuple[str, list[int]]:
    """Lower-case, fold quote/dash styles, collapse whitespace; `offsets[i]` is the source index of folded char i."""
    out: list[str] = []
    offsets: list[int] = []
    pending_space = False
    for index, char in enumerate(text):
        char = _FOLD.get(char, char)
        if char.isspace():
            pending_space = bool(out)
            continue
        if pending_space:
            out.append(" ")
            offsets.append(index - 1)
            pending_space = False
        for piece in char.lower():
            out.append(piece)
            offsets.append(index)
    return "".join(out), offsets


def fold(text: str) -> str:
    return fold_with_offsets(text)[0]


def locate_quote(text: str, quote: str, folded: tuple[str, list[int]] | None = None) -> tuple[int, int] | None:
    """Source span of a quote, matched insensitively; a quote elided with '...' matches its fragments in order.
    `folded` is `fold_with_offsets(text)`, for callers that check several quotes against one text."""
    haystack, offsets = folded or fold_with_offsets(text)
    needle = fold(quote).strip(" \"'")
    if not needle:
        return None
    position = haystack.find(needle)
    if position >= 0:
        return offsets[position], offsets[position + len(needle) - 1] + 1
    fragments = [f.strip(" \"'") for f in needle.split("...")]
    fragments = [f for f in fragments if len(f) >= 3]
    if len(fragments) < 2:
        return None
    start = end = None
    cursor = 0
    for fragment in fragments:
        found = haystack.find(fragment, cursor)
        if found < 0:
            return None
        if start is None:
            start = offsets[found]
        cursor = found + len(fragment)
        end = offsets[cursor - 1] + 1
    return (start, end) if start is not None and end is not None else None


__all__ = [
    "MAX_ALIAS_WORDS",
    "AliasMatcher",
    "Mention",
    "NamedEntity",
    "fold",
    "fold_with_offsets",
    "locate_phrase",
    "locate_quote",
    "phrase_key",
    "phrase_words",
    "word_key",
]
