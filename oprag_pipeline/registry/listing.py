"""The entities one can ask a domain about (`oprag entities`): where each sits in the taxonomy, how often people
give an opinion of it, the mix of those opinions, the words that name it, and how questions treat it (the domain's
container, a group of near-duplicates answered together; see `registry/question.py`)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from oprag_pipeline.registry.question import load_question_matcher
from oprag_pipeline.registry.store import registry_entities

SIDES = ("positive", "neutral", "negative")
TIER_SEPARATOR = " › "


@dataclass(frozen=True)
class EntityRow:
    entity_id: str
    name: str
    tier1_name: str
    tier2_name: str
    aliases: tuple[str, ...]
    mentions: int
    positive: int
    neutral: int
    negative: int
    container: bool = False
    group: str | None = None  # the group's head noun, when answered together with near-duplicates

    @property
    def tier_path(self) -> str:
        return TIER_SEPARATOR.join(p for p in (self.tier1_name, self.tier2_name, self.name) if p)

    def shares(self) -> dict[str, float]:
        counts = {"positive": self.positive, "neutral": self.neutral, "negative": self.negative}
        return {side: (n / self.mentions if self.mentions else 0.0) for side, n in counts.items()}

    def to_dict(self) -> dict:
        return {
            "entity_id": self.entity_id,
            "name": self.name,
            "tier_path": [self.tier1_name, self.tier2_name, self.name],
            "aliases": list(self.aliases),
            "mentions": self.mentions,
            "sentiment": {"positive": self.positive, "neutral": self.neutral, "negative": self.negative},
            "container": self.container,
            "group": self.group,
        }


def list_entities(conn: duckdb.DuckDBPyConnection, domain: str, scope: str | None = None) -> list[EntityRow]:
    """Every active entity of the domain, most mentioned first. With `scope`, counts come from the documents whose
    `entity_scope` equals it (case-insensitive) and entities with no opinion there are left out."""
    _, entities = registry_entities(conn, domain)
    if not entities:
        return []
    where, params = "o.domain = ?", [domain]
    join = ""
    if scope is not None:
        join = "JOIN raw_documents r ON r.domain = o.domain AND r.doc_id = o.doc_id"
        where += " AND lower(r.entity_scope) = lower(?)"
        params.append(scope)
    counts = {
        entity_id: (int(n), int(pos), int(neu), int(neg))
        for entity_id, n, pos, neu, neg in conn.execute(
            f"""SELECT o.entity_id, count(*), count_if(o.sentiment = 'positive'), count_if(o.sentiment = 'neutral'),
                       count_if(o.sentiment = 'negative')
                FROM opinions o {join} WHERE {where} GROUP BY 1""",
            params,
        ).fetchall()
    }
    matcher = load_question_matcher(conn, domain, entities)
    group_of = {m: g.head for g in matcher.groups.values() for m in g.members}
    rows = [
        EntityRow(
            e.entity_id,
            e.name,
            e.tier1_name,
            e.tier2_name,
            tuple(a for a in e.aliases if a != e.name),
            *counts.get(e.entity_id, (0, 0, 0, 0)),
            container=e.entity_id in matcher.containers,
            group=group_of.get(e.entity_id),
        )
        for e in entities
    ]
    if scope is not None:
        rows = [r for r in rows if r.mentions]
    return sorted(rows, key=lambda r: (-r.mentions, r.tier_path))


def render_entities(rows: list[EntityRow], *, max_aliases: int = 6) -> list[str]:
    """The text listing: per entity a line with its mentions, sentiment mix (shares, counts in brackets) and tier
    path (tier 1 › tier 2 › name), then its aliases on an indented line; columns aligned, nothing wrapped."""
    headers = ["mentions", "positive", "neutral", "negative", "entity (tier 1 › tier 2 › name)"]
    cells = []
    for row in rows:
        shares = row.shares()
        counts = {"positive": row.positive, "neutral": row.neutral, "negative": row.negative}
        notes = []
        if row.container:
            notes.append("the domain's container")
        if row.group:
            notes.append(f"answered with the {row.group} group")
        cells.append(
            [
                f"{row.mentions:,}",
                *(f"{shares[s]:.0%} ({counts[s]})" if row.mentions else "-" for s in SIDES),
                row.tier_path + (f"  [{'; '.join(notes)}]" if notes else ""),
            ]
        )
    widths = [max(len(c) for c in column) for column in zip(headers, *cells, strict=True)]
    numbers = len(headers) - 1

    def line(values: list[str]) -> str:
        return "  ".join(
            [*(v.rjust(w) for v, w in zip(values[:numbers], widths, strict=False)), values[numbers]]
        ).rstrip()

    indent = " " * (sum(widths[:numbers]) + 2 * numbers)
    out = [line(headers)]
    for row, values in zip(rows, cells, strict=True):
        out.append(line(values))
        if row.aliases:
            shown = ", ".join(row.aliases[:max_aliases])
            more = f" (+{len(row.aliases) - max_aliases} more)" if len(row.aliases) > max_aliases else ""
            out.append(f"{indent}aliases: {shown}{more}")
    return out
