"""One demo document composed from its mentions: entity choice, opening and hint sentences, joined clauses, filler,
closers, rating and title, with every mention's character span recorded as the text is built.

The phrase banks (`banks/*.json`, loaded by `phrases.py`) hold the wording; this module only composes. All randomness
of a block flows from one RNG, shared with the `MentionWriter`, so the order of draws fixes the output.
"""

from __future__ import annotations

import random
import string
from bisect import bisect
from functools import cache

from oprag_pipeline.demo import phrases as ph
from oprag_pipeline.demo.authors import AUTHOR_MISSING_SHARE, Author, days, experience
from oprag_pipeline.demo.mentions import Mention, MentionWriter
from oprag_pipeline.demo.templates import INTENSITY_NAMES
from oprag_pipeline.demo.truth import document_rows

_N_MENTIONS_CUM = (0.25, 0.60, 0.85)  # 1, 2, 3, (rest) 4


@cache
def _fields(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(text) if f))


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] if text and text[0].islower() else text


def _overall(mentions: list[Mention]) -> str:
    score = sum(1 if m.sentiment == "positive" else -1 if m.sentiment == "negative" else 0 for m in mentions)
    return "positive" if score > 0 else "negative" if score < 0 else "mixed"


class DocWriter:
    """Generates the documents of one block. All randomness flows from the block's own RNG."""

    def __init__(self, domain: str, seed: int, block: int) -> None:
        self.hotels = domain == "hotels"
        self.rng = random.Random(f"oprag-demo:{seed}:{domain}:{block}")
        self.mentions = MentionWriter(domain, self.rng)
        self.bank = self.mentions.bank
        self.choice = self.mentions.choice
        self.randint = self.mentions.randint
        self.days = days()

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

    def document(self, doc_id: str, author: Author) -> tuple[str, list[str], str, int]:
        """One document: (input JSON line, truth mention lines, truth document line, mention count)."""
        rng = self.rng
        hotels = self.hotels
        _author_id, review_count, attrs = author
        created = self.choice(self.days)
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
        mentions = [self.mentions.mention(entities[i], created) for i in chosen]
        if hotels:
            we = "I" if attrs[0] in ("solo", "business") and rng.random() < 0.75 else "we"
        else:
            we = "we" if rng.random() < 0.5 else "I"
        ctx = {"we": we, "year": str(year - self.randint(1, 3))}
        if hotels:
            ctx["hotel"] = self.choice(ph.HOTEL_NAMES)
            ctx["nights"] = str(self.randint(1, 9))
            ctx["month"] = ph.MONTHS[int(created[5:7]) - 2]  # the stay was usually the month before the review
        typo_p = 0.12 if hotels else 0.18
        for m in mentions:
            self.mentions.render(m, ctx, typo_p)
        rating: int | None = None
        if hotels:
            # Consistent with the overall sentiment of the review, with noise (people rate inconsistently).
            sigma = [ph.SIGMA.get((m.sentiment, INTENSITY_NAMES[m.intensity]), 0) for m in mentions]
            overall = sum(sigma) / (30 * len(sigma))
            rating = max(1, min(5, round(3 + 2 * overall + rng.gauss(0, 0.6))))
        text = self._assemble(mentions, attrs, review_count, ctx, year, rating)
        scope = ctx["hotel"] if hotels else ph.FORUM_BOARDS[mentions[0].entity.spec.tier1]
        in_input = rng.random() >= AUTHOR_MISSING_SHARE  # drawn before the title's draws
        title = self._title(mentions)
        return document_rows(
            doc_id,
            author,
            created=created,
            scope=scope,
            title=title,
            text=text,
            rating=rating,
            mentions=mentions,
            author_in_input=in_input,
            hotels=hotels,
        )

    def _assemble(
        self,
        mentions: list[Mention],
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
                return str(self.randint(2, 9))
            if name == "t":
                return str(self.randint(5, 60))
            if name in ("hotel", "nights", "month") and name in ctx:
                return ctx[name]
            if name == "month":
                return self.choice(ph.MONTHS)
            if name == "weekday":
                return self.choice(ph.WEEKDAYS)
            if name == "ordinal":
                return self.choice(ph.ORDINALS)
            if name == "handle":
                return self.choice(ph.FORUM_HANDLE_WORDS) + self.choice(ph.FORUM_HANDLE_SUFFIX)
            if name == "since":
                return str(year - (self.randint(3, 4) if attrs[1:2] == ("3-5y",) else self.randint(6, 10)))
            if name == "stars":
                return str(rating)
            if name == "side":
                return self.choice(ph.HOTEL_ROOM_SIDES)
            if name == "region_word":
                return self.choice(ph.FORUM_REGION_MARKETS[attrs[2]])
            raise KeyError(name)

        def fmt(text: str) -> str:
            """Fill only the slots the sentence has (furniture is formatted for every document)."""
            fields = _fields(text)
            return text.format_map({f: slot(f) for f in fields}) if fields else text

        first_sep = " "
        if hotels:
            intro: list[str] = []
            if rng.random() < 0.55:
                intro.append(fmt(self.choice(ph.HOTEL_OPENERS)))
            if rng.random() < 0.5:
                intro.append(fmt(self.choice(ph.HOTEL_TRAVELLER_HINTS[attrs[0]])))
            if rng.random() < 0.35:
                intro.insert(0, fmt(self.choice(ph.HOTEL_EXPERIENCE_HINTS[experience(review_count)])))
            for sentence in intro:
                add(sentence)
        else:
            r = rng.random()
            if r < 0.2:
                add(fmt(self.choice(ph.FORUM_REPLY_OPENERS)))
            elif r < 0.65:
                add(fmt(self.choice(ph.FORUM_OPENERS)))
            hints = (ph.FORUM_REVENUE_HINTS, ph.FORUM_TENURE_HINTS, ph.FORUM_REGION_HINTS)
            for table, value in zip(hints, attrs, strict=True):
                if rng.random() < 0.3:
                    add(fmt(self.choice(table[value])))
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
                add(fmt(self.choice(ph.HOTEL_FILLER if hotels else ph.FORUM_FILLER)))

        if hotels:
            if rng.random() < 0.5:
                verdict = "positive" if (rating or 3) >= 4 else "negative" if (rating or 3) <= 2 else "mixed"
                add(fmt(self.choice(ph.HOTEL_CLOSERS[verdict])))
        elif rng.random() < 0.45:
            add(fmt(self.choice(ph.FORUM_CLOSERS)), "\n\n" if rng.random() < 0.3 else " ")
        return "".join(parts)

    def _punct(self, m: Mention) -> str:
        if m.clause.endswith(("?", "!", ".")):
            return ""
        if m.intensity == "h" and m.sentiment != "neutral" and self.rng.random() < 0.2:
            return "!"
        if not self.hotels and self.rng.random() < 0.05:
            return "..."
        return "."

    @staticmethod
    def _alias_span(m: Mention, clause_start: int) -> None:
        if m.alias_off >= 0:
            start = clause_start + m.alias_off
            m.alias_span = (start, start + m.alias_len)

    def _title(self, mentions: list[Mention]) -> str:
        rng = self.rng
        if self.hotels:
            r = rng.random()
            if r < 0.45 and len(mentions) >= 2:
                a, b = mentions[0], mentions[1]
                la = self.choice(ph.TITLE_LABELS[a.sentiment])
                lb = self.choice(ph.TITLE_LABELS[b.sentiment]).lower()
                return f"{la} {a.entity.spec.short}, {lb} {b.entity.spec.short}"
            if r < 0.65:
                m = mentions[0]
                return f"{self.choice(ph.TITLE_LABELS[m.sentiment])} {m.entity.spec.short}"
            return self.choice(ph.HOTEL_TITLES[_overall(mentions)])
        short = mentions[0].entity.spec.short
        template = self.choice(ph.FORUM_TITLES)
        return template.format(short=short, Short=short[0].upper() + short[1:])
