"""Fixed-size token chunks with overlap for the raw knowledge base.

The reference study cut 4,000-token chunks with 15% overlap for an 8k-token embedder: half the model's window.
Our embedder (all-MiniLM-L6-v2) reads at most 256 word pieces and silently drops the rest, so the same rule gives
chunks of 200 tokens (room for [CLS]/[SEP] and a margin) with 15% overlap (30 tokens): every token of every
document is embedded, and an opinion cut at a chunk edge still appears whole in the neighbouring chunk. Sizes are
counted with the embedder's own tokenizer, so "200 tokens" means what the model sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_CHUNK_TOKENS = 200
DEFAULT_OVERLAP = 0.15


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    index: int
    char_start: int
    char_end: int
    text: str


def chunk_offsets(
    token_offsets: Sequence[tuple[int, int]], chunk_tokens: int, overlap_tokens: int
) -> list[tuple[int, int]]:
    """Character spans of the chunks of one document, from its tokens' character offsets."""
    if chunk_tokens <= 0 or not 0 <= overlap_tokens < chunk_tokens:
        raise ValueError(f"need 0 <= overlap ({overlap_tokens}) < chunk size ({chunk_tokens})")
    tokens = [(s, e) for s, e in token_offsets if e > s]
    if not tokens:
        return []
    spans = []
    step = chunk_tokens - overlap_tokens
    start = 0
    while True:
        window = tokens[start : start + chunk_tokens]
        spans.append((window[0][0], window[-1][1]))
        if start + chunk_tokens >= len(tokens):
            break
        start += step
    return spans


def chunk_documents(
    documents: Sequence[tuple[str, str]],
    tokenizer: Any,
    *,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap: float = DEFAULT_OVERLAP,
) -> list[Chunk]:
    """Chunks of every (doc_id, text), using a `tokenizers.Tokenizer` (batch-encoded: it is the fast path)."""
    overlap_tokens = round(chunk_tokens * overlap)
    encodings = tokenizer.encode_batch([text for _, text in documents], add_special_tokens=False)
    chunks: list[Chunk] = []
    for (doc_id, text), encoding in zip(documents, encodings, strict=True):
        for index, (start, end) in enumerate(chunk_offsets(encoding.offsets, chunk_tokens, overlap_tokens)):
            chunks.append(Chunk(doc_id, index, start, end, text[start:end]))
    return chunks
