"""The training data converters (``oprag_training.converters``), on fixture lines written here in each format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oprag_training.converters import (
    GOEMOTIONS_TO_PROJECT,
    NO_GOEMOTIONS_COUNTERPART,
    PROJECT_EMOTIONS,
    FormatError,
    dmaste_line,
    goemotions_neutral,
    held_back,
    neutral_targets,
    newsmtsc_polarity,
    noun_target,
    project_emotions,
    read_dmaste,
    read_goemotions,
    read_newsmtsc,
    read_tsa_md,
    read_vader_groundtruth,
)

# invented reviews in DMASTE's layout: tokens####triplets####category
DMASTE_LINE = (
    "The battery life is great but the screen scratches easily . The case is fine .####"
    "[([1, 2], [4], 'POS'), ([7], [8, 9], 'NEG'), ([12], [14], 'NEU'), ([-1], [4], 'POS')]####Electronics"
)
DMASTE_CONFLICT = (
    "The lid is nice and the lid leaks .####[([1], [3], 'POS'), ([6], [7], 'NEG'), ([1], [7], 'NEG')]####Home"
)


def test_dmaste_tokens_become_character_spans() -> None:
    examples = dmaste_line(DMASTE_LINE)
    assert [(e.text[e.start : e.end], e.polarity) for e in examples] == [
        ("battery life", "positive"),
        ("screen", "negative"),
        ("case", "neutral"),
    ]


def test_dmaste_drops_implicit_and_conflicting_aspects() -> None:
    # the implicit aspect ([-1]) of DMASTE_LINE is skipped above; "lid" (token 1) is praised and faulted: dropped
    examples = dmaste_line(DMASTE_CONFLICT)
    assert [(e.start, e.text[e.start : e.end], e.polarity) for e in examples] == [(24, "lid", "negative")]


def test_dmaste_same_span_twice_with_one_polarity_is_one_example() -> None:
    line = "Soft and warm blanket .####[([3], [0], 'POS'), ([3], [2], 'POS')]####Home"
    assert len(dmaste_line(line)) == 1


def test_dmaste_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "home" / "train.txt"
    path.parent.mkdir()
    path.write_text(DMASTE_LINE + "\nA broken line####[([0], [1], 'MAYBE')]####Home\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"train.txt:2: .*MAYBE"):
        read_dmaste([path])


def test_dmaste_reader_names_the_category(tmp_path: Path) -> None:
    path = tmp_path / "toy" / "dev.txt"
    path.parent.mkdir()
    path.write_text(DMASTE_LINE + "\n\n", encoding="utf-8")
    assert {e.source for e in read_dmaste([path])} == {"dmaste/toy"}


def test_tsa_md_targets(tmp_path: Path) -> None:
    text = "The spa was lovely, the parking a nightmare."
    rows = [
        {
            "text": text,
            "targets": [
                {"text": "spa", "location": {"begin": 4, "end": 7}, "sentiment": "positive"},
                {"text": "parking", "location": {"begin": 24, "end": 31}, "sentiment": "negative"},
            ],
        }
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    assert [(e.text[e.start : e.end], e.polarity) for e in read_tsa_md(path)] == [
        ("spa", "positive"),
        ("parking", "negative"),
    ]
    rows[0]["targets"][0]["location"]["end"] = 400
    path.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(FormatError, match="record 1"):
        read_tsa_md(path)


@pytest.mark.parametrize(
    ("value", "label"),
    [(2.0, "negative"), (3.0, "negative"), (4.0, "neutral"), (5.0, "positive"), (6.0, "positive")],
)
def test_newsmtsc_five_points_to_three_classes(value: float, label: str) -> None:
    assert newsmtsc_polarity(value) == label


def test_newsmtsc_reader(tmp_path: Path) -> None:
    line = {
        "sentence_normalized": "The mayor praised the new bridge.",
        "targets": [{"from": 4, "to": 9, "mention": "mayor", "polarity": 5.0}],
    }
    path = tmp_path / "n.jsonl"
    path.write_text(json.dumps(line) + "\n" + '{"sentence_normalized": "x", "targets": [{"from": 3}]}\n')
    with pytest.raises(FormatError, match=r"n.jsonl:2"):
        read_newsmtsc(path)
    path.write_text(json.dumps(line) + "\n")
    (example,) = read_newsmtsc(path)
    assert (example.text[example.start : example.end], example.polarity) == ("mayor", "positive")


def test_emotion_mapping_targets_only_project_emotions() -> None:
    assert set(GOEMOTIONS_TO_PROJECT.values()) <= set(PROJECT_EMOTIONS)
    # every project emotion but those named as without counterpart is reachable
    assert set(GOEMOTIONS_TO_PROJECT.values()) | set(NO_GOEMOTIONS_COUNTERPART) == set(PROJECT_EMOTIONS)
    assert NO_GOEMOTIONS_COUNTERPART == ("resignation",)


def test_project_emotions_maps_merges_and_drops() -> None:
    assert project_emotions(["annoyance", "anger", "disgust"]) == ("frustration", "anger")
    assert project_emotions(["joy", "love", "gratitude"]) == ("delight", "trust")
    assert project_emotions(["neutral", "curiosity", "surprise"]) == ()


def test_goemotions_reader(tmp_path: Path) -> None:
    labels = ["anger", "joy", "neutral"]
    path = tmp_path / "g.tsv"
    path.write_text("So glad this worked!\t1\tid1\nwhatever\t2\tid2\nI am furious\t0,1\tid3\n", encoding="utf-8")
    rows = read_goemotions(path, labels)
    assert [r.emotions for r in rows] == [("delight",), (), ("delight", "anger")]
    path.write_text("no labels here\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"g.tsv:1"):
        read_goemotions(path, labels)


def test_vader_groundtruth_reader_and_held_back_split(tmp_path: Path) -> None:
    path = tmp_path / "tweets_GroundTruth.txt"
    lines = [f"{i}\t{(i % 9) - 4:.2f}\tinvented sentence number {i}" for i in range(1, 2001)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = read_vader_groundtruth(path)
    assert len(rows) == 2000 and rows[0].key == "tweets_GroundTruth:1" and rows[0].rating == -3.0
    share = sum(held_back(r.key) for r in rows) / len(rows)
    assert 0.17 < share < 0.23
    # the split is a function of the key alone
    assert [held_back(r.key) for r in rows] == [held_back(r.key) for r in read_vader_groundtruth(path)]
    path.write_text("1\t7.5\tout of range\n", encoding="utf-8")
    with pytest.raises(FormatError, match="outside"):
        read_vader_groundtruth(path)


def test_goemotions_neutral_keeps_whole_statements_labelled_only_neutral(tmp_path: Path) -> None:
    labels = ["anger", "joy", "neutral"]
    path = tmp_path / "g.tsv"
    rows = [
        "We moved the meeting to the second floor room.\t2\tid1",  # kept
        "The parcel arrived and I was so happy about it.\t1,2\tid2",  # another label beside neutral
        "ok sure\t2\tid3",  # a reply fragment
        "[NAME] took the train to the city on Monday.\t2\tid4",  # the placeholder would be the noun
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert goemotions_neutral(path, labels) == ["We moved the meeting to the second floor room."]
    path.write_text("one field only\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"g.tsv:1"):
        goemotions_neutral(path, labels)


def test_neutral_targets_are_nouns_of_the_statement_chosen_the_same_way_every_time() -> None:
    text = "The charger comes in a separate box with the cable."
    start, end = noun_target(text)
    assert text[start:end] in {"charger", "box", "cable"}
    assert noun_target(text) == (start, end)
    assert noun_target("Wow, so quickly!") is None  # no noun: no example
    (example,) = neutral_targets([text, "Wow, so quickly!"], "fixture")
    assert (example.polarity, example.source, example.text[example.start : example.end]) == (
        "neutral",
        "fixture",
        text[start:end],
    )
