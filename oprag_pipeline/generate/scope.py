"""Scope: what one document is about (its `entity_scope`: the product, the hotel, the thread), as a restriction of
an answer.

A question about "the Nokia 6610 battery" asks about one product's battery, not about batteries across the corpus.
With a scope, retrieval searches only that scope's points (a payload filter on `entity_scope`), the corpus shares
count only its documents' opinions, and the quotes come from its passages. The scope is given (`--scope`, the
page's field, `ask(scope=…)`) or recognised in the question: the domain's scope names are matched against the
question case-insensitively, on word boundaries, the longest match winning ("the Grand Plaza Annex" over "the Grand
Plaza").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

SCOPE_FIELD = "entity_scope"
"""The payload field (every KB's points carry it) and the `raw_documents` / `opinions` column."""
MIN_SCOPE_CHARS = 3
"""A scope named by one or two characters ("A", "B2") is too likely to occur in a question by chance."""


@dataclass(frozen=True)
class ScopeCount:
    scope: str
    documents: int
    opinions: int


def domain_scopes(conn: duckdb.DuckDBPyConnection, domain: str) -> list[ScopeCount]:
    """The domain's scopes with their document and opinion counts, most documents first (then by name)."""
    rows = conn.execute(
        """SELECT d.entity_scope, count(*) AS documents, coalesce(sum(o.n), 0) AS opinions
           FROM raw_documents d
           LEFT JOIN (SELECT doc_id, count(*) AS n FROM opinions WHERE domain = ? GROUP BY 1) o USING (doc_id)
           WHERE d.domain = ? AND d.entity_scope IS NOT NULL AND trim(d.entity_scope) <> ''
           GROUP BY 1 ORDER BY 2 DESC, 1""",
        [domain, domain],
    ).fetchall()
    return [ScopeCount(str(s), int(d), int(o)) for s, d, o in rows]


def resolve_scope(conn: duckdb.DuckDBPyConnection, domain: str, scope: str) -> str:
    """The stored spelling of `scope` (case-insensitive, surrounding spaces ignored); LookupError naming a few of
    the domain's scopes when no document has it."""
    wanted = " ".join(scope.split()).lower()
    names = [s.scope for s in domain_scopes(conn, domain)]
    for name in names:
        if " ".join(name.split()).lower() == wanted:
            return name
    if not names:
        raise LookupError(f"no document of {domain!r} names a scope (its input has no entity_scope)")
    shown = ", ".join(repr(n) for n in names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    raise LookupError(
        f"no document of {domain!r} has scope {scope!r}; scopes: {shown} (`oprag scopes --domain {domain}`)"
    )


@dataclass(frozen=True)
class ScopeMatch:
    scope: str  # the stored spelling
    start: int
    end: int  # the span in the question, a possessive 's included

    def without(self, question: str) -> str:
        """The question with the scope's words taken out, so that the entities it names are read from the rest (a
        product's brand must not become the entity asked about)."""
        return " ".join(f"{question[: self.start]} {question[self.end :]}".split())


def _pattern(name: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in name.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)(?:['’]s\b)?", re.IGNORECASE)


def scope_in_question(question: str, scopes: Sequence[str]) -> ScopeMatch | None:
    """The scope the question names: case-insensitive, whole words only, the longest name that matches (then the
    earliest in the question); None when it names none. Names shorter than `MIN_SCOPE_CHARS` are never matched."""
    best: ScopeMatch | None = None
    names = {s for s in scopes if s and len(s.strip()) >= MIN_SCOPE_CHARS}
    for name in sorted(names, key=lambda s: (-len(" ".join(s.split())), s)):
        if best is not None and len(" ".join(name.split())) < len(" ".join(best.scope.split())):
            break
        match = _pattern(name).search(question)
        if match and (best is None or match.start() < best.start):
            best = ScopeMatch(name, match.start(), match.end())
    return best
