"""UKPConvArg1 debate arguments (Habernal & Gurevych, ACL 2016), flattened to JSON lines.

Input: one argument a line with `arg_id, debate_title, debate_url, stance, author, vote_up, vote_down, text,
source_file` (the shape of `arguments.jsonl` in ../shared/data/ukpconvarg1; a JSON array of the same objects is
accepted too).

Output: `doc_id = ukp-<arg_id>`, `entity_scope` = the debate title (the thing the argument is about), `stance`
(the gold viewpoint), `vote_up` / `vote_down`, `author_id`, and two author attributes computed over the whole
file, because a single post says little about its author: `author_post_count` (posts by that author in the
file) and `author_votes_up` (up-votes that author received over all those posts). The file is read twice
(once to count, once to write); a debate corpus is small enough for that.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oprag_pipeline.importers.common import (
    ImportContext,
    Rows,
    clean_str,
    list_source_files,
    open_text,
    to_number,
)


def _records(path: Path, ctx: ImportContext) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or array position, object) of a JSONL file or a JSON array; malformed lines are skipped."""
    with open_text(path) as handle:
        content = handle.read()
    stripped = content.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as error:
            ctx.skip(path, error.lineno, f"malformed JSON array: {error.msg}")
            return
        for number, item in enumerate(items, 1):
            if isinstance(item, dict):
                yield number, item
            else:
                ctx.skip(path, number, "array element is not an object")
        return
    for number, line in enumerate(content.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            ctx.skip(path, number, f"malformed JSON: {error.msg}")
            continue
        if isinstance(item, dict):
            yield number, item
        else:
            ctx.skip(path, number, "line is JSON but not an object")


def convert(source: Path, ctx: ImportContext, **options: Any) -> Rows:
    """Rows of one arguments file (or of every .jsonl/.json file of a folder, author statistics pooled)."""
    if options:
        raise TypeError(f"ukpconvarg import takes no options, got {sorted(options)}")
    records: list[tuple[Path, int, dict[str, Any]]] = []
    for path in list_source_files(source, (".jsonl", ".json", ".ndjson")):
        records.extend((path, number, item) for number, item in _records(path, ctx))
    posts: Counter[str] = Counter()
    votes_up: Counter[str] = Counter()
    for _path, _number, item in records:
        author = clean_str(item.get("author"))
        if author is not None:
            posts[author] += 1
            votes_up[author] += to_number(item.get("vote_up")) or 0
    for path, number, item in ctx.track(records, total=len(records), unit="arg", desc="ukpconvarg"):
        arg_id = clean_str(item.get("arg_id"))
        if arg_id is None:
            ctx.skip(path, number, "missing arg_id")
            continue
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            ctx.skip(path, number, f"empty text (arg_id {arg_id!r})")
            continue
        author = clean_str(item.get("author"))
        row: dict[str, Any] = {
            "doc_id": f"ukp-{arg_id}",
            "text": text.strip(),
            "entity_scope": clean_str(item.get("debate_title")),
            "author_id": author,
            "stance": clean_str(item.get("stance")),
            "vote_up": to_number(item.get("vote_up")),
            "vote_down": to_number(item.get("vote_down")),
        }
        if author is not None:
            row["author_post_count"] = posts[author]
            row["author_votes_up"] = votes_up[author]
        yield path.name, number, row
