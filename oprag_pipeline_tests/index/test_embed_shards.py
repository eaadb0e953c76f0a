"""Embedding in shards of a domain: which texts a plan hands out, to which shard, and resuming from the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oprag_pipeline.embeddings import OfflineEmbedder
from oprag_pipeline.index import embed_shards
from oprag_pipeline.index.vector_cache import CachedDenseEncoder, VectorCache, text_keys
from oprag_pipeline_tests.index.test_vector_cache import CountingEmbedder

TEXTS = [f"Review sentence {i}: the {['lobby', 'staff', 'pool', 'breakfast'][i % 4]} was fine." for i in range(40)]


@pytest.fixture(scope="module")
def embedder() -> OfflineEmbedder:
    return OfflineEmbedder()


def _plan(texts_batches, cache: VectorCache, shards: int) -> tuple[embed_shards.EmbedPlan, list[tuple[int, str]]]:
    plan = embed_shards.EmbedPlan(shards=shards)
    rows = [
        (shard, text)
        for batch in embed_shards.pending_texts(texts_batches, cache, plan)
        for shard, text in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)
    ]
    return plan, rows


def test_a_plan_hands_out_each_uncached_text_once_to_a_stable_shard(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "cache", 4)
    cached = TEXTS[:10]
    cache.put(text_keys(cached), np.ones((10, 4), dtype=np.float32))
    cache.flush()
    # repeats within a batch and across batches, as the two KBs ask for the same split texts
    batches = [TEXTS[:25] + TEXTS[:5], TEXTS[20:], TEXTS[5:15]]
    plan, rows = _plan(batches, cache, shards=3)
    texts = [text for _, text in rows]
    assert sorted(texts) == sorted(TEXTS[10:])  # every uncached distinct text, once
    assert plan.requested == sum(len(b) for b in batches)
    assert plan.distinct == len(TEXTS) and plan.cached == 10 and sum(plan.pending) == 30
    assert [sum(1 for s, _ in rows if s == i) for i in range(3)] == plan.pending
    assert all(0 < n < 30 for n in plan.pending)  # 30 texts by hash do not all land in one of three shards
    # the shard depends on the text alone: the same text is in the same shard whatever else is planned
    _, alone = _plan([list(reversed(TEXTS[10:]))], VectorCache(tmp_path / "empty", 4), shards=3)
    assert dict((t, s) for s, t in alone) == dict((t, s) for s, t in rows)


def test_the_plan_round_trips_through_the_shard_store_and_an_empty_shard_reads_nothing(tmp_path: Path) -> None:
    store = embed_shards.embedding_shard_store(str(tmp_path / "shards"))
    plan = embed_shards.EmbedPlan(shards=5)
    few = TEXTS[:3]  # at most three of five shards get a text
    embed_shards.write_plan(store, "hotels", embed_shards.pending_texts([few], VectorCache(tmp_path / "c", 4), plan))
    read = {i: [t for batch in embed_shards.read_shard(store, "hotels", i, 2) for t in batch] for i in range(5)}
    assert sorted(t for texts in read.values() for t in texts) == sorted(few)
    assert [len(read[i]) for i in range(5)] == plan.pending and plan.pending.count(0) >= 2
    assert (tmp_path / "shards" / "_embedding" / "hotels").is_dir()  # beside, never inside, a domain's folder
    store.clear("hotels")
    assert not (tmp_path / "shards" / "_embedding" / "hotels").exists()
    assert [t for batch in embed_shards.read_shard(store, "hotels", 0, 2) for t in batch] == []


def test_a_killed_shard_resumes_from_the_vectors_it_flushed(tmp_path: Path, embedder: OfflineEmbedder) -> None:
    """Shard 0 embeds its texts and dies before shard 1 runs: the next plan hands out only shard 1's texts, and
    the vectors then in the cache are the encoder's own for each text."""
    store = embed_shards.embedding_shard_store(str(tmp_path / "shards"))
    counting = CountingEmbedder(embedder)
    encoder = CachedDenseEncoder(counting, tmp_path / "vectors")
    first = embed_shards.EmbedPlan(shards=2)
    embed_shards.write_plan(store, "d", embed_shards.pending_texts([TEXTS], encoder.cache, first))
    shard0 = [t for batch in embed_shards.read_shard(store, "d", 0, 7) for t in batch]
    for start in range(0, len(shard0), 7):
        encoder.embed_dense(shard0[start : start + 7])
    encoder.close()  # what a step's `finally` flushes
    resumed = CachedDenseEncoder(counting, tmp_path / "vectors")
    second = embed_shards.EmbedPlan(shards=2)
    embed_shards.write_plan(store, "d", embed_shards.pending_texts([TEXTS], resumed.cache, second))
    assert second.cached == len(shard0) and second.pending == [0, first.pending[1]]
    shard1 = [t for batch in embed_shards.read_shard(store, "d", 1, 7) for t in batch]
    resumed.embed_dense(shard1)
    assert sorted(counting.embedded) == sorted(TEXTS)  # every text through the encoder exactly once
    found, vectors = resumed.cache.get(text_keys(TEXTS))
    assert found.all()
    # exactly what the encoder returned for each text in its own batch (8-bit kernels follow the batch's shape, so
    # a different batching of the same text agrees only to a cosine near 1)
    np.testing.assert_array_equal(vectors, np.stack([counting.returned[t] for t in TEXTS]))
    assert (vectors * embedder.embed_dense(TEXTS)).sum(1).min() > 0.9999
    resumed.close()


def test_a_shard_killed_mid_way_resumes_from_what_the_clock_flushed(tmp_path: Path, embedder: OfflineEmbedder) -> None:
    """A process killed while embedding runs no `finally`: only the parts already written survive. With parts
    written every FLUSH_SECONDS as well as every PART_VECTORS vectors, a kill part-way through a shard smaller than a
    part loses at most the texts since the last timed flush, and the resumed run embeds exactly those."""
    store = embed_shards.embedding_shard_store(str(tmp_path / "shards"))
    now = [0.0]

    def clock() -> float:
        return now[0]

    class Slow(CountingEmbedder):
        """Each call takes 10 s on the fake clock; the 6th never returns (the process is killed)."""

        def embed_dense(self, texts):
            now[0] += 10.0
            return super().embed_dense(texts)

    counting = Slow(embedder, fail_on=6)
    encoder = CachedDenseEncoder(counting, tmp_path / "vectors", flush_seconds=30.0, clock=clock)
    assert encoder.cache.part_vectors > len(TEXTS)  # the count alone would flush nothing before the kill
    plan = embed_shards.EmbedPlan(shards=1)
    embed_shards.write_plan(store, "d", embed_shards.pending_texts([TEXTS], encoder.cache, plan))
    with pytest.raises(RuntimeError, match="step killed"):
        for texts in embed_shards.read_shard(store, "d", 0, 7):
            encoder.embed_dense(texts)
    # no encoder.close(): a killed process flushes nothing more. Calls 1-3 took 30 s (flushed with call 3), calls
    # 4-5 are the buffer the kill loses.
    embedded_before_kill = list(counting.embedded)
    assert len(embedded_before_kill) == 35
    flushed = embedded_before_kill[:21]
    resumed_counting = CountingEmbedder(embedder)
    resumed = CachedDenseEncoder(resumed_counting, tmp_path / "vectors")
    again = embed_shards.EmbedPlan(shards=1)
    embed_shards.write_plan(store, "d", embed_shards.pending_texts([TEXTS], resumed.cache, again))
    assert again.cached == len(flushed) and again.pending == [len(TEXTS) - len(flushed)]
    for texts in embed_shards.read_shard(store, "d", 0, 7):
        resumed.embed_dense(texts)
    resumed.close()
    assert sorted(resumed_counting.embedded) == sorted(set(TEXTS) - set(flushed))  # only what was not flushed
    found, _ = VectorCache(resumed.cache.folder, embedder.dim).get(text_keys(TEXTS))
    assert found.all()
