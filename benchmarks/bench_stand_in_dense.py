"""Do stand-in dense vectors make queries slower or faster than MiniLM's? Same texts, both ways, same queries.

Why this exists: `index_stand_in_dense.py` indexes a domain with hash-seeded random dense vectors, so that the
evaluation grid can be timed at the whole TripAdvisor corpus's size without the hours MiniLM would need on this
machine. Its timings are quoted as an upper bound, because HNSW finds neighbours among random high-dimensional
points with more work than among real embeddings, which cluster by topic. This measures that claim on a sample that
can be embedded for real:

* N per-entity documents of an enriched domain (`enriched_entity_docs`, the enriched KB's texts), embedded twice:
  MiniLM (the project's embedder) and the stand-in (`StandInDenseEmbedder`); both get the real BM25 vectors and the
  real payloads' filter fields;
* two Edge collections with the pipeline's own configuration (`EdgeVectorStore`, same segment cap, indexes, HNSW);
* the domain's evaluation questions, embedded with MiniLM, as the grid sends them (k = 60, semantic and hybrid,
  plus a query filtered by entity, as opinion-balanced retrieval sends them).

It prints the median and p95 latency per query kind for both indexes and the stand-in / MiniLM ratio; a ratio above 1
means timings taken on the stand-in overstate what MiniLM vectors would cost.

    .venv/bin/python benchmarks/bench_stand_in_dense.py --data-dir DATA_DIR --domain DOMAIN [--points 50000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from index_stand_in_dense import StandInDenseEmbedder  # noqa: E402

from oprag_pipeline.index.vector_store import EdgeVectorStore, IndexPoint, point_uuid  # noqa: E402
from oprag_pipeline.resources import EmbedderResource  # noqa: E402

BATCH = 2_000
K = 60


def sample_documents(conn: duckdb.DuckDBPyConnection, domain: str, n: int) -> list[tuple[str, str, dict]]:
    """A deterministic sample of the domain's per-entity documents: (point key, text, filter payload)."""
    rows = conn.execute(
        """SELECT point_key, text, doc_id, entity_id, sentiment_intensity FROM enriched_entity_docs
           WHERE domain = ? ORDER BY hash(point_key) LIMIT ?""",
        [domain, n],
    ).fetchall()
    return [(r[0], r[1], {"doc_id": r[2], "entity_id": r[3], "sentiment_intensity": r[4]}) for r in rows]


def build(store: EdgeVectorStore, name: str, docs: list, dense: np.ndarray, sparse: list) -> float:
    store.ensure_collection(name, dense.shape[1])
    started = time.perf_counter()
    for i in range(0, len(docs), BATCH):
        store.upsert(
            name,
            [
                IndexPoint(point_uuid(key), dense[j], sparse[j], payload)
                for j, (key, _, payload) in enumerate(docs[i : i + BATCH], start=i)
            ],
        )
    store.optimize(name)
    return time.perf_counter() - started


def time_queries(store: EdgeVectorStore, name: str, queries: list, entities: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"semantic": [], "hybrid": [], "hybrid, one entity": []}
    for (dense, sparse), entity in zip(queries, entities, strict=True):
        for kind, kwargs in (
            ("semantic", {"mode": "semantic"}),
            ("hybrid", {"mode": "hybrid", "sparse": sparse}),
            ("hybrid, one entity", {"mode": "hybrid", "sparse": sparse, "filters": {"entity_id": entity}}),
        ):
            started = time.perf_counter()
            store.search(name, dense=dense, k=K, **kwargs)
            out[kind].append(1000 * (time.perf_counter() - started))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--domain", required=True)
    parser.add_argument("--points", type=int, default=50_000)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the two collections (default: temp)")
    args = parser.parse_args()

    with duckdb.connect(str(args.data_dir / "warehouse.duckdb"), read_only=True) as conn:
        docs = sample_documents(conn, args.domain, args.points)
        questions = [
            t
            for (t,) in conn.execute(
                "SELECT text FROM evaluation_questions WHERE domain = ? ORDER BY question_id", [args.domain]
            ).fetchall()
        ]
        busiest = [
            e
            for (e,) in conn.execute(
                "SELECT entity_id FROM opinions WHERE domain = ? GROUP BY 1 ORDER BY count(*) DESC LIMIT 20",
                [args.domain],
            ).fetchall()
        ]
    if not docs or not questions:
        sys.exit(f"{args.domain} needs enriched_entity_docs and evaluation_questions in {args.data_dir}")
    print(f"{len(docs):,} entity documents and {len(questions)} questions of {args.domain}")

    embedder = EmbedderResource().embedder()
    texts = [text for _, text, _ in docs]
    started = time.perf_counter()
    sparse = embedder.embed_sparse(texts)
    print(f"BM25: {time.perf_counter() - started:,.1f} s")
    started = time.perf_counter()
    real = embedder.embed_dense(texts)
    print(
        f"MiniLM: {time.perf_counter() - started:,.1f} s ({len(texts) / (time.perf_counter() - started):,.0f} texts/s)"
    )
    stand_in = StandInDenseEmbedder(embedder).embed_dense(texts)
    queries = list(zip(embedder.embed_dense_query(questions), embedder.embed_sparse_query(questions), strict=True))
    entities = [busiest[i % len(busiest)] for i in range(len(questions))]

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp, EdgeVectorStore(Path(tmp)) as store:
        results = {}
        for label, dense in (("MiniLM", real), ("stand-in", stand_in)):
            name = f"bench_{label.replace('-', '_')}"
            seconds = build(store, name, docs, dense, sparse)
            time_queries(store, name, queries[:10], entities[:10])  # warm-up: the pages both indexes need
            results[label] = time_queries(store, name, queries, entities)
            print(f"{label}: written and indexed in {seconds:,.1f} s")
    print(f"\n{'query (k = 60)':<22} {'MiniLM p50 / p95 ms':>22} {'stand-in p50 / p95 ms':>24} {'ratio p50':>10}")
    for kind in results["MiniLM"]:
        a, b = results["MiniLM"][kind], results["stand-in"][kind]
        p = [statistics.median(a), np.percentile(a, 95), statistics.median(b), np.percentile(b, 95)]
        print(f"{kind:<22} {p[0]:>10.2f} / {p[1]:>8.2f} {p[2]:>12.2f} / {p[3]:>8.2f} {p[2] / p[0]:>10.2f}")


if __name__ == "__main__":
    main()
