"""Synthetic opinion corpus with planted ground truth (`oprag generate-demo`).

Why this exists: the pipeline must run (and be measurable) without any external data. The generator writes input
files in the ordinary input contract (`raw/<domain>/demo-NNNNN.jsonl`) plus the planted truth
(`truth/<domain>/`): per-mention opinion attributes with character offsets, per-document author attributes, and
the *designed* per-entity opinion distributions (near-unanimous, split, three-way, one marked ~10% minority, one
shift over time). Benchmarks compare what the pipeline extracts and retrieves against that truth.

Design choices:

- Determinism without a global RNG stream: documents are produced in fixed-size blocks, each with its own RNG
  seeded from (seed, domain, block). Output is byte-identical for a given seed and size whatever the number of
  worker processes, and blocks can be generated in parallel.
- Sentiments are drawn from per-block shuffled "decks" of 100 cards that match each entity's designed
  distribution, so even a small corpus shows the designed shares (a 10% minority does not come out as 4% or 16%
  by chance) while the order stays random.
- Author assignment is done once per domain up front (a shuffled list of author ids with planned review counts),
  so `author_reviewer_experience` is *derivable* from how many reviews an author has in the corpus. That list is
  the only O(docs) structure held in memory (~8 bytes per document); texts and truth are streamed to disk.
- Text realism lives in the phrase banks (`banks/*.json`, loaded by `phrases.py`); this module only composes: evidence
  prefixes, frames or implied facts, emotions and impact sentences, joins of two opinions in one sentence, filler,
  typos.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.context
import os
import random
import re
import string
import sys
import threading
import time
import warnings
from bisect import bisect
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from oprag_pipeline.demo import phrases as ph

DOMAINS: tuple[str, ...] = ("hotels", "seller_forum")
SHARD_DOCS = 100_000
BLOCK_DOCS = 2_000
START_DATE = date(2023, 1, 1)
END_DATE = date(2025, 6, 30)
AUTHOR_MISSING_SHARE = 0.20
PARALLEL_MIN_DOCS = 40_000
SHARD_PREFIX = "demo-"
_SHARD_RE = re.compile(rf"{SHARD_PREFIX}\d{{5}}\.jsonl")  # only our own shards count as stale

if SHARD_DOCS % BLOCK_DOCS:
    raise AssertionError("BLOCK_DOCS must divide SHARD_DOCS so that no block straddles two shards")

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_INTENSITY_CODES = ("l", "m", "h")
_INTENSITY_NAMES = {"l": "low", "m": "medium", "h": "high"}
_STRENGTH = {"l": 1, "m": 2, "h": 3}
_PERSONAL_RE = re.compile(r"\{we\}|\b(I|I'm|I've|I'd|I'll|we|we're|we've|us|our|my|me)\b")
_ALIAS_RE = re.compile(r"\[([^\]]+)\]")
_PLACEHOLDER = "\x00"


@dataclass
class DemoResult:
    """What `generate_demo` wrote: documents per domain, input shards and truth files."""

    domains: dict[str, int]
    files: list[Path]
    truth_files: list[Path]
    seconds: float = 0.0
    mentions: dict[str, int] = field(default_factory=dict)

    @property
    def docs_per_second(self) -> float:
        """Throughput, for the CLI summary and benchmarks."""
        total = sum(self.domains.values())
        return total / self.seconds if self.seconds > 0 else float("inf")


# ---------------------------------------------------------------------------------------------------------------
# Template compilation (once per process)
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tmpl:
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


def _compile(text: str, tid: str, kind: str, spec: ph.Spec = "lmh") -> _Tmpl:
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
    return _Tmpl(
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


def _split_alias(alias: str) -> tuple[str, bool]:
    return (alias[:-2], True) if alias.endswith("|p") else (alias, False)


@dataclass(slots=True)
class _Entity:
    spec: ph.EntitySpec
    index: int
    aliases: tuple[tuple[str, bool], ...]
    neutral: tuple[_Tmpl, ...]
    neutral_impersonal: tuple[_Tmpl, ...]
    json_fragment: str
    implied: dict[tuple[str, str], tuple[_Tmpl, ...]]
    numeric: dict[tuple[str, str], tuple[_Tmpl, ...]]
    data: dict[tuple[str, str], tuple[_Tmpl, ...]]
    decks: tuple[list[str], ...]
    shift_date: str | None


def _deck(distribution: dict[str, float]) -> list[str]:
    """100 cards matching the distribution exactly (largest-remainder rounding)."""
    raw = {s: distribution.get(s, 0.0) * 100 for s in ph.SENTIMENTS}
    counts = {s: int(v) for s, v in raw.items()}
    for s in sorted(raw, key=lambda k: raw[k] - counts[k], reverse=True)[: 100 - sum(counts.values())]:
        counts[s] += 1
    return [s for s in ph.SENTIMENTS for _ in range(counts[s])]


def _compile_entity(spec: ph.EntitySpec, index: int) -> _Entity:
    def by_intensity(templates: Iterable[_Tmpl], sentiment: str) -> dict[tuple[str, str], tuple[_Tmpl, ...]]:
        items = list(templates)
        return {(sentiment, code): tuple(t for t in items if code in t.intensities) for code in _INTENSITY_CODES}

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
    return _Entity(
        spec=spec,
        index=index,
        aliases=tuple(_split_alias(a) for a in spec.aliases),
        neutral=neutral,
        neutral_impersonal=tuple(t for t in neutral if not t.personal),
        json_fragment=_ENCODE(
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

    items: tuple[_Tmpl, ...]
    cum: tuple[float, ...]

    def choose(self, rng: random.Random) -> _Tmpl:
        return self.items[bisect(self.cum, rng.random() * self.cum[-1])]


@dataclass(slots=True)
class _Bank:
    domain: str
    entities: tuple[_Entity, ...]
    frames: dict[tuple[str, str, str], _Pick]  # (sentiment, intensity code, mode); mode: "any" or "core"
    emotions: dict[tuple[str, str], tuple[str, ...]]
    impacts: dict[tuple[str, str], tuple[str, ...]]
    weight_cache: dict[tuple[str, ...], tuple[float, ...]]


def _pick(templates: Sequence[_Tmpl]) -> _Pick:
    cum: list[float] = []
    total = 0.0
    for t in templates:
        total += ph.FRAME_KIND_WEIGHT[t.kind]
        cum.append(total)
    return _Pick(tuple(templates), tuple(cum))


@cache
def _bank(domain: str) -> _Bank:
    """Compile the phrase banks of one domain (cached per process, so workers pay it once)."""
    specs = ph.HOTEL_ENTITIES if domain == "hotels" else ph.FORUM_ENTITIES
    frames: dict[tuple[str, str, str], _Pick] = {}
    compiled = [
        _compile(text, f"frame.{sent}.{code}.{i}", kind)
        for i, (sent, code, kind, dom, text) in enumerate(ph.FRAMES)
        if dom in ("*", domain)
    ]
    sent_codes = [("positive", c) for c in _INTENSITY_CODES] + [("negative", c) for c in _INTENSITY_CODES]
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
    return _Bank(
        domain=domain,
        entities=tuple(_compile_entity(spec, i) for i, spec in enumerate(specs)),
        frames=frames,
        emotions=emotions,
        impacts=impacts,
        weight_cache={},
    )


@cache
def _days() -> tuple[str, ...]:
    span = (END_DATE - START_DATE).days + 1
    return tuple((START_DATE + timedelta(days=d)).isoformat() for d in range(span))


# ---------------------------------------------------------------------------------------------------------------
# Per-document generation
# ---------------------------------------------------------------------------------------------------------------

_BE = {(False, False): "was", (False, True): "were", (True, False): "is", (True, True): "are"}
_BENT = {
    (False, False): ("wasn't", "was not"),
    (False, True): ("weren't", "were not"),
    (True, False): ("isn't", "is not"),
    (True, True): ("aren't", "are not"),
}
_INTENSITY_P = {"positive": (0.30, 0.75), "negative": (0.25, 0.70)}  # cumulative: low, medium, (rest high)
_EMOTION_P = {
    "positive": {"l": 0.10, "m": 0.30, "h": 0.60},
    "negative": {"l": 0.20, "m": 0.40, "h": 0.75},
    "neutral": {"n": 0.12},
}
_EMOTION_WEIGHTS = {
    "positive": (("delight", 0.35), ("relief", 0.20), ("trust", 0.30), ("hope", 0.15)),
    "negative": (
        ("frustration", 0.30),
        ("disappointment", 0.25),
        ("anger", 0.15),
        ("anxiety", 0.10),
        ("resignation", 0.12),
        ("hope", 0.08),
    ),
    "neutral": (("anxiety", 0.40), ("hope", 0.35), ("resignation", 0.25)),
}
_EVIDENCE_CUM = {"hotels": (0.75, 0.88), "seller_forum": (0.55, 0.77)}  # personal, anecdotal, (rest) data
_N_MENTIONS_CUM = (0.25, 0.60, 0.85)  # 1, 2, 3, (rest) 4
# Impact may differ from intensity, but by one step only: "if I'm picky…" never "ruined the stay".
_ADJACENT_LEVELS = {"low": ("medium",), "medium": ("low", "high"), "high": ("medium",)}
_FRAC = {"l": (0.25, 0.45), "m": (0.5, 0.75), "h": (0.8, 1.0)}


def _cum(pairs: Sequence[tuple[str, float]]) -> tuple[tuple[str, ...], tuple[float, ...]]:
    names = tuple(n for n, _ in pairs)
    total = 0.0
    cum = []
    for _, w in pairs:
        total += w
        cum.append(total)
    return names, tuple(cum)


_EMOTION_CUM = {s: _cum(p) for s, p in _EMOTION_WEIGHTS.items()}


@cache
def _fields(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(text) if f))


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] if text and text[0].islower() else text


def _typo(rng: random.Random, text: str) -> str:
    """Swap, drop or double one character in one word: the everyday noise of typed reviews."""
    words = text.split(" ")
    for _ in range(3):
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) >= 4 and w.isalpha():
            j = rng.randrange(1, len(w) - 1)
            op = rng.random()
            if op < 0.45:
                w = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
            elif op < 0.8:
                w = w[:j] + w[j + 1 :]
            else:
                w = w[:j] + w[j] + w[j:]
            words[i] = w
            return " ".join(words)
    return text


@dataclass(slots=True)
class _Mention:
    entity: _Entity
    sentiment: str
    intensity: str  # code l / m / h ("l" for neutral)
    impact: str
    emotions: list[str]
    evidence: str
    clause: str = ""
    alias_off: int = -1
    alias_len: int = 0
    tid: str = ""
    kind: str = ""
    extras: str = ""
    joinable: bool = True
    span: tuple[int, int] = (0, 0)
    alias_span: tuple[int, int] | None = None


class _DocWriter:
    """Generates the documents of one block. All randomness flows from the block's own RNG."""

    def __init__(self, domain: str, seed: int, block: int) -> None:
        self.domain = domain
        self.hotels = domain == "hotels"
        self.rng = random.Random(f"oprag-demo:{seed}:{domain}:{block}")
        self.bank = _bank(domain)
        self.rand = self.rng.random
        self.decks: dict[tuple[int, int], list[Any]] = {}
        self.days = _days()

    def _ch(self, seq: Sequence[Any]) -> Any:
        """Uniform choice; `random() * len` is several times cheaper than `Random.choice` in this hot loop."""
        return seq[int(self.rand() * len(seq))]

    def _ri(self, lo: int, hi: int) -> int:
        return lo + int(self.rand() * (hi - lo + 1))

    # -- opinion attributes ---------------------------------------------------------------------------------

    def _draw_sentiment(self, ent: _Entity, created: str) -> str:
        period = 1 if ent.shift_date is not None and created >= ent.shift_date else 0
        key = (ent.index, period)
        state = self.decks.get(key)
        if state is None:
            state = [list(ent.decks[period]), 100]
            self.decks[key] = state
        if state[1] >= len(state[0]):
            self.rng.shuffle(state[0])
            state[1] = 0
        card = state[0][state[1]]
        state[1] += 1
        return card

    def _mention(self, ent: _Entity, created: str) -> _Mention:
        rng = self.rng
        sentiment = self._draw_sentiment(ent, created)
        if sentiment == "neutral":
            code = "l"
            r = rng.random()
            impact = "low" if r < 0.55 else "medium" if r < 0.85 else "high"
            p_emotion = _EMOTION_P["neutral"]["n"]
        else:
            lo, mid = _INTENSITY_P[sentiment]
            r = rng.random()
            code = "l" if r < lo else "m" if r < mid else "h"
            name = _INTENSITY_NAMES[code]
            impact = name if rng.random() < 0.6 else self._ch(_ADJACENT_LEVELS[name])
            p_emotion = _EMOTION_P[sentiment][code]
        emotions: list[str] = []
        if rng.random() < p_emotion:
            names, cum = _EMOTION_CUM[sentiment]
            emotions.append(names[bisect(cum, rng.random() * cum[-1])])
            if rng.random() < 0.3:
                other = names[bisect(cum, rng.random() * cum[-1])]
                if other != emotions[0]:
                    emotions.append(other)
        personal_cut, anecdotal_cut = _EVIDENCE_CUM[self.domain]
        r = rng.random()
        evidence = "personal_experience" if r < personal_cut else "anecdotal" if r < anecdotal_cut else "data_driven"
        return _Mention(ent, sentiment, code, impact, emotions, evidence)

    # -- text ---------------------------------------------------------------------------------------------

    def _fill(self, t: _Tmpl, ent: _Entity, code: str, ctx: dict[str, str]) -> tuple[str, str | None, bool]:
        """Format one template; the alias is left as a placeholder so typos never touch it."""
        rng = self.rng
        if t.fixed_alias is not None:
            alias: str | None = t.fixed_alias
            plural = t.fixed_plural
        elif t.has_alias:
            alias, plural = self._ch(ent.aliases)
        else:
            alias, plural = None, False
        present = not self.hotels and rng.random() < 0.8
        spec = ent.spec
        vals: dict[str, str] = {}
        for f in t.fields:
            if f == "a":
                vals["a"] = _PLACEHOLDER
            elif f == "be":
                vals["be"] = _BE[(present, plural)]
            elif f == "bent":
                forms = _BENT[(present, plural)]
                vals["bent"] = forms[0] if rng.random() < 0.7 else forms[1]
            elif f == "have":
                vals["have"] = "have" if plural else "has"
            elif f == "could":
                vals["could"] = "could be" if present else "could have been"
            elif f == "P":
                vals["P"] = self._ch(spec.pos)
            elif f == "P2":
                choices = [p for p in spec.pos if p != vals.get("P")]
                vals["P2"] = self._ch(choices)
            elif f == "N":
                vals["N"] = self._ch(spec.neg)
            elif f == "N2":
                choices = [n for n in spec.neg if n != vals.get("N")]
                vals["N2"] = self._ch(choices)
            elif f == "n":
                lo, hi = t.ranges[_INTENSITY_CODES.index(code)] if t.ranges else (2, 9)
                vals["n"] = str(self._ri(lo, hi))
            elif f == "r":
                vals["r"] = str(self._ri(2, 9))
            else:
                vals[f] = ctx[f] if f in ctx else self._colour(f)
        return t.text.format_map(vals), alias, plural

    def _colour(self, name: str) -> str:
        if name == "other":
            return self._ch(ph.OTHER[self.domain])
        if name == "month":
            return self._ch(ph.MONTHS)
        if name == "weekday":
            return self._ch(ph.WEEKDAYS)
        if name == "ordinal":
            return self._ch(ph.ORDINALS)
        if name == "t":
            return str(self._ri(5, 60))
        raise KeyError(name)

    def _render(self, m: _Mention, ctx: dict[str, str], typo_p: float) -> None:
        """Choose how the opinion is voiced and fill `m.clause`, `m.extras`, the alias offset and template id."""
        rng = self.rng
        bank = self.bank
        ent = m.entity
        sent = m.sentiment
        code = "n" if sent == "neutral" else m.intensity
        prefix = ""
        wrapper: str | None = None
        key = (sent, m.intensity)
        if m.evidence == "anecdotal":
            if sent == "neutral" and rng.random() < 0.5 and ent.neutral_impersonal:
                t = self._ch(ent.neutral_impersonal)
            else:
                t = bank.frames[(sent, code, "core")].choose(rng)
            prefix = self._ch(ph.ANECDOTAL_PREFIXES[self.domain])
        elif m.evidence == "data_driven":
            data = ent.data.get(key, ()) if sent != "neutral" else ()
            numeric = ent.numeric.get(key, ()) if sent != "neutral" else ()
            r = rng.random()
            if data and r < 0.5:
                t = self._ch(data)
            elif numeric and r < 0.8:
                t = self._ch(numeric)
                prefix = self._ch(ph.DATA_PREFIXES[self.domain])
            else:
                t = bank.frames[(sent, code, "core")].choose(rng)
                wrapper = self._ch(ph.DATA_WRAPPERS[self.domain])
        else:
            r = rng.random()
            if sent == "neutral":
                use_own = ent.neutral and r < 0.4
                t = self._ch(ent.neutral) if use_own else bank.frames[(sent, code, "any")].choose(rng)
            else:
                implied = ent.implied.get(key, ())
                t = self._ch(implied) if (implied and r < 0.3) else bank.frames[(sent, code, "any")].choose(rng)
            if rng.random() < 0.12 and t.simple and t.kind != "sarcasm":
                prefix = self._ch(ph.PERSONAL_PREFIXES[self.domain])
        clause, alias, _ = self._fill(t, ent, m.intensity, ctx)
        if wrapper is not None:
            total = self._ri(3, 12)
            lo, hi = _FRAC[m.intensity]
            k = max(1, min(total, round(total * rng.uniform(lo, hi))))
            clause = wrapper.format(core=clause, k=k, t=total)
        if prefix:
            if "{" in prefix:
                prefix = prefix.format(month=self._ch(ph.MONTHS))
            clause = prefix + clause
        if rng.random() < typo_p:
            clause = _typo(rng, clause)
        if alias is not None:
            m.alias_off = clause.index(_PLACEHOLDER)
            m.alias_len = len(alias)
            clause = clause.replace(_PLACEHOLDER, alias, 1)
        m.clause = clause
        m.tid = t.tid
        m.kind = "data" if wrapper is not None else t.kind
        # Sarcasm and prefixed clauses read badly inside "X, but Y"; keep them as sentences of their own.
        m.joinable = t.simple and wrapper is None and not prefix and t.kind != "sarcasm"
        extras = [self._emotion_sentence(self._ch(bank.emotions[(e, sent)])) for e in m.emotions]
        if rng.random() < 0.25:
            options = bank.impacts[(m.impact, sent)]
            if options:
                extras.append(self._ch(options))
        m.extras = " ".join(extras)

    def _emotion_sentence(self, phrase: str) -> str:
        """Sometimes lead into the emotion ("Frankly, I was furious."), so the same feeling reads differently."""
        if self.rand() >= 0.25 or phrase.startswith(("Honestly", "Frankly")):
            return phrase
        lead = self._ch(ph.EMOTION_LEADS)
        if not lead or phrase.startswith(("I ", "I'")):
            return lead + phrase
        return lead + phrase[0].lower() + phrase[1:]

    # -- documents ----------------------------------------------------------------------------------------

    def _entity_weights(self, focus_key: tuple[str, ...]) -> tuple[float, ...]:
        cached = self.bank.weight_cache.get(focus_key)
        if cached is not None:
            return cached
        multipliers: dict[str, float] = {}
        if self.hotels:
            multipliers.update(ph.HOTEL_TRAVELLER_FOCUS.get(focus_key[0], {}))
        else:
            for attr, value in zip(("revenue_band", "tenure", "region"), focus_key, strict=True):
                for eid, mult in ph.FORUM_FOCUS.get((attr, value), {}).items():
                    multipliers[eid] = multipliers.get(eid, 1.0) * mult
        cum = []
        total = 0.0
        for ent in self.bank.entities:
            total += ent.spec.weight * multipliers.get(ent.spec.entity_id, 1.0)
            cum.append(total)
        result = tuple(cum)
        self.bank.weight_cache[focus_key] = result
        return result

    def document(self, doc_id: str, author: tuple[str, int, tuple[str, ...]]) -> tuple[str, list[str], str, int]:
        """One document: (input JSON line, truth mention lines, truth document line, mention count)."""
        rng = self.rng
        hotels = self.hotels
        _author_id, review_count, attrs = author
        created = self._ch(self.days)
        year = int(created[:4])
        cum = self._entity_weights(attrs[:1] if hotels else attrs)
        r = rng.random()
        n_mentions = bisect(_N_MENTIONS_CUM, r) + 1
        chosen: list[int] = []
        while len(chosen) < n_mentions:
            idx = bisect(cum, rng.random() * cum[-1])
            if idx not in chosen:
                chosen.append(idx)
        entities = self.bank.entities
        mentions = [self._mention(entities[i], created) for i in chosen]
        if hotels:
            we = "I" if attrs[0] in ("solo", "business") and rng.random() < 0.75 else "we"
        else:
            we = "we" if rng.random() < 0.5 else "I"
        ctx = {"we": we, "year": str(year - self._ri(1, 3))}
        if hotels:
            ctx["hotel"] = self._ch(ph.HOTEL_NAMES)
            ctx["nights"] = str(self._ri(1, 9))
            ctx["month"] = ph.MONTHS[int(created[5:7]) - 2]  # the stay was usually the month before the review
        typo_p = 0.12 if hotels else 0.18
        for m in mentions:
            self._render(m, ctx, typo_p)
        rating: int | None = None
        if hotels:
            # Consistent with the overall sentiment of the review, with noise (people rate inconsistently).
            sigma = [ph.SIGMA.get((m.sentiment, _INTENSITY_NAMES[m.intensity]), 0) for m in mentions]
            overall = sum(sigma) / (30 * len(sigma))
            rating = max(1, min(5, round(3 + 2 * overall + rng.gauss(0, 0.6))))
        text = self._assemble(mentions, attrs, review_count, ctx, year, rating)
        return self._rows(doc_id, text, mentions, author, created, ctx, rating)

    def _assemble(
        self,
        mentions: list[_Mention],
        attrs: tuple[str, ...],
        review_count: int,
        ctx: dict[str, str],
        year: int,
        rating: int | None,
    ) -> str:
        rng = self.rng
        hotels = self.hotels
        casual = not hotels and rng.random() < 0.12
        cap = (lambda s: s) if casual else _cap
        parts: list[str] = []
        length = 0

        def add(piece: str, sep: str = " ") -> int:
            nonlocal length
            if parts:
                parts.append(sep)
                length += len(sep)
            start = length
            parts.append(piece)
            length += len(piece)
            return start

        def slot(name: str) -> str:
            if name == "r":
                return str(self._ri(2, 9))
            if name == "t":
                return str(self._ri(5, 60))
            if name in ("hotel", "nights", "month") and name in ctx:
                return ctx[name]
            if name == "month":
                return self._ch(ph.MONTHS)
            if name == "weekday":
                return self._ch(ph.WEEKDAYS)
            if name == "ordinal":
                return self._ch(ph.ORDINALS)
            if name == "handle":
                return self._ch(ph.FORUM_HANDLE_WORDS) + self._ch(ph.FORUM_HANDLE_SUFFIX)
            if name == "since":
                return str(year - (self._ri(3, 4) if attrs[1:2] == ("3-5y",) else self._ri(6, 10)))
            if name == "stars":
                return str(rating)
            if name == "side":
                return self._ch(ph.HOTEL_ROOM_SIDES)
            if name == "region_word":
                return self._ch(ph.FORUM_REGION_MARKETS[attrs[2]])
            raise KeyError(name)

        def fmt(text: str) -> str:
            """Fill only the slots the sentence has (furniture is formatted for every document)."""
            fields = _fields(text)
            return text.format_map({f: slot(f) for f in fields}) if fields else text

        first_sep = " "
        if hotels:
            intro: list[str] = []
            if rng.random() < 0.55:
                intro.append(fmt(self._ch(ph.HOTEL_OPENERS)))
            if rng.random() < 0.5:
                intro.append(fmt(self._ch(ph.HOTEL_TRAVELLER_HINTS[attrs[0]])))
            if rng.random() < 0.35:
                intro.insert(0, fmt(self._ch(ph.HOTEL_EXPERIENCE_HINTS[_experience(review_count)])))
            for sentence in intro:
                add(sentence)
        else:
            r = rng.random()
            if r < 0.2:
                add(fmt(self._ch(ph.FORUM_REPLY_OPENERS)))
            elif r < 0.65:
                add(fmt(self._ch(ph.FORUM_OPENERS)))
            hints = (ph.FORUM_REVENUE_HINTS, ph.FORUM_TENURE_HINTS, ph.FORUM_REGION_HINTS)
            for table, value in zip(hints, attrs, strict=True):
                if rng.random() < 0.3:
                    add(fmt(self._ch(table[value])))
            if parts and rng.random() < 0.4:
                first_sep = "\n\n"

        i = 0
        while i < len(mentions):
            m = mentions[i]
            sep = first_sep if i == 0 else ("\n\n" if not hotels and rng.random() < 0.2 else " ")
            nxt = mentions[i + 1] if i + 1 < len(mentions) else None
            if (
                nxt is not None
                and m.joinable
                and nxt.joinable
                and not m.extras
                and m.sentiment != nxt.sentiment
                and rng.random() < 0.6
            ):
                style = rng.random()
                if style < 0.4:
                    lead, mid = "", ", but "
                elif style < 0.6:
                    lead, mid = "", ", although "
                elif style < 0.8:
                    lead, mid = "although ", ", "
                elif style < 0.9:
                    lead, mid = "", " but "
                else:
                    lead, mid = "", ", whereas "
                body = lead + m.clause + mid + nxt.clause
                sentence = cap(body) + self._punct(nxt)
                start = add(sentence, sep)
                s1 = start + len(lead)
                s2 = s1 + len(m.clause) + len(mid)
                m.span = (s1, s1 + len(m.clause))
                end = start + len(sentence)
                if nxt.extras:
                    add(nxt.extras)
                    end = length
                nxt.span = (s2, end)
                self._alias_span(m, s1)
                self._alias_span(nxt, s2)
                i += 2
            else:
                sentence = cap(m.clause) + self._punct(m)
                start = add(sentence, sep)
                end = start + len(sentence)
                if m.extras:
                    add(m.extras)
                    end = length
                m.span = (start, end)
                self._alias_span(m, start)
                i += 1
            if i < len(mentions) and rng.random() < (0.2 if hotels else 0.12):
                add(fmt(self._ch(ph.HOTEL_FILLER if hotels else ph.FORUM_FILLER)))

        if hotels:
            if rng.random() < 0.5:
                verdict = "positive" if (rating or 3) >= 4 else "negative" if (rating or 3) <= 2 else "mixed"
                add(fmt(self._ch(ph.HOTEL_CLOSERS[verdict])))
        elif rng.random() < 0.45:
            add(fmt(self._ch(ph.FORUM_CLOSERS)), "\n\n" if rng.random() < 0.3 else " ")
        return "".join(parts)

    def _punct(self, m: _Mention) -> str:
        if m.clause.endswith(("?", "!", ".")):
            return ""
        if m.intensity == "h" and m.sentiment != "neutral" and self.rng.random() < 0.2:
            return "!"
        if not self.hotels and self.rng.random() < 0.05:
            return "..."
        return "."

    @staticmethod
    def _alias_span(m: _Mention, clause_start: int) -> None:
        if m.alias_off >= 0:
            start = clause_start + m.alias_off
            m.alias_span = (start, start + m.alias_len)

    def _title(self, mentions: list[_Mention]) -> str:
        rng = self.rng
        if self.hotels:
            r = rng.random()
            if r < 0.45 and len(mentions) >= 2:
                a, b = mentions[0], mentions[1]
                la = self._ch(ph.TITLE_LABELS[a.sentiment])
                lb = self._ch(ph.TITLE_LABELS[b.sentiment]).lower()
                return f"{la} {a.entity.spec.short}, {lb} {b.entity.spec.short}"
            if r < 0.65:
                m = mentions[0]
                return f"{self._ch(ph.TITLE_LABELS[m.sentiment])} {m.entity.spec.short}"
            return self._ch(ph.HOTEL_TITLES[_overall(mentions)])
        short = mentions[0].entity.spec.short
        template = self._ch(ph.FORUM_TITLES)
        return template.format(short=short, Short=short[0].upper() + short[1:])

    def _rows(
        self,
        doc_id: str,
        text: str,
        mentions: list[_Mention],
        author: tuple[str, int, tuple[str, ...]],
        created: str,
        ctx: dict[str, str],
        rating: int | None,
    ) -> tuple[str, list[str], str, int]:
        rng = self.rng
        author_id, review_count, attrs = author
        if self.hotels:
            scope = ctx["hotel"]
            names = ("author_traveller_type", "author_reviewer_experience")
            values: tuple[str, ...] = (attrs[0], _experience(review_count))
        else:
            scope = ph.FORUM_BOARDS[mentions[0].entity.spec.tier1]
            names = ("author_revenue_band", "author_tenure", "author_region")
            values = attrs
        author_cols = dict(zip(names, values, strict=True))
        in_input = rng.random() >= AUTHOR_MISSING_SHARE
        row: dict[str, Any] = {
            "doc_id": doc_id,
            "title": self._title(mentions),
            "text": text,
            "entity_scope": scope,
            "author_id": author_id,
            "created_at": created,
            "rating": rating,
        }
        if in_input:
            row.update(author_cols)
        # The planted labels also travel with the document in the importers' gold format, so the evaluation
        # treats the demo corpus like any gold-labelled corpus (the extractor only ever reads the text).
        row["gold_opinions"] = [
            {
                "target": text[m.alias_span[0] : m.alias_span[1]] if m.alias_span else None,
                "category": m.entity.spec.name,
                "polarity": m.sentiment,
                "strength": None if m.sentiment == "neutral" else _STRENGTH[m.intensity],
                "from": m.alias_span[0] if m.alias_span else None,
                "to": m.alias_span[1] if m.alias_span else None,
            }
            for m in mentions
        ]
        # By hand like the mention lines: scope, handle and attribute values are generator-made, JSON-safe strings.
        attr_json = ",".join(f'"{k}":"{v}"' for k, v in author_cols.items())
        doc_truth = (
            f'{{"doc_id":"{doc_id}","entity_scope":"{scope}","author_id":"{author_id}","created_at":"{created}",'
            f'"year":{created[:4]},"rating":{"null" if rating is None else rating},{attr_json},'
            f'"author_review_count":{review_count},"author_attributes_in_input":{"true" if in_input else "false"},'
            f'"n_mentions":{len(mentions)}}}'
        )
        lines = []
        for m in mentions:
            intensity = _INTENSITY_NAMES[m.intensity]
            a_span = m.alias_span
            # Built by hand (all values but the alias are known-safe identifiers): json.dumps per mention was
            # the single largest cost of generating a million documents.
            if a_span:
                alias_json = f'{_ENCODE(text[a_span[0] : a_span[1]])},"alias_start":{a_span[0]},"alias_end":{a_span[1]}'
            else:
                alias_json = 'null,"alias_start":null,"alias_end":null'
            emotions = ",".join(f'"{e}"' for e in m.emotions)
            lines.append(
                f'{{"doc_id":"{doc_id}",{m.entity.json_fragment},"sentiment":"{m.sentiment}",'
                f'"intensity":"{intensity}","impact":"{m.impact}","impact_score":{ph.IMPACT_SCORE[m.impact]},'
                f'"emotions":[{emotions}],"evidence_type":"{m.evidence}",'
                f'"sentiment_intensity":{ph.SIGMA.get((m.sentiment, intensity), 0)},'
                f'"span_start":{m.span[0]},"span_end":{m.span[1]},"alias":{alias_json},'
                f'"realisation":"{m.kind}","template":"{m.tid}","created_at":"{created}"}}'
            )
        return _ENCODE(row), lines, doc_truth, len(mentions)


def _experience(review_count: int) -> str:
    """Reviewer experience is derivable from the corpus: how many reviews the author wrote in it."""
    return "novice" if review_count <= 1 else "regular" if review_count <= 4 else "expert"


def _overall(mentions: list[_Mention]) -> str:
    score = sum(1 if m.sentiment == "positive" else -1 if m.sentiment == "negative" else 0 for m in mentions)
    return "positive" if score > 0 else "negative" if score < 0 else "mixed"


# ---------------------------------------------------------------------------------------------------------------
# Blocks, authors and files
# ---------------------------------------------------------------------------------------------------------------

Author = tuple[str, int, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class _BlockTask:
    domain: str
    seed: int
    block: int
    start: int
    id_width: int
    authors: tuple[Author, ...]


_BlockResult = tuple[bytes, bytes, bytes, int]


def _generate_block(task: _BlockTask) -> _BlockResult:
    """Worker entry point: one block of documents as encoded JSONL chunks (input, mentions, documents)."""
    writer = _DocWriter(task.domain, task.seed, task.block)
    raw: list[str] = []
    mention_lines: list[str] = []
    doc_lines: list[str] = []
    total_mentions = 0
    prefix = task.domain
    width = task.id_width
    for offset, author in enumerate(task.authors):
        doc_id = f"{prefix}-{task.start + offset + 1:0{width}d}"
        row, lines, doc, n = writer.document(doc_id, author)
        raw.append(row)
        mention_lines.extend(lines)
        doc_lines.append(doc)
        total_mentions += n
    encode = "\n".join
    return (
        (encode(raw) + "\n").encode(),
        (encode(mention_lines) + "\n").encode(),
        (encode(doc_lines) + "\n").encode(),
        total_mentions,
    )


def _make_authors(domain: str, n_docs: int, seed: int) -> tuple[list[Author], list[int]]:
    """Author pool with planned review counts, and the (shuffled) author of every document."""
    rng = random.Random(f"oprag-demo:{seed}:{domain}:authors")
    hotels = domain == "hotels"
    counts: list[int] = []
    total = 0
    while total < n_docs:
        r = rng.random()
        if hotels:
            c = 1 if r < 0.6 else rng.randint(2, 4) if r < 0.9 else rng.randint(5, 10)
        else:
            c = 1 if r < 0.35 else rng.randint(2, 5) if r < 0.75 else rng.randint(6, 25)
        c = min(c, n_docs - total)
        counts.append(c)
        total += c
    authors: list[Author] = []
    for idx, c in enumerate(counts):
        if hotels:
            handle = (
                f"{rng.choice(ph.HOTEL_FIRST_NAMES)}{rng.choice(('', '_', '.'))}"
                f"{rng.choice(ph.HOTEL_HANDLE_WORDS)}{idx + 1}"
            )
            attrs: tuple[str, ...] = (rng.choices(ph.HOTEL_TRAVELLER_TYPES, ph.HOTEL_TRAVELLER_WEIGHTS)[0],)
        else:
            handle = f"{rng.choice(ph.FORUM_HANDLE_WORDS)}{rng.choice(ph.FORUM_HANDLE_SUFFIX)}_{idx + 1}"
            attrs = (
                rng.choices(ph.FORUM_REVENUE_BANDS, ph.FORUM_REVENUE_WEIGHTS)[0],
                rng.choices(ph.FORUM_TENURES, ph.FORUM_TENURE_WEIGHTS)[0],
                rng.choices(ph.FORUM_REGIONS, ph.FORUM_REGION_WEIGHTS)[0],
            )
        authors.append((handle, c, attrs))
    doc_authors = [a for a, c in enumerate(counts) for _ in range(c)]
    rng.shuffle(doc_authors)
    return authors, doc_authors


def entities_truth(domain: str) -> dict[str, Any]:
    """The designed taxonomy and opinion distributions of a domain (written to `truth/<domain>/entities.json`)."""
    specs = ph.HOTEL_ENTITIES if domain == "hotels" else ph.FORUM_ENTITIES
    entities = []
    for spec in specs:
        entry: dict[str, Any] = {
            "entity_id": spec.entity_id,
            "entity_name": spec.name,
            "tier1": spec.tier1,
            "tier2": spec.tier2,
            "aliases": [_split_alias(a)[0] for a in spec.aliases],
            "design": spec.design,
            "distribution": spec.distribution,
            "mention_weight": spec.weight,
        }
        if spec.minority_sentiment:
            entry["minority_sentiment"] = spec.minority_sentiment
            entry["minority_share"] = spec.distribution[spec.minority_sentiment]
        if spec.shift_date:
            entry["shift"] = {"date": spec.shift_date, "before": spec.distribution, "after": spec.shift_after}
        if spec.note:
            entry["note"] = spec.note
        entities.append(entry)
    if domain == "hotels":
        attributes: dict[str, Any] = {
            "traveller_type": list(ph.HOTEL_TRAVELLER_TYPES),
            "reviewer_experience": {"novice": "1 review in the corpus", "regular": "2-4", "expert": "5 or more"},
        }
    else:
        attributes = {
            "revenue_band": list(ph.FORUM_REVENUE_BANDS),
            "tenure": list(ph.FORUM_TENURES),
            "region": list(ph.FORUM_REGIONS),
        }
    return {
        "domain": domain,
        "date_range": [START_DATE.isoformat(), END_DATE.isoformat()],
        "sigma_scale": {f"{s} {i}": v for (s, i), v in ph.SIGMA.items()} | {"neutral": 0},
        "impact_scale": ph.IMPACT_SCORE,
        "neutral_intensity": "low",
        "author_attributes": attributes,
        "author_attributes_missing_share": AUTHOR_MISSING_SHARE,
        "entities": entities,
    }


def _ordered(
    fn: Callable[[_BlockTask], _BlockResult],
    tasks: Iterator[_BlockTask],
    executor: Executor | None,
    window: int,
) -> Iterator[_BlockResult]:
    """Results in task order with at most `window` blocks in flight (bounded memory).

    If the worker pool breaks (a worker cannot start, e.g. `spawn` cannot re-import a `__main__` read from
    stdin), the remaining blocks are generated in this process; blocks are seeded independently, so the
    output is the same bytes either way.
    """
    if executor is None:
        for task in tasks:
            yield fn(task)
        return
    pending: deque[tuple[_BlockTask, Future[_BlockResult]]] = deque()
    broken = False

    def fill() -> None:
        while len(pending) < window:
            task = next(tasks, None)
            if task is None:
                return
            pending.append((task, executor.submit(fn, task)))

    fill()
    while pending:
        task, future = pending.popleft()
        result: _BlockResult | None = None
        if not broken:
            try:
                result = future.result()
            except BrokenProcessPool:
                broken = True
                warnings.warn("demo generator worker processes failed; continuing in-process", stacklevel=3)
        if result is None:
            result = fn(task)
        else:
            fill()
        yield result
    for task in tasks:
        yield fn(task)


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp")


def _write_domain(
    data_dir: Path, domain: str, n_docs: int, seed: int, executor: Executor | None, window: int, bar: Any
) -> tuple[list[Path], list[Path], int]:
    raw_dir = data_dir / "raw" / domain
    truth_dir = data_dir / "truth" / domain
    raw_dir.mkdir(parents=True, exist_ok=True)
    truth_dir.mkdir(parents=True, exist_ok=True)
    authors, doc_authors = _make_authors(domain, n_docs, seed)
    width = max(6, len(str(n_docs)))

    def tasks() -> Iterator[_BlockTask]:
        for block, start in enumerate(range(0, n_docs, BLOCK_DOCS)):
            stop = min(n_docs, start + BLOCK_DOCS)
            yield _BlockTask(domain, seed, block, start, width, tuple(authors[a] for a in doc_authors[start:stop]))

    shards: list[Path] = []
    mentions_path = truth_dir / "mentions.jsonl"
    documents_path = truth_dir / "documents.jsonl"
    entities_path = truth_dir / "entities.json"
    total_mentions = 0
    shard_handle = None
    try:
        with _tmp(mentions_path).open("wb") as mentions_out, _tmp(documents_path).open("wb") as documents_out:
            done = 0
            for raw, mention_bytes, doc_bytes, n_mentions in _ordered(_generate_block, tasks(), executor, window):
                if done % SHARD_DOCS == 0:
                    if shard_handle is not None:
                        shard_handle.close()
                        _tmp(shards[-1]).replace(shards[-1])
                    shards.append(raw_dir / f"{SHARD_PREFIX}{len(shards) + 1:05d}.jsonl")
                    shard_handle = _tmp(shards[-1]).open("wb")
                assert shard_handle is not None
                shard_handle.write(raw)
                mentions_out.write(mention_bytes)
                documents_out.write(doc_bytes)
                total_mentions += n_mentions
                block_docs = min(BLOCK_DOCS, n_docs - done)
                done += block_docs
                if bar is not None:
                    bar.update(block_docs)
            if shard_handle is not None:
                shard_handle.close()
                shard_handle = None
                _tmp(shards[-1]).replace(shards[-1])
        _tmp(mentions_path).replace(mentions_path)
        _tmp(documents_path).replace(documents_path)
        _tmp(entities_path).write_text(json.dumps(entities_truth(domain), indent=2) + "\n", encoding="utf-8")
        _tmp(entities_path).replace(entities_path)
    finally:
        if shard_handle is not None:
            shard_handle.close()
    keep = set(shards)
    for stale in raw_dir.glob(f"{SHARD_PREFIX}*.jsonl"):
        if stale not in keep and _SHARD_RE.fullmatch(stale.name):
            stale.unlink()
    for leftover in raw_dir.glob(f".{SHARD_PREFIX}*.jsonl.tmp"):
        leftover.unlink()
    return shards, [mentions_path, documents_path, entities_path], total_mentions


def _mp_context() -> multiprocessing.context.BaseContext:
    """`fork` where it is safe (Linux, caller has no other threads): no re-import of `__main__`, instant start.
    Otherwise `spawn`, because forking a process that holds threads (Dagster, web servers) can deadlock."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def split_docs(docs: int, domains: Sequence[str]) -> dict[str, int]:
    """`docs` is the total; split it evenly, the remainder going to the first domains."""
    base, extra = divmod(docs, len(domains))
    return {d: base + (1 if i < extra else 0) for i, d in enumerate(domains)}


def generate_demo(
    data_dir: Path,
    *,
    docs: int = 2000,
    seed: int = 7,
    domains: Sequence[str] = DOMAINS,
    progress: bool = False,
    workers: int | None = None,
) -> DemoResult:
    """Write a synthetic corpus with planted opinions to `<data_dir>/raw/<domain>/` and its truth to `truth/`.

    Same `seed` and `docs` give byte-identical files (independently of `workers`). Earlier demo shards of the
    same domain are replaced; other files in the domain folder are left alone. `workers` defaults to the CPU
    count for large corpora and to in-process generation for small ones (process start-up would dominate).
    """
    domains = tuple(domains)
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown or not domains:
        raise ValueError(f"unknown demo domain(s) {unknown or domains!r}; choose from {', '.join(DOMAINS)}")
    if len(set(domains)) != len(domains):
        raise ValueError(f"duplicate domains in {domains!r}")
    if docs < 0:
        raise ValueError("docs must be >= 0")
    data_dir = Path(data_dir)
    per_domain = split_docs(docs, domains)
    if workers is None:
        workers = min(os.cpu_count() or 1, 8) if docs >= PARALLEL_MIN_DOCS else 1
    started = time.perf_counter()
    files: list[Path] = []
    truth_files: list[Path] = []
    mention_counts: dict[str, int] = {}
    executor: ProcessPoolExecutor | None = None
    bar = None
    try:
        if workers > 1:
            executor = ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context())
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=docs, unit="doc", desc="generate-demo")
        for domain in domains:
            shards, truth, n_mentions = _write_domain(
                data_dir, domain, per_domain[domain], seed, executor, max(2, 2 * workers), bar
            )
            files.extend(shards)
            truth_files.extend(truth)
            mention_counts[domain] = n_mentions
    finally:
        if bar is not None:
            bar.close()
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    return DemoResult(
        domains=per_domain,
        files=files,
        truth_files=truth_files,
        seconds=time.perf_counter() - started,
        mentions=mention_counts,
    )


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Read a JSONL file written by the generator (for tests and benchmarks)."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)
