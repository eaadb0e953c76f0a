"""Synthetic opinion corpus with planted ground truth (`oprag generate-demo`): blocks, worker processes and files.

Why this exists: the pipeline must run (and be measurable) without any external data. The generator writes input
files in the ordinary input contract (`raw/<domain>/demo-NNNNN.jsonl`) plus the planted truth
(`truth/<domain>/`): per-mention opinion attributes with character offsets, per-document author attributes, and
the *designed* per-entity opinion distributions (near-unanimous, split, three-way, one marked ~10% minority, one
shift over time). Benchmarks compare what the pipeline extracts and retrieves against that truth.

Determinism without a global RNG stream: documents are produced in fixed-size blocks, each with its own RNG seeded
from (seed, domain, block). Output is byte-identical for a given seed and size whatever the number of worker
processes, and blocks can be generated in parallel.

The parts: `templates.py` compiles the phrase banks, `mentions.py` draws and voices each opinion, `documents.py`
composes a document around them, `authors.py` assigns authors and dates, `truth.py` writes the rows and truth.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.context
import os
import re
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oprag_pipeline.demo.authors import Author, make_authors
from oprag_pipeline.demo.documents import DocWriter
from oprag_pipeline.demo.truth import entities_truth

DOMAINS: tuple[str, ...] = ("hotels", "seller_forum")
SHARD_DOCS = 100_000
BLOCK_DOCS = 2_000
PARALLEL_MIN_DOCS = 40_000
SHARD_PREFIX = "demo-"
_SHARD_RE = re.compile(rf"{SHARD_PREFIX}\d{{5}}\.jsonl")  # only our own shards count as stale

if SHARD_DOCS % BLOCK_DOCS:
    raise AssertionError("BLOCK_DOCS must divide SHARD_DOCS so that no block straddles two shards")


@dataclass
class DemoResult:
    """What `generate_demo` wrote: documents per domain, input shards and truth files."""

    domains: dict[str, int]
    files: list[Path]
    truth_files: list[Path]
    seconds: float = 0.0
    mentions: dict[str, int] = field(default_factory=dict)

    @property
    def docs_per_second(self) -> float:
        """Throughput, for the CLI summary and benchmarks."""
        total = sum(self.domains.values())
        return total / self.seconds if self.seconds > 0 else float("inf")


@dataclass(frozen=True, slots=True)
class _BlockTask:
    domain: str
    seed: int
    block: int
    start: int
    id_width: int
    authors: tuple[Author, ...]


_BlockResult = tuple[bytes, bytes, bytes, int]


def _generate_block(task: _BlockTask) -> _BlockResult:
    """Worker entry point: one block of documents as encoded JSONL chunks (input, mentions, documents)."""
    writer = DocWriter(task.domain, task.seed, task.block)
    raw: list[str] = []
    mention_lines: list[str] = []
    doc_lines: list[str] = []
    total_mentions = 0
    prefix = task.domain
    width = task.id_width
    for offset, author in enumerate(task.authors):
        doc_id = f"{prefix}-{task.start + offset + 1:0{width}d}"
        row, lines, doc, n = writer.document(doc_id, author)
        raw.append(row)
        mention_lines.extend(lines)
        doc_lines.append(doc)
        total_mentions += n
    encode = "\n".join
    return (
        (encode(raw) + "\n").encode(),
        (encode(mention_lines) + "\n").encode(),
        (encode(doc_lines) + "\n").encode(),
        total_mentions,
    )


def _ordered(
    fn: Callable[[_BlockTask], _BlockResult],
    tasks: Iterator[_BlockTask],
    executor: Executor | None,
    window: int,
) -> Iterator[_BlockResult]:
    """Results in task order with at most `window` blocks in flight (bounded memory).

    If the worker pool breaks (a worker cannot start, e.g. `spawn` cannot re-import a `__main__` read from
    stdin), the remaining blocks are generated in this process; blocks are seeded independently, so the
    output is the same bytes either way.
    """
    if executor is None:
        for task in tasks:
            yield fn(task)
        return
    pending: deque[tuple[_BlockTask, Future[_BlockResult]]] = deque()
    broken = False

    def fill() -> None:
        while len(pending) < window:
            task = next(tasks, None)
            if task is None:
                return
            pending.append((task, executor.submit(fn, task)))

    fill()
    while pending:
        task, future = pending.popleft()
        result: _BlockResult | None = None
        if not broken:
            try:
                result = future.result()
            except BrokenProcessPool:
                broken = True
                warnings.warn("demo generator worker processes failed; continuing in-process", stacklevel=3)
        if result is None:
            result = fn(task)
        else:
            fill()
        yield result
    for task in tasks:
        yield fn(task)


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp")


def _write_domain(
    data_dir: Path, domain: str, n_docs: int, seed: int, executor: Executor | None, window: int, bar: Any
) -> tuple[list[Path], list[Path], int]:
    raw_dir = data_dir / "raw" / domain
    truth_dir = data_dir / "truth" / domain
    raw_dir.mkdir(parents=True, exist_ok=True)
    truth_dir.mkdir(parents=True, exist_ok=True)
    authors, doc_authors = make_authors(domain, n_docs, seed)
    width = max(6, len(str(n_docs)))

    def tasks() -> Iterator[_BlockTask]:
        for block, start in enumerate(range(0, n_docs, BLOCK_DOCS)):
            stop = min(n_docs, start + BLOCK_DOCS)
            yield _BlockTask(domain, seed, block, start, width, tuple(authors[a] for a in doc_authors[start:stop]))

    shards: list[Path] = []
    mentions_path = truth_dir / "mentions.jsonl"
    documents_path = truth_dir / "documents.jsonl"
    entities_path = truth_dir / "entities.json"
    total_mentions = 0
    shard_handle = None
    try:
        with _tmp(mentions_path).open("wb") as mentions_out, _tmp(documents_path).open("wb") as documents_out:
            done = 0
            for raw, mention_bytes, doc_bytes, n_mentions in _ordered(_generate_block, tasks(), executor, window):
                if done % SHARD_DOCS == 0:
                    if shard_handle is not None:
                        shard_handle.close()
                        _tmp(shards[-1]).replace(shards[-1])
                    shards.append(raw_dir / f"{SHARD_PREFIX}{len(shards) + 1:05d}.jsonl")
                    shard_handle = _tmp(shards[-1]).open("wb")
                assert shard_handle is not None
                shard_handle.write(raw)
                mentions_out.write(mention_bytes)
                documents_out.write(doc_bytes)
                total_mentions += n_mentions
                block_docs = min(BLOCK_DOCS, n_docs - done)
                done += block_docs
                if bar is not None:
                    bar.update(block_docs)
            if shard_handle is not None:
                shard_handle.close()
                shard_handle = None
                _tmp(shards[-1]).replace(shards[-1])
        _tmp(mentions_path).replace(mentions_path)
        _tmp(documents_path).replace(documents_path)
        _tmp(entities_path).write_text(json.dumps(entities_truth(domain), indent=2) + "\n", encoding="utf-8")
        _tmp(entities_path).replace(entities_path)
    finally:
        if shard_handle is not None:
            shard_handle.close()
    keep = set(shards)
    for stale in raw_dir.glob(f"{SHARD_PREFIX}*.jsonl"):
        if stale not in keep and _SHARD_RE.fullmatch(stale.name):
            stale.unlink()
    for leftover in raw_dir.glob(f".{SHARD_PREFIX}*.jsonl.tmp"):
        leftover.unlink()
    return shards, [mentions_path, documents_path, entities_path], total_mentions


def _mp_context() -> multiprocessing.context.BaseContext:
    """`fork` where it is safe (Linux, caller has no other threads): no re-import of `__main__`, instant start.
    Otherwise `spawn`, because forking a process that holds threads (Dagster, web servers) can deadlock."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def split_docs(docs: int, domains: Sequence[str]) -> dict[str, int]:
    """`docs` is the total; split it evenly, the remainder going to the first domains."""
    base, extra = divmod(docs, len(domains))
    return {d: base + (1 if i < extra else 0) for i, d in enumerate(domains)}


def generate_demo(
    data_dir: Path,
    *,
    docs: int = 2000,
    seed: int = 7,
    domains: Sequence[str] = DOMAINS,
    progress: bool = False,
    workers: int | None = None,
) -> DemoResult:
    """Write a synthetic corpus with planted opinions to `<data_dir>/raw/<domain>/` and its truth to `truth/`.

    Same `seed` and `docs` give byte-identical files (independently of `workers`). Earlier demo shards of the
    same domain are replaced; other files in the domain folder are left alone. `workers` defaults to the CPU
    count for large corpora and to in-process generation for small ones (process start-up would dominate).
    """
    domains = tuple(domains)
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown or not domains:
        raise ValueError(f"unknown demo domain(s) {unknown or domains!r}; choose from {', '.join(DOMAINS)}")
    if len(set(domains)) != len(domains):
        raise ValueError(f"duplicate domains in {domains!r}")
    if docs < 0:
        raise ValueError("docs must be >= 0")
    data_dir = Path(data_dir)
    per_domain = split_docs(docs, domains)
    if workers is None:
        workers = min(os.cpu_count() or 1, 8) if docs >= PARALLEL_MIN_DOCS else 1
    started = time.perf_counter()
    files: list[Path] = []
    truth_files: list[Path] = []
    mention_counts: dict[str, int] = {}
    executor: ProcessPoolExecutor | None = None
    bar = None
    try:
        if workers > 1:
            executor = ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context())
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=docs, unit="doc", desc="generate-demo")
        for domain in domains:
            shards, truth, n_mentions = _write_domain(
                data_dir, domain, per_domain[domain], seed, executor, max(2, 2 * workers), bar
            )
            files.extend(shards)
            truth_files.extend(truth)
            mention_counts[domain] = n_mentions
    finally:
        if bar is not None:
            bar.close()
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    return DemoResult(
        domains=per_domain,
        files=files,
        truth_files=truth_files,
        seconds=time.perf_counter() - started,
        mentions=mention_counts,
    )
