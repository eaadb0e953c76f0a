"""Contract tests of the vector store: one suite, run against both adapters.

`EdgeVectorStore` is the embedded default (Qdrant's engine in process); `ClientVectorStore` is the server adapter,
exercised here against qdrant-client's local mode (no Qdrant server can run on these machines). Both must give the
same answers on the same made-up corpus: 200 points with seeded random unit vectors, plus crafted ones whose rank is
known — `NEAR` is the nearest neighbour of the query, `SECOND` the runner-up, and `RARE` is the point farthest from
the query in dense space that alone carries a rare sparse term.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient

from oprag_pipeline.index.vector_store import (
    INTEGER_FIELDS,
    KEYWORD_FIELDS,
    ClientVectorStore,
    CollectionNotFoundError,
    EdgeVectorStore,
    IndexPoint,
    SearchHit,
    VectorStore,
    point_uuid,
)
from oprag_pipeline.resources import VectorStoreResource, open_configured_store

DIM = 32
N = 200
COLLECTION = "hotels_enriched"
NEAR, RARE, SECOND = 0, 1, 2
COMMON_TERM = 100  # in every even-numbered point, with a high weight
RARE_TERM = 4_000_000_000  # only in RARE (and close to the u32 limit on purpose)
SENTIMENTS = ("positive", "neutral", "negative")
TRAVELLERS = ("family", "couple", "business", "solo")


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@dataclass
class Corpus:
    query: np.ndarray
    points: list[IndexPoint]

    def id(self, i: int) -> str:
        return self.points[i].id


def _payload(i: int) -> dict:
    return {
        "domain": "hotels",
        "doc_id": f"doc-{i}",
        "entity_id": f"e{i % 10}",
        "sentiment": SENTIMENTS[i % 3],
        "author_traveller_type": TRAVELLERS[i % 4],
        "author_year": 2015 + i % 5,
        "content_hash": f"h{i}",
        "text": f"made-up document {i}",
    }


def make_corpus() -> Corpus:
    rng = np.random.default_rng(7)
    query = _unit(rng.normal(size=DIM))
    points = []
    for i in range(N):
        if i == NEAR:
            dense = _unit(query + 0.01 * rng.normal(size=DIM))
        elif i == SECOND:
            dense = _unit(query + 0.1 * rng.normal(size=DIM))
        elif i == RARE:
            dense = _unit(-query + 0.01 * rng.normal(size=DIM))
        else:
            dense = _unit(rng.normal(size=DIM))
        terms = {int(t): float(rng.uniform(0.5, 1.0)) for t in rng.choice(100, size=6, replace=False)}
        if i % 2 == 0:
            terms[COMMON_TERM] = 1.5
        if i == RARE:
            terms[RARE_TERM] = 1.0
        indices = np.array(sorted(terms), dtype=np.int64)
        values = np.array([terms[t] for t in sorted(terms)], dtype=np.float32)
        points.append(
            IndexPoint(point_uuid(f"test/doc-{i}/e{i % 10}"), dense.astype(np.float32), (indices, values), _payload(i))
        )
    return Corpus(query.astype(np.float32), points)


CORPUS = make_corpus()


def _edge(tmp: Path, persistent: bool) -> VectorStore:
    return EdgeVectorStore(tmp / "qdrant")  # always on disk: that is what it is for, and it is fast


def _client_local(tmp: Path, persistent: bool) -> VectorStore:
    # Path mode commits one SQLite transaction per point (~20 ms each on these disks): only the reopen test needs
    # it; the other tests run the same adapter code against local mode in memory.
    return ClientVectorStore(QdrantClient(path=str(tmp / "qdrant-local")) if persistent else QdrantClient(":memory:"))


def _edge_on_disk(tmp: Path, persistent: bool) -> VectorStore:
    return EdgeVectorStore(tmp / "qdrant", on_disk=True)  # vectors, HNSW and payload memory-mapped


def _edge_small_segments(tmp: Path, persistent: bool) -> VectorStore:
    # Optimizes while writing, with segments capped far below the corpus: the path large collections take.
    return EdgeVectorStore(tmp / "qdrant", max_segment_kb=4, optimize_every=50, indexing_threshold_kb=1)


ADAPTERS: dict[str, Callable[[Path, bool], VectorStore]] = {
    "edge": _edge,
    "edge-on-disk": _edge_on_disk,
    "edge-small-segments": _edge_small_segments,
    "client-local": _client_local,
}


@pytest.fixture
def store_dir(tmp_path: Path) -> Iterator[Path]:
    """Where stores live: a RAM-backed folder when the machine has one (every engine write here ends in fsync, which
    costs ~20 ms on these disks and would make this suite take minutes), else pytest's tmp_path. The on-disk format,
    close and reopen are exercised the same way either way."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="oprag-vs-", dir=shm))
        yield folder
        shutil.rmtree(folder, ignore_errors=True)
    else:
        yield tmp_path


@pytest.fixture(params=sorted(ADAPTERS))
def opener(request: pytest.FixtureRequest, store_dir: Path) -> Iterator[Callable[..., VectorStore]]:
    """Opens the parametrized adapter on a fixed folder (call again after `close()` to reopen); closes at the end."""
    opened: list[VectorStore] = []

    def open_store(persistent: bool = False) -> VectorStore:
        store = ADAPTERS[request.param](store_dir, persistent)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture
def store(opener: Callable[..., VectorStore]) -> VectorStore:
    store = opener()
    store.ensure_collection(COLLECTION, DIM)
    store.upsert(COLLECTION, CORPUS.points)
    return store


def ids(hits: list[SearchHit]) -> list[str]:
    return [h.id for h in hits]


def semantic(store: VectorStore, k: int = 10, **kw) -> list[SearchHit]:
    return store.search(COLLECTION, dense=CORPUS.query, k=k, mode="semantic", **kw)


def hybrid(store: VectorStore, sparse, k: int = 10, **kw) -> list[SearchHit]:
    return store.search(COLLECTION, dense=CORPUS.query, sparse=sparse, k=k, mode="hybrid", **kw)


# --------------------------------------------------------------------------------------------------------------
# The contract
# --------------------------------------------------------------------------------------------------------------


def test_both_adapters_satisfy_the_protocol(store: VectorStore) -> None:
    assert isinstance(store, VectorStore)


def test_create_and_count(store: VectorStore) -> None:
    assert store.collection_exists(COLLECTION)
    assert store.count(COLLECTION) == N


def test_ensure_collection_is_idempotent_and_checks_the_dimension(store: VectorStore) -> None:
    store.ensure_collection(COLLECTION, DIM)
    assert store.count(COLLECTION) == N
    with pytest.raises(ValueError, match="dimension"):
        store.ensure_collection(COLLECTION, DIM + 1)


def test_semantic_returns_the_known_nearest_first(store: VectorStore) -> None:
    hits = semantic(store, k=10)
    assert len(hits) == 10
    assert ids(hits)[:2] == [CORPUS.id(NEAR), CORPUS.id(SECOND)]
    assert hits[0].score == pytest.approx(1.0, abs=0.01)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].payload == CORPUS.points[NEAR].payload
    assert CORPUS.id(RARE) not in ids(semantic(store, k=50))


def test_hybrid_surfaces_a_point_that_matches_only_by_a_sparse_term(store: VectorStore) -> None:
    hits = hybrid(store, ([RARE_TERM], [1.0]), k=5)
    assert set(ids(hits)[:2]) == {CORPUS.id(NEAR), CORPUS.id(RARE)}  # each first in one prefetch: 1/2 apiece


def test_hybrid_fuses_with_rrf_k2_and_the_engine_applies_idf(store: VectorStore) -> None:
    # RARE is far outside the dense prefetch, so its fused score is its sparse RRF term alone: 1 / (rank0 + 2).
    # It is 1/2 only if RARE ranks first on sparse, ahead of 100 points whose COMMON_TERM weight (1.5) is higher
    # than its RARE_TERM weight (1.0): that happens only when the engine weighs terms by IDF.
    hits = hybrid(store, ([COMMON_TERM, RARE_TERM], [1.0, 1.0]), k=5)
    by_id = {h.id: h.score for h in hits}
    assert by_id[CORPUS.id(RARE)] == pytest.approx(0.5, rel=1e-5)
    # NEAR: dense rank 0 (1/2), plus a sparse share if its COMMON_TERM tie lands inside the sparse prefetch.
    assert by_id[CORPUS.id(NEAR)] >= by_id[CORPUS.id(RARE)]
    # (No assertion on the rest of the top 2: among the 100 COMMON_TERM points the sparse order of equal weights is
    # the engine's choice, and a point that is high in both lists may legitimately outscore RARE.)


def test_hybrid_with_an_empty_sparse_query_falls_back_to_dense_ranking(store: VectorStore) -> None:
    hits = hybrid(store, ([], []), k=3)
    assert ids(hits)[:2] == [CORPUS.id(NEAR), CORPUS.id(SECOND)]


def test_sparse_ranks_by_bm25_alone_with_idf(store: VectorStore) -> None:
    # RARE holds the rare term only; IDF puts it first though 100 points weigh the common term higher (see above)
    hits = store.search(COLLECTION, sparse=([COMMON_TERM, RARE_TERM], [1.0, 1.0]), k=5, mode="sparse")
    assert ids(hits)[0] == CORPUS.id(RARE)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].payload == CORPUS.points[RARE].payload
    only_rare = store.search(COLLECTION, sparse=([RARE_TERM], [1.0]), k=5, mode="sparse")
    assert ids(only_rare) == [CORPUS.id(RARE)]  # nothing else holds the term: BM25 has no other hit
    assert store.search(COLLECTION, sparse=([], []), k=5, mode="sparse") == []  # a query of stopwords only
    with pytest.raises(ValueError, match="sparse"):
        store.search(COLLECTION, dense=CORPUS.query, k=5, mode="sparse")


def test_hits_carry_their_stored_dense_vector_only_when_asked(store: VectorStore) -> None:
    by_id = {p.id: p.dense for p in CORPUS.points}
    for hits in (
        semantic(store, k=5, with_vectors=True),
        hybrid(store, ([RARE_TERM], [1.0]), k=5, with_vectors=True),
    ):
        assert len(hits) == 5
        for h in hits:
            assert h.vector is not None and h.vector.shape == (DIM,)
            # the engine keeps cosine vectors normalised; the corpus's already are, so it is the indexed vector
            np.testing.assert_allclose(h.vector, by_id[h.id], atol=1e-6)
    assert all(h.vector is None for h in semantic(store, k=5))
    assert all(h.vector is None for h in hybrid(store, ([RARE_TERM], [1.0]), k=5))
    # a hit with a vector still equals the same hit without one (the vector is not part of its identity)
    assert semantic(store, k=5, with_vectors=True) == semantic(store, k=5)


def test_filters_restrict_before_the_top_k_cut(store: VectorStore) -> None:
    negative = semantic(store, k=10, filters={"sentiment": "negative"})
    assert len(negative) == 10
    assert {h.payload["sentiment"] for h in negative} == {"negative"}
    assert negative[0].id == CORPUS.id(SECOND)  # NEAR is positive, SECOND negative

    entities = semantic(store, k=10, filters={"entity_id": ["e0", "e2"]})
    assert {h.payload["entity_id"] for h in entities} <= {"e0", "e2"}
    assert ids(entities)[:2] == [CORPUS.id(NEAR), CORPUS.id(SECOND)]

    both = semantic(store, k=20, filters={"entity_id": "e3", "sentiment": "negative"})
    expected = {CORPUS.id(i) for i in range(N) if i % 10 == 3 and i % 3 == 2}
    assert len(expected) == 6
    assert set(ids(both)) == expected

    years = semantic(store, k=N, filters={"author_year": [2015, 2016]})
    assert len(years) == N * 2 // 5
    assert {h.payload["author_year"] for h in years} == {2015, 2016}
    assert len(semantic(store, k=N, filters={"author_year": 2019})) == N // 5

    assert semantic(store, k=10, filters={"entity_id": []}) == []
    assert semantic(store, k=10, filters={"entity_id": "no-such-entity"}) == []


def test_filters_apply_to_both_hybrid_prefetches(store: VectorStore) -> None:
    excluded = hybrid(store, ([RARE_TERM], [1.0]), k=10, filters={"sentiment": "negative"})
    assert CORPUS.id(RARE) not in ids(excluded)  # RARE is neutral
    assert {h.payload["sentiment"] for h in excluded} == {"negative"}

    neutral = hybrid(store, ([RARE_TERM], [1.0]), k=10, filters={"sentiment": "neutral"})
    assert CORPUS.id(RARE) in ids(neutral)[:2]
    assert {h.payload["sentiment"] for h in neutral} == {"neutral"}


def test_payload_indexes_where_the_engine_has_them(store: VectorStore) -> None:
    fields = store.indexed_fields(COLLECTION)
    if not store.supports_payload_indexes:
        assert fields == {}  # qdrant-client local mode: a scan, no payload indexes at all
        return
    for name in KEYWORD_FIELDS:
        assert fields[name] == "keyword"
    for name in INTEGER_FIELDS:
        assert fields[name] == "integer"
    assert fields["author_traveller_type"] == "keyword"  # made on first sight in upsert
    assert fields["author_year"] == "integer"
    assert "text" not in fields and "content_hash" not in fields


def test_existing_payload_hashes_returns_what_was_written(store: VectorStore) -> None:
    assert store.existing_payload_hashes(COLLECTION) == {p.id: p.payload["content_hash"] for p in CORPUS.points}


def test_upsert_with_the_same_id_replaces(store: VectorStore) -> None:
    old = CORPUS.points[NEAR]
    new_payload = {**old.payload, "sentiment": "negative", "content_hash": "h0-v2"}
    store.upsert(COLLECTION, [IndexPoint(old.id, old.dense, old.sparse, new_payload)])
    assert store.count(COLLECTION) == N
    assert store.existing_payload_hashes(COLLECTION)[old.id] == "h0-v2"
    hits = semantic(store, k=3, filters={"sentiment": "negative"})
    assert hits[0].id == old.id
    assert hits[0].payload == new_payload
    assert CORPUS.id(NEAR) not in ids(semantic(store, k=N, filters={"sentiment": "positive"}))


def test_delete_removes(store: VectorStore) -> None:
    gone = [CORPUS.id(i) for i in range(190, N)] + [CORPUS.id(NEAR)]
    store.delete(COLLECTION, gone)
    store.delete(COLLECTION, [point_uuid("never-written")])  # unknown ids are ignored
    store.delete(COLLECTION, [])
    assert store.count(COLLECTION) == N - 11
    hashes = store.existing_payload_hashes(COLLECTION)
    assert len(hashes) == N - 11 and not set(gone) & set(hashes)
    assert semantic(store, k=1)[0].id == CORPUS.id(SECOND)
    victim = CORPUS.points[195]
    found = store.search(COLLECTION, dense=victim.dense, k=5, mode="semantic")
    assert victim.id not in ids(found)


def test_reopen_after_close_keeps_the_data(opener: Callable[..., VectorStore]) -> None:
    first = opener(persistent=True)
    first.ensure_collection(COLLECTION, DIM)
    first.upsert(COLLECTION, CORPUS.points)
    first.delete(COLLECTION, [CORPUS.id(199)])
    fields_before = first.indexed_fields(COLLECTION)
    first.close()
    first.close()  # idempotent

    second = opener(persistent=True)
    assert second.collection_exists(COLLECTION)
    assert second.count(COLLECTION) == N - 1
    assert second.existing_payload_hashes(COLLECTION) == {p.id: p.payload["content_hash"] for p in CORPUS.points[:-1]}
    assert ids(semantic(second, k=2)) == [CORPUS.id(NEAR), CORPUS.id(SECOND)]
    assert second.indexed_fields(COLLECTION) == fields_before
    second.ensure_collection(COLLECTION, DIM)  # reopening through ensure_collection keeps the data too
    assert second.count(COLLECTION) == N - 1
    second.optimize(COLLECTION)
    assert second.count(COLLECTION) == N - 1


def test_drop_and_missing_collections(store: VectorStore) -> None:
    store.drop(COLLECTION)
    assert not store.collection_exists(COLLECTION)
    store.drop(COLLECTION)  # no error when already gone
    with pytest.raises(CollectionNotFoundError):
        store.count(COLLECTION)
    with pytest.raises(CollectionNotFoundError):
        store.existing_payload_hashes(COLLECTION)
    with pytest.raises(CollectionNotFoundError):
        store.upsert(COLLECTION, CORPUS.points[:1])
    with pytest.raises(CollectionNotFoundError):
        semantic(store)
    store.ensure_collection(COLLECTION, DIM)  # and it can be made again, empty
    assert store.count(COLLECTION) == 0
    assert semantic(store) == []


def test_bad_arguments_are_rejected_the_same_way(store: VectorStore) -> None:
    with pytest.raises(ValueError, match="dense"):
        store.search(COLLECTION, sparse=([1], [1.0]), k=5, mode="semantic")
    with pytest.raises(ValueError, match="sparse"):
        store.search(COLLECTION, dense=CORPUS.query, k=5, mode="hybrid")
    with pytest.raises(ValueError, match="mode"):
        store.search(COLLECTION, dense=CORPUS.query, k=5, mode="keyword")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unique"):
        hybrid(store, ([3, 3], [1.0, 1.0]))
    with pytest.raises(TypeError):
        semantic(store, filters={"author_year": 2015.5})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="collection name"):
        store.ensure_collection("../escape", DIM)


# --------------------------------------------------------------------------------------------------------------
# Adapter-specific behaviour
# --------------------------------------------------------------------------------------------------------------


def test_edge_shard_is_one_folder_per_collection_and_single_writer(store_dir: Path) -> None:
    store = EdgeVectorStore(store_dir / "qdrant")
    store.ensure_collection(COLLECTION, DIM)
    store.upsert(COLLECTION, CORPUS.points[:10])
    assert (store_dir / "qdrant" / COLLECTION / "edge_config.json").exists()
    rival = EdgeVectorStore(store_dir / "qdrant")
    with pytest.raises(RuntimeError, match="open in another process"):
        rival.count(COLLECTION)
    store.close()
    assert rival.count(COLLECTION) == 10  # free once the owner closed it
    rival.close()


def test_edge_gives_an_older_collection_the_indexes_its_queries_rely_on(store_dir: Path) -> None:
    """A collection written before the σ-score index existed gets it when next opened, so balanced retrieval does not
    fall back to reading payloads from disk; its points and other indexes are untouched."""
    import qdrant_edge

    store = EdgeVectorStore(store_dir / "qdrant")
    store.ensure_collection(COLLECTION, DIM)
    store.upsert(COLLECTION, CORPUS.points)
    store._shard(COLLECTION).update(qdrant_edge.UpdateOperation.delete_field_index("sentiment_intensity"))
    assert "sentiment_intensity" not in EdgeVectorStore._read_indexes(store._shard(COLLECTION))
    store.close()
    reopened = EdgeVectorStore(store_dir / "qdrant")
    assert reopened.indexed_fields(COLLECTION)["sentiment_intensity"] == "integer"
    assert reopened.count(COLLECTION) == len(CORPUS.points)
    reopened.close()


def test_edge_builds_segments_while_writing_and_caps_their_size(store_dir: Path) -> None:
    """Large collections must not pile every point into one unoptimized segment (its single HNSW build was what set
    the peak memory): every `optimize_every` points are indexed as they come, into segments of bounded size."""

    def write(store: EdgeVectorStore) -> int:
        store.ensure_collection(COLLECTION, DIM)
        for b in range(0, N, 20):
            store.upsert(COLLECTION, CORPUS.points[b : b + 20])
        return store._shard(COLLECTION).info().segments_count

    small = {"max_segment_kb": 4, "indexing_threshold_kb": 1}
    incremental = EdgeVectorStore(store_dir / "small", **small, optimize_every=50, optimize_on_close=False)
    at_once = EdgeVectorStore(store_dir / "default", **small, optimize_on_close=False)
    try:
        assert write(incremental) > write(at_once)
        assert incremental._written_since_optimize[COLLECTION] < 50  # reset at each build
        for store in (incremental, at_once):
            assert store.count(COLLECTION) == N
            assert ids(semantic(store, k=1)) == [CORPUS.id(NEAR)]
    finally:
        incremental.close()
        at_once.close()
    config = json.loads((store_dir / "small" / COLLECTION / "edge_config.json").read_text())
    assert config["optimizers"]["max_segment_size"] == 4


def test_point_uuid_is_deterministic() -> None:
    a = point_uuid("hotels/doc-1/check-in")
    assert a == point_uuid("hotels/doc-1/check-in")
    assert a != point_uuid("hotels/doc-1/breakfast")
    parsed = uuid.UUID(a)
    assert parsed.version == 5 and str(parsed) == a
    # Pinned: every stored point id depends on the namespace; changing it would orphan all existing indexes.
    assert a == "1771ab66-6638-5d10-a89a-99722fe5b6e1"


def _refused_url() -> str:
    """A localhost URL nobody listens on (a port just released by the OS), so no request could reach a server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@contextmanager
def _joined_new_threads() -> Iterator[None]:
    """Wait for threads started inside the block: qdrant-client checks the server version in a background thread,
    whose warning would otherwise land outside the test that caused it."""
    before = set(threading.enumerate())
    yield
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=10)


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")  # from the client's background check
def test_open_vector_store_chooses_the_adapter_by_environment(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("QDRANT_URL", raising=False)
    monkeypatch.delenv("QDRANT_API_KEY", raising=False)
    embedded = open_configured_store(store_dir)
    assert isinstance(embedded, EdgeVectorStore)
    assert embedded.root == store_dir / "qdrant"
    embedded.close()

    # Constructing a remote QdrantClient sends one version-check request and only warns when it fails: against a
    # port nobody listens on it is refused at once, so the selection is testable without a server.
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("QDRANT_URL", _refused_url())
    monkeypatch.setenv("QDRANT_API_KEY", "s3cr3t-api-key")
    with pytest.warns(UserWarning) as warned, _joined_new_threads():
        remote = open_configured_store(store_dir)
    messages = " ".join(str(w.message) for w in warned)
    assert "insecure" in messages and "server version" in messages  # qdrant-client's: http + api key, no server
    assert "s3cr3t-api-key" not in messages
    assert isinstance(remote, ClientVectorStore)
    assert remote.supports_payload_indexes  # a server, not local mode
    assert "s3cr3t-api-key" not in caplog.text
    assert "127.0.0.1" in caplog.text
    remote.close()


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_dagster_resource_opens_the_store_and_closes_it_at_teardown(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QDRANT_URL", raising=False)
    resource = VectorStoreResource(data_dir=str(store_dir))
    store = resource.open_store()
    assert isinstance(store, EdgeVectorStore)
    store.ensure_collection(COLLECTION, DIM)
    store.upsert(COLLECTION, CORPUS.points[:5])
    resource.teardown_after_execution(None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="closed"):
        store.count(COLLECTION)
    reopened = EdgeVectorStore(store_dir / "qdrant")
    assert reopened.count(COLLECTION) == 5
    reopened.close()

    with _joined_new_threads():
        remote = VectorStoreResource(data_dir=str(store_dir), url=_refused_url()).open_store()
    assert isinstance(remote, ClientVectorStore)
    remote.close()
