"""Vector-store benchmark: the embedded Edge adapter against qdrant-client's local mode, same data, same queries.

Why: the pipeline defaults to `EdgeVectorStore` (Qdrant's engine in process) because qdrant-client's local mode is a
Python brute-force scan; this measures by how much, on the workload retrieval evaluation runs — hybrid (dense +
BM25 sparse, RRF-fused) top-k queries filtered by sentiment and entity.

For each size N, each adapter runs in its own subprocess (so peak RSS is its own) on the same generated data:
N random 384-d unit vectors, 30-term sparse vectors over a Zipf-like vocabulary, and payloads with the fields the
pipeline indexes (domain, doc_id, entity_id among 500 entities, sentiment, author_* attributes, content_hash, ~300
characters of text). Measured: upsert points/s, index build (`optimize`: HNSW for Edge, nothing for the client),
hybrid filtered query latency p50/p95 (sentiment = one value AND entity_id in 5 of 500: ~0.3% of points), unfiltered
semantic p50, close, reopen, on-disk size, peak RSS (VmHWM; "data" is the RSS before the store was opened, i.e. the
generated vectors), and the overlap of the two adapters' top-k lists (the client's local mode is exact, so this is
also Edge's recall on these queries). qdrant-client's local mode runs only up to 100k points, and each adapter stops
querying once `--max-query-seconds` is spent (the count is printed).

    .venv/bin/python benchmarks/bench_vector_store.py [--points 10000 | --sizes 10000,100000] [--queries 200]
        [--k 20] [--dim 384] [--dir FOLDER] [--max-query-seconds 300] [--adapters edge,client-local]

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
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oprag_pipeline.index.vector_store import (  # noqa: E402
    ClientVectorStore,
    EdgeVectorStore,
    IndexPoint,
    VectorStore,
    point_uuid,
)

COLLECTION = "bench"
CLIENT_LOCAL_MAX_POINTS = 100_000
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


def make_points(n: int, dim: int, seed: int) -> tuple[list[IndexPoint], np.ndarray]:
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((n, dim), dtype=np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    vocab_ids = rng.choice(2**31 - 1, size=VOCAB, replace=False)  # murmur3-like ids, as BM25 produces
    cdf = np.cumsum(1.0 / np.arange(1, VOCAB + 1))
    cdf /= cdf[-1]
    draws = np.searchsorted(cdf, rng.random((n, TERMS_PER_DOC + 10)))  # Zipf ranks; repeats collapse below
    entity = rng.integers(0, N_ENTITIES, size=n)
    sentiment = rng.integers(0, 3, size=n)
    traveller = rng.integers(0, len(TRAVELLERS), size=n)
    year = rng.integers(2010, 2021, size=n)
    words = np.array(WORDS)
    points = []
    for i in range(n):
        text = " ".join(words[rng.integers(0, len(WORDS), size=50)])
        payload = {
            "domain": ("hotels", "forums", "restaurants")[i % 3],
            "doc_id": f"doc-{i // 2}",
            "entity_id": f"e{entity[i]}",
            "entity_name": f"entity {entity[i]}",
            "sentiment": SENTIMENTS[sentiment[i]],
            "intensity": ("low", "medium", "high")[i % 3],
            "author_traveller_type": TRAVELLERS[traveller[i]],
            "author_year": int(year[i]),
            "content_hash": f"{i:016x}",
            "text": text,
        }
        ranks = np.unique(draws[i])[:TERMS_PER_DOC]
        sparse = (vocab_ids[ranks], rng.uniform(0.8, 1.6, size=ranks.size).astype(np.float32))
        points.append(IndexPoint(point_uuid(f"bench/{i}"), dense[i], sparse, payload))
    return points, vocab_ids


def make_queries(points: list[IndexPoint], count: int, seed: int) -> list[dict[str, Any]]:
    """Queries near existing points (noisy copies), with 5 of the point's own terms, filtered to a sentiment and 5
    entities (one of them the source point's, so most queries have matches)."""
    rng = np.random.default_rng(seed + 1)
    queries = []
    for _ in range(count):
        src = points[int(rng.integers(0, len(points)))]
        dense = src.dense + rng.standard_normal(src.dense.shape[0]).astype(np.float32) * 0.05
        dense /= np.linalg.norm(dense)
        indices, _ = src.sparse
        terms = rng.choice(np.asarray(indices), size=5, replace=False)
        entities = [src.payload["entity_id"]] + [f"e{int(e)}" for e in rng.integers(0, N_ENTITIES, size=4)]
        queries.append(
            {
                "dense": dense,
                "sparse": (terms, np.ones(5, dtype=np.float32)),
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


def open_adapter(adapter: str, folder: Path) -> VectorStore:
    if adapter == "edge":
        return EdgeVectorStore(folder, optimize_on_close=False)
    from qdrant_client import QdrantClient

    return ClientVectorStore(QdrantClient(path=str(folder)))


def folder_mb(folder: Path) -> float:
    """Allocated size (like `du`): Edge preallocates sparse WAL and mmap files, so apparent sizes overstate it."""
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file()) / 1e6


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def run_worker(args: argparse.Namespace) -> dict[str, Any]:
    points, _ = make_points(args.n, args.dim, args.seed)
    queries = make_queries(points, args.queries, args.seed)
    data_rss = rss_mb("VmRSS")
    folder = Path(args.folder)
    out: dict[str, Any] = {"adapter": args.worker, "n": args.n, "rss_data_mb": data_rss}

    store = open_adapter(args.worker, folder)
    store.ensure_collection(COLLECTION, args.dim)
    start = time.perf_counter()
    for b in range(0, len(points), 1000):
        store.upsert(COLLECTION, points[b : b + 1000])
    out["upsert_s"] = time.perf_counter() - start
    out["upsert_pts_per_s"] = args.n / out["upsert_s"]
    start = time.perf_counter()
    store.optimize(COLLECTION)
    out["index_build_s"] = time.perf_counter() - start
    assert store.count(COLLECTION) == args.n

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

    start = time.perf_counter()
    store.close()
    out["close_s"] = time.perf_counter() - start
    start = time.perf_counter()
    reopened = open_adapter(args.worker, folder)
    assert reopened.count(COLLECTION) == args.n
    out["reopen_s"] = time.perf_counter() - start
    reopened.close()
    out["disk_mb"] = folder_mb(folder)
    out["rss_peak_mb"] = rss_mb("VmHWM")
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
    ]
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
    ("index build s", "index_build_s", "{:.1f}", None),
    ("hybrid+filter p50 ms", "hybrid_filtered_p50_ms", "{:.2f}", "time"),
    ("hybrid+filter p95 ms", "hybrid_filtered_p95_ms", "{:.2f}", "time"),
    ("queries run", "queries_run", "{:d}", None),
    ("mean hits / query", "mean_hits", "{:.1f}", None),
    ("semantic p50 ms", "semantic_p50_ms", "{:.2f}", "time"),
    ("close s", "close_s", "{:.2f}", None),
    ("reopen s", "reopen_s", "{:.2f}", "time"),
    ("disk MB", "disk_mb", "{:.0f}", None),
    ("RSS data MB", "rss_data_mb", "{:.0f}", None),
    ("RSS peak MB", "rss_peak_mb", "{:.0f}", "time"),
)


def report(n: int, runs: dict[str, dict[str, Any]], k: int) -> None:
    names = list(runs)
    both = "edge" in runs and "client-local" in runs
    print(f"\n## N = {n:,} points")
    print(f"{'':24}" + "".join(f"{name:>16}" for name in names) + (f"{'edge better by':>18}" if both else ""))
    for label, key, fmt, ratio in ROWS:
        line = f"{label:24}" + "".join(f"{fmt.format(runs[name][key]):>16}" for name in names)
        if both and ratio:
            e, c = runs["edge"][key], runs["client-local"][key]
            value = (c / e if e else float("inf")) if ratio == "time" else (e / c if c else float("inf"))
            line += f"{value:>17.1f}x"
        print(line)
    if both:
        agree = overlap(runs["edge"]["results"], runs["client-local"]["results"])
        print(f"top-{k} overlap, edge vs client: {agree:.3f} (local mode is exact: this is edge's recall here)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000, help="N (ignored when --sizes is given)")
    parser.add_argument("--sizes", type=str, default=None, help="comma-separated Ns, e.g. 10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None, help="where stores are written (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the stores after the run")
    parser.add_argument("--max-query-seconds", type=float, default=300.0, help="per adapter and size")
    parser.add_argument("--adapters", type=str, default="edge,client-local")
    parser.add_argument("--worker", choices=["edge", "client-local"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=str, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        print(json.dumps(run_worker(args)))
        return

    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")] if args.sizes else [args.points]
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
