"""One opinion mention: its planted attributes and the clause that voices it.

Sentiments are drawn from per-block shuffled "decks" of 100 cards that match each entity's designed distribution, so
even a small corpus shows the designed shares (a 10% minority does not come out as 4% or 16% by chance) while the
order stays random. Intensity, impact, emotions and evidence type are drawn per mention; the clause is then realised
from the compiled templates: evidence prefixes, frames or implied facts, data wrappers, typos, and the emotion and
impact sentences that follow it.
"""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oprag_pipeline.demo import phrases as ph
from oprag_pipeline.demo.templates import INTENSITY_CODES, INTENSITY_NAMES, CompiledEntity, Template, compiled_bank

_PLACEHOLDER = "\x00"
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
class Mention:
    """One planted opinion: attributes from `MentionWriter.mention`, clause from `render`, offsets from the document."""

    entity: CompiledEntity
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


class MentionWriter:
    """Draws and voices the mentions of one block, from the RNG it shares with the document writer."""

    def __init__(self, domain: str, rng: random.Random) -> None:
        self.domain = domain
        self.hotels = domain == "hotels"
        self.rng = rng
        self.rand = rng.random
        self.bank = compiled_bank(domain)
        self.decks: dict[tuple[int, int], list[Any]] = {}

    def choice(self, seq: Sequence[Any]) -> Any:
        """Uniform choice; `random() * len` is several times cheaper than `Random.choice` in this hot loop."""
        return seq[int(self.rand() * len(seq))]

    def randint(self, lo: int, hi: int) -> int:
        return lo + int(self.rand() * (hi - lo + 1))

    # -- opinion attributes ---------------------------------------------------------------------------------

    def _draw_sentiment(self, ent: CompiledEntity, created: str) -> str:
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

    def mention(self, ent: CompiledEntity, created: str) -> Mention:
        """Draw the planted attributes of one mention of `ent` in a document dated `created`."""
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
            name = INTENSITY_NAMES[code]
            impact = name if rng.random() < 0.6 else self.choice(_ADJACENT_LEVELS[name])
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
        return Mention(ent, sentiment, code, impact, emotions, evidence)

    # -- text ---------------------------------------------------------------------------------------------

    def _fill(self, t: Template, ent: CompiledEntity, code: str, ctx: dict[str, str]) -> tuple[str, str | None, bool]:
        """Format one template; the alias is left as a placeholder so typos never touch it."""
        rng = self.rng
        if t.fixed_alias is not None:
            alias: str | None = t.fixed_alias
            plural = t.fixed_plural
        elif t.has_alias:
            alias, plural = self.choice(ent.aliases)
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
                vals["P"] = self.choice(spec.pos)
            elif f == "P2":
                choices = [p for p in spec.pos if p != vals.get("P")]
                vals["P2"] = self.choice(choices)
            elif f == "N":
                vals["N"] = self.choice(spec.neg)
            elif f == "N2":
                choices = [n for n in spec.neg if n != vals.get("N")]
                vals["N2"] = self.choice(choices)
            elif f == "n":
                lo, hi = t.ranges[INTENSITY_CODES.index(code)] if t.ranges else (2, 9)
                vals["n"] = str(self.randint(lo, hi))
            elif f == "r":
                vals["r"] = str(self.randint(2, 9))
            else:
                vals[f] = ctx[f] if f in ctx else self._colour(f)
        return t.text.format_map(vals), alias, plural

    def _colour(self, name: str) -> str:
        if name == "other":
            return self.choice(ph.OTHER[self.domain])
        if name == "month":
            return self.choice(ph.MONTHS)
        if name == "weekday":
            return self.choice(ph.WEEKDAYS)
        if name == "ordinal":
            return self.choice(ph.ORDINALS)
        if name == "t":
            return str(self.randint(5, 60))
        raise KeyError(name)

    def render(self, m: Mention, ctx: dict[str, str], typo_p: float) -> None:
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
                t = self.choice(ent.neutral_impersonal)
            else:
                t = bank.frames[(sent, code, "core")].choose(rng)
            prefix = self.choice(ph.ANECDOTAL_PREFIXES[self.domain])
        elif m.evidence == "data_driven":
            data = ent.data.get(key, ()) if sent != "neutral" else ()
            numeric = ent.numeric.get(key, ()) if sent != "neutral" else ()
            r = rng.random()
            if data and r < 0.5:
                t = self.choice(data)
            elif numeric and r < 0.8:
                t = self.choice(numeric)
                prefix = self.choice(ph.DATA_PREFIXES[self.domain])
            else:
                t = bank.frames[(sent, code, "core")].choose(rng)
                wrapper = self.choice(ph.DATA_WRAPPERS[self.domain])
        else:
            r = rng.random()
            if sent == "neutral":
                use_own = ent.neutral and r < 0.4
                t = self.choice(ent.neutral) if use_own else bank.frames[(sent, code, "any")].choose(rng)
            else:
                implied = ent.implied.get(key, ())
                t = self.choice(implied) if (implied and r < 0.3) else bank.frames[(sent, code, "any")].choose(rng)
            if rng.random() < 0.12 and t.simple and t.kind != "sarcasm":
                prefix = self.choice(ph.PERSONAL_PREFIXES[self.domain])
        clause, alias, _ = self._fill(t, ent, m.intensity, ctx)
        if wrapper is not None:
            total = self.randint(3, 12)
            lo, hi = _FRAC[m.intensity]
            k = max(1, min(total, round(total * rng.uniform(lo, hi))))
            clause = wrapper.format(core=clause, k=k, t=total)
        if prefix:
            if "{" in prefix:
                prefix = prefix.format(month=self.choice(ph.MONTHS))
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
        extras = [self._emotion_sentence(self.choice(bank.emotions[(e, sent)])) for e in m.emotions]
        if rng.random() < 0.25:
            options = bank.impacts[(m.impact, sent)]
            if options:
                extras.append(self.choice(options))
        m.extras = " ".join(extras)

    def _emotion_sentence(self, phrase: str) -> str:
        """Sometimes lead into the emotion ("Frankly, I was furious."), so the same feeling reads differently."""
        if self.rand() >= 0.25 or phrase.startswith(("Honestly", "Frankly")):
            return phrase
        lead = self.choice(ph.EMOTION_LEADS)
        if not lead or phrase.startswith(("I ", "I'")):
            return lead + phrase
        return lead + phrase[0].lower() + phrase[1:]
