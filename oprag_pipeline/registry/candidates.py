"""Mining opinion-target candidates from a sample of documents, with no network and no domain vocabulary.

A target is what an opinion is *about*. Following double propagation (Qiu, Liu, Bu and Chen, 2011), targets are
the nouns that opinion words modify: "great battery life" (an opinion adjective right before the noun phrase),
"the waiter was rude" (predicated of it through a copula or a verb), "we loved the pool" (an opinion verb whose
object it is). Without a dependency parser these relations are read off part-of-speech tags within one clause:
an opinion word at most `BEFORE` tokens before a noun phrase or `AFTER` tokens after it, with no clause boundary
(punctuation, "but") between them. Tags come from the Brill-style tagger and lexicon that TextBlob ships (pattern's
English tagger: offline, about 3 µs a word); opinion words are any adjective (the seed relation of double
propagation) and the words of VADER's lexicon and TextBlob's subjective adjectives, all general English, so
"the wait was long" and "we loved the pool" both count. Negation does not matter here ("the screen was not bright"
is still an opinion about the screen); its polarity is the extractor's business. As in Hu and Liu (2004), what many
different authors hold opinions about is a target, what one author mentions once is not: a candidate must be
opinion-linked in enough distinct documents.

What is *not* a target, whatever the domain (English grammar and general vocabulary, not any domain's words):
verbs the tagger mistakes for plural nouns ("it works"), time expressions ("weekend", "last night", months), the
events of a visit itself ("stay", "trip"), people who are company rather than service ("my wife", "our kids"),
and nouns too general to name anything ("thing", "lot"). The product or place itself ("hotel", "laptop",
"place") stays, as one entity. Grammar settles a few tags the tagger gets wrong: what a degree adverb grades is an
adjective ("so shimmery"), a verb after "to" is the infinitive ("great to work in"), a gerund that is the subject of
a copula is a noun ("the waiting was endless"), and a proper noun written mostly right after a preposition of place
("in Boston") is where the author was, not a target (products take a determiner: "my Kindle").

Multi-word targets are kept whole ("battery life", "front desk", "room service") and linked to their head noun:
`Candidate.head` names the head's key, and a compound too rare to be a target of its own lends its mentions to its
head ("the seafood pasta" supports "pasta"), never to its modifier ("router table" supports "table", not
"router").

Some targets are qualities rather than things, and reviewers name them by adjective only: "the room was spotless"
rates cleanliness, "way too pricey" rates the price, and no noun phrase carries them. `ATTRIBUTES` maps common
evaluative adjectives to the quality they rate (the attribute relation of lexicons such as WordNet, for qualities
that apply in any domain). Each occurrence is a mention of that quality, named by its noun, with the adjective as an
alias, and it must clear the same document-frequency bar as any other candidate; a quality that is also discussed
by name keeps only its named mentions (see `mine_candidates`).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from xml.etree import ElementTree

from lemminflect import getAllLemmas as _lexicon_lemmas

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
# Nouns so general that they are never an opinion target on their own, in any domain (compared as lemmas).
GENERIC = frozenset(
    """
    thing way lot bit kind sort end rest fact part side one reason point people person guy everything anything
    nothing something experience review question problem issue case number couple while stuff word matter idea
    aspect bunch anyone someone everyone nobody half right plenty share notch world others other none need tons
    complaint
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


# Time expressions: a when, never a what (compared as lemmas; month and day names are also caught capitalised).
TIME_NOUNS = frozenset(
    """
    time day night week weekend month year hour minute second moment morning evening afternoon noon midnight today
    tonight yesterday tomorrow date season summer winter spring autumn fall holiday vacation age decade century
    january february march april may june july august september october november december monday tuesday
    wednesday thursday friday saturday sunday
    """.split()
)
# The events of a visit or a use as a whole: what the review is, not what it rates ("our stay", "the trip").
EVENT_NOUNS = frozenset("stay trip visit occasion time experience purchase buy".split())
# People who are company, not service: the author's family and friends, and people in general ("other guests
# said…" reports an opinion about something else); service roles such as "waiter", "receptionist" or "seller" are
# targets, the people one came with or heard from are not.
COMPANION_NOUNS = frozenset(
    """
    friend wife husband partner boyfriend girlfriend fiance fiancee spouse family kid child son daughter mother
    father mom mum dad parent brother sister baby toddler teenager grandmother grandfather grandparent aunt uncle
    cousin colleague coworker boss group party companion people person guest stranger everyone everybody someone
    somebody anyone anybody nobody
    """.split()
)
NOT_TARGETS = GENERIC | TIME_NOUNS | EVENT_NOUNS | COMPANION_NOUNS
# What is left of a contraction when text is tokenised apart ("they 're", "I 've"): grammar, never a noun.
_CONTRACTION_TAILS = frozenset("re ve ll nt s d m t".split())
# Before these, "like" is the verb of liking ("I like the", "did not like the"), not the preposition ("like a").
_LIKERS = frozenset(
    "i we you they he she not n't don't didn't doesn't do did does would really also still just".split()
)
_PRONOUNS = frozenset("i you he she it we they this that there who which".split())
# Particles that English turns a verb into a noun with ("check-in", "checkout", "set-up", "drop-off", "sign-up"):
# the noun is written hyphenated, closed or open ("check in was quick"), and is one target however written.
NOUN_PARTICLES = frozenset("in out up off".split())
_VERB_CONTEXT = frozenset("to will would can could should shall may might must please let lets".split())
"""Words before which a base form is a verb ("to check in", "we could check in"), not a noun."""
# Adverbs of degree: English puts an adjective or an adverb after them, never a noun ("so soft", "very stretchy").
DEGREE_ADVERBS = frozenset("so very too really extremely incredibly fairly somewhat slightly overly super".split())
# Prepositions of place: a bare proper noun right after one is a place's name ("in Boston", "near Soho", "to
# Paris"); products and brands take a determiner or a possessive ("on my Kindle", "the iPad").
PLACE_PREPOSITIONS = frozenset("in at near from to around outside inside across towards toward downtown".split())
_ACRONYM = re.compile(r"[A-Z]{2,5}")
"""An acronym is written in two to five capitals ("AC", "TV", "PPC"); longer runs of capitals are shouting."""
_CLAUSE_BREAKS = frozenset([*'.!?;:()"', "but", "although", "though", "whereas", "however"])


BEFORE = 3
"""An opinion word at most this many tokens before a noun phrase modifies it: "really very good food" (the adverbs
of degree English stacks before an adjective rarely exceed two)."""
AFTER = 4
"""... or at most this many after it, which spans a copula and two adverbs: "the staff were always very friendly"."""
MAX_WORDS = 3
"""Targets of more than three words ("front desk staff member") are rare, and their last three words name them."""
STRONG_OPINION = 2.0
"""A noun that is itself a strong opinion word in VADER (|valence| >= 2: "love", "disaster", "joke") is the opinion,
not its target; milder ones ("comfort", 1.5) can be what is rated."""


@dataclass
class Candidate:
    """One normalised target with the surface forms it was written as.

    `doc_ids` are the documents where it is the target of an opinion word (its support); `head` is the key of the
    head noun of a multi-word target ("life" for "battery life"), None for one word.
    """

    key: str
    aliases: Counter[str] = field(default_factory=Counter)
    doc_ids: set[str] = field(default_factory=set)
    label: str | None = None  # a fixed name: a quality named by its adjectives, or the name stored by the registry
    head: str | None = None
    acronym_mentions: int = 0  # mentions written in capitals ("the AC"): see `acronym_links`

    @property
    def doc_frequency(self) -> int:
        return len(self.doc_ids)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        return self.aliases.most_common(1)[0][0] if self.aliases else self.key


@lru_cache(maxsize=200_000)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    """lemminflect's lemmas of `word` by part of speech (a dictionary look-up, cached: the miner asks per token)."""
    return _lexicon_lemmas(word)


def _fold_plural_oov(word: str) -> str:
    """English plural rules for words no lexicon knows ("wifis", "apps"): -ies, sibilant + -es, then -s."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us")):
        return word[:-1]
    return word


@lru_cache(maxsize=200_000)
def normalise_word(word: str) -> str:
    """A plural fold through an English lemma lexicon: 'rooms' → 'room', 'dishes' → 'dish', 'policies' → 'policy';
    'glass', 'bus' and 'news' stay. Words the lexicon knows only as other parts of speech are left alone ("was",
    "this"); words it does not know at all get the plural rules of `_fold_plural_oov`.

    The lexicon is lemminflect's (built from English corpora, general vocabulary); the old suffix-stripping rule made
    "dishes" into "dishe".
    """
    word = word.lower().strip("'-")
    if not word.isalpha():
        return _fold_plural_oov(word) if "-" in word else word  # "check-ins" → "check-in"
    lemmas = _lemmas(word)
    if not lemmas:
        return _fold_plural_oov(word)
    nouns = lemmas.get("NOUN")
    if not nouns:
        return word
    for lemma in nouns:  # "pools" is listed as a noun of its own too; its regular singular wins
        if lemma != word and word in {lemma + "s", lemma + "es", lemma[:-1] + "ies"}:
            return lemma
    return word if word in nouns else nouns[0]


def candidate_key(phrase: str) -> str:
    return " ".join(normalise_word(w) for w in phrase.split())


def _is_content(word: str) -> bool:
    return word.isalpha() or ("-" in word and word.replace("-", "").isalpha())


@lru_cache(maxsize=1)
def _textblob_en():
    """TextBlob's English module, imported on first use: importing it loads nltk and scipy.stats (seconds, and
    everything that imports this module for its word lists, such as the aspect model, would pay for it)."""
    import textblob.en

    return textblob.en


@lru_cache(maxsize=1)
def opinion_lexicon() -> Mapping[str, float]:
    """Opinion words of general English → strength: VADER's lexicon (valence, |v| >= 0.5) and TextBlob's subjective
    adjectives (polarity |p| >= 0.1 with subjectivity >= 0.3, scaled to VADER's range), plus the quality adjectives
    of `ATTRIBUTES`. Closed-class words VADER scores ("like", "yes", "no", "want") are grammar, not opinion.

    Built once per process and read-only: building it loads VADER's lexicon and parses TextBlob's XML, about 30 ms,
    which per document was most of the registry's candidate mining (17 of 19 s on 537 reviews)."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    words: dict[str, float] = {}
    for word, valence in SentimentIntensityAnalyzer().lexicon.items():
        if word.isalpha() and abs(valence) >= 0.5:
            words[word] = float(valence)
    senses: defaultdict[str, list[tuple[float, float]]] = defaultdict(list)
    sentiment_xml = Path(_textblob_en().__file__).with_name("en-sentiment.xml")
    for element in ElementTree.parse(sentiment_xml).getroot().iter("word"):
        form = (element.get("form") or "").lower()
        if form.isalpha():
            senses[form].append((float(element.get("polarity") or 0), float(element.get("subjectivity") or 0)))
    for form, scored in senses.items():
        # averaged over the word's senses: "new" is negative in one sense and neutral in the rest
        polarity = sum(p for p, _ in scored) / len(scored)
        subjectivity = sum(s for _, s in scored) / len(scored)
        if abs(polarity) >= 0.15 and subjectivity >= 0.4 and form not in words:
            words[form] = polarity * 4  # TextBlob's -1..1 against VADER's -4..4
    for adjective in ATTRIBUTE_ADJECTIVES:
        words.setdefault(adjective, 1.0)
    for word in BOUNDARY | DETERMINERS | COPULAS | {"like", "yes", "please", "want", "wanted", "ok", "okay"}:
        words.pop(word, None)
    return MappingProxyType(words)


def _tag(tokens: Sequence[str]) -> list[str]:
    """Penn tags for `tokens` from TextBlob's bundled pattern tagger (no corpus download, no network)."""
    if not tokens:
        return []
    tagged = _textblob_en().tag(" ".join(tokens), tokenize=False)
    if len(tagged) != len(tokens):  # the tagger never re-splits space-free tokens; guard anyway
        return ["NN" if _is_content(t) else "." for t in tokens]
    return [t for _, t in tagged]


def sentences_of(text: str) -> list[list[str]]:
    """Tokens of each sentence (split at . ! ? and line breaks)."""
    sentences: list[list[str]] = []
    for line in text.splitlines():
        current: list[str] = []
        for token in TOKEN.findall(line):
            current.append(token)
            if token in {".", "!", "?"}:
                sentences.append(current)
                current = []
        if current:
            sentences.append(current)
    return sentences


def _at(words: Sequence[str], index: int) -> str | None:
    return words[index] if index < len(words) else None


def _not_a_target(word: str, nouns: frozenset[str] = NOT_TARGETS) -> bool:
    """The word, or any noun lemma of it ("minutes" is a noun of its own and the plural of "minute"), is one of
    `nouns`: by default a time, event, companion or generic noun."""
    if word in nouns or normalise_word(word) in nouns:
        return True
    return any(lemma in nouns for lemma in _lemmas(word).get("NOUN", ()))


@dataclass(frozen=True)
class TargetMention:
    """A noun phrase of one sentence: its words (lower-cased), whether an opinion word is linked to it, and whether
    it was written as a proper noun (capitalised mid-sentence: "Windows" is not the plural of "window")."""

    words: tuple[str, ...]
    opinionated: bool
    proper: bool
    acronym: bool = False  # one word of two to five capitals ("AC", "PPC"), not sentence-initial "I"
    place_name: bool = False  # a proper noun right after a preposition of place, no determiner: "in Boston"


def _particle_compound(word: str) -> bool:
    """A hyphenated verb-particle noun: "check-in", "drop-off" (a base form, not "checked-in")."""
    head, _, particle = word.partition("-")
    return (
        particle in NOUN_PARTICLES and head.isalpha() and not head.endswith(("ed", "ing")) and "VERB" in _lemmas(head)
    )


def _open_particle_compound(lowered: Sequence[str], j: int, before: str | None) -> bool:
    """Noun `lowered[j]` and the particle after it are one open compound ("check in was quick", "a smooth check
    in."): a verb with one of `NOUN_PARTICLES`, then a copula or the end of the clause, not after a subject or "to"
    (then it is the verb: "we could check in")."""
    if j + 1 >= len(lowered) or lowered[j + 1] not in NOUN_PARTICLES or before in _PRONOUNS | _VERB_CONTEXT:
        return False
    after = _at(lowered, j + 2)
    if not (after is None or after in COPULAS or after in _CLAUSE_BREAKS or after == ","):
        return False
    return lowered[j].isalpha() and "VERB" in _lemmas(lowered[j])


def _is_noun(token: str, lowered: str, tag: str, previous: str | None, following: str | None = None) -> bool:
    if not _is_content(token) or lowered in DETERMINERS or lowered in _CONTRACTION_TAILS:
        return False
    lemmas = _lemmas(lowered)
    if lowered in BOUNDARY and "NOUN" not in lemmas:  # closed-class words; "the look", "the use" stay nouns
        return False
    after_determiner = previous in DETERMINERS
    if previous in DEGREE_ADVERBS:  # "so shimmery", "very stretchy": degree adverbs grade adjectives, never nouns
        return False
    if previous == "to" and "VERB" in lemmas:  # "great to work in", "easy to check": the infinitive
        return False
    if _particle_compound(lowered) and previous not in _PRONOUNS and previous not in _VERB_CONTEXT:
        # "Check-in was a breeze", "a smooth check-out": the tagger reads the compound as an adjective at the start
        # of a sentence or after an adjective; English uses it as a noun wherever it is not after a subject or "to".
        return True
    if lowered.endswith("ing") and following in COPULAS and previous not in _PRONOUNS and previous not in COPULAS:
        # A gerund that is the subject of a copula is a noun: "the waiting was endless", "dining there was a joy",
        # "parking is easy". The progressive ("it is working", "we were waiting") puts the copula before it.
        return True
    if not tag.startswith("NN"):
        # Right after a determiner English puts a noun or an adjective, so a word tagged as a verb or a preposition
        # there is a noun the tagger read without context ("at the bar", "the wait was long", "the parking"), and
        # one tagged as an adjective is a noun when English has it only as a noun ("the sandal fits").
        if not after_determiner:
            return False
        if tag in {"IN", "VB", "VBP", "VBG", "RB"}:
            return True
        return tag == "JJ" and "ADJ" not in lemmas and ("NOUN" in lemmas or "-" in lowered)  # "the check-in"
    if tag == "NNS" and previous in _PRONOUNS:  # "it works", "she says": a verb the tagger read as a plural
        return False
    # "using", "ordered": an inflected verb form that English never uses as a noun (the lexicon's base forms are
    # incomplete, "bar" is listed only as a verb, so only inflected forms are judged by it)
    if lowered.endswith(("ing", "ed")) and not after_determiner and lemmas and "NOUN" not in lemmas:
        return False
    return not (lowered.endswith("ly") and "ADV" in lemmas)  # "absolutely", "truly": adverbs read as nouns


def target_mentions(text: str) -> list[TargetMention]:
    """Every noun phrase of `text` (runs of up to `MAX_WORDS` nouns: "battery life", "front desk staff"), each
    marked with whether an opinion word is related to it (see the module docstring). An adjective before the nouns
    is the opinion, not part of the name ("a sturdy table"): English does not mark which adjectives classify, and
    the head noun still carries the mention ("hard drive" is found as "drive")."""
    lexicon = opinion_lexicon()
    found: list[TargetMention] = []
    for tokens in sentences_of(text):
        lowered = [t.lower() for t in tokens]
        # A capitalised first word is capitalised by position, not because it is a name: tag it in lower case.
        tagging = [lowered[0], *tokens[1:]] if tokens else tokens
        tags = _tag(tagging)
        clause = [0] * len(tokens)
        current = 0
        for i, word in enumerate(lowered):
            if word in _CLAUSE_BREAKS or word == ",":
                current += 1
            clause[i] = current
        opinion_at = [
            i
            for i, word in enumerate(lowered)
            # the lexicon's opinion words, and any adjective: double propagation's seed relation is adjective → noun,
            # and a predicated adjective ("the wait was long") is an opinion no lexicon lists
            if word in lexicon
            or tags[i] in {"JJ", "JJR", "JJS"}
            or (word == "like" and i and lowered[i - 1] in _LIKERS)
            # what a degree adverb grades is an adjective, lexicon or not: "very stretchy", "so shimmery"
            or (i and lowered[i - 1] in DEGREE_ADVERBS and word.isalpha() and word not in BOUNDARY)
        ]
        i = 0
        n = len(tokens)
        while i < n:
            previous = lowered[i - 1] if i else None
            following = _at(lowered, i + 1)
            if (
                not _is_noun(tokens[i], lowered[i], tags[i], previous, following)
                or abs(lexicon.get(lowered[i], 0)) >= STRONG_OPINION
            ):
                i += 1
                continue
            j = i
            while (
                j + 1 < n
                and _is_noun(tokens[j + 1], lowered[j + 1], tags[j + 1], lowered[j], _at(lowered, j + 2))
                and not (abs(lexicon.get(lowered[j + 1], 0)) >= STRONG_OPINION)
                # a name does not continue a common noun ("our waitress Kim"), nor the reverse
                and tokens[j + 1][:1].isupper() == (tokens[j][:1].isupper() and (j > 0 or tags[j].startswith("NNP")))
            ):
                j += 1
            start = max(i, j - MAX_WORDS + 1)
            joined = _open_particle_compound(lowered, j, previous)
            last = j + 1 if joined else j  # the particle is part of the name
            opinionated = any(
                clause[k] == clause[i] and (start - BEFORE <= k < start or last < k <= last + AFTER) for k in opinion_at
            )
            proper = all(tags[k].startswith("NNP") and tokens[k][:1].isupper() for k in range(start, j + 1))
            words = tuple(lowered[start : j + 1])
            if joined:
                words = (*words[:-1], f"{words[-1]}-{lowered[j + 1]}")
            acronym = start == j and _ACRONYM.fullmatch(tokens[j]) is not None
            place_name = proper and start > 0 and lowered[start - 1] in PLACE_PREPOSITIONS
            if not _not_a_target(words[-1]) and len(words[-1]) > 1:
                found.append(TargetMention(words, opinionated, proper and not acronym, acronym, place_name))
            i = last + 1
    return found


def attribute_mentions(text: str) -> list[tuple[str, str]]:
    """(quality, adjective) for each evaluative adjective in `text` (see `ATTRIBUTES`), in order of appearance."""
    return [(_ATTRIBUTE_OF[w], w) for w in (t.lower() for t in TOKEN.findall(text)) if w in _ATTRIBUTE_OF]


def _mention_key(words: Sequence[str], proper: bool) -> str:
    return " ".join(words) if proper else candidate_key(" ".join(words))


def mine_candidates(
    documents: Iterable[tuple[str, str]],
    *,
    min_doc_frequency: int = 2,
    min_share: float = 0.0,
    min_sentence_share: float = 0.0,
    limit: int = 300,
) -> list[Candidate]:
    """Targets that opinion words relate to in enough distinct documents, most supported first.

    The bar is the largest of `min_doc_frequency`, `min_share` of the documents and `min_sentence_share` of the
    sentences: a bar in sentences holds its meaning whether the documents are one sentence or forty.

    A multi-word target too rare to clear the bar on its own lends its documents to its longest supported tail
    ("the seafood pasta" → "pasta", "front desk staff" → "desk staff" or "staff"), so a head that is usually
    modified still surfaces, and a modifier never receives them.
    """
    by_key: dict[str, Candidate] = {}
    qualities: dict[str, Candidate] = {}
    # proper-noun key → [mentions right after a preposition of place, all its proper mentions], opinion or not
    place_votes: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    n_docs = n_sentences = 0
    for doc_id, text in documents:
        n_docs += 1
        n_sentences += len(sentences_of(text))
        for mention in target_mentions(text):
            if mention.proper:
                votes = place_votes[_mention_key(mention.words, True)]
                votes[0] += mention.place_name
                votes[1] += 1
            if not mention.opinionated:
                continue
            words = mention.words
            # "the weekend staff": the time word is not part of the name; a companion noun is ("guest services",
            # "the kids menu" name a service and a menu of their own)
            while (
                words and _not_a_target(words[0]) and (len(words) == 1 or not _not_a_target(words[0], COMPANION_NOUNS))
            ):
                words = words[1:]
            if not words:
                continue
            key = _mention_key(words, mention.proper)
            candidate = by_key.get(key)
            if candidate is None:
                head = _mention_key(words[-1:], mention.proper) if len(words) > 1 else None
                candidate = by_key[key] = Candidate(key, head=head)
            candidate.aliases[" ".join(words)] += 1
            candidate.doc_ids.add(doc_id)
            candidate.acronym_mentions += mention.acronym
        for quality, adjective in attribute_mentions(text):
            candidate = qualities.get(quality)
            if candidate is None:
                candidate = qualities[quality] = Candidate(quality, label=quality)
            candidate.aliases[adjective] += 1
            candidate.doc_ids.add(doc_id)
    threshold = max(min_doc_frequency, math.ceil(min_share * n_docs), math.ceil(min_sentence_share * n_sentences))
    # Longest first: a compound below the bar lends its documents to its tails before they are judged.
    for candidate in sorted(by_key.values(), key=lambda c: (-len(c.key.split()), c.key)):
        if candidate.head is None or candidate.doc_frequency >= threshold:
            continue
        words = candidate.key.split()
        for k in range(1, len(words)):
            tail = by_key.get(" ".join(words[k:]))
            if tail is None and k == len(words) - 1:
                tail = by_key[words[-1]] = Candidate(words[-1])
            if tail is not None:
                tail.doc_ids |= candidate.doc_ids
                break
    # A proper noun written mostly right after a preposition of place ("in Boston", "to Paris") is where the author
    # was, not what they rate; a majority of its own mentions decides, so no corpus-fitted share is involved.
    places = {key for key, (place, proper) in place_votes.items() if 2 * place > proper}
    kept = [c for c in by_key.values() if c.doc_frequency >= threshold and c.aliases and c.key not in places]
    # A quality the documents discuss by name ("the noise", "the price") keeps its named mentions as the target:
    # the adjectives often qualify something else ("an expensive city", "quiet streets"). Only an otherwise unnamed
    # quality ("spotless", "filthy", and hardly ever "cleanliness") becomes a candidate through its adjectives.
    named = {c.key for c in kept}
    kept.extend(c for c in qualities.values() if c.key not in named and c.doc_frequency >= threshold)
    kept.sort(key=lambda c: (-c.doc_frequency, c.key))
    return kept[:limit]


def acronym_links(candidates: Sequence[Candidate]) -> list[tuple[str, str]]:
    """(acronym key, expansion key) pairs: a one-word candidate mostly written in capitals ("the AC") and the one
    multi-word candidate of the same corpus whose initials spell it ("air conditioning", and its clipping "air
    con"). An acronym with two different expansions in the corpus is ambiguous there and is linked to neither; a
    lower-case word is no acronym ("pc" written "pc" is left alone), so ordinary short words never link by
    accident. "Mostly" is a majority of the candidate's own mentions, no share fitted to a corpus."""
    by_initials: defaultdict[str, list[str]] = defaultdict(list)
    for candidate in candidates:
        # the parts of a hyphenated word give a letter each, as in "add-on charge" → AOC, "point-of-sale" → POS
        words = candidate.key.replace("-", " ").split()
        if 2 <= len(words) <= 5 and " " in candidate.key and all(w[:1].isalpha() for w in words):
            by_initials["".join(w[0] for w in words)].append(candidate.key)
    links: list[tuple[str, str]] = []
    for candidate in candidates:
        written = sum(candidate.aliases.values())
        if " " in candidate.key or not written or 2 * candidate.acronym_mentions <= written:
            continue
        expansions = by_initials.get(candidate.key.lower(), [])
        if expansions and all(_clipped_alike(expansions[0], other) for other in expansions[1:]):
            links.extend((candidate.key, expansion) for expansion in expansions)
    return links


def _clipped_alike(a: str, b: str) -> bool:
    """Two phrases that are the same words, some clipped: "air con" and "air conditioning" (English clips words
    from the end, so each word of one starts the other's word in the same place)."""
    return all(x.startswith(y) or y.startswith(x) for x, y in zip(a.split(), b.split(), strict=True))
