"""MEMD-ABSA (Cai et al., 2023) and any corpus in its layout: JSON arrays of tokenised sentences with quadruples.

Each file is a JSON array of objects::

    {"raw_words":"The kettle heats up fast .",
     "task": "ACOS",
     "quadruples": [{"aspect": {"from": 1, "to": 2, "term": ["kettle"]}, "category": "Kettle#Performance",
                     "opinion": {"from": 2, "to": 5, "term": ["heats", "up", "fast"]}, "sentiment": "POS"}]}

Spans are token positions [from, to) in `raw_words` split on single spaces; -1/-1 marks an implicit element.

One document per sentence. The text is the sentence detokenised (no space before closing punctuation and
clitics such as "n't" or "'s", none after an opening bracket), because the rest of the pipeline reads ordinary
prose; every token keeps its character offsets, so `text[from:to]` of each gold opinion is exactly its aspect.

Gold: every quadruple with an **explicit** aspect becomes `{target: aspect text, category, polarity, from, to}`
(POS/NEG/NEU → positive/negative/neutral). Implicit aspects name no target the registry could hold; they are
left out and counted in one warning per file. A quadruple with an unknown sentiment or a span outside the
sentence is dropped with a warning naming the record.

doc_id is `memd-<folder>-<file stem>-<n>`, n the 1-based position in the file: the corpus ships `Train.json`,
`Dev.json` and `Test.json` in one folder per domain, so the folder keeps two domains' files apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oprag_pipeline.importers.common import (
    ImportContext,
    Rows,
    decode_bytes,
    gold_opinion,
    list_source_files,
    read_bytes,
    slug,
)

SENTIMENTS = {"pos": "positive", "neg": "negative", "neu": "neutral"}
# Tokens written against the previous one, and tokens the next one is written against: English punctuation and
# the clitics Penn-style tokenisers split off ("do n't", "book 's").
_NO_SPACE_BEFORE = frozenset(". , ! ? ; : ) ] } % ... n't 's 're 've 'll 'd 'm '".split())
_NO_SPACE_AFTER = frozenset("( [ { $ #".split())


def detokenise(tokens: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """(text, character span of each token) for a tokenised sentence."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    position = 0
    for i, token in enumerate(tokens):
        if i and token.lower() not in _NO_SPACE_BEFORE and tokens[i - 1] not in _NO_SPACE_AFTER:
            parts.append(" ")
            position += 1
        spans.append((position, position + len(token)))
        parts.append(token)
        position += len(token)
    return "".join(parts), spans


def _span(element: Any, n_tokens: int) -> tuple[int, int] | None:
    """The token span [from, to) of an aspect; None when implicit; ValueError when it does not fit the sentence."""
    if not isinstance(element, dict):
        raise ValueError("aspect is not an object")
    start, end = element.get("from"), element.get("to")
    if start == -1 and end == -1:
        return None
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= n_tokens):
        raise ValueError(f"aspect span {start}:{end} is outside the sentence's {n_tokens} tokens")
    return start, end


def convert_file(path: Path, ctx: ImportContext) -> Rows:
    file = path.name
    prefix = f"memd-{slug(path.parent.name)}-{slug(path.name.split('.', 1)[0])}"
    try:
        records = json.loads(decode_bytes(read_bytes(path)))
    except (OSError, ValueError) as error:
        ctx.skip(path, None, f"not readable as JSON: {error}")
        return
    if not isinstance(records, list):
        ctx.skip(path, None, f"expected a JSON array of sentences, found {type(records).__name__}")
        return
    implicit = 0
    for n, record in enumerate(records, 1):
        if not isinstance(record, dict) or not isinstance(record.get("raw_words"), str):
            ctx.skip(file, n, "record has no 'raw_words' string")
            continue
        tokens = record["raw_words"].split()
        if not tokens:
            ctx.skip(file, n, "empty sentence")
            continue
        text, spans = detokenise(tokens)
        quadruples = record.get("quadruples") or []
        if not isinstance(quadruples, list):
            ctx.warn(file, n, "'quadruples' is not a list: no gold kept")
            quadruples = []
        opinions = []
        for q, quadruple in enumerate(quadruples, 1):
            if not isinstance(quadruple, dict):
                ctx.warn(file, n, f"quadruple {q} is not an object: dropped")
                continue
            polarity = SENTIMENTS.get(str(quadruple.get("sentiment", "")).strip().lower())
            if polarity is None:
                ctx.warn(file, n, f"quadruple {q}: sentiment {quadruple.get('sentiment')!r} unknown: dropped")
                continue
            try:
                span = _span(quadruple.get("aspect"), len(tokens))
            except ValueError as error:
                ctx.warn(file, n, f"quadruple {q}: {error}: dropped")
                continue
            if span is None:
                implicit += 1
                continue
            start, end = spans[span[0]][0], spans[span[1] - 1][1]
            category = quadruple.get("category")
            opinions.append(
                gold_opinion(
                    target=text[start:end],
                    category=category if isinstance(category, str) and category else None,
                    polarity=polarity,
                    start=start,
                    end=end,
                )
            )
        yield file, n, {"doc_id": f"{prefix}-{n}", "text": text, "gold_opinions": opinions}
    if implicit:
        ctx.warn(file, None, f"{implicit} quadruple(s) with an implicit aspect left out of the gold (no target)")


def convert(source: Path, ctx: ImportContext, **options: Any) -> Rows:
    """Documents of one JSON file or of every .json file under a folder, in path order."""
    if options:
        raise TypeError(f"memd-absa import takes no options, got {sorted(options)}")
    files = list_source_files(source, (".json",))
    for path in ctx.track(files, total=len(files), unit="file", desc="memd-absa"):
        yield from convert_file(path, ctx)
