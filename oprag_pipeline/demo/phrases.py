"""Phrase banks for the demo corpus: entities, sentence frames, emotions, evidence, filler.

All phrasing here was written for this project (nothing is copied from real corpora). The point of the banks is
*variety that hides the truth from shallow readers*: a keyword lexicon should not be able to read the planted
sentiment back, while a careful human (or a good extractor) can. Hence implied opinions ("we waited 40 minutes at
reception"), negations ("the bed was not uncomfortable"), comparisons with the past, hedges, rare sarcasm, emotions
in words, and evidence markers.

Template mini-language (compiled by `templates.py`):

- `{a}` — a random alias of the entity (noun phrase); `[text]` — a fixed alias written inline (append `|p` inside
  the brackets when it is plural, e.g. `[payouts|p]`). A template without either mentions the entity implicitly.
- `{be}` / `{bent}` / `{have}` / `{could}` — verb forms agreeing with the alias and the domain's tense
  (hotel reviews tell a past stay; forum posts mostly speak in the present).
- `{P}`, `{P2}` — positive adjectives of the entity; `{N}`, `{N2}` — negative ones.
- `{n}` — a number whose range depends on the planted intensity (implied templates carry three ranges:
  low, medium, high); `{r}` — a small number with no opinion in it.
- `{we}`, `{other}`, `{year}`, `{month}`, `{weekday}`, `{ordinal}`, `{hotel}` — colour.

Implied templates are `(text, spec)` where `spec` is either a string of allowed intensities (`"lmh"`, `"mh"`, …)
or three `(lo, hi)` ranges for `{n}` (low, medium, high intensity).

The banks themselves are data, in `banks/*.json` next to this module (package data): `hotels.json` and `forum.json`
hold each domain's entities and document furniture, `language.json` the frames, emotions, impact and evidence
phrasing that both domains share. The files are the source; edit them there. They are read once, at import, into
the names below: JSON arrays become tuples (so an implied template is `["text", "mh"]` or
`["text", [[lo, hi], [lo, hi], [lo, hi]]]`), objects stay dicts in file order. An entity is an object with the
fields of `EntitySpec` (those left at their default are omitted); names with weights are one `{name: weight}`
object; the forum's author focus is `{attribute: {value: multipliers}}`. An unknown key fails the import.
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass, field
from importlib.resources import files as _files
from typing import Any

from oprag_pipeline.schema import Emotion, EvidenceType

Range = tuple[int, int]
Spec = str | tuple[Range, Range, Range]
Implied = tuple[str, Spec]

SENTIMENTS = ("positive", "neutral", "negative")
INTENSITIES = ("low", "medium", "high")
EMOTIONS = tuple(e.value for e in Emotion)  # the closed set of oprag_pipeline/schema.py
EVIDENCE_TYPES = tuple(e.value for e in EvidenceType)  # the closed set of oprag_pipeline/schema.py

#: The σ-scale of docs/design.md: neutral is 0 whatever the intensity.
SIGMA = {
    ("positive", "high"): 30,
    ("positive", "medium"): 20,
    ("positive", "low"): 10,
    ("negative", "low"): -10,
    ("negative", "medium"): -20,
    ("negative", "high"): -30,
}
IMPACT_SCORE = {"high": 30, "medium": 20, "low": 10}


@dataclass(frozen=True)
class EntitySpec:
    """One opinion target with its surface forms and its *designed* opinion distribution.

    `distribution` maps sentiment -> share. For a shifting entity it is the distribution before `shift_date`
    and `shift_after` the one from that date on. `weight` is how often the entity is mentioned relative to others.
    """

    entity_id: str
    name: str
    tier1: str
    tier2: str
    short: str
    aliases: tuple[str, ...]
    pos: tuple[str, ...]
    neg: tuple[str, ...]
    neutral: tuple[str, ...]
    implied_pos: tuple[Implied, ...]
    implied_neg: tuple[Implied, ...]
    distribution: dict[str, float]
    design: str
    weight: float = 1.0
    data_pos: tuple[Implied, ...] = ()
    data_neg: tuple[Implied, ...] = ()
    shift_date: str | None = None
    shift_after: dict[str, float] | None = None
    note: str = ""
    minority_sentiment: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------------
# Loading the banks
# ---------------------------------------------------------------------------------------------------------------


def _tuples(value: Any) -> Any:
    """JSON arrays become tuples, at any depth; objects stay dicts, keys in file order."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _load(name: str) -> dict[str, Any]:
    resource = _files("oprag_pipeline.demo") / "banks" / f"{name}.json"
    return _tuples(_json.loads(resource.read_text(encoding="utf-8")))


def _entities(bank: str, rows: tuple[dict[str, Any], ...]) -> tuple[EntitySpec, ...]:
    specs = []
    for row in rows:
        try:
            specs.append(EntitySpec(**row))
        except TypeError as exc:
            raise ValueError(f"banks/{bank}.json: entity {row.get('entity_id')!r}: {exc}") from exc
    return tuple(specs)


def _split(weights: dict[str, float]) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """`{"business": 0.25, ...}` -> the names and their weights, in file order."""
    return tuple(weights), tuple(weights.values())


def _unfold(focus: dict[str, dict[str, dict[str, float]]]) -> dict[tuple[str, str], dict[str, float]]:
    """`{attribute: {value: multipliers}}` -> `{(attribute, value): multipliers}`, in file order."""
    return {(attribute, value): weights for attribute, by_value in focus.items() for value, weights in by_value.items()}


_hotels, _forum, _language = _load("hotels"), _load("forum"), _load("language")

# ---------------------------------------------------------------------------------------------------------------
# Hotels (banks/hotels.json)
# ---------------------------------------------------------------------------------------------------------------

HOTEL_NAMES: tuple[str, ...] = _hotels.pop("names")
HOTEL_ENTITIES: tuple[EntitySpec, ...] = _entities("hotels", _hotels.pop("entities"))
HOTEL_OPENERS: tuple[str, ...] = _hotels.pop("openers")
HOTEL_FILLER: tuple[str, ...] = _hotels.pop("filler")
HOTEL_CLOSERS: dict[str, tuple[str, ...]] = _hotels.pop("closers")
HOTEL_TITLES: dict[str, tuple[str, ...]] = _hotels.pop("titles")
HOTEL_TRAVELLER_HINTS: dict[str, tuple[str, ...]] = _hotels.pop("traveller_hints")
HOTEL_EXPERIENCE_HINTS: dict[str, tuple[str, ...]] = _hotels.pop("experience_hints")
HOTEL_ROOM_SIDES: tuple[str, ...] = _hotels.pop("room_sides")
HOTEL_FIRST_NAMES: tuple[str, ...] = _hotels.pop("first_names")
HOTEL_HANDLE_WORDS: tuple[str, ...] = _hotels.pop("handle_words")
# Author attributes and how they steer which entities an author writes about (multipliers on entity weights).
HOTEL_TRAVELLER_TYPES, HOTEL_TRAVELLER_WEIGHTS = _split(_hotels.pop("traveller_types"))
HOTEL_TRAVELLER_FOCUS: dict[str, dict[str, float]] = _hotels.pop("traveller_focus")

# ---------------------------------------------------------------------------------------------------------------
# Seller forum (banks/forum.json)
# ---------------------------------------------------------------------------------------------------------------

FORUM_BOARDS: dict[str, str] = _forum.pop("boards")
FORUM_ENTITIES: tuple[EntitySpec, ...] = _entities("forum", _forum.pop("entities"))
FORUM_OPENERS: tuple[str, ...] = _forum.pop("openers")
FORUM_REPLY_OPENERS: tuple[str, ...] = _forum.pop("reply_openers")
FORUM_FILLER: tuple[str, ...] = _forum.pop("filler")
FORUM_CLOSERS: tuple[str, ...] = _forum.pop("closers")
FORUM_TITLES: tuple[str, ...] = _forum.pop("titles")
FORUM_REVENUE_HINTS: dict[str, tuple[str, ...]] = _forum.pop("revenue_hints")
FORUM_TENURE_HINTS: dict[str, tuple[str, ...]] = _forum.pop("tenure_hints")
FORUM_REGION_HINTS: dict[str, tuple[str, ...]] = _forum.pop("region_hints")
FORUM_REGION_MARKETS: dict[str, tuple[str, ...]] = _forum.pop("region_markets")
FORUM_HANDLE_WORDS: tuple[str, ...] = _forum.pop("handle_words")
FORUM_HANDLE_SUFFIX: tuple[str, ...] = _forum.pop("handle_suffix")
# Author attributes and how they steer which entities an author writes about (multipliers on entity weights).
FORUM_REVENUE_BANDS, FORUM_REVENUE_WEIGHTS = _split(_forum.pop("revenue_bands"))
FORUM_TENURES, FORUM_TENURE_WEIGHTS = _split(_forum.pop("tenures"))
FORUM_REGIONS, FORUM_REGION_WEIGHTS = _split(_forum.pop("regions"))
FORUM_FOCUS: dict[tuple[str, str], dict[str, float]] = _unfold(_forum.pop("focus"))

# ---------------------------------------------------------------------------------------------------------------
# Shared phrasing (banks/language.json)
# ---------------------------------------------------------------------------------------------------------------

#: Generic frames: (sentiment, intensity, kind, domain, text). intensity "l"/"m"/"h", "n" for neutral.
#: kind: direct, negation, comparison, hedge, sarcasm, style (domain flavoured). Domain "*" is any domain.
Frame = tuple[str, str, str, str, str]
FRAMES: tuple[Frame, ...] = _language.pop("frames")
FRAME_KIND_WEIGHT: dict[str, float] = _language.pop("frame_kind_weight")

#: Emotion -> entries (sentiment filter, domain filter, text); "*" matches anything.
EmotionPhrase = tuple[str, str, str]
EMOTION_PHRASES: dict[str, tuple[EmotionPhrase, ...]] = _language.pop("emotion_phrases")
#: Optional lead-ins for emotion sentences (the sentence's first letter is lowered after them).
EMOTION_LEADS: tuple[str, ...] = _language.pop("emotion_leads")
#: (impact, polarity group, domain, text) entries. Polarity group: positive / negative / neutral.
IMPACT_PHRASES: tuple[tuple[str, str, str, str], ...] = _language.pop("impact_phrases")

#: Evidence markers, per domain.
ANECDOTAL_PREFIXES: dict[str, tuple[str, ...]] = _language.pop("anecdotal_prefixes")
PERSONAL_PREFIXES: dict[str, tuple[str, ...]] = _language.pop("personal_prefixes")
DATA_PREFIXES: dict[str, tuple[str, ...]] = _language.pop("data_prefixes")
#: Wrappers that turn an opinion clause into a counted (data-driven) statement. `{core}` is the clause.
DATA_WRAPPERS: dict[str, tuple[str, ...]] = _language.pop("data_wrappers")

#: Document furniture both domains use: `{other}` comparisons (per domain), dates, title labels per sentiment.
OTHER: dict[str, tuple[str, ...]] = _language.pop("other")
MONTHS: tuple[str, ...] = _language.pop("months")
WEEKDAYS: tuple[str, ...] = _language.pop("weekdays")
ORDINALS: tuple[str, ...] = _language.pop("ordinals")
TITLE_LABELS: dict[str, tuple[str, ...]] = _language.pop("title_labels")

for _bank, _left in (("hotels", _hotels), ("forum", _forum), ("language", _language)):
    if _left:
        raise ValueError(f"banks/{_bank}.json: unknown keys {sorted(_left)}")
del _hotels, _forum, _language, _bank, _left
