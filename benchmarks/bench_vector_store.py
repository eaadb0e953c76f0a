"""Vector-store benchmark: the embedded Edge adapter against qdrant-client's local mode, same data, same queries.

Why: the pipeline defaults to `EdgeVectorStore` (Qdrant's engine in process) because qdrant-client's local mode is a
Python brute-force scan; this measures by how much, on the workload retrieval evaluation runs — hybrid (dense +
BM25 sparse, RRF-fused) top-k queries filtered by sentiment and entity.

For each size N, each adapter runs in its own subprocess (so peak RSS is its own) on the same data, streamed in
batches of 10,000 as the pipeline's index assets stream theirs:
* generated (default): random 384-d unit vectors, 30-term sparse vectors over a Zipf-like vocabulary, payloads with
  the fields the pipeline indexes (domain, doc_id, entity_id among 500 entities, sentiment, author_* attributes,
  content_hash, ~300 characters of text);
* `--corpus <TripAdvisor Texts folder>`: each review split into up to 3 runs of sentences, one point each (the
  enriched KB's shape: up to 3 entity documents per review, 548k points for the whole corpus, `--sizes ...,all`), with
  the real text, the project's BM25 vectors of it and real doc ids, years and review sentiment; entity ids (1 of
  500) and dense vectors are random — embedding 550k texts takes over an hour on this machine, and a random vector costs
  the engine the same to store, index and search.
Measured: upsert points/s (preparing the data is timed apart), index build (the final `optimize`: HNSW for Edge,
nothing for the client; Edge also indexes while writing, see `_EDGE_OPTIMIZE_EVERY`), hybrid filtered query latency
p50/p95 (sentiment = one value AND entity_id in 5 of 500: ~0.3% of points; query sources are a uniform sample of
the points), unfiltered semantic p50, segments after indexing, close, reopen and the first `--cold-queries` hybrid
filtered queries after the store's files were evicted from the page cache (cold), on-disk size, peak RSS (VmHWM, which
also counts touched pages of memory-mapped files) with the sampled peaks of anonymous and file-backed memory, and the
overlap of the two adapters' top-k lists (the client's local mode is exact, so this is also Edge's recall on these
queries). `--adapters edge,edge-int8` compares Edge with and without an int8 copy of the dense vectors in RAM
(`OPRAG_QDRANT_QUANTIZATION=int8`) and prints the overlap of their top-k lists; `edge-int8` also runs its queries
with the 8-bit copy ignored, a float baseline on the same segments.
qdrant-client's local mode runs only up to 100k points, and each adapter stops querying once
`--max-query-seconds` is spent (the count is printed).

    .venv/bin/python benchmarks/bench_vector_store.py [--points 10000 | --sizes 10000,100000] [--queries 200]
        [--k 20] [--dim 384] [--dir FOLDER] [--max-query-seconds 300] [--cold-queries 50]
        [--adapters edge,edge-int8,client-local]
        [--corpus ../shared/data/tripadvisor_hotels/Texts [--sizes 10000,100000,250000,all]]

The folder defaults to a temporary folder (the system temp dir) (`--dir` to choose; it is removed afterwards unless
`--keep`). The machine may be shared: read the figures as orders of magnitude between adapters.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oprag_pipeline.enrich.aspect_model import _SENTENCE_END as SENTENCE_END  # noqa: E402  (the extractor's splitter)
from oprag_pipeline.index.vector_store import (  # noqa: E402
    ClientVectorStore,
    CollectionOptions,
    EdgeVectorStore,
    IndexPoint,
    VectorStore,
    point_uuid,
)

COLLECTION = "bench"
CLIENT_LOCAL_MAX_POINTS = 100_000
ALL = 10**9  # "--sizes all": as many points as the corpus gives
N_ENTITIES = 500
VOCAB = 50_000
TERMS_PER_DOC = 30
SENTIMENTS = ("positive", "neutral", "negative")
TRAVELLERS = ("family", "couple", "business", "solo", "friends")
WORDS = (
    "room clean staff friendly breakfast noisy check-in slow pool wifi bed comfortable location station price "
    "value view bathroom shower small quiet helpful rude dirty parking bar restaurant dinner lobby lift night"
).split()


# --------------------------------------------------------------------------------------------------------------
# Data (identical in every worker: everything is derived from the seed)
# --------------------------------------------------------------------------------------------------------------


GEN_BATCH = 10_000  # points are generated batch by batch from (seed, batch number), as the pipeline streams them


@lru_cache(maxsize=1)
def vocabulary(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Term ids (murmur3-like, as BM25 produces) and the Zipf CDF over them, shared by every batch."""
    rng = np.random.default_rng(seed)
    vocab_ids = rng.choice(2**31 - 1, size=VOCAB, replace=False)
    cdf = np.cumsum(1.0 / np.arange(1, VOCAB + 1))
    return vocab_ids, cdf / cdf[-1]


def make_batch(start: int, count: int, dim: int, seed: int) -> list[IndexPoint]:
    """Points start .. start+count-1 (start a multiple of GEN_BATCH): the same points whatever else is generated,
    so a worker never holds the whole data set (at 700k points that alone was 2.4 GB of the peak RSS)."""
    vocab_ids, cdf = vocabulary(seed)
    rng = np.random.default_rng([seed, start // GEN_BATCH])
    dense = rng.standard_normal((count, dim), dtype=np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    draws = np.searchsorted(cdf, rng.random((count, TERMS_PER_DOC + 10)))  # Zipf ranks; repeats collapse below
    entity = rng.integers(0, N_ENTITIES, size=count)
    sentiment = rng.integers(0, 3, size=count)
    traveller = rng.integers(0, len(TRAVELLERS), size=count)
    year = rng.integers(2010, 2021, size=count)
    words = np.array(WORDS)
    points = []
    for j in range(count):
        i = start + j
        text = " ".join(words[rng.integers(0, len(WORDS), size=50)])
        payload = {
            "domain": ("hotels", "forums", "restaurants")[i % 3],
            "doc_id": f"doc-{i // 2}",
            "entity_id": f"e{entity[j]}",
            "entity_name": f"entity {entity[j]}",
            "sentiment": SENTIMENTS[sentiment[j]],
            "intensity": ("low", "medium", "high")[i % 3],
            "author_traveller_type": TRAVELLERS[traveller[j]],
            "author_year": int(year[j]),
            "content_hash": f"{i:016x}",
            "text": text,
        }
        ranks = np.unique(draws[j])[:TERMS_PER_DOC]
        sparse = (vocab_ids[ranks], rng.uniform(0.8, 1.6, size=ranks.size).astype(np.float32))
        points.append(IndexPoint(point_uuid(f"bench/{i}"), dense[j], sparse, payload))
    return points


def iter_batches(n: int, dim: int, seed: int) -> Iterator[list[IndexPoint]]:
    for start in range(0, n, GEN_BATCH):
        yield make_batch(start, min(GEN_BATCH, n - start), dim, seed)


def corpus_batches(folder: Path, n: int, dim: int, seed: int) -> Iterator[list[IndexPoint]]:
    """Points from the TripAdvisor corpus: each review split into up to 3 runs of sentences, one point each — the
    shape of the enriched KB (one point per review and entity, the entity's sentences as text). Text, BM25 vectors,
    doc ids, years and sentiment (from the review's stars) are real; the entity (1 of 500) is drawn at random, since
    no extraction ran; the dense vector is random (see the module docstring)."""
    from oprag_pipeline.embeddings import OfflineEmbedder
    from oprag_pipeline.importers.common import ImportContext
    from oprag_pipeline.importers.tripadvisor import convert

    embedder = OfflineEmbedder()
    rng = np.random.default_rng(seed)
    written = 0
    pending: list[tuple[str, str, dict[str, Any]]] = []

    def flush() -> list[IndexPoint]:
        dense = rng.standard_normal((len(pending), dim), dtype=np.float32)
        dense /= np.linalg.norm(dense, axis=1, keepdims=True)
        sparse = embedder.embed_sparse([text for _, text, _ in pending])
        batch = [
            IndexPoint(point_uuid(key), dense[j], sparse[j], payload) for j, (key, _, payload) in enumerate(pending)
        ]
        pending.clear()
        return batch

    for _file, _line, row in convert(folder, ImportContext()):
        sentences = [x for x in SENTENCE_END.split(row["text"]) if x.strip()]
        rating = row.get("rating")
        sentiment = "neutral" if rating is None or rating == 3 else ("positive" if rating > 3 else "negative")
        for g, group in enumerate(np.array_split(np.array(sentences, dtype=object), min(3, len(sentences)))):
            entity = int(rng.integers(0, N_ENTITIES))
            payload = {
                "domain": "tripadvisor_hotels",
                "doc_id": row["doc_id"],
                "entity_id": f"e{entity}",
                "entity_name": f"entity {entity}",
                "sentiment": sentiment,
                "intensity": ("low", "medium", "high")[int(rng.integers(0, 3))],
                "author_year": int(row["created_at"][:4]) if row.get("created_at") else 0,
                "content_hash": f"{row['doc_id']}/{g}",
                "text": " ".join(group),
            }
            pending.append((f"bench/{row['doc_id']}/{g}", payload["text"], payload))
            written += 1
            if len(pending) == GEN_BATCH:
                yield flush()
            if written >= n:
                if pending:
                    yield flush()
                return
    if pending:
        yield flush()


class Reservoir:
    """A uniform sample of `size` points from a stream of unknown length (Algorithm R): the query sources."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seen, self.items = size, 0, []
        self._rng = np.random.default_rng(seed + 1)

    def offer(self, batch: list[IndexPoint]) -> None:
        for point in batch:
            self.seen += 1
            if len(self.items) < self.size:
                self.items.append(point)
            else:
                slot = int(self._rng.integers(0, self.seen))
                if slot < self.size:
                    self.items[slot] = point


def make_queries(sources: list[IndexPoint], seed: int) -> list[dict[str, Any]]:
    """Queries near existing points (noisy copies), with 5 of the point's own terms (weight 1, as a BM25 query),
    filtered to a sentiment and 5 entities (one of them the source point's, so most queries have matches)."""
    rng = np.random.default_rng(seed + 2)
    queries = []
    for src in sources:
        dense = src.dense + rng.standard_normal(src.dense.shape[0]).astype(np.float32) * 0.05
        dense /= np.linalg.norm(dense)
        indices = np.asarray(src.sparse[0])
        terms = rng.choice(indices, size=min(5, indices.size), replace=False)
        entities = [src.payload["entity_id"]] + [f"e{int(e)}" for e in rng.integers(0, N_ENTITIES, size=4)]
        queries.append(
            {
                "dense": dense,
                "sparse": (terms, np.ones(terms.size, dtype=np.float32)),
                "filters": {"sentiment": src.payload["sentiment"], "entity_id": sorted(set(entities))},
            }
        )
    return queries


# --------------------------------------------------------------------------------------------------------------
# One adapter, one size (runs in a subprocess)
# --------------------------------------------------------------------------------------------------------------


def rss_mb(field: str) -> float:
    """VmRSS (current) or VmHWM (peak) of this process in MB; ru_maxrss as the fallback off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RssSampler:
    """Peaks of anonymous and file-backed resident memory, sampled every 20 ms.

    Why both: VmHWM counts the pages of memory-mapped files the engine has touched, which the kernel can drop at
    will; anonymous memory is what the process really holds."""

    def __init__(self) -> None:
        self.peaks = {"RssAnon": 0.0, "RssFile": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for key in self.peaks:
                self.peaks[key] = max(self.peaks[key], rss_mb(key))
            self._stop.wait(0.02)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {"rss_anon_peak_mb": self.peaks["RssAnon"], "rss_file_peak_mb": self.peaks["RssFile"]}


def open_adapter(adapter: str, folder: Path) -> VectorStore:
    if adapter == "edge":
        return EdgeVectorStore(folder, optimize_on_close=False)
    if adapter == "edge-int8":  # OPRAG_QDRANT_QUANTIZATION=int8: an 8-bit copy of the dense vectors held in RAM
        return EdgeVectorStore(folder, optimize_on_close=False, options=CollectionOptions(quantization="int8"))
    from qdrant_client import QdrantClient

    return ClientVectorStore(QdrantClient(path=str(folder)))


def folder_mb(folder: Path) -> float:
    """Allocated size (like `du`): Edge preallocates sparse WAL and mmap files, so apparent sizes overstate it."""
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file()) / 1e6


def cached_mb(folder: Path) -> float:
    """MB of the folder's files resident in the page cache (`fincore`, util-linux), or NaN without it."""
    files = [str(p) for p in folder.rglob("*") if p.is_file() and p.stat().st_size]
    if not files or shutil.which("fincore") is None:
        return float("nan")
    proc = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *files],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return sum(int(v) for v in proc.stdout.split() if v.isdigit()) / 1e6


def evict_from_page_cache(folder: Path) -> float:
    """Drop the store's files from the page cache (`posix_fadvise(DONTNEED)`: dropping the whole cache needs root,
    which a benchmark should not ask for), so the next queries read from disk as after a reboot. Returns the MB
    that were cached before; `cached_mb` after the call says what the kernel kept."""
    before = cached_mb(folder)
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)  # dirty pages cannot be dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return before


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def float_on_the_same_segments(store: EdgeVectorStore, queries: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """The same queries on the same collection with its 8-bit copy used (rescored) and ignored (the float vectors
    searched alone), each query both ways in alternating order so neither pass warms the cache for the other: a
    float baseline on the very segments the int8 figures come from, without a second build of millions of
    points."""
    import qdrant_edge

    params = {
        "int8": store.dense_search_params,
        "ignored": qdrant_edge.SearchParams(quantization=qdrant_edge.QuantizationSearchParams(ignore=True)),
    }
    timings: dict[str, dict[str, list[float]]] = {way: {"hybrid": [], "semantic": []} for way in params}
    answers: dict[str, list[list[str]]] = {way: [] for way in params}
    try:
        for i, q in enumerate(queries):
            for way in list(params)[:: 1 if i % 2 == 0 else -1]:
                store.dense_search_params = params[way]
                start = time.perf_counter()
                hits = store.search(COLLECTION, dense=q["dense"], sparse=q["sparse"], k=k, mode="hybrid",
                                    filters=q["filters"])  # fmt: skip
                timings[way]["hybrid"].append((time.perf_counter() - start) * 1000)
                answers[way].append([h.id for h in hits])
                if i < 50:
                    start = time.perf_counter()
                    store.search(COLLECTION, dense=q["dense"], k=k, mode="semantic")
                    timings[way]["semantic"].append((time.perf_counter() - start) * 1000)
    finally:
        store.dense_search_params = params["int8"]
    out: dict[str, Any] = {"paired_overlap": overlap(answers["int8"], answers["ignored"])}
    for way, t in timings.items():
        out[f"paired_{way}_p50_ms"] = percentile(t["hybrid"], 50)
        out[f"paired_{way}_p95_ms"] = percentile(t["hybrid"], 95)
        out[f"paired_{way}_semantic_p50_ms"] = percentile(t["semantic"], 50)
    return out


def run_worker(args: argparse.Namespace) -> dict[str, Any]:
    sampler = RssSampler()
    folder = Path(args.folder)
    out: dict[str, Any] = {"adapter": args.worker, "rss_data_mb": rss_mb("VmRSS")}
    if args.corpus:
        batches = corpus_batches(Path(args.corpus), args.n, args.dim, args.seed)
    else:
        batches = iter_batches(args.n, args.dim, args.seed)
    sources = Reservoir(args.queries, args.seed)

    store = open_adapter(args.worker, folder)
    store.ensure_collection(COLLECTION, args.dim)
    start = time.perf_counter()
    prepare_s = 0.0  # generating / reading and BM25-encoding the points is not the store's time
    while True:
        t = time.perf_counter()
        batch = next(batches, None)
        prepare_s += time.perf_counter() - t
        if batch is None:
            break
        sources.offer(batch)
        for b in range(0, len(batch), 1000):
            store.upsert(COLLECTION, batch[b : b + 1000])
    out["n"] = sources.seen
    out["prepare_s"] = prepare_s
    out["upsert_s"] = time.perf_counter() - start - prepare_s
    out["upsert_pts_per_s"] = out["n"] / out["upsert_s"]
    queries = make_queries(sources.items, args.seed)
    start = time.perf_counter()
    store.optimize(COLLECTION)
    out["index_build_s"] = time.perf_counter() - start
    assert store.count(COLLECTION) == out["n"]
    if isinstance(store, EdgeVectorStore):
        out["segments"] = store.segment_count(COLLECTION)

    for q in queries[:3]:  # warm-up (page cache, lazily built structures)
        store.search(COLLECTION, dense=q["dense"], sparse=q["sparse"], k=args.k, mode="hybrid", filters=q["filters"])
    latencies: list[float] = []
    results: list[list[str]] = []
    budget_start = time.perf_counter()
    for q in queries:
        start = time.perf_counter()
        hits = store.search(
            COLLECTION, dense=q["dense"], sparse=q["sparse"], k=args.k, mode="hybrid", filters=q["filters"]
        )
        latencies.append((time.perf_counter() - start) * 1000)
        results.append([h.id for h in hits])
        if time.perf_counter() - budget_start > args.max_query_seconds:
            break
    out["queries_run"] = len(latencies)
    out["hybrid_filtered_p50_ms"] = percentile(latencies, 50)
    out["hybrid_filtered_p95_ms"] = percentile(latencies, 95)
    out["mean_hits"] = statistics.fmean(len(r) for r in results)
    semantic: list[float] = []
    for q in queries[: min(50, len(latencies))]:
        start = time.perf_counter()
        store.search(COLLECTION, dense=q["dense"], k=args.k, mode="semantic")
        semantic.append((time.perf_counter() - start) * 1000)
    out["semantic_p50_ms"] = percentile(semantic, 50)
    out["results"] = results
    if args.worker == "edge-int8":
        out.update(float_on_the_same_segments(store, queries[: len(latencies)], args.k))

    start = time.perf_counter()
    store.close()
    out["close_s"] = time.perf_counter() - start
    out["cached_before_evict_mb"] = evict_from_page_cache(folder)
    out["cached_after_evict_mb"] = cached_mb(folder)
    start = time.perf_counter()
    reopened = open_adapter(args.worker, folder)
    assert reopened.count(COLLECTION) == out["n"]
    out["reopen_s"] = time.perf_counter() - start
    cold: list[float] = []
    for q in queries[: args.cold_queries]:  # the first queries after the store's files left the page cache
        start = time.perf_counter()
        reopened.search(COLLECTION, dense=q["dense"], sparse=q["sparse"], k=args.k, mode="hybrid", filters=q["filters"])
        cold.append((time.perf_counter() - start) * 1000)
    out["cold_first_ms"] = cold[0] if cold else float("nan")
    out["cold_p50_ms"] = percentile(cold, 50)
    out["cold_p95_ms"] = percentile(cold, 95)
    reopened.close()
    out["disk_mb"] = folder_mb(folder)
    out["rss_peak_mb"] = rss_mb("VmHWM")
    out.update(sampler.stop())
    return out


# --------------------------------------------------------------------------------------------------------------
# Orchestration
# --------------------------------------------------------------------------------------------------------------


def run_one(adapter: str, n: int, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    folder = base / f"{adapter}-{n}"
    shutil.rmtree(folder, ignore_errors=True)
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        adapter,
        "--n",
        str(n),
        "--folder",
        str(folder),
        "--dim",
        str(args.dim),
        "--k",
        str(args.k),
        "--queries",
        str(args.queries),
        "--seed",
        str(args.seed),
        "--max-query-seconds",
        str(args.max_query_seconds),
        "--cold-queries",
        str(args.cold_queries),
    ]
    if args.corpus:
        cmd += ["--corpus", str(args.corpus)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}  # local mode warns above 20k points; that is the point here
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{adapter} at N={n} failed:\n{proc.stderr[-3000:]}")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def overlap(a: list[list[str]], b: list[list[str]]) -> float:
    pairs = [(x, y) for x, y in zip(a, b, strict=False) if x or y]
    if not pairs:
        return float("nan")
    return statistics.fmean(len(set(x) & set(y)) / max(len(x), len(y)) for x, y in pairs)


# (label, key, format, ratio): "time" rows show client/edge, "rate" rows edge/client — both read "edge is Nx better".
ROWS: tuple[tuple[str, str, str, str | None], ...] = (
    ("upsert points/s", "upsert_pts_per_s", "{:,.0f}", "rate"),
    ("upsert s", "upsert_s", "{:.1f}", None),
    ("  (+ preparing data s)", "prepare_s", "{:.1f}", None),
    ("index build s", "index_build_s", "{:.1f}", None),
    ("segments", "segments", "{}", None),
    ("hybrid+filter p50 ms", "hybrid_filtered_p50_ms", "{:.2f}", "time"),
    ("hybrid+filter p95 ms", "hybrid_filtered_p95_ms", "{:.2f}", "time"),
    ("queries run", "queries_run", "{:d}", None),
    ("mean hits / query", "mean_hits", "{:.1f}", None),
    ("semantic p50 ms", "semantic_p50_ms", "{:.2f}", "time"),
    ("paired, int8: p50 ms", "paired_int8_p50_ms", "{:.2f}", None),
    ("  p95 ms", "paired_int8_p95_ms", "{:.2f}", None),
    ("  semantic p50 ms", "paired_int8_semantic_p50_ms", "{:.2f}", None),
    ("paired, copy ignored: p50", "paired_ignored_p50_ms", "{:.2f}", None),
    ("  p95 ms", "paired_ignored_p95_ms", "{:.2f}", None),
    ("  semantic p50 ms", "paired_ignored_semantic_p50_ms", "{:.2f}", None),
    ("  top-k overlap of the two", "paired_overlap", "{:.3f}", None),
    ("close s", "close_s", "{:.2f}", None),
    ("reopen s (cold)", "reopen_s", "{:.2f}", "time"),
    ("  page cache MB, before", "cached_before_evict_mb", "{:.0f}", None),
    ("  page cache MB, evicted", "cached_after_evict_mb", "{:.0f}", None),
    ("cold first query ms", "cold_first_ms", "{:.1f}", "time"),
    ("cold hybrid+filter p50 ms", "cold_p50_ms", "{:.2f}", "time"),
    ("cold hybrid+filter p95 ms", "cold_p95_ms", "{:.2f}", "time"),
    ("disk MB", "disk_mb", "{:.0f}", None),
    ("RSS data MB", "rss_data_mb", "{:.0f}", None),
    ("RSS peak MB", "rss_peak_mb", "{:.0f}", "time"),
    ("  anonymous peak MB", "rss_anon_peak_mb", "{:.0f}", "time"),
    ("  file-backed peak MB", "rss_file_peak_mb", "{:.0f}", None),
)


def report(n: int, runs: dict[str, dict[str, Any]], k: int) -> None:
    names = list(runs)
    both = "edge" in runs and "client-local" in runs
    actual = next(iter(runs.values()))["n"] if runs else n
    print(f"\n## N = {actual:,} points" + (" (the whole corpus)" if n == ALL else ""))
    print(f"{'':24}" + "".join(f"{name:>16}" for name in names) + (f"{'edge better by':>18}" if both else ""))
    for label, key, fmt, ratio in ROWS:
        line = f"{label:24}" + "".join(f"{fmt.format(runs[name].get(key, '-')):>16}" for name in names)
        if both and ratio:
            e, c = runs["edge"][key], runs["client-local"][key]
            value = (c / e if e else float("inf")) if ratio == "time" else (e / c if c else float("inf"))
            line += f"{value:>17.1f}x"
        print(line)
    if both:
        agree = overlap(runs["edge"]["results"], runs["client-local"]["results"])
        print(f"top-{k} overlap, edge vs client: {agree:.3f} (local mode is exact: this is edge's recall here)")
    if "edge" in runs and "edge-int8" in runs:
        agree = overlap(runs["edge"]["results"], runs["edge-int8"]["results"])
        print(f"top-{k} overlap, edge-int8 vs edge: {agree:.3f} (what the 8-bit copy changes in the answers)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000, help="N (ignored when --sizes is given)")
    parser.add_argument("--sizes", type=str, default=None, help="comma-separated Ns, e.g. 10000,100000,all")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="a TripAdvisor Texts folder: real text, BM25 and payloads instead of generated ones",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None, help="where stores are written (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the stores after the run")
    parser.add_argument("--max-query-seconds", type=float, default=300.0, help="per adapter and size")
    parser.add_argument("--cold-queries", type=int, default=50, help="queries timed after evicting the page cache")
    parser.add_argument("--adapters", type=str, default="edge,client-local")
    parser.add_argument("--worker", choices=["edge", "edge-int8", "client-local"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=str, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        print(json.dumps(run_worker(args)))
        return

    raw_sizes = args.sizes.split(",") if args.sizes else [str(args.points)]
    if "all" in raw_sizes and not args.corpus:
        parser.error("--sizes all needs --corpus")
    sizes = [ALL if s.strip() == "all" else int(s.replace("_", "")) for s in raw_sizes]
    adapters = [a.strip() for a in args.adapters.split(",") if a.strip()]
    base = args.dir or Path(tempfile.mkdtemp(prefix="bench-vector-store-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"stores under {base}; cpus: {os.cpu_count()}; k={args.k}; {args.queries} queries; dim {args.dim}")
    try:
        for n in sizes:
            runs: dict[str, dict[str, Any]] = {}
            for adapter in adapters:
                if adapter == "client-local" and n > CLIENT_LOCAL_MAX_POINTS:
                    print(
                        f"(client-local skipped at N={n:,}: local mode is run only up to {CLIENT_LOCAL_MAX_POINTS:,})"
                    )
                    continue
                started = time.perf_counter()
                runs[adapter] = run_one(adapter, n, args, base)
                print(f"  {adapter} N={n:,} done in {time.perf_counter() - started:.0f} s", flush=True)
            report(n, runs, args.k)
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
