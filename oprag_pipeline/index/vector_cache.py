"""Embed each distinct text once: a content-hash → dense-vector store shared by every KB, domain and run.

The same words are indexed many times over: a sentence that names three entities is three entity-split points, the
enriched KB repeats the same few metadata headers on millions of documents, and a re-run after a small change
re-indexes points whose text did not change (their payload did). The encoder pass is the pipeline's dominant cost,
so `CachedDenseEncoder` embeds only texts no earlier call (in this process or any earlier run) has embedded, and
reads the others' vectors back.

Storage: one folder per model variant (a vector from another model or precision must never be reused), holding
immutable parts, each a pair of NumPy files, `part-<id>.keys.npy` (n × 2 uint64: the 128-bit BLAKE2b of the text)
and `part-<id>.vectors.npy` (n × dim float32). Parts are written to a temporary name and renamed, so processes
running side by side (Dagster's multiprocess executor) add parts without a lock and a reader never sees a half
part. Vectors are memory-mapped: a lookup reads the pages of its hits only. A part's keys stay sorted, so a lookup
is a binary search per part.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

# Vectors buffered before they are written as one part. 20,000 × 384 float32 is 30 MB: small enough to bound the
# memory the buffer takes, large enough that the 2.5M distinct texts of 229k reviews make ~125 parts, not thousands.
PART_VECTORS = 20_000
# ... and at least this often while vectors are being added: the buffer is what a killed process loses (a kill runs
# no `finally`), so a run killed while embedding re-embeds at most the last half-minute's texts (plus the batch in
# hand), not up to 20,000 of them. At ~100 texts/s on two cores a part is then ~3,000 vectors; the per-part cost of
# a lookup (a binary search over its keys) stays small beside the encoder's.
FLUSH_SECONDS = 30.0
_PART_RE = re.compile(r"^part-([0-9a-f]{32})\.keys\.npy$")


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """(n, 2) uint64: the 128-bit BLAKE2b of each text's UTF-8 (64 bits alone would collide at ~1e-7 odds for
    millions of texts, and a collision silently swaps a vector)."""
    out = np.empty((len(texts), 2), dtype=np.uint64)
    for i, text in enumerate(texts):
        out[i] = np.frombuffer(hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest(), dtype=np.uint64)
    return out


def _unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct key, inverse map) for an (n, 2) uint64 key array."""
    _, first, inverse = np.unique(keys.view(np.dtype((np.void, 16))).ravel(), return_index=True, return_inverse=True)
    return first, inverse.ravel()


@dataclass
class _Part:
    keys: np.ndarray  # (n, 2) uint64, sorted by (keys[:, 0], keys[:, 1])
    vectors: np.ndarray  # (n, dim) float32, memory-mapped, rows aligned with keys


def _sorted_part(keys: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((keys[:, 1], keys[:, 0]))
    return np.ascontiguousarray(keys[order]), np.ascontiguousarray(vectors[order])


class VectorCache:
    """Dense vectors by text key under `folder` (one folder per model variant; see `CachedDenseEncoder`)."""

    def __init__(
        self,
        folder: Path,
        dim: int,
        *,
        part_vectors: int = PART_VECTORS,
        flush_seconds: float | None = FLUSH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.part_vectors = part_vectors
        self.flush_seconds = flush_seconds  # None: by count only
        self._clock = clock
        self._last_flush = clock()
        self._parts: dict[str, _Part] = {}
        self._pending_keys: list[np.ndarray] = []
        self._pending_vectors: list[np.ndarray] = []
        self._pending: dict[bytes, np.ndarray] = {}  # key bytes -> vector, for lookups before the next flush

    def refresh(self) -> None:
        """Open parts other processes (or earlier runs) wrote since the last call."""
        for entry in os.scandir(self.folder):
            match = _PART_RE.match(entry.name)
            if match and match.group(1) not in self._parts:
                part_id = match.group(1)
                vectors_path = self.folder / f"part-{part_id}.vectors.npy"
                if not vectors_path.exists():
                    continue  # its writer renames the keys file last; not complete yet
                keys = np.load(self.folder / entry.name)
                vectors = np.load(vectors_path, mmap_mode="r")
                if vectors.shape != (len(keys), self.dim):
                    raise ValueError(f"{vectors_path}: shape {vectors.shape}, expected ({len(keys)}, {self.dim})")
                self._parts[part_id] = _Part(keys, vectors)

    def __len__(self) -> int:
        return sum(len(p.keys) for p in self._parts.values()) + len(self._pending)

    def _locate(self, keys: np.ndarray) -> tuple[np.ndarray, list[tuple[_Part, np.ndarray, np.ndarray]]]:
        """(found mask (n,), [(part, indices into `keys`, rows of the part)]) over the written parts; no vector is
        read, so asking about millions of keys touches only the parts' small key arrays."""
        self.refresh()
        found = np.zeros(len(keys), dtype=bool)
        hits: list[tuple[_Part, np.ndarray, np.ndarray]] = []
        for part in self._parts.values():
            todo = np.flatnonzero(~found)
            if not len(todo):
                break
            left = np.searchsorted(part.keys[:, 0], keys[todo, 0], side="left")
            right = np.searchsorted(part.keys[:, 0], keys[todo, 0], side="right")
            # Almost always one candidate row per key (the high 64 bits differ); the loop covers the rest.
            single = np.flatnonzero((right - left == 1) & (part.keys[np.minimum(left, len(part.keys) - 1), 1]
                                                              == keys[todo, 1]))  # fmt: skip
            indices, rows = list(todo[single]), list(left[single])
            for j in np.flatnonzero(right - left > 1):
                for row in range(left[j], right[j]):
                    if part.keys[row, 1] == keys[todo[j], 1]:
                        indices.append(todo[j])
                        rows.append(row)
                        break
            if indices:
                found[indices] = True
                hits.append((part, np.asarray(indices, dtype=np.int64), np.asarray(rows, dtype=np.int64)))
        return found, hits

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """(n,) bool: which keys have a vector (written or buffered), without reading any vector."""
        found, _ = self._locate(keys)
        if self._pending:
            for i in np.flatnonzero(~found):
                found[i] = keys[i].tobytes() in self._pending
        return found

    def get(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found mask (n,), vectors (n, dim)); rows not found are zero."""
        found, hits = self._locate(keys)
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        for part, indices, rows in hits:
            order = np.argsort(rows)  # memory-mapped rows read in file order
            out[indices[order]] = part.vectors[rows[order]]
        if self._pending:
            for i in np.flatnonzero(~found):
                hit = self._pending.get(keys[i].tobytes())
                if hit is not None:
                    out[i] = hit
                    found[i] = True
        return found, out

    def put(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors (keys not already stored); written as a part once `part_vectors` are buffered, or once
        `flush_seconds` have passed since the last part was written (or the cache opened)."""
        if not len(keys):
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        self._pending_keys.append(np.array(keys, dtype=np.uint64))
        self._pending_vectors.append(vectors)
        for key, vector in zip(keys, vectors, strict=True):
            self._pending[key.tobytes()] = vector
        if len(self._pending) >= self.part_vectors or (
            self.flush_seconds is not None and self._clock() - self._last_flush >= self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write the buffered vectors as one part (keys file renamed last: a reader only opens complete parts)."""
        self._last_flush = self._clock()
        if not self._pending_keys:
            return
        keys, vectors = _sorted_part(np.concatenate(self._pending_keys), np.concatenate(self._pending_vectors))
        part_id = uuid.uuid4().hex
        for suffix, array in (("vectors", vectors), ("keys", keys)):
            tmp = self.folder / f".part-{part_id}.{suffix}.tmp.npy"
            np.save(tmp, array)
            os.replace(tmp, self.folder / f"part-{part_id}.{suffix}.npy")
        self._pending_keys, self._pending_vectors, self._pending = [], [], {}
        self._parts[part_id] = _Part(keys, np.load(self.folder / f"part-{part_id}.vectors.npy", mmap_mode="r"))
        logger.debug("vector cache %s: wrote a part of %d vectors", self.folder, len(keys))


@dataclass
class EncodeStats:
    """What the encoder did: texts asked for, distinct among them, and distinct ones actually embedded."""

    requested: int = 0
    distinct: int = 0
    embedded: int = 0
    seconds_embedding: float = 0.0

    @property
    def reused(self) -> int:
        return self.requested - self.embedded


def cache_folder_name(embedder: Any) -> str:
    """A folder name that changes whenever the vectors would: the model, and for the offline MiniLM the folder
    actually loaded (its precision, after any fallback to fp32) and its recipe."""
    from oprag_pipeline import embedding_models

    parts = [embedder.model_name]
    if embedder.is_offline_default:
        folder = embedding_models.ensure_dense_model_dir(embedder.precision)
        parts += [folder.name, f"recipe{embedding_models.DENSE_RECIPE}"]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))


class CachedDenseEncoder:
    """`embed_dense` with each distinct text embedded at most once, across calls and (with a cache) across runs.

    Vectors come back in input order; a text repeated within a call, or met in an earlier call or run, is looked up
    instead of encoded. Without a cache folder, only repeats within this object's lifetime are saved (an in-memory
    cache). Composed vectors (`embed_composed`) are built from the parts' cached vectors.
    """

    def __init__(
        self,
        embedder: Any,
        cache_root: Path | None,
        *,
        part_vectors: int = PART_VECTORS,
        flush_seconds: float | None = FLUSH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import tempfile

        self.embedder = embedder
        self.dim = int(embedder.dim)
        self._tmp = None
        if cache_root is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="oprag-vectors-")
            cache_root = Path(self._tmp.name)
        self.cache = VectorCache(
            Path(cache_root) / cache_folder_name(embedder),
            self.dim,
            part_vectors=part_vectors,
            flush_seconds=flush_seconds,
            clock=clock,
        )
        self.stats = EncodeStats()
        self._tokenizer: Any = None

    def embed_dense(self, texts: Sequence[str]) -> np.ndarray:
        """Document vectors for `texts` (float32, L2-normalised rows), embedding only texts never seen before."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = text_keys(texts)
        first, inverse = _unique_rows(keys)
        found, vectors = self.cache.get(keys[first])
        missing = np.flatnonzero(~found)
        if len(missing):
            started = time.perf_counter()
            fresh = self.embedder.embed_dense([texts[first[i]] for i in missing])
            self.stats.seconds_embedding += time.perf_counter() - started
            vectors[missing] = fresh
            self.cache.put(keys[first[missing]], fresh)
        self.stats.requested += len(texts)
        self.stats.distinct += len(first)
        self.stats.embedded += len(missing)
        return vectors[inverse]

    def token_counts(self, texts: Sequence[str]) -> np.ndarray:
        """Word pieces per text as the encoder sees them (special tokens excluded, truncated at its limit)."""
        from tokenizers import Tokenizer

        from oprag_pipeline.embedding_models import DEFAULT_PRECISION, MAX_TOKENS, ensure_dense_model_dir

        if self._tokenizer is None:
            precision = getattr(self.embedder, "precision", DEFAULT_PRECISION)
            self._tokenizer = Tokenizer.from_file(str(ensure_dense_model_dir(precision) / "tokenizer.json"))
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return np.minimum(np.array([len(e.ids) for e in encoded], dtype=np.float32), MAX_TOKENS - 2)

    def embed_composed(self, parts: Sequence[Sequence[str]]) -> np.ndarray:
        """Vectors for texts given as their parts (e.g. a metadata header and a text), from the parts' vectors
        instead of the whole text's.

        MiniLM's sentence vector is the mean of its token vectors, so a whole text's vector is close to the
        token-count-weighted mean of its parts' vectors (what is lost is the attention across the boundaries). Each
        part's vector is cached, so the few distinct metadata headers of the enriched KB are encoded once, and its
        texts are the entity-split KB's. How close this comes to the joint embedding is measured, not assumed:
        `benchmarks/bench_pipeline.py` prints the top-k overlap on the evaluation questions.
        """
        flat = [part for item in parts for part in item]
        owner = np.repeat(np.arange(len(parts)), [len(item) for item in parts])
        weighted = self.embed_dense(flat) * self.token_counts(flat)[:, None]
        mixed = np.zeros((len(parts), self.dim), dtype=np.float32)
        np.add.at(mixed, owner, weighted)
        return mixed / np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12)

    def flush(self) -> None:
        self.cache.flush()

    def close(self) -> None:
        self.flush()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
