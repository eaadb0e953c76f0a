"""Phrase banks compiled for generation (once per process): templates, entities with their decks, weighted frames.

A template's text uses the mini-language described in `phrases.py`; compiling it records what filling it takes (its
fields, a fixed alias, numeric ranges per intensity) and how it may be used (personal voice, one simple clause). A
domain's bank groups the compiled frames by sentiment, intensity and mode, and its entities by what they offer.
"""

from __future__ import annotations

import json
import random
import re
import string
from bisect import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from oprag_pipeline.demo import phrases as ph

ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # compact JSON, as in the truth files
INTENSITY_CODES = ("l", "m", "h")
INTENSITY_NAMES = {"l": "low", "m": "medium", "h": "high"}
_PERSONAL_RE = re.compile(r"\{we\}|\b(I|I'm|I've|I'd|I'll|we|we're|we've|us|our|my|me)\b")
_ALIAS_RE = re.compile(r"\[([^\]]+)\]")


@dataclass(frozen=True, slots=True)
class Template:
    """A compiled template: format string with `{a}` for the alias plus what it needs to be filled."""

    tid: str
    text: str
    fields: tuple[str, ...]
    fixed_alias: str | None
    fixed_plural: bool
    has_alias: bool
    ranges: tuple[tuple[int, int], ...] | None
    intensities: str
    personal: bool
    kind: str
    simple: bool  # one clause, no inner sentence break: may be wrapped by prefixes and joined with "but"


def _compile(text: str, tid: str, kind: str, spec: ph.Spec = "lmh") -> Template:
    fixed_alias: str | None = None
    fixed_plural = False
    match = _ALIAS_RE.search(text)
    if match:
        inner = match.group(1)
        fixed_plural = inner.endswith("|p")
        fixed_alias = inner.removesuffix("|p")
        text = text[: match.start()] + "{a}" + text[match.end() :]
    fields = tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(text) if f))
    ranges = None if isinstance(spec, str) else tuple(spec)
    intensities = spec if isinstance(spec, str) else "lmh"
    plain = _ALIAS_RE.sub("", text.replace("{a}", "x"))
    return Template(
        tid=tid,
        text=text,
        fields=fields,
        fixed_alias=fixed_alias,
        fixed_plural=fixed_plural,
        has_alias="a" in fields,
        ranges=ranges,
        intensities=intensities,
        personal=bool(_PERSONAL_RE.search(text)),
        kind=kind,
        simple=("?" not in plain and "." not in plain.rstrip(".") and ":" not in plain),
    )


def split_alias(alias: str) -> tuple[str, bool]:
    return (alias[:-2], True) if alias.endswith("|p") else (alias, False)


@dataclass(slots=True)
class CompiledEntity:
    """An entity of the taxonomy with its templates grouped by (sentiment, intensity code) and its sentiment decks."""

    spec: ph.EntitySpec
    index: int
    aliases: tuple[tuple[str, bool], ...]
    neutral: tuple[Template, ...]
    neutral_impersonal: tuple[Template, ...]
    json_fragment: str
    implied: dict[tuple[str, str], tuple[Template, ...]]
    numeric: dict[tuple[str, str], tuple[Template, ...]]
    data: dict[tuple[str, str], tuple[Template, ...]]
    decks: tuple[list[str], ...]
    shift_date: str | None


def _deck(distribution: dict[str, float]) -> list[str]:
    """100 cards matching the distribution exactly (largest-remainder rounding)."""
    raw = {s: distribution.get(s, 0.0) * 100 for s in ph.SENTIMENTS}
    counts = {s: int(v) for s, v in raw.items()}
    for s in sorted(raw, key=lambda k: raw[k] - counts[k], reverse=True)[: 100 - sum(counts.values())]:
        counts[s] += 1
    return [s for s in ph.SENTIMENTS for _ in range(counts[s])]


def _compile_entity(spec: ph.EntitySpec, index: int) -> CompiledEntity:
    def by_intensity(templates: Iterable[Template], sentiment: str) -> dict[tuple[str, str], tuple[Template, ...]]:
        items = list(templates)
        return {(sentiment, code): tuple(t for t in items if code in t.intensities) for code in INTENSITY_CODES}

    eid = spec.entity_id
    imp_pos = [_compile(t, f"{eid}.implied_pos.{i}", "implied", s) for i, (t, s) in enumerate(spec.implied_pos)]
    imp_neg = [_compile(t, f"{eid}.implied_neg.{i}", "implied", s) for i, (t, s) in enumerate(spec.implied_neg)]
    dat_pos = [_compile(t, f"{eid}.data_pos.{i}", "data", s) for i, (t, s) in enumerate(spec.data_pos)]
    dat_neg = [_compile(t, f"{eid}.data_neg.{i}", "data", s) for i, (t, s) in enumerate(spec.data_neg)]
    implied = by_intensity(imp_pos, "positive") | by_intensity(imp_neg, "negative")
    numeric = {key: tuple(t for t in group if t.ranges is not None) for key, group in implied.items()}
    data = by_intensity(dat_pos, "positive") | by_intensity(dat_neg, "negative")
    neutral = tuple(_compile(t, f"{eid}.neutral.{i}", "neutral") for i, t in enumerate(spec.neutral))
    decks = (_deck(spec.distribution),) + ((_deck(spec.shift_after),) if spec.shift_after else ())
    return CompiledEntity(
        spec=spec,
        index=index,
        aliases=tuple(split_alias(a) for a in spec.aliases),
        neutral=neutral,
        neutral_impersonal=tuple(t for t in neutral if not t.personal),
        json_fragment=ENCODE(
            {"entity_id": spec.entity_id, "entity_name": spec.name, "tier1": spec.tier1, "tier2": spec.tier2}
        )[1:-1],
        implied=implied,
        numeric=numeric,
        data=data,
        decks=decks,
        shift_date=spec.shift_date,
    )


@dataclass(slots=True)
class _Pick:
    """Templates with cumulative weights, for `bisect`-based weighted choice."""

    items: tuple[Template, ...]
    cum: tuple[float, ...]

    def choose(self, rng: random.Random) -> Template:
        return self.items[bisect(self.cum, rng.random() * self.cum[-1])]


@dataclass(slots=True)
class Bank:
    """One domain's compiled phrase banks; `weight_cache` keeps the entity weights per author focus."""

    domain: str
    entities: tuple[CompiledEntity, ...]
    frames: dict[tuple[str, str, str], _Pick]  # (sentiment, intensity code, mode); mode: "any" or "core"
    emotions: dict[tuple[str, str], tuple[str, ...]]
    impacts: dict[tuple[str, str], tuple[str, ...]]
    weight_cache: dict[tuple[str, ...], tuple[float, ...]]


def _pick(templates: Sequence[Template]) -> _Pick:
    cum: list[float] = []
    total = 0.0
    for t in templates:
        total += ph.FRAME_KIND_WEIGHT[t.kind]
        cum.append(total)
    return _Pick(tuple(templates), tuple(cum))


@cache
def compiled_bank(domain: str) -> Bank:
    """Compile the phrase banks of one domain (cached per process, so workers pay it once)."""
    specs = ph.HOTEL_ENTITIES if domain == "hotels" else ph.FORUM_ENTITIES
    frames: dict[tuple[str, str, str], _Pick] = {}
    compiled = [
        _compile(text, f"frame.{sent}.{code}.{i}", kind)
        for i, (sent, code, kind, dom, text) in enumerate(ph.FRAMES)
        if dom in ("*", domain)
    ]
    sent_codes = [("positive", c) for c in INTENSITY_CODES] + [("negative", c) for c in INTENSITY_CODES]
    sent_codes.append(("neutral", "n"))
    for sent, code in sent_codes:
        group = [t for t in compiled if t.tid.startswith(f"frame.{sent}.{code}.")]
        frames[(sent, code, "any")] = _pick(group)
        # "core" frames are full clauses that start with the alias, so they read well after "apparently " or
        # "a friend said " and inside data wrappers; fragments like "no complaints about X" do not.
        core = [
            t
            for t in group
            if not t.personal
            and t.simple
            and t.text.startswith("{a} ")
            and t.kind in ("direct", "negation", "comparison")
        ]
        frames[(sent, code, "core")] = _pick(core)
    emotions: dict[tuple[str, str], tuple[str, ...]] = {}
    for emotion, entries in ph.EMOTION_PHRASES.items():
        for sent in ph.SENTIMENTS:
            emotions[(emotion, sent)] = tuple(text for s, d, text in entries if s in ("*", sent) and d in ("*", domain))
    impacts: dict[tuple[str, str], tuple[str, ...]] = {}
    for impact in ph.INTENSITIES:
        for sent in ph.SENTIMENTS:
            impacts[(impact, sent)] = tuple(
                text for i, s, d, text in ph.IMPACT_PHRASES if i == impact and s == sent and d in ("*", domain)
            )
    return Bank(
        domain=domain,
        entities=tuple(_compile_entity(spec, i) for i, spec in enumerate(specs)),
        frames=frames,
        emotions=emotions,
        impacts=impacts,
        weight_cache={},
    )
