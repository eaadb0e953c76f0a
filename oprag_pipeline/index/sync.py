"""Bringing a collection in line with its source table: embed and upsert only what changed, delete what left.

Point ids are uuid5 of a stable key (document + chunk, or document + entity), and every point carries the hash of
what was embedded, so a second run over unchanged data embeds nothing and writes nothing. A run killed part way
resumes where it stopped: the points it wrote carry their hash and are left alone, and the vectors it embedded are
in the vector cache (`vector_cache.py`), which also keeps any text from being embedded twice, in any KB or run.

The source is read twice rather than held: a first pass keeps only each point's id and hash (what the diff needs),
a second pass embeds and writes the changed points batch by batch. A corpus of 229k reviews has millions of
per-entity documents, and holding their texts and payloads as Python objects took more memory than the engine.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oprag_pipeline.index.vector_cache import CachedDenseEncoder, text_keys
from oprag_pipeline.index.vector_store import IndexPoint, VectorStore, batched, point_uuid
from oprag_pipeline.progress import Progress

KBS = ("raw", "entity_split", "enriched")


def collection_name(domain: str, kb: str) -> str:
    if kb not in KBS:
        raise ValueError(f"unknown knowledge base {kb!r}; choose one of {', '.join(KBS)}")
    return f"{domain}.{kb}_kb"


# Changed points embedded together: the cache is asked once per window and the encoder batches by length within
# it; small enough that a progress line comes every few seconds on a fast machine (~8 s at 130 texts/s) and the
# window's vectors and payloads stay a few MB. Repeats across windows are found in the cache.
EMBED_WINDOW = 1024


@dataclass(frozen=True)
class SourcePoint:
    """One point to index. `text` is stored, BM25-encoded and (by default) embedded whole. With `dense_parts`
    (which joined give `text`), the dense vector is composed from the parts' vectors instead
    (`CachedDenseEncoder.embed_composed`)."""

    key: str
    text: str
    payload: dict[str, Any]
    dense_parts: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SyncSummary:
    desired: int
    written: int
    deleted: int
    unchanged: int
    seconds: float
    embedded: int = 0  # distinct texts this sync sent through the encoder (the rest came from the vector cache)

    @property
    def points_per_second(self) -> float:
        return self.written / self.seconds if self.seconds else 0.0


def point_hash(text: str, payload: dict[str, Any], dense_parts: tuple[str, ...] | None = None) -> str:
    """What a point's stored form depends on; a composed vector differs from the joint one, so it hashes apart."""
    body = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False)
    composed = "" if dense_parts is None else "\x1ecomposed:" + ",".join(str(len(p)) for p in dense_parts)
    return hashlib.blake2b(f"{text}\x1f{body}{composed}".encode(), digest_size=12).hexdigest()


def dense_vectors(encoder: CachedDenseEncoder, points: Sequence[SourcePoint]) -> np.ndarray:
    """The dense vector of each point: composed from its parts where it has them, else its whole text's."""
    out = np.empty((len(points), encoder.dim), dtype=np.float32)
    whole = [i for i, p in enumerate(points) if p.dense_parts is None]
    parted = [i for i, p in enumerate(points) if p.dense_parts is not None]
    if whole:
        out[whole] = encoder.embed_dense([points[i].text for i in whole])
    if parted:
        out[parted] = encoder.embed_composed([points[i].dense_parts for i in parted])  # type: ignore[misc]
    return out


def dense_texts(point: SourcePoint) -> tuple[str, ...]:
    """The texts `dense_vectors` asks the encoder for to give `point` its vector: its parts, or its whole text.
    The embedding shards (`embed_shards.py`) embed exactly these ahead of the sync."""
    return point.dense_parts if point.dense_parts is not None else (point.text,)


def sparse_vectors(embedder: Any, texts: Sequence[str]) -> list:
    """BM25 vectors, each distinct text encoded once."""
    keys = text_keys(texts).view(np.dtype((np.void, 16))).ravel()
    first: dict[bytes, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key.tobytes(), i)
    distinct = list(first.values())
    encoded = dict(zip(distinct, embedder.embed_sparse([texts[i] for i in distinct]), strict=True))
    return [encoded[first[key.tobytes()]] for key in keys]


def sync_collection(
    store: VectorStore,
    embedder: Any,
    name: str,
    points: Sequence[SourcePoint] | Callable[[], Iterable[SourcePoint]],
    *,
    batch_size: int = 256,
    log: Callable[[str], None] = lambda message: None,
    encoder: CachedDenseEncoder | None = None,
    window: int = EMBED_WINDOW,
) -> SyncSummary:
    """Make collection `name` hold exactly `points`. `points` is a sequence, or a function that returns a fresh
    iterator over them on each call (it is called twice; both calls must yield the same points).

    Dense vectors go through `encoder` (default: one with an in-memory cache for this call), so each distinct text
    is embedded once; pass one with a persistent cache to reuse vectors across KBs and runs."""
    started = time.perf_counter()
    read: Callable[[], Iterable[SourcePoint]] = points if callable(points) else lambda: points
    own_encoder = encoder is None
    encoder = encoder or CachedDenseEncoder(embedder, None)
    embedded_before = encoder.stats.embedded
    store.ensure_collection(name, embedder.dim)
    desired: dict[str, str] = {}
    for point in read():
        pid = point_uuid(point.key)
        if pid in desired:
            raise ValueError(f"{name}: duplicate point key {point.key!r} in the source; keys must be unique")
        desired[pid] = point_hash(point.text, point.payload, point.dense_parts)
    existing = store.existing_payload_hashes(name)
    changed = {pid for pid, h in desired.items() if existing.get(pid) != h}
    removed = [pid for pid in existing if pid not in desired]
    log(f"{name}: {len(desired):,} points wanted, {len(changed):,} to embed and write, {len(removed):,} to delete")
    written = 0
    progress = Progress(f"{name}: points written", len(changed), log)
    try:
        if changed:
            changed_points = ((pid, point) for point in read() if (pid := point_uuid(point.key)) in changed)
            for chunk in batched(changed_points, window):
                window_points = [point for _, point in chunk]
                dense = dense_vectors(encoder, window_points)
                sparse = sparse_vectors(embedder, [point.text for point in window_points])
                for start in range(0, len(chunk), batch_size):
                    store.upsert(
                        name,
                        [
                            IndexPoint(
                                id=pid,
                                dense=dense[i],
                                sparse=sparse[i],
                                payload={
                                    **point.payload,
                                    "point_key": point.key,
                                    "text": point.text,
                                    "content_hash": desired[pid],
                                },
                            )
                            for i, (pid, point) in enumerate(chunk[start : start + batch_size], start=start)
                        ],
                    )
                written += len(chunk)
                progress.advance(
                    len(chunk), f"; {encoder.stats.embedded - embedded_before:,} texts embedded, rest reused"
                )
    finally:
        encoder.flush()  # what was embedded survives a failure: a re-run reads it back instead
        if own_encoder:
            encoder.close()
    if written != len(changed):
        raise RuntimeError(
            f"{name}: the second read of the source gave {written:,} changed points, the first {len(changed):,}; "
            "the source changed between the reads"
        )
    if removed:
        store.delete(name, removed)
    return SyncSummary(
        desired=len(desired),
        written=written,
        deleted=len(removed),
        unchanged=len(desired) - len(changed),
        seconds=time.perf_counter() - started,
        embedded=encoder.stats.embedded - embedded_before,
    )
