"""Bringing a collection in line with its source table: embed and upsert only what changed, delete what left.

Point ids are uuid5 of a stable key (document + chunk, or document + entity), and every point carries the hash of
what was embedded, so a second run over unchanged data embeds nothing and writes nothing.

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

from oprag_pipeline.index.vector_store import IndexPoint, VectorStore, batched, point_uuid

KBS = ("raw", "entity_split", "enriched")


def collection_name(domain: str, kb: str) -> str:
    if kb not in KBS:
        raise ValueError(f"unknown knowledge base {kb!r}; choose one of {', '.join(KBS)}")
    return f"{domain}.{kb}_kb"


@dataclass(frozen=True)
class SourcePoint:
    key: str
    text: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class SyncSummary:
    desired: int
    written: int
    deleted: int
    unchanged: int
    seconds: float

    @property
    def points_per_second(self) -> float:
        return self.written / self.seconds if self.seconds else 0.0


def point_hash(text: str, payload: dict[str, Any]) -> str:
    body = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.blake2b(f"{text}\x1f{body}".encode(), digest_size=12).hexdigest()


def sync_collection(
    store: VectorStore,
    embedder: Any,
    name: str,
    points: Sequence[SourcePoint] | Callable[[], Iterable[SourcePoint]],
    *,
    batch_size: int = 256,
    log: Callable[[str], None] = lambda message: None,
) -> SyncSummary:
    """Make collection `name` hold exactly `points`. `points` is a sequence, or a function that returns a fresh
    iterator over them on each call (it is called twice; both calls must yield the same points)."""
    started = time.perf_counter()
    read: Callable[[], Iterable[SourcePoint]] = points if callable(points) else lambda: points
    store.ensure_collection(name, embedder.dim)
    desired: dict[str, str] = {}
    for point in read():
        pid = point_uuid(point.key)
        if pid in desired:
            raise ValueError(f"{name}: duplicate point key {point.key!r} in the source; keys must be unique")
        desired[pid] = point_hash(point.text, point.payload)
    existing = store.existing_payload_hashes(name)
    changed = {pid for pid, h in desired.items() if existing.get(pid) != h}
    removed = [pid for pid in existing if pid not in desired]
    log(f"{name}: {len(desired):,} points wanted, {len(changed):,} to embed and write, {len(removed):,} to delete")
    written = 0
    if changed:
        changed_points = ((pid, point) for point in read() if (pid := point_uuid(point.key)) in changed)
        for batch in batched(changed_points, batch_size):
            texts = [point.text for _, point in batch]
            dense = embedder.embed_dense(texts)
            sparse = embedder.embed_sparse(texts)
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
                    for i, (pid, point) in enumerate(batch)
                ],
            )
            written += len(batch)
            if (written // batch_size) % 20 == 1 or written == len(changed):
                elapsed = time.perf_counter() - started
                log(f"{name}: {written:,}/{len(changed):,} points written ({written / elapsed:,.0f} points/s)")
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
    )
