"""Hu & Liu (KDD 2004) customer-review files, and the later Liu-lab sets that reuse the same layout.

One product per file; the product name is the file-name stem (`Canon G3.txt` -> `Canon G3`) and becomes
`entity_scope`. Line syntax:

* `*...`                      header / comment, ignored;
* `[t]title`                  starts a new review (sentences before the first `[t]` form one untitled review);
* `feat[+2], other[-1][u]##text`  one sentence with its annotations; `[+n]` / `[-n]` is the polarity with
  strength n (1..3), other bracketed letters are flags: `[u]` feature not named in the sentence, `[p]` named
  by a pronoun, `[s]` suggestion, `[cc]` / `[cs]` comparisons;
* `##text`                    a sentence without opinion.

One document per review: its sentences (stripped) joined with single spaces; `title` is the `[t]` text. Each
annotation becomes a gold opinion `{target: feature, category: null, polarity, strength, from, to, flags}`.
The corpus gives no offsets, so `from`/`to` are found here: the first whole-word, case-insensitive occurrence
of the feature in its own sentence, shifted to the document. They are null when the feature is flagged `[u]`
or `[p]`, or does not occur verbatim (annotators often normalise: `picture quality` for "the pictures") —
a missing offset is better than one pointing at the wrong words. An annotation without `[+n]`/`[-n]` cannot be
a gold opinion; it is dropped with a warning.

doc_id is `hl-<product slug>-<n>`, n the 1-based review number in the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oprag_pipeline.importers.common import (
    ImportContext,
    Rows,
    decode_bytes,
    gold_opinion,
    list_source_files,
    logical_stem,
    read_bytes,
    slug,
    split_lines,
)

# One annotation item: a name without brackets or commas, its bracket tags, then a comma or the end.
_ITEM = re.compile(r"\s*([^\[\],]*?)\s*((?:\[[^\]]*\]\s*)*)\s*(?:,|$)")
_TAG = re.compile(r"\[([^\]]*)\]")
_POLARITY = re.compile(r"^([+-])\s*(\d*)$")
_FLAG = re.compile(r"^[a-z]+$")


@dataclass
class _Review:
    line: int
    title: str | None
    sentences: list[tuple[int, str, str]] = field(default_factory=list)  # (line, annotations, text)


def parse_annotations(annotations: str) -> tuple[list[tuple[str, str, int | None, list[str]]], list[str]]:
    """([(feature, polarity, strength, flags)], [problems]) for the part of a line before `##`."""
    items: list[tuple[str, str, int | None, list[str]]] = []
    problems: list[str] = []
    position = 0
    text = annotations.strip()
    while position < len(text):
        match = _ITEM.match(text, position)
        if match is None or match.end() == position:  # guards against an endless loop on odd input
            problems.append(f"unparsable annotation {text[position:]!r}")
            break
        position = match.end()
        name, tags = match.group(1).strip(), match.group(2)
        if not name and not tags:
            continue
        polarity: str | None = None
        strength: int | None = None
        flags: list[str] = []
        for tag in _TAG.findall(tags):
            tag = tag.strip()
            polar = _POLARITY.match(tag)
            if polar:
                polarity = "positive" if polar.group(1) == "+" else "negative"
                strength = int(polar.group(2)) if polar.group(2) else None
                if strength is not None and not 1 <= strength <= 3:
                    problems.append(f"feature {name!r}: strength {strength} outside 1..3 left null")
                    strength = None
            elif _FLAG.match(tag.lower()):
                flags.append(tag.lower())
            else:
                problems.append(f"feature {name!r}: unknown tag [{tag}] ignored")
        if not name:
            problems.append(f"annotation {tags.strip()!r} without a feature name dropped")
        elif polarity is None:
            problems.append(f"feature {name!r} without [+n]/[-n] polarity dropped")
        else:
            items.append((name, polarity, strength, flags))
    return items, problems


def _find_word(sentence: str, feature: str) -> int | None:
    """Start of the first whole-word, case-insensitive occurrence of `feature` in `sentence`."""
    match = re.search(r"(?<![0-9A-Za-z])" + re.escape(feature) + r"(?![0-9A-Za-z])", sentence, re.IGNORECASE)
    return match.start() if match else None


def _parse_file(text: str) -> Iterator[_Review | tuple[int, str]]:
    """Reviews of one file, plus `(line, problem)` for lines that are not in the format."""
    review: _Review | None = None
    for number, line in enumerate(split_lines(text), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("*"):
            continue
        if stripped.startswith("[t]"):
            if review is not None:
                yield review
            review = _Review(line=number, title=stripped[3:].strip() or None)
            continue
        if review is None:
            review = _Review(line=number, title=None)
        if "##" in stripped:
            annotations, _, sentence = stripped.partition("##")
        else:
            yield number, "line without '##' kept as a sentence without annotations"
            annotations, sentence = "", stripped
        review.sentences.append((number, annotations, sentence.strip()))
    if review is not None:
        yield review


def convert_file(path: Path, ctx: ImportContext) -> Rows:
    """Reviews of one product file."""
    name = path.name
    product = logical_stem(path)
    product_slug = slug(product)
    text = decode_bytes(read_bytes(path))
    if "##" not in text and "[t]" not in text:
        # Every line of a Hu & Liu file carries one of the two markers; without any, this is some other file
        # (notes, JSON) whose lines would each become a sentence of one made-up review.
        ctx.skip(name, None, "not a Hu & Liu review file: no line holds '##' or '[t]'")
        return
    n = 0
    for item in _parse_file(text):
        if isinstance(item, tuple):
            ctx.warn(name, item[0], item[1])
            continue
        n += 1
        parts: list[str] = []
        opinions: list[dict[str, Any]] = []
        shift = 0
        for line, tags, sentence in item.sentences:
            if not sentence:
                if tags.strip():
                    ctx.warn(name, line, "annotations on an empty sentence dropped")
                continue
            if parts:
                shift += 1
            features, problems = parse_annotations(tags)
            for problem in problems:
                ctx.warn(name, line, problem)
            for feature, polarity, strength, flags in features:
                start = None if {"u", "p"} & set(flags) else _find_word(sentence, feature)
                opinions.append(
                    gold_opinion(
                        target=feature,
                        category=None,
                        polarity=polarity,
                        strength=strength,
                        start=None if start is None else shift + start,
                        end=None if start is None else shift + start + len(feature),
                        flags=flags,
                    )
                )
            parts.append(sentence)
            shift += len(sentence)
        if not parts:
            ctx.skip(name, item.line, "review without sentences")
            continue
        row: dict[str, Any] = {
            "doc_id": f"hl-{product_slug}-{n}",
            "text": " ".join(parts),
            "title": item.title,
            "entity_scope": product,
            "gold_opinions": opinions,
        }
        yield name, item.line, row


def convert(source: Path, ctx: ImportContext, **options: Any) -> Rows:
    """Reviews of one product file, or of every .txt file of a folder (except readme files)."""
    if options:
        raise TypeError(f"huliu import takes no options, got {sorted(options)}")
    files = list_source_files(source, (".txt",))
    if source.is_dir():
        files = [p for p in files if not p.name.lower().startswith("readme")]
    for path in ctx.track(files, total=len(files), unit="file", desc="huliu"):
        yield from convert_file(path, ctx)
