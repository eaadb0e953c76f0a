"""End-to-end benchmark: `oprag run` on a deterministic subset of ../shared/data/tripadvisor_hotels, real MiniLM.

What it prints, so a user can predict the cost of their own corpus:

* wall time and peak RSS per stage. Each stage is one `oprag run --select ...` in its own process (measured with
  `os.wait4`, so the RSS is that stage's own); the stages together are the whole graph, in dependency order;
* points per KB and the distinct texts the encoder actually embedded (from the KB assets' materialization metadata;
  code without a vector cache reports every written point as embedded);
* the floor measured in the same run: one encoder pass over the corpus's tokens, i.e. the documents' word pieces
  divided by the encoder's word pieces per second on a sample of the raw KB's chunks;
* the whole run's time per 1,000 reviews, and a 5% incremental re-run (the next hotels' reviews added, everything
  re-materialized), with its ratio to the full run.

The subset is the first hotel files in name order until `--reviews` reviews are reached, copied to a work folder
(never into the repository).

    nice -n 10 .venv/bin/python benchmarks/bench_pipeline.py --reviews 1500 [--work DIR] [--no-rerun]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "tripadvisor_hotels" / "Texts"
DOMAIN = "tripadvisor"
KB_ASSETS = ("raw_kb", "enriched_kb", "entity_split_kb")
# Stages in dependency order; each is one `oprag run --select` process. The embedding and the KBs are separate
# stages: they are the heavy steps this benchmark is about.
STAGES: tuple[tuple[str, str], ...] = (
    ("ingest", "key:raw_documents"),
    ("extract+registry", "group:registry or group:enrich"),
    ("raw_kb", "key:raw_kb"),
    ("entity_doc_vectors", "key:entity_doc_vectors"),  # the per-entity KBs' texts, embedded in shards
    ("enriched_kb", "key:enriched_kb"),
    ("entity_split_kb", "key:entity_split_kb"),
    ("evaluation", "group:evaluation"),
)
FLOOR_SAMPLE_CHUNKS = 256  # enough chunks for a stable rate (a few seconds of encoding), few enough to stay cheap


@dataclass(frozen=True)
class StageResult:
    name: str
    seconds: float
    peak_rss_mb: float
    ok: bool


def count_reviews(path: Path) -> int:
    return path.read_text(errors="replace").count("<Content>")


def choose_files(source: Path, reviews: int, skip: int = 0) -> list[Path]:
    """The first hotel files in name order (after `skip` of them) holding at least `reviews` reviews."""
    files = sorted(p for p in source.iterdir() if p.name.startswith("hotel_"))[skip:]
    chosen, total = [], 0
    for path in files:
        if total >= reviews:
            break
        chosen.append(path)
        total += count_reviews(path)
    return chosen


def oprag(args: list[str], env: dict[str, str]) -> StageResult:
    """Run `oprag ARGS` in a child process; its wall time and its own peak RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "oprag_pipeline.cli", *args], env=env, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return StageResult(" ".join(args[:3]), time.perf_counter() - started, usage.ru_maxrss / 1024, proc.returncode == 0)


def run_stages(data_dir: Path, env: dict[str, str]) -> list[StageResult]:
    results = []
    for name, selection in STAGES:
        result = oprag(["--data-dir", str(data_dir), "run", "--domain", DOMAIN, "--select", selection], env)
        results.append(StageResult(name, result.seconds, result.peak_rss_mb, result.ok))
        print(f"  {name:<18} {result.seconds:8.1f} s  peak RSS {result.peak_rss_mb:7.0f} MB  ok={result.ok}",
              flush=True)  # fmt: skip
    return results


def _latest_metadata(key: str) -> dict:
    from dagster import AssetKey, DagsterInstance

    records = DagsterInstance.get().fetch_materializations(AssetKey(key), limit=1).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()} if records else {}


def kb_figures(data_dir: Path) -> dict[str, dict[str, int]]:
    """Points per KB and distinct texts embedded, from each KB's latest materialization; the per-entity KBs'
    texts are embedded beforehand by `entity_doc_vectors` (its own row, no points)."""
    figures = {}
    for kb in KB_ASSETS:
        meta = _latest_metadata(kb)
        figures[kb] = {
            "points": int(meta.get("points", 0)),
            "written": int(meta.get("written", 0)),
            "embedded": int(meta.get("embedded", meta.get("written", 0))),
        }
    vectors = _latest_metadata("entity_doc_vectors")
    figures["entity_doc_vectors"] = {"points": 0, "written": 0, "embedded": int(vectors.get("embedded_this_run", 0))}
    return figures


def floor_seconds(data_dir: Path) -> tuple[float, int, float]:
    """(floor seconds, corpus word pieces, encoder word pieces/s on a sample of raw chunks)."""
    import duckdb
    from tokenizers import Tokenizer

    from oprag_pipeline import settings
    from oprag_pipeline.embedding_models import ensure_dense_model_dir
    from oprag_pipeline.embeddings import OfflineEmbedder

    tokenizer = Tokenizer.from_file(str(ensure_dense_model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    with duckdb.connect(str(settings.warehouse_path(data_dir)), read_only=True) as conn:
        docs = [r[0] for r in conn.execute("SELECT text FROM raw_documents WHERE domain = ?", [DOMAIN]).fetchall()]
        chunks = [r[0] for r in conn.execute("SELECT text FROM raw_chunks WHERE domain = ? ORDER BY point_key",
                                              [DOMAIN]).fetchall()]  # fmt: skip
    corpus_tokens = sum(len(e.ids) for e in tokenizer.encode_batch(docs))
    step = max(1, len(chunks) // FLOOR_SAMPLE_CHUNKS)
    sample = chunks[::step][:FLOOR_SAMPLE_CHUNKS]
    sample_tokens = sum(min(len(e.ids), 256) for e in tokenizer.encode_batch(sample))
    embedder = OfflineEmbedder()
    embedder.embed_dense(sample[:8])  # load the session outside the timing
    started = time.perf_counter()
    embedder.embed_dense(sample)
    rate = sample_tokens / (time.perf_counter() - started)
    return corpus_tokens / rate, corpus_tokens, rate


def composed_overlap(data_dir: Path, ks: tuple[int, ...] = (10, 20), max_docs: int | None = None) -> None:
    """How far the enriched KB's composed vectors (header and text embedded apart) are from the joint embedding:
    the share of each evaluation question's dense top-k that both give, over the domain's enriched documents (or
    an evenly spaced sample of `max_docs` of them)."""
    import duckdb
    import numpy as np

    from oprag_pipeline import settings
    from oprag_pipeline.embeddings import OfflineEmbedder
    from oprag_pipeline.index.assets import vector_cache_root
    from oprag_pipeline.index.vector_cache import CachedDenseEncoder

    with duckdb.connect(str(settings.warehouse_path(data_dir)), read_only=True) as conn:
        docs = conn.execute("SELECT text, relevant_text FROM enriched_entity_docs WHERE domain = ? ORDER BY point_key",
                            [DOMAIN]).fetchall()  # fmt: skip
        questions = [r[0] for r in conn.execute("SELECT text FROM evaluation_questions WHERE domain = ?",
                                                [DOMAIN]).fetchall()]  # fmt: skip
    if not docs or not questions:
        print("composed vs joint: no enriched documents or no questions")
        return
    if max_docs and len(docs) > max_docs:
        docs = docs[:: len(docs) // max_docs][:max_docs]
    embedder = OfflineEmbedder()
    encoder = CachedDenseEncoder(embedder, vector_cache_root(data_dir))
    joint = encoder.embed_dense([t for t, _ in docs])
    variants = {
        "header + text": [(t[: len(t) - len(r)], r) for t, r in docs],
        "each header line + text": [(*t[: len(t) - len(r)].splitlines(keepends=True), r) for t, r in docs],
    }
    composed = {}
    for label, parts in variants.items():
        before = encoder.stats.embedded
        started = time.perf_counter()
        composed[label] = encoder.embed_composed(parts)
        distinct = len({p for item in parts for p in item[:-1]})
        print(f"composed ({label}): {distinct:,} distinct header parts, {encoder.stats.embedded - before:,} texts "
              f"embedded for them ({time.perf_counter() - started:.1f} s)")  # fmt: skip
    encoder.close()
    query = embedder.embed_dense_query(questions)
    top_joint = np.argsort(-(query @ joint.T), axis=1)
    print(f"composed vs joint enriched vectors: {len(docs):,} documents, {len(questions)} questions")
    for label, vectors in composed.items():
        top = np.argsort(-(query @ vectors.T), axis=1)
        cosine = float(np.mean(np.sum(joint * vectors, axis=1)))
        overlaps = []
        for k in ks:
            overlaps.append(np.mean([len(set(a[:k]) & set(b[:k])) / k for a, b in zip(top_joint, top, strict=True)]))
        figures = ", ".join(f"top-{k} overlap {o:.3f}" for k, o in zip(ks, overlaps, strict=True))
        print(f"  {label}: mean cosine to joint {cosine:.3f}; dense {figures}")
    corrected_composition(variants["header + text"], joint, query, embedder, data_dir, ks)


def _top_k_overlap(query, a, b, ks: tuple[int, ...]) -> str:
    import numpy as np

    top_a, top_b = np.argsort(-(query @ a.T), axis=1), np.argsort(-(query @ b.T), axis=1)
    return ", ".join(
        f"top-{k} {np.mean([len(set(x[:k]) & set(y[:k])) / k for x, y in zip(top_a, top_b, strict=True)]):.3f}"
        for k in ks
    )


def corrected_composition(
    parts, joint, query, embedder, data_dir: Path, ks: tuple[int, ...], fit_docs: int = 1_000
) -> None:
    """Whether a correction learnt from the corpus closes the composed vectors' gap to the joint ones: a ridge map
    from the header's and the text's vectors (raw and token-weighted) to the joint vector, fitted on the joint
    vectors of `fit_docs` documents (what embedding that sample jointly would cost a run) and judged on the others;
    beside it, how far the same joint texts move between the 8-bit encoder and its exact fp32 variant, i.e. what
    top-k overlap "the same KB" can be expected to reach."""
    import numpy as np

    from oprag_pipeline.index.assets import vector_cache_root
    from oprag_pipeline.index.vector_cache import CachedDenseEncoder

    if len(parts) < 2 * fit_docs:
        print(f"  fitted correction: not measured (fewer than {2 * fit_docs:,} documents)")
        return
    encoder = CachedDenseEncoder(embedder, vector_cache_root(data_dir))
    heads, texts = [h for h, _ in parts], [t for _, t in parts]
    head_vectors, text_vectors = encoder.embed_dense(heads), encoder.embed_dense(texts)
    head_pieces, text_pieces = encoder.token_counts(heads), encoder.token_counts(texts)
    share = (head_pieces / (head_pieces + text_pieces))[:, None]  # the header's share of the word pieces
    encoder.close()
    features = np.hstack([head_vectors, text_vectors, share * head_vectors, (1 - share) * text_vectors])
    order = np.random.default_rng(0).permutation(len(parts))
    fit, held = order[:fit_docs], order[fit_docs:]
    x = features[fit]
    weights = np.linalg.solve(x.T @ x + 0.1 * np.eye(x.shape[1]), x.T @ joint[fit])
    corrected = features[held] @ weights
    corrected /= np.linalg.norm(corrected, axis=1, keepdims=True)
    plain = share[held] * head_vectors[held] + (1 - share[held]) * text_vectors[held]
    plain /= np.linalg.norm(plain, axis=1, keepdims=True)
    print(f"  on the {len(held):,} documents not used to fit ({fit_docs:,} were): composed "
          f"{_top_k_overlap(query, joint[held], plain, ks)}; with the fitted correction "
          f"{_top_k_overlap(query, joint[held], corrected, ks)} (mean cosine "
          f"{np.mean(np.sum(joint[held] * corrected, axis=1)):.3f})")  # fmt: skip
    sample = held[:: max(1, len(held) // 2_000)][:2_000]
    exact = embedder.embed_dense_query([heads[i] + texts[i] for i in sample])
    print(f"  the same joint texts, 8-bit vs fp32 encoder ({len(sample):,} of them): "
          f"{_top_k_overlap(query, joint[sample], exact, ks)}")  # fmt: skip


def _percentiles(seconds: list[float]) -> str:
    import numpy as np

    ms = np.array(seconds) * 1000
    return f"p50 {np.percentile(ms, 50):6.2f} ms  p95 {np.percentile(ms, 95):6.2f} ms"


def query_latency(data_dir: Path, repeats: int = 3) -> None:
    """Hybrid filtered queries (the evaluation's questions, filtered on their entity; the raw KB on the domain) on
    each KB as indexed, warm (each query run once first), and on an int8-quantized copy of the largest KB."""
    import duckdb

    from oprag_pipeline import settings
    from oprag_pipeline.embeddings import OfflineEmbedder
    from oprag_pipeline.index.vector_store import CollectionOptions, EdgeVectorStore, IndexPoint

    with duckdb.connect(str(settings.warehouse_path(data_dir)), read_only=True) as conn:
        questions = conn.execute("SELECT text, entity_id FROM evaluation_questions WHERE domain = ? "
                                 "ORDER BY question_id LIMIT 200", [DOMAIN]).fetchall()  # fmt: skip
    if not questions:
        print("query latency: no evaluation questions")
        return
    embedder = OfflineEmbedder()
    dense = embedder.embed_dense_query([q for q, _ in questions])
    sparse = embedder.embed_sparse_query([q for q, _ in questions])

    def timed(store: EdgeVectorStore, name: str, entity_filter: bool) -> list[float]:
        out = []
        for attempt in range(repeats + 1):
            for i, (_, entity) in enumerate(questions):
                filters = {"entity_id": entity} if entity_filter else {"domain": DOMAIN}
                started = time.perf_counter()
                store.search(name, dense=dense[i], sparse=sparse[i], k=20, mode="hybrid", filters=filters)
                if attempt:  # the first pass warms the caches
                    out.append(time.perf_counter() - started)
        return out

    with EdgeVectorStore(data_dir / "qdrant", optimize_on_close=False) as store:
        for kb in ("raw", "enriched", "entity_split"):
            name = f"{DOMAIN}.{kb}_kb"
            if not store.collection_exists(name):
                print(f"  {name}: not indexed")
                continue
            seconds = timed(store, name, kb != "raw")
            print(f"  {name:<24} {store.count(name):>8,} points {store.segment_count(name):>3} segments  hybrid "
                  f"filtered k=20 {_percentiles(seconds)}")  # fmt: skip
        name = f"{DOMAIN}.enriched_kb"
        shard = store._shard(name)
        offset, copied = None, []
        e = store._edge
        while True:
            records, offset = shard.scroll(e.ScrollRequest(offset=offset, limit=2048, with_payload=True,
                                                           with_vector=True))  # fmt: skip
            for r in records:
                vectors = r.vector
                copied.append(
                    IndexPoint(
                        id=str(r.id), dense=vectors["dense"], sparse=vectors["bm25"], payload=dict(r.payload or {})
                    )
                )
            if offset is None:
                break
    with (
        tempfile.TemporaryDirectory() as tmp,
        EdgeVectorStore(Path(tmp), options=CollectionOptions(quantization="int8")) as quantized,
    ):
        quantized.ensure_collection(name, embedder.dim)
        quantized.upsert(name, copied)
        quantized.optimize(name)
        seconds = timed(quantized, name, True)
        print(f"  {name + ' int8':<24} {quantized.count(name):>8,} points {quantized.segment_count(name):>3} "
              f"segments  hybrid filtered k=20 {_percentiles(seconds)}")  # fmt: skip


def encoder_work(data_dir: Path) -> None:
    """Word pieces the encoder has to read, independent of machine load: every point embedded (no reuse), each
    distinct text once (the vector cache), and each distinct text once with the enriched KB composed."""
    import duckdb
    from tokenizers import Tokenizer

    from oprag_pipeline import settings
    from oprag_pipeline.embedding_models import MAX_TOKENS, ensure_dense_model_dir

    tokenizer = Tokenizer.from_file(str(ensure_dense_model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def pieces(texts) -> int:
        return sum(min(len(e.ids), MAX_TOKENS) for e in tokenizer.encode_batch(list(texts)))

    with duckdb.connect(str(settings.warehouse_path(data_dir)), read_only=True) as conn:
        raw = [r[0] for r in conn.execute("SELECT text FROM raw_chunks WHERE domain = ?", [DOMAIN]).fetchall()]
        enriched = conn.execute("SELECT text, relevant_text FROM enriched_entity_docs WHERE domain = ?",
                                [DOMAIN]).fetchall()  # fmt: skip
    joint = [t for t, _ in enriched]
    split = [r for _, r in enriched]
    headers = {t[: len(t) - len(r)] for t, r in enriched}
    every = pieces(raw) + pieces(joint) + pieces(split)
    distinct = set(raw) | set(joint) | set(split)
    composed = set(raw) | set(split) | headers
    print(f"encoder work: every point {len(raw) + 2 * len(joint):,} texts / {every:,} word pieces; distinct texts "
          f"{len(distinct):,} / {pieces(distinct):,}; with the enriched KB composed {len(composed):,} / "
          f"{pieces(composed):,}")  # fmt: skip


def copy_subset(files: list[Path], target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    for path in files:
        shutil.copy2(path, target / path.name)
    return sum(count_reviews(p) for p in files)


def report(label: str, stages: list[StageResult], reviews: int) -> float:
    total = sum(s.seconds for s in stages)
    peak = max(s.peak_rss_mb for s in stages)
    print(f"{label}: {total:.1f} s in all ({total / reviews * 1000:.1f} s per 1,000 reviews), peak RSS {peak:.0f} MB")
    return total


def incremental_rerun(
    source_corpus: Path, work: Path, files: list[Path], reviews: int, env: dict[str, str], full: float | None
) -> float:
    """Add the next hotels' reviews (5% of the subset), import, and run every stage again."""
    data_dir, source = work / "data", work / "source" / "Texts"
    wanted = max(1, reviews // 20)
    extra = choose_files(source_corpus, wanted, skip=len(files))
    added = 0
    for path in extra:  # whole files but the last, which is cut after the review that reaches 5%
        blocks = re.split(r"(?m)^(?=<Author>)", path.read_text(errors="replace"))
        keep = [b for b in blocks if b.strip()][: wanted - added]
        (source / path.name).write_text("".join(keep))
        added += sum(b.count("<Content>") for b in keep)
    print(f"incremental: +{added:,} reviews ({added / reviews:.1%}) from {len(extra)} more hotel files")
    oprag(["--data-dir", str(data_dir), "import", "tripadvisor", str(source), "--domain", DOMAIN], env)
    rerun = report("incremental re-run", run_stages(data_dir, env), reviews + added)
    for kb, f in kb_figures(data_dir).items():
        print(f"  {kb:<16} {f['points']:>9,} points  {f['written']:>9,} written  {f['embedded']:>9,} embedded")
    if full:
        print(f"incremental re-run / full run = {rerun / full:.2f}")
    return rerun


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--reviews", type=int, default=1500, help="reviews in the subset (whole hotel files)")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--no-rerun", action="store_true", help="skip the 5%% incremental re-run")
    parser.add_argument("--measure", type=Path, help="only the query and composed-vector measurements, on the "
                        "work folder of an earlier run")  # fmt: skip
    parser.add_argument("--rerun-only", type=Path, help="only the 5%% incremental re-run, on the work folder of an "
                        "earlier full run")  # fmt: skip
    args = parser.parse_args()
    if args.rerun_only:
        work = args.rerun_only
        env = {**os.environ, "DAGSTER_HOME": str(work / "dagster_home"), "OPRAG_DATA_DIR": str(work / "data")}
        env.setdefault("OPRAG_MODEL_DIR", str(ROOT / "data" / "models"))
        os.environ.update({k: env[k] for k in ("DAGSTER_HOME", "OPRAG_DATA_DIR", "OPRAG_MODEL_DIR")})
        names = {p.name for p in (work / "source" / "Texts").iterdir()}
        files = [p for p in sorted(args.source.iterdir()) if p.name in names]
        incremental_rerun(args.source, work, files, sum(count_reviews(p) for p in files), env, None)
        return 0
    if args.measure:
        os.environ.update({"DAGSTER_HOME": str(args.measure / "dagster_home"),
                           "OPRAG_DATA_DIR": str(args.measure / "data")})  # fmt: skip
        os.environ.setdefault("OPRAG_MODEL_DIR", str(ROOT / "data" / "models"))
        encoder_work(args.measure / "data")
        print("query latency (warm):")
        query_latency(args.measure / "data")
        composed_overlap(args.measure / "data")
        return 0
    if not args.source.exists():
        print(f"{args.source} is absent: this benchmark needs ../shared/data/tripadvisor_hotels", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="oprag-bench-pipeline-"))
    data_dir, source = work / "data", work / "source" / "Texts"
    if data_dir.exists() or source.exists():
        print(f"{work} already holds a run; give an empty --work", file=sys.stderr)
        return 2
    env = {**os.environ, "DAGSTER_HOME": str(work / "dagster_home"), "OPRAG_DATA_DIR": str(data_dir)}
    env.setdefault("OPRAG_MODEL_DIR", str(ROOT / "data" / "models"))
    os.environ.update({k: env[k] for k in ("DAGSTER_HOME", "OPRAG_DATA_DIR", "OPRAG_MODEL_DIR")})
    (work / "dagster_home").mkdir(parents=True)

    files = choose_files(args.source, args.reviews)
    reviews = copy_subset(files, source)
    print(f"subset: {reviews:,} reviews from {len(files)} hotel files ({files[0].name} … {files[-1].name}); "
          f"work {work}")  # fmt: skip
    imported = oprag(["--data-dir", str(data_dir), "import", "tripadvisor", str(source), "--domain", DOMAIN], env)
    print(f"  import             {imported.seconds:8.1f} s  peak RSS {imported.peak_rss_mb:7.0f} MB")
    print("full run, stage by stage:")
    stages = run_stages(data_dir, env)
    full = report("full run", stages, reviews)
    figures = kb_figures(data_dir)
    for kb, f in figures.items():
        print(f"  {kb:<16} {f['points']:>9,} points  {f['written']:>9,} written  {f['embedded']:>9,} texts embedded")
    print(f"  distinct texts embedded in all: {sum(f['embedded'] for f in figures.values()):,}")
    floor, tokens, rate = floor_seconds(data_dir)
    encoder_work(data_dir)
    print(f"floor: {tokens:,} word pieces at {rate:,.0f} word pieces/s = {floor:.1f} s "
          f"({floor / reviews * 1000:.1f} s per 1,000 reviews); full run = {full / floor:.1f}x the floor")  # fmt: skip
    try:
        print("query latency (warm):")
        query_latency(data_dir)
        composed_overlap(data_dir)
    except ImportError as error:  # code from before the vector cache
        print(f"composed vs joint: not measured ({error})")
    if not args.no_rerun:
        incremental_rerun(args.source, work, files, reviews, env, full)
    return 0


if __name__ == "__main__":
    sys.exit(main())
