"""Bringing a collection in line with its source table: embed and upsert only what changed, delete what left.

Point ids are uuid5 of a stable key (document + chunk, or document + entity), and every point carries the hash of
what was embedded, so a second run over unchanged data embeds nothing and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from oprag_pipeline.index.vector_store import IndexPoint, VectorStore, point_uuid

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
    points: Sequence[SourcePoint],
    *,
    batch_size: int = 256,
    log: Callable[[str], None] = lambda message: None,
) -> SyncSummary:
    started = time.perf_counter()
    store.ensure_collection(name, embedder.dim)
    desired: dict[str, tuple[str, SourcePoint]] = {}
    for point in points:
        desired[point_uuid(point.key)] = (point_hash(point.text, point.payload), point)
    existing = store.existing_payload_hashes(name)
    changed = [pid for pid, (h, _) in desired.items() if existing.get(pid) != h]
    removed = [pid for pid in existing if pid not in desired]
    log(f"{name}: {len(desired):,} points wanted, {len(changed):,} to embed and write, {len(removed):,} to delete")
    written = 0
    for start in range(0, len(changed), batch_size):
        ids = changed[start : start + batch_size]
        sources = [desired[pid] for pid in ids]
        texts = [source.text for _, source in sources]
        dense = embedder.embed_dense(texts)
        sparse = embedder.embed_sparse(texts)
        batch = [
            IndexPoint(
                id=pid,
                dense=dense[i],
                sparse=sparse[i],
                payload={**source.payload, "point_key": source.key, "text": source.text, "content_hash": h},
            )
            for i, (pid, (h, source)) in enumerate(zip(ids, sources, strict=True))
        ]
        store.upsert(name, batch)
        written += len(batch)
        if (start // batch_size) % 20 == 0 or written == len(changed):
            elapsed = time.perf_counter() - started
            log(f"{name}: {written:,}/{len(changed):,} points written ({written / elapsed:,.0f} points/s)")
    if removed:
        store.delete(name, removed)
    return SyncSummary(
        desired=len(desired),
        written=written,
        deleted=len(removed),
        unchanged=len(desired) - len(changed),
        seconds=time.perf_counter() - started,
    )
