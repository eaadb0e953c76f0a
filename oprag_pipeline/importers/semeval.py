"""SemEval aspect-based sentiment XML (2014, 2015, 2016) and MAMS, which uses the 2014 layout.

Two layouts are recognised by their root element:

* 2014 / MAMS, root `<sentences>`: `<sentence id?><text/>` with `<aspectTerms><aspectTerm term polarity from
  to/>` and/or `<aspectCategories><aspectCategory category polarity/>`. One document per sentence.
* 2015 / 2016, root `<Reviews>`: `<Review rid><sentences><sentence id><text/><Opinions><Opinion target category
  polarity from to/>`. One document per review: its sentences joined with a single space, every offset shifted
  by the start of its sentence so that `text[from:to]` is still the target. `target="NULL"` (an opinion
  about an implicit target) becomes target/from/to null. Review-level `<Opinions>` (2016 subtask 2) are kept
  with null offsets.

Offsets are checked against the text: when `text[from:to]` is not the target, the target is looked up in its
sentence (nearest occurrence to the given offset); when it is absent the offsets become null. Either case is
recorded as a warning, never a silent change.

doc_ids: `absa-<file stem>-<id>` with the sentence id (2014) or review rid (2015/16). MAMS sentences carry no
id; they get `absa-<file stem>-<n>-<hash of the text>` because MAMS-ATSA and MAMS-ACSA both ship a `test.xml`
with different sentences and their ids must not collide when both are imported into one domain.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from oprag_pipeline.importers.common import (
    ImportContext,
    Rows,
    clean_str,
    gold_opinion,
    list_source_files,
    logical_stem,
    normalise_polarity,
    read_bytes,
    short_hash,
    slug,
)


def _offset(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _locate(text: str, target: str, start: int | None, end: int | None) -> tuple[int | None, int | None, bool]:
    """(from, to, as_given): the given offsets if they slice `text` to `target`, else the nearest occurrence."""
    if start is not None and end is not None and text[start:end] == target:
        return start, end, True
    positions = []
    index = text.find(target)
    while index >= 0:
        positions.append(index)
        index = text.find(target, index + 1)
    if not positions:
        return None, None, False
    best = min(positions, key=lambda p: abs(p - (start or 0)))
    return best, best + len(target), False


def _sentence_opinions(
    sentence: ET.Element, text: str, shift: int, file: str, number: int, ref: str, ctx: ImportContext
) -> list[dict[str, Any]]:
    """Gold opinions of one sentence with offsets into the document (sentence start = `shift`)."""
    opinions: list[dict[str, Any]] = []
    elements = [
        *sentence.findall("./aspectTerms/aspectTerm"),
        *sentence.findall("./aspectCategories/aspectCategory"),
        *sentence.findall("./Opinions/Opinion"),
    ]
    for element in elements:
        polarity = normalise_polarity(element.get("polarity"))
        if polarity is None:
            ctx.warn(file, number, f"{ref}: opinion with polarity {element.get('polarity')!r} dropped")
            continue
        target = clean_str(element.get("term", element.get("target")))
        if target is not None and target.upper() == "NULL":
            target = None
        category = clean_str(element.get("category"))
        start = end = None
        if target is not None:
            given_start, given_end = _offset(element.get("from")), _offset(element.get("to"))
            start, end, as_given = _locate(text, target, given_start, given_end)
            if not as_given:
                where = "relocated" if start is not None else "not found in the sentence; offsets left null"
                ctx.warn(file, number, f"{ref}: target {target!r} at {given_start}:{given_end} {where}")
            if start is not None and end is not None:
                start, end = start + shift, end + shift
        opinions.append(gold_opinion(target=target, category=category, polarity=polarity, start=start, end=end))
    return opinions


def _review_level_opinions(
    review: ET.Element, file: str, number: int, ref: str, ctx: ImportContext
) -> list[dict[str, Any]]:
    opinions = []
    for element in review.findall("./Opinions/Opinion"):
        polarity = normalise_polarity(element.get("polarity"))
        if polarity is None:
            ctx.warn(file, number, f"{ref}: opinion with polarity {element.get('polarity')!r} dropped")
            continue
        target = clean_str(element.get("target"))
        opinions.append(
            gold_opinion(
                target=None if target is None or target.upper() == "NULL" else target,
                category=clean_str(element.get("category")),
                polarity=polarity,
            )
        )
    return opinions


def _sentence_text(sentence: ET.Element) -> str:
    """The sentence exactly as annotated: offsets count from its first character, so no stripping."""
    element = sentence.find("text")
    return (element.text or "") if element is not None else ""


def _convert_reviews(root: ET.Element, path: Path, ctx: ImportContext) -> Rows:
    file, stem = path.name, slug(logical_stem(path))
    for n, review in enumerate(root.iter("Review"), 1):
        rid = clean_str(review.get("rid"))
        ref = f"review {rid or n}"
        parts: list[str] = []
        opinions: list[dict[str, Any]] = []
        shift = 0
        for sentence in review.iter("sentence"):
            text = _sentence_text(sentence)
            if not text.strip():
                continue
            if parts:
                shift += 1  # the joining space
            opinions.extend(
                _sentence_opinions(sentence, text, shift, file, n, f"{ref} sentence {sentence.get('id')}", ctx)
            )
            parts.append(text)
            shift += len(text)
        opinions.extend(_review_level_opinions(review, file, n, ref, ctx))
        if not parts:
            ctx.skip(file, n, f"{ref} has no sentence text")
            continue
        doc_id = f"absa-{stem}-{slug(rid)}" if rid else f"absa-{stem}-{n}-{short_hash(*parts, length=8)}"
        yield file, n, {"doc_id": doc_id, "text": " ".join(parts), "gold_opinions": opinions}


def _convert_sentences(root: ET.Element, path: Path, ctx: ImportContext) -> Rows:
    file, stem = path.name, slug(logical_stem(path))
    for n, sentence in enumerate(root.iter("sentence"), 1):
        sid = clean_str(sentence.get("id"))
        text = _sentence_text(sentence)
        if not text.strip():
            ctx.skip(file, n, f"sentence {sid or n} has no text")
            continue
        opinions = _sentence_opinions(sentence, text, 0, file, n, f"sentence {sid or n}", ctx)
        doc_id = f"absa-{stem}-{slug(sid)}" if sid else f"absa-{stem}-{n}-{short_hash(text, length=8)}"
        yield file, n, {"doc_id": doc_id, "text": text, "gold_opinions": opinions}


def convert(source: Path, ctx: ImportContext, **options: Any) -> Rows:
    """Documents of one XML file or of every .xml file in a folder."""
    if options:
        raise TypeError(f"semeval-absa import takes no options, got {sorted(options)}")
    files = list_source_files(source, (".xml",))
    for path in ctx.track(files, total=len(files), unit="file", desc="semeval-absa"):
        try:
            root = ET.fromstring(read_bytes(path))
        except (ET.ParseError, OSError) as error:
            ctx.skip(path, None, f"not readable as XML: {error}")
            continue
        if root.tag == "Reviews" or root.find(".//Review") is not None:
            yield from _convert_reviews(root, path, ctx)
        elif root.tag == "sentences" or root.find(".//sentence") is not None:
            yield from _convert_sentences(root, path, ctx)
        else:
            ctx.skip(path, None, f"root element <{root.tag}> is neither <Reviews> nor <sentences>")
