"""Token chunking with overlap, on a real `tokenizers` tokenizer (whitespace word level, so counts are obvious)."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from oprag_pipeline.index.chunking import chunk_documents, chunk_offsets


@pytest.fixture
def word_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    return tokenizer


def test_offsets_cover_everything_with_overlap() -> None:
    tokens = [(i * 2, i * 2 + 1) for i in range(10)]  # ten one-character tokens
    assert chunk_offsets(tokens, 4, 1) == [(0, 7), (6, 13), (12, 19)]
    assert chunk_offsets(tokens, 20, 3) == [(0, 19)]
    assert chunk_offsets([], 4, 1) == []
    with pytest.raises(ValueError):
        chunk_offsets(tokens, 4, 4)


def test_chunks_hold_the_right_words(word_tokenizer: Tokenizer) -> None:
    words = [f"w{i}" for i in range(25)]
    text = " ".join(words)
    chunks = chunk_documents([("d1", text), ("d2", "short one")], word_tokenizer, chunk_tokens=10, overlap=0.2)
    d1 = [c for c in chunks if c.doc_id == "d1"]
    assert [c.text.split() for c in d1] == [words[0:10], words[8:18], words[16:25]]
    assert [c.index for c in d1] == [0, 1, 2]
    assert all(text[c.char_start : c.char_end] == c.text for c in d1)
    assert [c.text for c in chunks if c.doc_id == "d2"] == ["short one"]
