"""Mining opinion-target candidates from a sample of documents, with no tagger and no network.

Opinion targets in reviews and forum posts are overwhelmingly noun phrases that follow a determiner or a
possessive ("the front desk", "our room", "my payout") or open a sentence right before a copula ("Breakfast was
cold"). Following Hu and Liu (2004), what is discussed by many different authors is a target; what one author
mentions once is not. So candidates are determiner- or copula-anchored phrases of one to three content words,
kept when enough distinct documents mention them. No corpus-specific word lists are involved: the closed-class
words below are English grammar, not any domain's vocabulary.

Some targets are qualities rather than things, and reviewers name them by adjective only: "the room was spotless"
rates cleanliness, "way too pricey" rates the price, and no noun phrase carries them. `ATTRIBUTES` maps common
evaluative adjectives to the quality they rate (the attribute relation of lexicons such as WordNet, for qualities
that apply in any domain: cleanliness, noise, price, size, comfort, speed, friendliness, helpfulness, convenience,
safety, reliability). Each occurrence is a mention of that quality, named by its noun, with the adjective as an alias,
and it must clear the same document-frequency bar as any other candidate; a quality that is also discussed by name
keeps only its named mentions (see `mine_candidates`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9'\-]*[A-Za-z0-9])?|[.!?;:,()\"]")
"""Words keep inner hyphens and apostrophes ("check-in", "don't") but not trailing ones, which real text leaves on
words ("the room- which was"), and which would otherwise become aliases such as "room-"."""

DETERMINERS = frozenset(
    """
    the a an our my their his her your its this that these those every each any some no
    """.split()
)
COPULAS = frozenset(
    """
    is was were are be been being isn't wasn't weren't aren't seems seemed felt feels looked looks
    """.split()
)
# Closed-class words that end a noun phrase: auxiliaries, prepositions, conjunctions, pronouns, adverbs of degree.
BOUNDARY = frozenset(
    """
    is was were are be been being am do does did has have had having will would can could should shall may might
    must isn't wasn't weren't aren't don't didn't doesn't hasn't haven't hadn't won't wouldn't can't couldn't
    shouldn't not no never and or but nor so yet if then than because although though while when where which who
    whom whose what why how that this these those there here it its it's they them their we us our i me my you
    your he him his she her of in on at to for from by with without about into onto over under after before
    during between through across around near up down out off again also too very really quite rather just only
    even still always all both either neither much many more most less least few lot lots bit such as like well
    ever yes ok okay please thanks thank get got getting go went gone come came make made take took one ones
    someone something anything nothing everything everyone anyone itself himself herself themselves ourselves
    myself yourself however therefore otherwise away let lets makes made says said say tell told think thought
    know knew known feel feels want wanted need needed see saw seen look use try tried find found give gave given
    keep kept leave left ran run put seem seems seemed now ago since once later soon today tonight yesterday
    tomorrow honestly actually basically definitely probably maybe perhaps anyway far
    """.split()
)
# Adjectives and quantifiers that precede the head noun but are not part of the target's name.
MODIFIERS = frozenset(
    """
    good great nice bad poor new old big small little large huge tiny whole entire first last next other same
    only main own overall usual whole real actual extra free full half high low long short slow fast quick
    excellent amazing awesome terrible horrible awful lovely wonderful fantastic perfect fine decent okay ok
    clean dirty friendly rude helpful unhelpful comfortable uncomfortable cheap expensive best worst better
    worse several few many two three four five six seven eight nine ten
    """.split()
)
# Nouns so general that they are never an opinion target on their own, in any domain.
GENERIC = frozenset(
    """
    time times day days night nights thing things way ways lot bit kind sort end rest fact part side one ones
    reason reasons point points place people person guy guys everything anything nothing something week weeks
    month months year years hour hours minute minutes moment experience review reviews question questions
    problem problems issue issues case number couple while morning evening afternoon today yesterday
    """.split()
)


ATTRIBUTES: dict[str, tuple[str, ...]] = {
    quality: tuple(adjectives.split())
    for quality, adjectives in {
        "cleanliness": "clean dirty spotless filthy tidy untidy messy grimy immaculate unclean",
        "noise": "noisy quiet loud",
        "price": "cheap expensive pricey overpriced affordable inexpensive costly",
        "size": "spacious cramped roomy",
        "comfort": "comfortable uncomfortable comfy cozy cosy",
        "speed": "slow fast quick speedy sluggish",
        "friendliness": "friendly unfriendly rude courteous polite impolite welcoming",
        "helpfulness": "helpful unhelpful attentive",
        "convenience": "convenient inconvenient",
        "safety": "safe unsafe dangerous",
        "reliability": "reliable unreliable",
    }.items()
}
_ATTRIBUTE_OF = {adjective: noun for noun, adjectives in ATTRIBUTES.items() for adjective in adjectives}
ATTRIBUTE_ADJECTIVES = frozenset(_ATTRIBUTE_OF)

# What each adjective says about its quality: "spotless" is a positive opinion of cleanliness, "cramped" a negative
# one of size. An extractor can read the polarity off the word (then flip it under negation) instead of asking a
# model trained on aspect *nouns* what an adjective-as-aspect means. Words whose polarity depends on what they
# describe ("cheap": a good price or shoddy furniture; "fast food") or that double as nouns (an in-room "safe") have
# none here and are left to the model.
_POSITIVE = """clean spotless tidy immaculate quiet affordable inexpensive spacious roomy comfortable comfy cozy cosy
    quick speedy friendly courteous polite welcoming helpful attentive convenient reliable""".split()
_NEGATIVE = """dirty filthy untidy messy grimy unclean noisy loud expensive pricey overpriced costly cramped
    uncomfortable slow sluggish unfriendly rude impolite unhelpful inconvenient unsafe dangerous unreliable""".split()
ATTRIBUTE_POLARITY: dict[str, str] = {**dict.fromkeys(_POSITIVE, "positive"), **dict.fromkeys(_NEGATIVE, "negative")}


@dataclass
class Candidate:
    """One normalised target with the surface forms it was written as."""

    key: str
    aliases: Counter[str] = field(default_factory=Counter)
    doc_ids: set[str] = field(default_factory=set)
    label: str | None = None  # a fixed name: a quality named by its adjectives, or the name stored by the registry

    @property
    def doc_frequency(self) -> int:
        return len(self.doc_ids)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        return self.aliases.most_common(1)[0][0] if self.aliases else self.key


def normalise_word(word: str) -> str:
    """A light plural fold: 'rooms' → 'room', 'fees' → 'fee', 'policies' → 'policy'; 'glass' stays."""
    word = word.lower().strip("'-")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def candidate_key(phrase: str) -> str:
    return " ".join(normalise_word(w) for w in phrase.split())


def _is_content(word: str) -> bool:
    return word.isalpha() or ("-" in word and word.replace("-", "").isalpha())


def phrases_in(text: str, max_words: int = 3) -> list[str]:
    """Candidate surface phrases of one text, in order of appearance."""
    tokens = TOKEN.findall(text)
    lowered = [t.lower() for t in tokens]
    found: list[str] = []
    n = len(tokens)
    for i, word in enumerate(lowered):
        starts: list[int] = []
        if word in DETERMINERS:
            starts.append(i + 1)
        sentence_start = i == 0 or lowered[i - 1] in {".", "!", "?", ";", ":", "("}
        if sentence_start and word not in BOUNDARY and word not in DETERMINERS and _is_content(word):
            # "Breakfast was cold": a sentence-initial phrase counts only when a copula follows it
            for length in range(1, max_words + 1):
                if i + length < n and lowered[i + length] in COPULAS:
                    starts.append(i)
                    break
        for start in starts:
            j = start
            while j < n and lowered[j] in MODIFIERS:
                j += 1
            words: list[str] = []
            while j < n and len(words) < max_words:
                token = lowered[j]
                if not _is_content(token) or token in BOUNDARY or token in DETERMINERS:
                    break
                words.append(token)
                j += 1
            # a trailing past-tense verb or adverb is not part of the name ("the speed test showed")
            while words and (words[-1] in MODIFIERS or (len(words[-1]) >= 5 and words[-1].endswith(("ed", "ly")))):
                words.pop()
            if words and not all(w in GENERIC for w in words) and len(words[-1]) > 2:
                found.append(" ".join(words))
    return found


def attribute_mentions(text: str) -> list[tuple[str, str]]:
    """(quality, adjective) for each evaluative adjective in `text` (see `ATTRIBUTES`), in order of appearance."""
    return [(_ATTRIBUTE_OF[w], w) for w in (t.lower() for t in TOKEN.findall(text)) if w in _ATTRIBUTE_OF]


def mine_candidates(
    documents: Iterable[tuple[str, str]], *, min_doc_frequency: int = 2, min_share: float = 0.01, limit: int = 300
) -> list[Candidate]:
    """Targets that enough distinct documents mention, most frequent first.

    A phrase's sub-phrases also count ("front desk staff" also supports "desk staff" and "staff"), so a head
    noun that is usually modified still surfaces as a target of its own.
    """
    by_key: dict[str, Candidate] = {}
    qualities: dict[str, Candidate] = {}
    n_docs = 0
    for doc_id, text in documents:
        n_docs += 1
        for phrase in phrases_in(text):
            words = phrase.split()
            for k in range(len(words)):
                sub = " ".join(words[k:])
                if all(w in GENERIC for w in words[k:]):
                    continue
                key = candidate_key(sub)
                candidate = by_key.get(key)
                if candidate is None:
                    candidate = by_key[key] = Candidate(key)
                candidate.aliases[sub] += 1
                candidate.doc_ids.add(doc_id)
        for quality, adjective in attribute_mentions(text):
            candidate = qualities.get(quality)
            if candidate is None:
                candidate = qualities[quality] = Candidate(quality, label=quality)
            candidate.aliases[adjective] += 1
            candidate.doc_ids.add(doc_id)
    threshold = max(min_doc_frequency, int(min_share * n_docs))
    kept = [c for c in by_key.values() if c.doc_frequency >= threshold]
    # A quality the documents discuss by name ("the noise", "the price") keeps its named mentions as the target:
    # the adjectives often qualify something else ("an expensive city", "quiet streets"). Only an otherwise unnamed
    # quality ("spotless", "filthy", and hardly ever "cleanliness") becomes a candidate through its adjectives.
    named = {c.key for c in kept}
    kept.extend(c for c in qualities.values() if c.key not in named and c.doc_frequency >= threshold)
    # a longer phrase that is nearly always the same documents as its head adds nothing ("the desk staff" vs "staff")
    kept.sort(key=lambda c: (-c.doc_frequency, c.key))
    return kept[:limit]
