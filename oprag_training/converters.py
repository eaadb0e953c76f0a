"""One converter per public format, each to what the extractor's trainer reads.

* Aspect polarity (``PolarityExample``: the text, a character span of the target, negative / neutral / positive):
  DMASTE triplets, TSA-MD targets, NewsMTSC targets (and MAMS XML, read by ``read_mams`` in the older trainer).
* Emotions (``EmotionExample``: a text and the project's emotions it expresses): GoEmotions, through
  ``GOEMOTIONS_TO_PROJECT``.
* Rated strength (``RatedExample``: a text and its mean rating on -4..+4): the VADER ground-truth files.

A line a converter cannot read is an error naming the file, the line and the reason (``FormatError``): training
data is read whole or not at all, so a corpus that changed shape never trains a model silently on part of itself.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from oprag_pipeline.schema import Emotion

POLARITIES: tuple[str, ...] = ("negative", "neutral", "positive")
PROJECT_EMOTIONS: tuple[str, ...] = tuple(e.value for e in Emotion)


class FormatError(ValueError):
    """A training file line that does not have the documented shape."""


@dataclass(frozen=True)
class PolarityExample:
    """A target span ``text[start:end]`` and the polarity the annotators gave it."""

    text: str
    start: int
    end: int
    polarity: str  # one of POLARITIES
    source: str


@dataclass(frozen=True)
class EmotionExample:
    """A text and the project's emotions it expresses (empty: none of them)."""

    text: str
    emotions: tuple[str, ...]


@dataclass(frozen=True)
class RatedExample:
    """A text and its mean strength rating (-4 very negative .. +4 very positive)."""

    key: str
    text: str
    rating: float


# ------------------------------------------------------------------------------------------------------ DMASTE
_DMASTE_POLARITY = {"POS": "positive", "NEG": "negative", "NEU": "neutral"}


def dmaste_line(line: str, source: str = "dmaste") -> list[PolarityExample]:
    """One DMASTE line (``tokens####[(aspect, opinion, polarity), ...]####Category``) as polarity examples.

    Token indices become character offsets in the space-joined tokens. An implicit aspect (``[-1]``) has no span
    and is skipped; an aspect span given two different polarities in one review is dropped (the annotators saw
    both sides, so neither label is the target's); the same span with the same polarity twice (two opinion
    phrases) is one example."""
    parts = line.rstrip("\n").split("####")
    if len(parts) < 2:
        raise FormatError("expected tokens####triplets####category")
    tokens = parts[0].split(" ")
    try:
        triplets = ast.literal_eval(parts[1])
    except (ValueError, SyntaxError) as exc:
        raise FormatError(f"triplets are not a Python literal ({exc})") from None
    starts, offset = [], 0
    for token in tokens:
        starts.append(offset)
        offset += len(token) + 1
    text = " ".join(tokens)
    spans: dict[tuple[int, int], set[str]] = {}
    order: list[tuple[int, int]] = []
    for triplet in triplets:
        try:
            aspect, _opinion, polarity = triplet
            label = _DMASTE_POLARITY[polarity]
        except (ValueError, KeyError, TypeError):
            raise FormatError(f"not an (aspect, opinion, POS|NEG|NEU) triplet: {triplet!r}") from None
        if not aspect or aspect[0] == -1:
            continue
        first, last = int(aspect[0]), int(aspect[-1])
        if not 0 <= first <= last < len(tokens):
            raise FormatError(f"aspect tokens {aspect} outside the {len(tokens)} tokens")
        key = (starts[first], starts[last] + len(tokens[last]))
        if key not in spans:
            order.append(key)
        spans.setdefault(key, set()).add(label)
    return [PolarityExample(text, s, e, next(iter(spans[(s, e)])), source) for s, e in order if len(spans[(s, e)]) == 1]


def read_dmaste(paths: Iterable[Path]) -> list[PolarityExample]:
    """Every DMASTE file in ``paths`` (e.g. ``beauty/train.txt``), the category folder as the source name."""
    out: list[PolarityExample] = []
    for path in paths:
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.extend(dmaste_line(line, source=f"dmaste/{Path(path).parent.name}"))
            except FormatError as exc:
                raise FormatError(f"{path}:{number}: {exc}") from None
    return out


# ------------------------------------------------------------------------------------------------------ TSA-MD
def read_tsa_md(path: Path) -> list[PolarityExample]:
    """A TSA-MD JSON array of ``{"text", "targets": [{"location": {"begin", "end"}, "sentiment"}]}``."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not JSON ({exc})") from None
    out: list[PolarityExample] = []
    for number, row in enumerate(rows, start=1):
        try:
            text = str(row["text"])
            for target in row["targets"]:
                start, end = int(target["location"]["begin"]), int(target["location"]["end"])
                label = str(target["sentiment"])
                if label not in POLARITIES or not 0 <= start < end <= len(text):
                    raise ValueError(f"sentiment {label!r} at {start}:{end}")
                out.append(PolarityExample(text, start, end, label, "tsa_md"))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"{path}: record {number}: {exc!r}") from None
    return out


# ---------------------------------------------------------------------------------------------------- NewsMTSC
def newsmtsc_polarity(value: float) -> str:
    """NewsMTSC's five points (2.0 negative, 3.0 slightly negative, 4.0 neutral, 5.0 slightly positive, 6.0
    positive) as three classes: the slight ones keep their sign, as a reader of the sentence would."""
    if value < 4.0:
        return "negative"
    if value > 4.0:
        return "positive"
    return "neutral"


def read_newsmtsc(path: Path) -> list[PolarityExample]:
    """NewsMTSC JSONL: ``{"sentence_normalized", "targets": [{"from", "to", "polarity"}]}`` a line."""
    out: list[PolarityExample] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text = str(row["sentence_normalized"])
            for target in row["targets"]:
                start, end = int(target["from"]), int(target["to"])
                if not 0 <= start < end <= len(text):
                    raise ValueError(f"target {start}:{end} outside the sentence")
                out.append(PolarityExample(text, start, end, newsmtsc_polarity(float(target["polarity"])), "newsmtsc"))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"{path}:{number}: {exc!r}") from None
    return out


# --------------------------------------------------------------------------------------------------- GoEmotions
# GoEmotions' 27 emotions to the project's nine (schema.Emotion). Read as "a reader would file this comment's
# feeling under": annoyance is the everyday form of frustration, disgust sits with anger, fear and nervousness are
# anxiety, optimism and desire look forward (hope), joy / excitement / amusement / love / admiration are delight,
# approval and gratitude say the writer relies on or credits someone (trust), sadness about how something turned
# out is disappointment. Left out, with no counterpart in the project's set: caring, confusion, curiosity,
# disapproval (a judgement rather than a feeling: it would make every complaint "frustration"), embarrassment,
# grief, pride, realization, remorse, surprise, and neutral. The project's "resignation" has no GoEmotions
# counterpart at all: it stays with the cue lexicon (cues.py).
GOEMOTIONS_TO_PROJECT: dict[str, str] = {
    "anger": "anger",
    "disgust": "anger",
    "annoyance": "frustration",
    "disappointment": "disappointment",
    "sadness": "disappointment",
    "fear": "anxiety",
    "nervousness": "anxiety",
    "optimism": "hope",
    "desire": "hope",
    "relief": "relief",
    "joy": "delight",
    "excitement": "delight",
    "amusement": "delight",
    "love": "delight",
    "admiration": "delight",
    "approval": "trust",
    "gratitude": "trust",
}
NO_GOEMOTIONS_COUNTERPART: tuple[str, ...] = tuple(
    e for e in PROJECT_EMOTIONS if e not in set(GOEMOTIONS_TO_PROJECT.values())
)


def project_emotions(goemotions_labels: Iterable[str]) -> tuple[str, ...]:
    """The project's emotions (in ``PROJECT_EMOTIONS`` order) for a comment's GoEmotions labels."""
    mapped = {GOEMOTIONS_TO_PROJECT[label] for label in goemotions_labels if label in GOEMOTIONS_TO_PROJECT}
    return tuple(e for e in PROJECT_EMOTIONS if e in mapped)


def goemotions_rows(path: Path, label_names: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """A GoEmotions TSV (text, comma-separated label indices, comment id): each comment with its label names."""
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        try:
            if len(parts) != 3:
                raise ValueError(f"{len(parts)} tab-separated fields, expected 3")
            labels = [label_names[int(i)] for i in parts[1].split(",")]
        except (ValueError, IndexError) as exc:
            raise FormatError(f"{path}:{number}: {exc}") from None
        yield parts[0], labels


def read_goemotions(path: Path, label_names: Sequence[str]) -> list[EmotionExample]:
    """A GoEmotions TSV, labels mapped to the project's."""
    return [EmotionExample(text, project_emotions(labels)) for text, labels in goemotions_rows(path, label_names)]


def goemotions_labels(path: Path) -> list[str]:
    """``labels.txt``: one emotion name a line, its 0-based line number the index the TSV files use."""
    return [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------- VADER ground truth
def read_vader_groundtruth(path: Path) -> list[RatedExample]:
    """A ``<set>_GroundTruth.txt`` file: id, mean rating (-4..+4), text, tab-separated."""
    out: list[RatedExample] = []
    stem = Path(path).stem
    for number, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t", 2)
        try:
            if len(parts) != 3:
                raise ValueError(f"{len(parts)} tab-separated fields, expected 3")
            rating = float(parts[1])
            if not -4.0 <= rating <= 4.0:
                raise ValueError(f"rating {rating} outside -4..+4")
        except ValueError as exc:
            raise FormatError(f"{path}:{number}: {exc}") from None
        out.append(RatedExample(f"{stem}:{parts[0]}", parts[2].strip(), rating))
    return out


def held_back(key: str, share: float = 0.2) -> bool:
    """Whether a record is held back for measurement: by the MD5 of its key, so the split is the same on every
    machine and in every run, and a fifth of each file (not a fifth overall) is held back."""
    digest = int(hashlib.md5(key.encode("utf-8")).hexdigest()[:8], 16)
    return digest / 0xFFFFFFFF < share


# ---------------------------------------------------------------------------------- neutral targets from rated text
NEUTRAL_RATING = 0.5
"""A sentence whose raters' mean lies within half a point of zero (on VADER's -4..+4 scale, half of the scale's
smallest step from neutral) states no opinion; a noun of it is a neutral target."""


def goemotions_neutral(path: Path, label_names: Sequence[str]) -> list[str]:
    """The comments of a GoEmotions TSV whose only label is ``neutral`` (no emotion at all), in file order: whole
    statements (six words or more, not a reply fragment) without an anonymisation placeholder ("[NAME]"), which
    would otherwise be their noun."""
    return [
        text
        for text, labels in goemotions_rows(path, label_names)
        if set(labels) == {"neutral"} and len(text.split()) >= 6 and "[" not in text
    ]


def noun_target(text: str) -> tuple[int, int] | None:
    """One common noun of the text as a target span, chosen by the MD5 of the text (the same on every machine);
    None when the tagger finds no noun of three letters or more. Grammar (TextBlob's bundled tagger), no word list."""
    import textblob.en

    spans: list[tuple[int, int]] = []
    position = 0
    for word, tag in textblob.en.tag(text):
        start = text.find(word, position)
        if start < 0:
            continue
        position = start + len(word)
        if tag in ("NN", "NNS") and len(word) >= 3 and word.isalpha():
            spans.append((start, position))
    if not spans:
        return None
    return spans[int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16) % len(spans)]


def neutral_targets(texts: Iterable[str], source: str) -> list[PolarityExample]:
    """Neutral polarity examples from texts that state no opinion: one noun target each (texts with none skipped).

    Review corpora with target labels (DMASTE, TSA-MD) label only targets that carry an opinion, so a model trained
    on them learns that every product noun is positive or negative; these examples teach that a plain statement
    about a thing ("I ordered the phone on Tuesday.") is neutral."""
    out: list[PolarityExample] = []
    for text in texts:
        span = noun_target(text)
        if span is not None:
            out.append(PolarityExample(text, span[0], span[1], "neutral", source))
    return out
