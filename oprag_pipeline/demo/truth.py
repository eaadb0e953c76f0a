"""The planted truth, as written: each document's input row and truth lines, and a domain's designed entities.

A document becomes one input JSON line (the ordinary input contract, with its planted labels in the importers'
`gold_opinions` format), one line of `truth/<domain>/documents.jsonl` and one line of `truth/<domain>/mentions.jsonl`
per mention, with character offsets into the text. `entities_truth` is the designed taxonomy and opinion
distributions of a domain (`truth/<domain>/entities.json`). The pipeline never reads the truth; benchmarks do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oprag_pipeline.demo import phrases as ph
from oprag_pipeline.demo.authors import AUTHOR_MISSING_SHARE, END_DATE, START_DATE, Author, experience
from oprag_pipeline.demo.mentions import Mention
from oprag_pipeline.demo.templates import ENCODE, INTENSITY_NAMES, split_alias

_STRENGTH = {"l": 1, "m": 2, "h": 3}


def document_rows(
    doc_id: str,
    author: Author,
    *,
    created: str,
    scope: str,
    title: str,
    text: str,
    rating: int | None,
    mentions: list[Mention],
    author_in_input: bool,
    hotels: bool,
) -> tuple[str, list[str], str, int]:
    """One document's (input JSON line, truth mention lines, truth document line, mention count)."""
    author_id, review_count, attrs = author
    if hotels:
        names = ("author_traveller_type", "author_reviewer_experience")
        values: tuple[str, ...] = (attrs[0], experience(review_count))
    else:
        names = ("author_revenue_band", "author_tenure", "author_region")
        values = attrs
    author_cols = dict(zip(names, values, strict=True))
    row: dict[str, Any] = {
        "doc_id": doc_id,
        "title": title,
        "text": text,
        "entity_scope": scope,
        "author_id": author_id,
        "created_at": created,
        "rating": rating,
    }
    if author_in_input:
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
        f'"author_review_count":{review_count},"author_attributes_in_input":{"true" if author_in_input else "false"},'
        f'"n_mentions":{len(mentions)}}}'
    )
    lines = []
    for m in mentions:
        intensity = INTENSITY_NAMES[m.intensity]
        a_span = m.alias_span
        # Built by hand (all values but the alias are known-safe identifiers): json.dumps per mention was
        # the single largest cost of generating a million documents.
        if a_span:
            alias_json = f'{ENCODE(text[a_span[0] : a_span[1]])},"alias_start":{a_span[0]},"alias_end":{a_span[1]}'
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
    return ENCODE(row), lines, doc_truth, len(mentions)


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
            "aliases": [split_alias(a)[0] for a in spec.aliases],
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


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Read a JSONL file written by the generator (for tests and benchmarks)."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)
