"""TripAdvisor hotel reviews in the LARA text format (Wang, Lu & Zhai, KDD 2010): `hotel_<id>_parsed.txt`.

Each review is a block of tagged lines separated by a blank line::

    <Author>name
    <Content>title and body run together
    <Date>Dec 23, 2008
    <Rating>5<TAB>4<TAB>5<TAB>5<TAB>5<TAB>5<TAB>5<TAB>-1

The eight ratings are Overall, Value, Rooms, Location, Cleanliness, Check-in/front desk, Service and Business
service, 1..5 stars with -1 for "not rated". They become `rating` (Overall) and `rating_<aspect>`; -1 becomes
null because "not rated" is not a one-star opinion. So does 0, which TripAdvisor's 1..5 scale cannot produce:
in this corpus it only occurs as the Overall of 2,253 crawl failures whose aspect ratings are all missing.
Some copies of the collection also carry `<No. Reader>` and `<No. Helpful>` lines; they become `reader_count`
and `vote_up`.

Robustness, because the files were produced by a crawler: a review starts at `<Author>` (or at any tag that
repeats within the current block), so a missing blank line does not merge two reviews; untagged lines after
`<Content>` are continuation lines of the text, even across a blank line; a block without text is skipped and
recorded; a missing or unparsable date leaves `created_at` null (the text is kept); each file is decoded on its
own (UTF-8, else cp1252/Latin-1), so one badly encoded hotel does not affect the others.

About 45k reviews (a fifth) were saved collapsed: only the review title, followed by the page's JavaScript
call `showReview(<n>, 'full');`. The call is removed (it is markup, not opinion), the title is kept as the text,
and the row gets `text_truncated: true` so later stages can tell a one-line title from a full review.

The crawler wrote two placeholders where no reviewer name was shown: `A TripAdvisor Member` and `lass=` (the tail
of an HTML attribute). They are not identities — together they would be one "author" with 61k reviews — so
`author_id` is null for them.

Next to the documents the import writes `_rated_aspects.json` (`RATED_ASPECT_TERMS`): which registry entity names
each rated aspect covers, so the gold mapping can read the aspect stars without knowing any hotel vocabulary.

doc_id is `ta-<hotel id>-<n>` with n the 1-based position of the block in its file (skipped blocks still count,
so ids do not shift when one block is repaired). The parsing loop is plain string slicing with a hand-written
date parser: the full corpus (1,745 files, 229k reviews, 206 MB) converts in a few seconds on one core.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oprag_pipeline.importers.common import (
    MONTH_ABBREVIATIONS,
    ImportContext,
    Rows,
    decode_bytes,
    list_source_files,
    parse_date,
    split_lines,
)

ASPECTS = ("value", "rooms", "location", "cleanliness", "checkin", "service", "business")
# The rated aspects -> the registry entity names that honestly name that aspect, written next to the documents
# (`settings.RATED_ASPECTS_FILE`) for the gold mapping. rooms: the room itself (bed, bathroom, view are separate
# entities). cleanliness: only nouns that name cleaning ("clean" is an adjective, never an entity). service: staff
# and service roles; the front desk belongs to check-in, which TripAdvisor rates separately. value: what the stay
# cost and whether it was worth it. business (business service) names no entity reliably and is left out.
RATED_ASPECT_TERMS: dict[str, tuple[str, ...]] = {
    "rooms": ("room", "rooms", "hotel room", "guest room", "bedroom", "suite"),
    "cleanliness": ("cleanliness", "housekeeping", "housekeeping staff", "maid", "maid service", "housekeeper"),
    "service": ("service", "staff", "hotel staff", "customer service", "employee", "personnel", "concierge"),
    "location": ("location", "neighborhood", "neighbourhood", "surroundings", "area"),
    "value": ("value", "value for money", "price", "rate", "room rate", "cost", "deal", "bargain"),
    "checkin": (
        "check-in",
        "check in",
        "checkin",
        "check-in process",
        "front desk",
        "desk",
        "reception",
        "reception desk",
        "receptionist",
        "front desk staff",
        "registration",
    ),
}
ANONYMOUS_AUTHORS = frozenset({"A TripAdvisor Member", "lass="})
_HOTEL_ID = re.compile(r"^hotel_(.+?)(?:_parsed)?$")
_MONTHS = {name.title(): number for number, name in enumerate(MONTH_ABBREVIATIONS, 1)}
# The crawler saved about a fifth of the reviews collapsed: the title followed by the page's JavaScript call
# that would have expanded it, e.g. `Good Location   showReview(2698125, 'full');`.
_SHOW_REVIEW = re.compile(r"\s*showReview\(\s*\d+\s*,\s*'full'\s*\);?\s*")
_TAGS = {
    "<Author>": "author",
    "<Content>": "content",
    "<Date>": "date",
    "<Rating>": "rating",
    "<No. Reader>": "readers",
    "<No. Helpful>": "helpful",
}


def hotel_id(path: Path) -> str:
    """`hotel_100504_parsed.txt` -> `100504`; any other name -> its stem (so renamed files still import)."""
    stem = path.name.split(".", 1)[0]
    match = _HOTEL_ID.match(stem)
    return match.group(1) if match else stem


def _fast_date(raw: str) -> str | None:
    """`Dec 23, 2008` without strptime or regex (several times faster); anything else, and days 29-31
    (which need a calendar check), go to the general parser."""
    parts = raw.split()
    if len(parts) == 3 and parts[1].endswith(","):
        month = _MONTHS.get(parts[0])
        day, year = parts[1][:-1], parts[2]
        if month and day.isdigit() and 1 <= int(day) <= 28 and year.isdigit() and len(year) == 4:
            return f"{year}-{month:02d}-{int(day):02d}"
    return parse_date(raw)


def _stars(field: str) -> int | float | None:
    field = field.strip()
    if not field:
        return None
    try:
        value = int(field)
    except ValueError:
        try:
            number = float(field)
        except ValueError:
            raise ValueError(field) from None
        return None if number < 1 else (int(number) if number.is_integer() else number)
    return None if value < 1 else value


def parse_blocks(text: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(first line number, {field: raw value}) for each review block of one file."""
    block: dict[str, str] = {}
    start = 0
    last_field: str | None = None
    for number, line in enumerate(split_lines(text), 1):
        if line.startswith("<"):
            end = line.find(">")
            field = _TAGS.get(line[: end + 1]) if end > 0 else None
            if field is not None:
                if field == "author" or field in block:
                    if block:
                        yield start, block
                    block = {}
                if not block:
                    start = number
                block[field] = line[end + 1 :]
                last_field = field
                continue
        if not line.strip():
            continue
        if last_field == "content" and block:
            block["content"] = block["content"] + "\n" + line
        else:
            # Untagged text outside a review's content: a new block without an author.
            if block:
                yield start, block
            block = {"content": line}
            start = number
            last_field = "content"
    if block:
        yield start, block


def convert_file(path: Path, ctx: ImportContext) -> Rows:
    """Rows of one hotel file."""
    name = path.name
    hotel = hotel_id(path)
    scope = f"hotel_{hotel}"
    try:
        text = decode_bytes(path.read_bytes())
    except OSError as error:
        ctx.skip(name, None, f"unreadable file: {error}")
        return
    for n, (line_no, block) in enumerate(parse_blocks(text), 1):
        content = block.get("content", "").strip()
        truncated = False
        if "showReview(" in content:
            content, count = _SHOW_REVIEW.subn(" ", content)
            content, truncated = content.strip(), count > 0
        if not content:
            reason = "collapsed review: no text besides the showReview() call" if truncated else "no <Content> text"
            ctx.skip(name, line_no, reason)
            continue
        author = block.get("author", "").strip()
        raw_date = block.get("date", "").strip()
        created_at = _fast_date(raw_date) if raw_date else None
        if raw_date and created_at is None:
            ctx.warn(name, line_no, f"unparsable <Date> {raw_date[:40]!r}: created_at left null")
        row: dict[str, Any] = {
            "doc_id": f"ta-{hotel}-{n}",
            "text": content,
            "entity_scope": scope,
            "author_id": author if author and author not in ANONYMOUS_AUTHORS else None,
            "created_at": created_at,
            "rating": None,
        }
        fields = block.get("rating", "").split("\t")
        stars: list[int | float | None] = []
        for field in fields[:8]:
            try:
                stars.append(_stars(field))
            except ValueError:
                stars.append(None)
                ctx.warn(name, line_no, f"non-numeric <Rating> field {field[:20]!r}: left null")
        stars.extend([None] * (8 - len(stars)))
        row["rating"] = stars[0]
        for aspect, value in zip(ASPECTS, stars[1:], strict=True):
            row[f"rating_{aspect}"] = value
        if truncated:
            row["text_truncated"] = True
        if "helpful" in block:
            row["vote_up"] = _count(block["helpful"])
        if "readers" in block:
            row["reader_count"] = _count(block["readers"])
        yield name, line_no, row


def _count(raw: str) -> int | None:
    raw = raw.strip().replace(",", "")
    return int(raw) if raw.isdigit() else None


def convert(source: Path, ctx: ImportContext, **options: Any) -> Rows:
    """All review rows of a folder of `hotel_*_parsed.txt` files (or of one such file), in file-name order."""
    if options:
        raise TypeError(f"tripadvisor import takes no options, got {sorted(options)}")
    files = list_source_files(source, (".txt",))
    if source.is_dir():
        # Only hotel files: pointing at the corpus root must not import its readme as a hotel.
        files = [p for p in files if p.name.startswith("hotel_")]
        if not files:
            raise ValueError(f"{source}: no hotel_<id>_parsed.txt files found")
    for path in ctx.track(files, total=len(files), unit="file", desc="tripadvisor"):
        yield from convert_file(path, ctx)
