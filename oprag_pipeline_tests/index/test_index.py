"""Indexing through Dagster into the embedded Qdrant engine: counts, idempotence, deletions, and `oprag query`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from dagster import AssetSelection, DagsterInstance

from oprag_pipeline.cli import main
from oprag_pipeline.definitions import ALL_ASSETS
from oprag_pipeline.demo import generate_demo
from oprag_pipeline.index.sync import collection_name
from oprag_pipeline.index.vector_store import EdgeVectorStore, SearchHit
from oprag_pipeline_tests.conftest import materialize_domain

# End-to-end: real processes or whole pipeline runs (minutes); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow

INDEX_KEYS = ("raw_kb", "entity_split_kb", "enriched_kb")


# everything up to the knowledge bases; the evaluation on top of them is covered by evaluate/test_evaluation_chain.py
UP_TO_INDEX = AssetSelection.groups("ingest", "registry", "enrich", "index")  # whatever comes after


def materialize_all(data_dir: Path, instance: DagsterInstance) -> dict[str, dict]:
    return materialize_domain(ALL_ASSETS, data_dir, instance, "hotels", selection=UP_TO_INDEX)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("index")
    data_dir = root / "data"
    generate_demo(data_dir, docs=240, seed=21, domains=("hotels",))
    (root / "home").mkdir()
    previous = os.environ.get("OPRAG_DATA_DIR")
    os.environ["OPRAG_DATA_DIR"] = str(data_dir)
    with DagsterInstance.local_temp(str(root / "home")) as instance:
        first = materialize_all(data_dir, instance)
        yield data_dir, instance, first
    if previous is None:
        os.environ.pop("OPRAG_DATA_DIR", None)
    else:
        os.environ["OPRAG_DATA_DIR"] = previous


def test_collections_hold_one_point_per_source_row(indexed) -> None:
    _, _, first = indexed
    for key in INDEX_KEYS:
        assert first[key]["points"] > 0 and first[key]["written"] == first[key]["points"]
    assert first["enriched_kb"]["points"] == first["enriched_entity_docs"]["documents"]
    assert first["entity_split_kb"]["points"] == first["enriched_entity_docs"]["documents"]


def test_the_per_entity_kbs_find_every_vector_embedded_by_the_shards(indexed) -> None:
    """`entity_doc_vectors` embeds the distinct texts of both per-entity KBs in shards; the KB steps then embed
    nothing, and the shards' inputs are gone."""
    data_dir, _, first = indexed
    vectors = first["entity_doc_vectors"]
    assert vectors["shards"] == 2 and len(vectors["shard_texts"]) == 2
    assert vectors["embedded_this_run"] == sum(vectors["shard_texts"]) == vectors["distinct"] - vectors["cached"] > 0
    # both KBs ask for the split texts, so the requests outnumber the distinct texts
    assert vectors["requested"] > vectors["distinct"]
    assert vectors["requested"] == 2 * first["enriched_entity_docs"]["documents"]
    assert first["entity_split_kb"]["embedded"] == 0 and first["enriched_kb"]["embedded"] == 0
    assert first["raw_kb"]["embedded"] > 0  # the raw chunks are embedded by their own step
    assert not (data_dir / "shards" / "_embedding" / "hotels").exists()


def test_reindexing_unchanged_data_writes_nothing_and_deletes_removed(indexed) -> None:
    data_dir, instance, _ = indexed
    second = materialize_all(data_dir, instance)
    assert second["entity_doc_vectors"]["embedded_this_run"] == 0
    assert second["entity_doc_vectors"]["cached"] == second["entity_doc_vectors"]["distinct"]
    for key in INDEX_KEYS:
        assert second[key]["written"] == 0 and second[key]["deleted"] == 0, (key, second[key])
    # remove ten documents from the input: their chunks and entity points must leave every collection
    source = next((data_dir / "raw" / "hotels").glob("*.jsonl"))
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows[10:]))
    third = materialize_all(data_dir, instance)
    assert third["raw_documents"]["removed"] == 10
    assert third["raw_kb"]["deleted"] >= 10 and third["raw_kb"]["written"] == 0
    assert third["enriched_kb"]["deleted"] > 0
    store = EdgeVectorStore(data_dir / "qdrant")
    try:
        removed = {r["doc_id"] for r in rows[:10]}
        hits = store.search(collection_name("hotels", "raw"), dense=[1.0] + [0.0] * 383, k=500, mode="semantic")
        assert not removed & {h.payload["doc_id"] for h in hits}
        assert store.count(collection_name("hotels", "raw")) == third["raw_kb"]["points"]
    finally:
        store.close()


def test_query_cli_prints_hits_and_distributions(indexed, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir, _, _ = indexed
    monkeypatch.setenv("OPRAG_DATA_DIR", str(data_dir))
    result = CliRunner().invoke(
        main, ["query", "what do guests think of the breakfast?", "--domain", "hotels", "-k", "8", "--mode", "hybrid"]
    )
    assert result.exit_code == 0, result.output
    assert "8 hits for" in result.output
    assert "breakfast" in result.output.lower()
    assert "retrieved (n=" in result.output and "corpus (n=" in result.output
    assert "Timeline of" in result.output  # the focus entity's opinions per window (analysis/drift.py)
    # The bracketed score is explained, and the bound the legend states holds for every hit (RRF over two lists)
    from oprag_pipeline.index.vector_store import RRF_K

    assert "[score]: reciprocal-rank fusion" in result.output
    scores = [float(s) for s in re.findall(r"^\s+\d+\. \[([0-9.]+)\]", result.output, flags=re.M)]
    assert len(scores) == 8 and max(scores) <= 2 / RRF_K + 1e-9 and scores == sorted(scores, reverse=True)
    assert f"at most {2 / RRF_K:.3f}" in result.output
    recent = CliRunner().invoke(
        main, ["query", "breakfast?", "--domain", "hotels", "--mode", "balanced", "--since", "2024-06-01"]
    )
    assert recent.exit_code == 0, recent.output
    both = CliRunner().invoke(
        main, ["query", "breakfast?", "--domain", "hotels", "--since", "2024-06-01", "--half-life", "30"]
    )
    assert both.exit_code != 0 and "not both" in both.output
    raw = CliRunner().invoke(main, ["query", "breakfast", "--domain", "hotels", "--kb", "raw", "--mode", "semantic"])
    assert raw.exit_code == 0, raw.output
    for mode in ("pm2", "mmr", "fair", "groups"):  # the re-ranking modes are reachable from the command line too
        diversified = CliRunner().invoke(
            main, ["query", "what do guests think of the breakfast?", "--domain", "hotels", "-k", "5", "--mode", mode]
        )
        assert diversified.exit_code == 0 and "5 hits for" in diversified.output, diversified.output
    # groups: the fairness trade-off's retrieval at one weight; its weight means nothing to another mode
    groups_only = CliRunner().invoke(
        main, ["query", "breakfast", "--domain", "hotels", "-k", "6", "--mode", "groups", "--group-weight", "1"]
    )
    assert groups_only.exit_code == 0 and "(groups, k=6)" in groups_only.output, groups_only.output
    misuse = CliRunner().invoke(main, ["query", "breakfast", "--domain", "hotels", "--group-weight", "0.3"])
    assert misuse.exit_code != 0 and "--mode groups" in misuse.output
    missing = CliRunner().invoke(main, ["query", "x", "--domain", "nowhere"])
    assert missing.exit_code != 0 and "unknown domain 'nowhere'; existing domains: hotels" in missing.output


class VectorlessStore:
    """The real store with the stored vectors taken off every hit: a backend that returns none, which makes the
    retriever embed the candidates' texts again (its fallback)."""

    def __init__(self, store: EdgeVectorStore) -> None:
        self.store = store

    def search(self, name: str, **kwargs) -> list[SearchHit]:
        return [SearchHit(h.id, h.score, h.payload) for h in self.store.search(name, **kwargs)]


def test_mmr_on_stored_vectors_selects_what_re_embedding_selects(indexed) -> None:
    """MMR reads the candidates' vectors back from the engine instead of embedding their texts again; on the
    demo's real index (joint MiniLM vectors) both give the same selection."""
    import duckdb

    from oprag_pipeline.embeddings import OfflineEmbedder
    from oprag_pipeline.index.retrieval import OpinionProfile, Retriever

    data_dir, _, _ = indexed
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        profile = OpinionProfile.load(conn, "hotels")
    store = EdgeVectorStore(data_dir / "qdrant")
    try:
        embedder = OfflineEmbedder()
        stored = Retriever(store, embedder, profiles={"hotels": profile}, mmr_lambda=0.5)
        embedded = Retriever(VectorlessStore(store), embedder, profiles={"hotels": profile}, mmr_lambda=0.5)
        questions = ["what do guests think of the breakfast?", "is the room clean?", "how is the wifi?"]
        for question in questions:
            for k in (10, 20):
                ids = [h.point_id for h in stored.search("hotels", question, k=k, mode="mmr", kb="enriched")]
                again = [h.point_id for h in embedded.search("hotels", question, k=k, mode="mmr", kb="enriched")]
                assert len(ids) == k and ids == again, (question, k)
        assert not stored._point_vectors  # nothing was embedded: every candidate came with its vector
        assert embedded._point_vectors  # the fallback did embed
    finally:
        store.close()


def test_sync_reads_a_source_twice_and_writes_in_batches(tmp_path: Path) -> None:
    """A large KB is never held in memory: the source is read once for the diff and once for the changed points."""
    from oprag_pipeline.embeddings import OfflineEmbedder
    from oprag_pipeline.index.sync import SourcePoint, sync_collection

    reads = []
    texts = [f"review {i}: the room was {'clean' if i % 2 else 'noisy'} and the staff {i} were kind" for i in range(50)]

    def source(edit: int | None = None):
        def read():
            reads.append(1)
            for i, text in enumerate(texts):
                yield SourcePoint(key=f"d{i}", text=text + (" (edited)" if i == edit else ""), payload={"i": i})

        return read

    embedder = OfflineEmbedder()
    store = EdgeVectorStore(tmp_path / "qdrant")
    try:
        first = sync_collection(store, embedder, "t.raw_kb", source(), batch_size=16)
        assert (first.written, first.unchanged, len(reads), store.count("t.raw_kb")) == (50, 0, 2, 50)
        reads.clear()
        again = sync_collection(store, embedder, "t.raw_kb", source(), batch_size=16)
        assert (again.written, again.unchanged, len(reads)) == (0, 50, 1)  # nothing changed: no second read
        edited = sync_collection(store, embedder, "t.raw_kb", source(edit=7), batch_size=16)
        assert (edited.written, edited.unchanged) == (1, 49)
        hits = store.search("t.raw_kb", dense=embedder.embed_dense([texts[7] + " (edited)"])[0], k=1, mode="semantic")
        assert hits[0].payload["text"].endswith("(edited)")

        def duplicated():
            yield SourcePoint(key="x", text="one", payload={})
            yield SourcePoint(key="x", text="one", payload={})

        with pytest.raises(ValueError, match="duplicate point key 'x'"):
            sync_collection(store, embedder, "t.dup_kb", duplicated, batch_size=16)
        assert store.count("t.dup_kb") == 0  # found before anything is written
    finally:
        store.close()


def whole_word_model_dir(target: Path) -> Path:
    """A fastembed folder in bge-small's layout around MiniLM's ONNX graph, with a tokenizer of whole words (MiniLM's
    vocabulary, no word pieces): a configured model whose token counts differ from MiniLM's, buildable offline."""
    import shutil

    from tokenizers import Tokenizer, models, pre_tokenizers

    from oprag_pipeline.embedding_models import ensure_dense_model_dir

    source = ensure_dense_model_dir("fp32")
    target.mkdir(parents=True)
    for name in ("config.json", "special_tokens_map.json", "tokenizer_config.json"):
        shutil.copyfile(source / name, target / name)
    (target / "model_optimized.onnx").symlink_to(source / "model.onnx")
    vocab = json.loads(Tokenizer.from_file(str(source / "tokenizer.json")).to_str())["model"]["vocab"]
    words = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.save(str(target / "tokenizer.json"))
    return target


def test_raw_kb_chunks_with_the_configured_embedders_tokenizer(
    data_dir: Path, dagster_instance: DagsterInstance, tmp_path: Path
) -> None:
    """Chunk budgets are counted in the configured embedder's tokens, not MiniLM's whatever the model."""
    import duckdb
    from dagster import materialize

    from oprag_pipeline.index.assets import raw_kb
    from oprag_pipeline.index.chunking import chunk_documents
    from oprag_pipeline.ingest.assets import raw_documents
    from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
    from oprag_pipeline.resources import EmbedderResource, build_resources
    from oprag_pipeline_tests.conftest import write_lines

    configured = EmbedderResource(
        model="BAAI/bge-small-en-v1.5", model_path=str(whole_word_model_dir(tmp_path / "whole-words"))
    )
    text = " ".join(["Unbelievably uncomfortable mattresses, overpriced minibar snacks and unhelpful staff."] * 6)
    write_lines(data_dir / "raw/hotels/a.jsonl", [json.dumps({"doc_id": "h1", "text": text})])
    dagster_instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["hotels"])
    tokenizer = configured.embedder().document_tokenizer()
    minilm = EmbedderResource(model=None).embedder().document_tokenizer()
    assert tokenizer.get_vocab_size() == minilm.get_vocab_size()  # same ids, other token boundaries
    expected = chunk_documents([("h1", text)], tokenizer, chunk_tokens=16, overlap=0.0)
    assert len(expected) < len(chunk_documents([("h1", text)], minilm, chunk_tokens=16, overlap=0.0))

    run = materialize(
        [raw_documents, raw_kb],
        partition_key="hotels",
        instance=dagster_instance,
        resources={**build_resources(data_dir=data_dir), "embedder": configured},
        run_config={"ops": {"raw_kb": {"config": {"chunk_tokens": 16, "overlap": 0.0}}}},
    )
    assert run.success
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        stored = conn.execute(
            "SELECT chunk_index, char_start, char_end FROM raw_chunks WHERE domain = 'hotels' ORDER BY chunk_index"
        ).fetchall()
    assert stored == [(c.index, c.char_start, c.char_end) for c in expected]
