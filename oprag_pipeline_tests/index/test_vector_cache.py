"""Embedding each distinct text once: the vector cache, its use by `sync_collection`, resume after a failure, and the
choice of onnxruntime providers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from oprag_pipeline.embeddings import OfflineEmbedder
from oprag_pipeline.index.sync import SourcePoint, sync_collection
from oprag_pipeline.index.vector_cache import CachedDenseEncoder, VectorCache, text_keys
from oprag_pipeline.index.vector_store import EdgeVectorStore


class CountingEmbedder:
    """The real embedder, recording every text sent to the dense encoder and the vector it returned (8-bit kernels
    depend on the batch's shape, so only the returned vector is the exact one); optionally failing on call
    `fail_on`."""

    def __init__(self, inner: OfflineEmbedder, fail_on: int | None = None) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []
        self.returned: dict[str, np.ndarray] = {}
        self.fail_on = fail_on
        self.model_name, self.is_offline_default, self.precision = inner.model_name, True, inner.precision
        self.dim = inner.dim

    def embed_dense(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_on is not None and len(self.calls) + 1 == self.fail_on:
            raise RuntimeError("step killed")
        self.calls.append(list(texts))
        vectors = self.inner.embed_dense(texts)
        self.returned.update(zip(texts, vectors, strict=True))
        return vectors

    def embed_sparse(self, texts: Sequence[str]):
        return self.inner.embed_sparse(texts)

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


@pytest.fixture(scope="module")
def embedder() -> OfflineEmbedder:
    return OfflineEmbedder()


def test_cache_persists_across_instances_and_writers(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    texts = [f"text number {i}" for i in range(50)]
    keys, vectors = text_keys(texts), rng.normal(size=(50, 8)).astype(np.float32)
    first, second = VectorCache(tmp_path, 8, part_vectors=16), VectorCache(tmp_path, 8, part_vectors=16)
    first.put(keys[:10], vectors[:10])  # buffered in `first`
    second.put(keys[10:26], vectors[10:26])  # 16: written as a part
    second.put(keys[26:36], vectors[26:36])  # buffered in `second`
    found, got = first.get(keys)
    assert found[:26].all() and not found[26:].any()  # its own buffer and the other's part, not the other's buffer
    assert np.array_equal(got[:26], vectors[:26]) and not got[26:].any()
    second.flush()
    first.put(keys[36:], vectors[36:])
    first.flush()
    reopened = VectorCache(tmp_path, 8)
    found, got = reopened.get(keys[::-1])
    assert found.all() and np.array_equal(got, vectors[::-1])
    assert len(reopened) == 50


def test_a_shared_text_is_embedded_once_with_the_same_vectors(tmp_path: Path, embedder: OfflineEmbedder) -> None:
    """Several points with one text: one encoder pass for it, and each point gets the vector of its own text."""
    texts = ["The breakfast was cold.", "Check-in took an hour.", "The pool was lovely and warm."]
    points = [SourcePoint(key=f"p{i}", text=texts[i % 3], payload={"i": i}) for i in range(9)]
    counting = CountingEmbedder(embedder)
    encoder = CachedDenseEncoder(counting, tmp_path / "cache")
    with EdgeVectorStore(tmp_path / "qdrant") as store:
        summary = sync_collection(store, counting, "t.entity_split_kb", points, batch_size=4, encoder=encoder)
        assert sorted(counting.embedded) == sorted(texts)
        assert (summary.written, summary.embedded) == (9, 3)
        for i, text in enumerate(texts):
            alone = embedder.embed_dense([text])[0]  # the text embedded on its own, as without the cache
            hits = store.search("t.entity_split_kb", dense=alone, k=3, mode="semantic")
            assert {h.payload["point_key"] for h in hits} == {f"p{j}" for j in range(i, 9, 3)}
            assert all(h.score == pytest.approx(1.0, abs=1e-5) for h in hits)
        # Another KB, and a later run (a new encoder on the same folder), embed nothing already embedded.
        again = CachedDenseEncoder(counting, tmp_path / "cache")
        more = [*points[:3], SourcePoint(key="new", text="The lift was broken.", payload={})]
        other = sync_collection(store, counting, "t.raw_kb", more, encoder=again)
        assert (other.written, other.embedded) == (4, 1)
        assert counting.calls[-1] == ["The lift was broken."]
    encoder.close()
    again.close()


def test_composed_vectors_reuse_the_parts(tmp_path: Path, embedder: OfflineEmbedder) -> None:
    heads = ["Entity: breakfast\nOpinion: negative\nText: ", "Entity: breakfast\nOpinion: negative\nText: "]
    tails = ["The eggs were cold.", "The coffee was weak."]
    counting = CountingEmbedder(embedder)
    encoder = CachedDenseEncoder(counting, None)
    composed = encoder.embed_composed(list(zip(heads, tails, strict=True)))
    assert sorted(counting.embedded) == sorted({heads[0], *tails})  # the shared header once
    head, tail = embedder.embed_dense([heads[0]]), embedder.embed_dense(tails)
    n_head, n_tail = encoder.token_counts([heads[0]]), encoder.token_counts(tails)
    assert n_head[0] > n_tail.max() > 0
    expected = n_head[0] * head + n_tail[:, None] * tail
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(composed, expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(composed, axis=1), 1.0, atol=1e-5)
    joint = embedder.embed_dense([h + t for h, t in zip(heads, tails, strict=True)])
    # Closer to its own joint embedding than to the other document's: the content still tells them apart.
    similarity = composed @ joint.T
    assert similarity[0, 0] > similarity[0, 1] and similarity[1, 1] > similarity[1, 0]
    encoder.close()


def test_a_failed_sync_resumes_from_what_it_wrote(tmp_path: Path, embedder: OfflineEmbedder) -> None:
    """Killed after its first window, a sync re-run writes only the rest and embeds nothing twice."""
    points = [SourcePoint(key=f"d{i}", text=f"review {i}: the room {i} was quiet", payload={}) for i in range(30)]
    failing = CountingEmbedder(embedder, fail_on=2)
    with EdgeVectorStore(tmp_path / "qdrant") as store:
        encoder = CachedDenseEncoder(failing, tmp_path / "cache")
        with pytest.raises(RuntimeError, match="step killed"):
            sync_collection(store, failing, "t.raw_kb", points, window=10, encoder=encoder)
        assert store.count("t.raw_kb") == 10
        healthy = CountingEmbedder(embedder)
        resumed = sync_collection(
            store, healthy, "t.raw_kb", points, window=10, encoder=CachedDenseEncoder(healthy, tmp_path / "cache")
        )
        assert (resumed.unchanged, resumed.written, resumed.embedded) == (10, 20, 20)
        assert not set(healthy.embedded) & set(failing.embedded)
        assert store.count("t.raw_kb") == 30


def test_provider_selection_prefers_cuda_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from oprag_pipeline import accelerators as acc

    monkeypatch.delenv(acc.DEVICE_ENV, raising=False)
    assert acc.select_providers([acc.CUDA, acc.CPU]) == [acc.CUDA, acc.CPU]
    assert acc.select_providers(["AzureExecutionProvider", acc.CPU]) == [acc.CPU]
    assert acc.select_providers([acc.CUDA, acc.CPU], device="cpu") == [acc.CPU]
    with pytest.raises(RuntimeError, match="onnxruntime-gpu"):
        acc.select_providers([acc.CPU], device="cuda")
    monkeypatch.setenv(acc.DEVICE_ENV, "tpu")
    with pytest.raises(ValueError, match="OPRAG_DEVICE"):
        acc.select_providers([acc.CPU])
    monkeypatch.delenv(acc.DEVICE_ENV)

    import onnxruntime as ort

    from oprag_pipeline.enrich.aspect_model import MODEL_DIR, MODEL_FILE

    # A CUDA provider onnxruntime cannot start (this machine has none): the session is made on the CPU instead.
    attempts: list[list[str]] = []

    def make(providers: list[str]):
        attempts.append(providers)
        if acc.CUDA in providers:
            raise RuntimeError("CUDA driver not found")
        return ort.InferenceSession(str(MODEL_DIR / MODEL_FILE), providers=providers)

    session, used = acc.create_session(make, [acc.CUDA, acc.CPU])
    assert used == [acc.CPU] and attempts == [[acc.CUDA, acc.CPU], [acc.CPU]]
    assert session.get_providers() == [acc.CPU]
    monkeypatch.setenv(acc.DEVICE_ENV, "cuda")
    with pytest.raises(RuntimeError, match="CUDA driver"):
        acc.create_session(make, [acc.CUDA, acc.CPU])


def test_embedder_runs_on_what_the_machine_offers(embedder: OfflineEmbedder) -> None:
    from oprag_pipeline import accelerators as acc

    embedder.embed_dense(["warm up"])
    assert embedder.providers == acc.select_providers()


def test_server_collection_options_are_passed_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """shard_number / replication_factor / quantization reach the client's create_collection (qdrant-client's local
    mode accepts and ignores the cluster options, so the call itself is what is checked)."""
    from qdrant_client import QdrantClient

    from oprag_pipeline.index.vector_store import ClientVectorStore, CollectionOptions
    from oprag_pipeline.resources import VectorStoreResource

    client = QdrantClient(":memory:")
    calls: list[dict] = []
    real = client.create_collection

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "create_collection", recording)
    monkeypatch.setenv("OPRAG_QDRANT_SHARD_NUMBER", "6")
    monkeypatch.setenv("OPRAG_QDRANT_REPLICATION_FACTOR", "2")
    options = VectorStoreResource(data_dir=str(tmp_path), quantization="int8").collection_options()
    store = ClientVectorStore(client, options)
    store.ensure_collection("t.raw_kb", 8)
    assert (calls[0]["shard_number"], calls[0]["replication_factor"]) == (6, 2)
    assert calls[0]["vectors_config"]["dense"].quantization_config.scalar.always_ram is True
    store.ensure_collection("t.raw_kb", 8)  # exists: not created again
    assert len(calls) == 1 and store.count("t.raw_kb") == 0
    queries: list[dict] = []
    real_query = client.query_points
    monkeypatch.setattr(client, "query_points", lambda *a, **kw: queries.append(kw) or real_query(*a, **kw))
    store.search("t.raw_kb", dense=np.ones(8), k=3, mode="semantic")
    store.search("t.raw_kb", dense=np.ones(8), sparse=([1], [1.0]), k=3, mode="hybrid", filters={"sentiment": "x"})
    semantic, hybrid = queries
    dense_prefetch, sparse_prefetch = hybrid["prefetch"]
    for params in (semantic["search_params"], dense_prefetch.params):  # the server rescores the 8-bit preselection
        assert params.quantization.rescore is True and params.quantization.oversampling > 1
    assert sparse_prefetch.params is None
    # the filter is applied once, on each prefetch; repeated on the fusion it slowed filtered search down
    assert dense_prefetch.filter == sparse_prefetch.filter and dense_prefetch.filter.must[0].key == "sentiment"
    assert hybrid["query_filter"] is None
    store.close()

    monkeypatch.delenv("QDRANT_URL", raising=False)
    resource = VectorStoreResource(data_dir=str(tmp_path), shard_number=3)
    monkeypatch.delenv("OPRAG_QDRANT_REPLICATION_FACTOR")
    assert resource.collection_options() == CollectionOptions(shard_number=3)  # its field wins over the environment
    opened = resource.open_store()  # no QDRANT_URL: the embedded store, with the same options
    assert isinstance(opened, EdgeVectorStore) and opened.options == CollectionOptions(shard_number=3)
    opened.close()
    monkeypatch.setenv("OPRAG_QDRANT_SHARD_NUMBER", "zero")
    with pytest.raises(ValueError, match="OPRAG_QDRANT_SHARD_NUMBER"):
        VectorStoreResource(data_dir=str(tmp_path)).collection_options()


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_edge_with_int8_vectors_finds_the_same_neighbours(tmp_path: Path, seed: int) -> None:
    """The 8-bit copy only preselects: every dense search rescores with the full vectors (`QUANTIZED_OVERSAMPLING`),
    so at this size the int8 collection answers exactly as the float one. Ranked by the 8-bit scores alone, 3-4%
    of these top-10 members differed."""
    from oprag_pipeline.index.vector_store import CollectionOptions, IndexPoint, point_uuid

    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(400, 32)).astype(np.float32)
    queries = rng.normal(size=(40, 32)).astype(np.float32)
    points = [
        IndexPoint(id=point_uuid(f"p{i}"), dense=v, sparse=([1], [1.0]), payload={"domain": "t"})
        for i, v in enumerate(vectors)
    ]
    results = {}
    for quantization in (None, "int8"):
        with EdgeVectorStore(tmp_path / str(quantization), options=CollectionOptions(quantization=quantization),
                             indexing_threshold_kb=1) as store:  # fmt: skip
            store.ensure_collection("t.kb", 32)
            store.upsert("t.kb", points)
            store.optimize("t.kb")
            assert store.segment_count("t.kb") >= 1
            results[quantization] = [{h.id for h in store.search("t.kb", dense=q, k=10, mode="semantic")}
                                     for q in queries]  # fmt: skip
    assert results["int8"] == results[None]
    assert "quantization" in (tmp_path / "int8" / "t.kb" / "edge_config.json").read_text().lower()


def test_enriched_points_compose_from_header_and_entity_split_text() -> None:
    from oprag_pipeline.enrich.documents import render_enriched
    from oprag_pipeline.index.assets import _entity_point
    from oprag_pipeline.index.sync import point_hash

    relevant = "The pool was cold and nobody fixed it."
    text = render_enriched(
        entity_name="pool", tier1="facilities", tier2=None, relevant_text=relevant, sentiment="negative",
        intensity="medium", impact="low", emotions=["disappointment"], evidence_type="personal_experience",
        sentiment_intensity=-20, author={"traveller_type": "family"},
    )  # fmt: skip
    row = {
        "point_key": "d1::e1", "doc_id": "d1", "entity_id": "e1", "entity_name": "pool", "tier1_name": "facilities",
        "tier2_name": None, "sentiment": "negative", "intensity": "medium", "impact": "low",
        "emotions": ["disappointment"], "evidence_type": "personal_experience", "sentiment_intensity": -20,
        "author_attributes": '{"traveller_type": "family"}', "entity_scope": "hotel 1", "text": text,
        "relevant_text": relevant,
    }  # fmt: skip
    joint = _entity_point("t", row, enriched=True)
    composed = _entity_point("t", row, enriched=True, dense="composed")
    split = _entity_point("t", row, enriched=False)
    assert joint.dense_parts is None and joint.text == composed.text == text
    head, tail = composed.dense_parts
    assert head + tail == text and tail == split.text == relevant and head.startswith("Entity: facilities > pool")
    # Switching between joint and composed vectors rewrites the points; the same mode twice does not.
    assert point_hash(text, joint.payload) != point_hash(text, composed.payload, composed.dense_parts)
    assert point_hash(text, composed.payload, composed.dense_parts) == point_hash(text, joint.payload, (head, tail))


_KILLED_CHILD = """
import sys, time
from pathlib import Path
from oprag_pipeline.embeddings import OfflineEmbedder
from oprag_pipeline.index.sync import SourcePoint, sync_collection
from oprag_pipeline.index.vector_cache import CachedDenseEncoder
from oprag_pipeline.index.vector_store import EdgeVectorStore

class Stalling(OfflineEmbedder):
    calls = 0
    def embed_dense(self, texts, batch_size=None):
        Stalling.calls += 1
        if Stalling.calls == 2:
            print("second window", flush=True)
            time.sleep(600)  # killed here, with the first window written
        return super().embed_dense(texts, batch_size)

root = Path(sys.argv[1])
points = [SourcePoint(key=f"d{i}", text=f"review {i}: the lift {i} was slow", payload={}) for i in range(30)]
embedder = Stalling()
store = EdgeVectorStore(root / "qdrant")
sync_collection(store, embedder, "t.raw_kb", points, window=10, encoder=CachedDenseEncoder(embedder, root / "cache"))
"""


def test_a_killed_sync_resumes_from_its_last_window(tmp_path: Path, embedder: OfflineEmbedder) -> None:
    """SIGKILL mid-step (no cleanup runs): the next run keeps the written window and writes only the rest."""
    import os
    import signal
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", _KILLED_CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})  # fmt: skip
    try:
        assert child.stdout.readline().strip() == "second window"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    points = [SourcePoint(key=f"d{i}", text=f"review {i}: the lift {i} was slow", payload={}) for i in range(30)]
    counting = CountingEmbedder(embedder)
    with EdgeVectorStore(tmp_path / "qdrant") as store:
        resumed = sync_collection(
            store, counting, "t.raw_kb", points, window=10, encoder=CachedDenseEncoder(counting, tmp_path / "cache")
        )
        assert (resumed.unchanged, resumed.written) == (10, 20)
        assert sorted(counting.embedded) == sorted(p.text for p in points[10:])
        assert store.count("t.raw_kb") == 30
