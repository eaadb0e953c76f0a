"""The aspect-model trainer (``oprag_training.train_aspect_model``): its readers, the aspect swap, its option checks,
and the committed model's MAMS test accuracy measured with its reader.

The MAMS check needs ../shared/data and skips without it; everything else runs from the committed files alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oprag_pipeline.enrich.aspect_model import LABELS, AspectItem, AspectSentimentModel

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def model() -> AspectSentimentModel:
    return AspectSentimentModel.load()


def span(text: str, term: str, nth: int = 0) -> tuple[str, int, int]:
    """(text, start, end) of the nth occurrence of ``term``."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(term, start + 1)
    return text, start, start + len(term)


@pytest.mark.slow
def test_mams_test_accuracy(model: AspectSentimentModel) -> None:
    path = SHARED_DATA / "mams" / "MAMS-ATSA" / "test.xml"
    if not path.exists():
        pytest.skip(f"{path} not present: MAMS lives in ../shared/data, only on development machines")
    from oprag_training.train_aspect_model import read_mams

    data = read_mams(path)
    logits = model.logits([e.item for e in data])
    acc = float((logits.argmax(-1) == np.array([e.label for e in data])).mean())
    assert acc >= 0.80, f"MAMS ATSA test accuracy {acc:.3f}"


def test_a_teacher_sample_is_read_and_a_bad_line_is_named(tmp_path) -> None:
    from oprag_training.train_aspect_model import read_labelled_jsonl

    good = tmp_path / "sample.jsonl"
    good.write_text(
        '{"text": "The zip broke.", "start": 4, "end": 7, "label": "negative"}\n\n'
        '{"text": "Fits well.", "category": "fit", "label": "positive"}\n'
    )
    examples = read_labelled_jsonl(good)
    assert [e.item.aspect for e in examples] == ["zip", "fit"]
    assert [e.label for e in examples] == [0, 2]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok", "start": 0, "end": 2, "label": "positive"}\n{"text": "x", "label": "great"}\n')
    with pytest.raises(SystemExit, match=r"bad\.jsonl:2: not a labelled aspect"):
        read_labelled_jsonl(bad)


def test_swapped_aspects_keep_the_label_and_mark_the_substitute() -> None:
    from oprag_training.train_aspect_model import Example, swap_aspect, swapped_training_set

    text = "Great food but the waiter was rude."
    rude = Example(AspectItem(text, *span(text, "waiter")[1:]), LABELS.index("negative"))
    swapped = swap_aspect(rude, "lantern")
    assert swapped.item.text == "Great food but the lantern was rude."
    assert swapped.item.aspect == "lantern" and swapped.label == rude.label
    capital = Example(AspectItem(text, *span(text, "Great food")[1:]), LABELS.index("positive"))
    assert swap_aspect(capital, "garden hose").item.text.startswith("Garden hose but the waiter")
    category = Example(AspectItem(text, category="service"), LABELS.index("negative"))
    assert swap_aspect(category, "lantern") == category  # a category names no word of the sentence
    data = [rude, category] * 200
    once, again = (swapped_training_set(data, 0.5, ["lantern", "pebble"], seed=3) for _ in range(2))
    assert once == again  # one seed, one epoch's substitutions
    replaced = sum(a != b for a, b in zip(once, data, strict=True))
    assert 60 < replaced < 140  # about half of the 200 span examples, and never a category one
    assert all(b == a for a, b in zip(once[1::2], data[1::2], strict=True))
    assert swapped_training_set(data, 0.5, ["lantern"], seed=4) != once
    assert swapped_training_set(data, 0.0, ["lantern"], seed=3) == data


def test_substitute_nouns_are_common_and_carry_no_opinion() -> None:
    from oprag_pipeline.registry.candidates import opinion_lexicon
    from oprag_training.train_aspect_model import substitute_nouns

    nouns = substitute_nouns()
    assert len(nouns) > 500 and nouns == sorted(set(nouns))
    assert not set(nouns) & set(opinion_lexicon())
    assert {"table", "window", "river"} <= set(nouns)
    assert all(n.isalpha() and n.islower() for n in nouns)


def test_the_trainer_refuses_swapped_aspects_with_joint_groups(capsys: pytest.CaptureFixture[str]) -> None:
    from oprag_training.train_aspect_model import main

    with pytest.raises(SystemExit) as refused:
        main(["--mams", "absent", "--out", "absent", "--joint", "--swap-aspects", "0.5"])
    assert refused.value.code == 2
    assert "--swap-aspects" in capsys.readouterr().err
