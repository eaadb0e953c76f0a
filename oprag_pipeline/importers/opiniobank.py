"""OpinioBank (Nayeem & Rafiei, "OpinioRAG", COLM 2025; dataset card of tafseer-nayeem/OpinioBank).

Supported shape — the one documented in the dataset card (README of the `Dataset/` folder of the
tafseer-nayeem/OpinioRAG repository, section "Dataset Structure"): one object per entity (a hotel)::

    {"entity_id": 1, "entity_name": "...",
     "expert_review": {"pros": {"<query term>": "<expert sentence>", ...},
                       "cons": {"<query term>": "<expert sentence>", ...}},
     "user_reviews": [{"review_id": 1, "text": "...", "rating": 5, "helpful_votes": 1,
                       "publication_date": "YYYY-MM-DD", "user_review_posted": 10,
                       "user_cities_visited": 9, "user_helpful_votes": 2}, ...]}

The file may hold a JSON array of entities, a single entity object, an object wrapping the array under any key
(e.g. a split name such as `"test"`), or JSON lines with one entity per line. `expert_review` may also be a
JSON-encoded string (how some dataset viewers export nested objects). A record that is itself a review (it has
`text` but no `user_reviews`, with `entity_id` / `entity_name` beside it) is accepted too, for flattened exports.

Mapping:

* each user review -> `doc_id = ob-<entity_id>-<review_id>`, `entity_scope` = entity name, `rating`,
  `created_at` = publication_date, `vote_up` = helpful_votes, and every `user_*` field as an author attribute
  `author_*` (`author_review_posted`, `author_cities_visited`, `author_helpful_votes`) plus
  `author_role = "user"`. There is no `author_id`: the dataset removed reviewer identities.
* the expert review -> one more document per entity, `doc_id = ob-<entity_id>-expert`, `author_role =
  "expert"`, text = one line per aspect (`Pros:` / `Cons:` sections, `- <query term>: <sentence>`), and one gold
  opinion per aspect: target = the query term, polarity positive (pros) or negative (cons), offsets of the term
  in that text. Pass `expert_reviews=False` to leave these documents out.

Why the gold opinions sit only on the expert document: OpinioBank's labels are entity-level — an expert's
pros and cons, keyed by annotated query terms. The card says query terms were matched to user-review sentences
by exact string match, which tells where a user talks about the aspect, not what the user thinks of it; copying
the expert's polarity onto user reviews would invent labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oprag_pipeline.importers.common import (
    ImportContext,
    Rows,
    clean_str,
    gold_opinion,
    list_source_files,
    open_text,
    parse_date,
    slug,
    to_number,
)


def _is_entity(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("user_reviews"), list)


def _is_review(value: Any) -> bool:
    return isinstance(value, dict) and "text" in value and "user_reviews" not in value


def _records(path: Path, ctx: ImportContext) -> Iterator[tuple[int, dict[str, Any]]]:
    """(record number, entity or review object) from a JSON document or JSON lines."""
    with open_text(path) as handle:
        content = handle.read()
    try:
        document = json.loads(content)
    except json.JSONDecodeError:
        document = None
        lines = content.split("\n")
    else:
        lines = []
    if document is not None:
        if isinstance(document, dict) and not _is_entity(document) and not _is_review(document):
            wrapped = [v for v in document.values() if isinstance(v, list) and any(_is_entity(x) for x in v)]
            if not wrapped:
                ctx.skip(path, None, "JSON object holds no list of entities with user_reviews")
                return
            document = [item for value in wrapped for item in value]
        items = document if isinstance(document, list) else [document]
        for number, item in enumerate(items, 1):
            if _is_entity(item) or _is_review(item):
                yield number, item
            else:
                ctx.skip(path, number, "record is neither an entity with user_reviews nor a review")
        return
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            ctx.skip(path, number, f"malformed JSON: {error.msg}")
            continue
        if _is_entity(item) or _is_review(item):
            yield number, item
        else:
            ctx.skip(path, number, "record is neither an entity with user_reviews nor a review")


def _entity_key(record: dict[str, Any], number: int) -> str:
    entity_id = clean_str(record.get("entity_id"))
    if entity_id is not None:
        return slug(entity_id)
    name = clean_str(record.get("entity_name"))
    return slug(name) if name else f"e{number}"


def _user_row(review: dict[str, Any], entity: str, scope: str | None, n: int) -> dict[str, Any]:
    review_id = clean_str(review.get("review_id"))
    row: dict[str, Any] = {
        "doc_id": f"ob-{entity}-{slug(review_id) if review_id else n}",
        "text": review.get("text").strip() if isinstance(review.get("text"), str) else None,
        "entity_scope": scope,
        "created_at": parse_date(review.get("publication_date")),
        "rating": to_number(review.get("rating")),
        "vote_up": to_number(review.get("helpful_votes")),
        "author_role": "user",
    }
    for key, value in review.items():
        if key.startswith("user_") and len(key) > 5:
            row["author_" + key[5:]] = value
    return row


def _checked(row: dict[str, Any], review: dict[str, Any], file: str, number: int, ctx: ImportContext) -> dict[str, Any]:
    """Warn about a publication date that could not be read (the review itself is kept)."""
    raw = clean_str(review.get("publication_date"))
    if raw is not None and row["created_at"] is None:
        ctx.warn(file, number, f"{row['doc_id']}: unparsable publication_date {raw[:40]!r}; created_at left null")
    return row


def _aspects(value: Any) -> list[tuple[str, str]]:
    """(query term, sentence) pairs from a pros/cons object (or a list of such pairs / objects)."""
    if isinstance(value, dict):
        return [(str(k).strip(), clean_str(v) or "") for k, v in value.items() if clean_str(k)]
    pairs = []
    if isinstance(value, list):
        for item in value:
            if isinstance(item, list | tuple) and len(item) == 2:
                pairs.append((str(item[0]).strip(), clean_str(item[1]) or ""))
            elif isinstance(item, dict):
                term = clean_str(item.get("query") or item.get("aspect") or item.get("term"))
                if term:
                    pairs.append((term, clean_str(item.get("text") or item.get("sentence")) or ""))
    return pairs


def _expert_row(expert: Any, entity: str, scope: str | None) -> dict[str, Any] | None:
    """The expert review as one document whose gold opinions point at the query terms in its text."""
    if isinstance(expert, str):
        try:
            expert = json.loads(expert)
        except json.JSONDecodeError:
            return None
    if not isinstance(expert, dict):
        return None
    text = ""
    opinions: list[dict[str, Any]] = []
    for section, heading, polarity in (("pros", "Pros:", "positive"), ("cons", "Cons:", "negative")):
        pairs = _aspects(expert.get(section))
        if not pairs:
            continue
        text += ("\n" if text else "") + heading
        for term, sentence in pairs:
            text += "\n- "
            start = len(text)
            text += term + (f": {sentence}" if sentence else "")
            opinions.append(
                gold_opinion(target=term, category=None, polarity=polarity, start=start, end=start + len(term))
            )
    if not opinions:
        return None
    return {
        "doc_id": f"ob-{entity}-expert",
        "text": text,
        "title": f"Expert review: {scope}" if scope else "Expert review",
        "entity_scope": scope,
        "author_role": "expert",
        "gold_opinions": opinions,
    }


def convert(source: Path, ctx: ImportContext, *, expert_reviews: bool = True, **options: Any) -> Rows:
    """User reviews (and expert reviews) of every entity in one file, or in every .json/.jsonl file of a folder."""
    if options:
        raise TypeError(f"opiniobank import takes only expert_reviews=, got {sorted(options)}")
    files = list_source_files(source, (".json", ".jsonl", ".ndjson"))
    for path in files:
        name = path.name
        for number, record in ctx.track(list(_records(path, ctx)), unit="entity", desc="opiniobank"):
            entity = _entity_key(record, number)
            scope = clean_str(record.get("entity_name")) or (
                f"entity_{clean_str(record.get('entity_id'))}" if clean_str(record.get("entity_id")) else None
            )
            if _is_review(record):
                yield name, number, _checked(_user_row(record, entity, scope, number), record, name, number, ctx)
                continue
            if expert_reviews and record.get("expert_review") is not None:
                expert = _expert_row(record["expert_review"], entity, scope)
                if expert is None:
                    ctx.warn(name, number, f"entity {entity}: expert_review has no readable pros/cons; left out")
                else:
                    yield name, number, expert
            for n, review in enumerate(record["user_reviews"], 1):
                if not isinstance(review, dict):
                    ctx.skip(name, number, f"entity {entity} review #{n} is not an object")
                    continue
                yield name, number, _checked(_user_row(review, entity, scope, n), review, name, number, ctx)
