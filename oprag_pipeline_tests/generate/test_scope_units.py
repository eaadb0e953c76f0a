"""Recognising the scope (the product, the hotel) a question names."""

from __future__ import annotations

from oprag_pipeline.generate.scope import scope_in_question

SCOPES = ["Nokia 6610", "Nokia 6610i", "Hilton", "Hilton Garden Inn", "Creative Labs Nomad Jukebox Zen Xtra", "B2"]


def test_case_insensitive_whole_words_longest_match() -> None:
    match = scope_in_question("is the nokia 6610 battery any good?", SCOPES)
    assert match is not None and match.scope == "Nokia 6610"
    assert match.without("is the nokia 6610 battery any good?") == "is the battery any good?"
    assert scope_in_question("and the Nokia 6610i screen?", SCOPES).scope == "Nokia 6610i"  # type: ignore[union-attr]
    assert scope_in_question("What about the Hilton Garden Inn?", SCOPES).scope == "Hilton Garden Inn"  # type: ignore[union-attr]
    assert scope_in_question("How was the Hilton?", SCOPES).scope == "Hilton"  # type: ignore[union-attr]


def test_possessive_and_spacing() -> None:
    question = "Was the Hilton's  breakfast good?"
    match = scope_in_question(question, SCOPES)
    assert match is not None and match.scope == "Hilton"
    assert match.without(question) == "Was the breakfast good?"
    assert scope_in_question("the  nokia\n6610 keypad", SCOPES).scope == "Nokia 6610"  # type: ignore[union-attr]


def test_no_match_inside_words_or_for_tiny_names() -> None:
    assert scope_in_question("the Hiltons were loud", SCOPES) is None
    assert scope_in_question("model nokia 66100", SCOPES) is None
    assert scope_in_question("is the B2 battery good?", SCOPES) is None  # two characters: too likely by chance
    assert scope_in_question("what do people think of the battery?", SCOPES) is None


def test_terminal_text_has_no_raw_markdown() -> None:
    from oprag_pipeline.generate.terminal import terminal_text

    answer = (
        "## breakfast: 40 opinions in the corpus\nIn the corpus: 60% positive.\n\n"
        '**Negative (30%)**, first:\n- "Cold eggs." [d1]'
    )
    plain = terminal_text(answer)
    assert "#" not in plain and "**" not in plain
    assert plain.splitlines()[:2] == ["breakfast: 40 opinions in the corpus", "-" * 36]
    assert "Negative (30%), first:" in plain and '  • "Cold eggs." [d1]' in plain
    styled = terminal_text(answer, styled=True)
    assert "\x1b[1m" in styled and "#" not in styled and "**" not in styled
