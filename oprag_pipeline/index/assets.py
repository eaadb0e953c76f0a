"""Index assets: the raw KB (token chunks), the entity-split KB and the enriched KB, one collection each per domain."""

import json
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    Config,
    DynamicOut,
    DynamicOutput,
    In,
    MaterializeResult,
    MetadataValue,
    Nothing,
    OpExecutionContext,
    Out,
    PreviewWarning,
    graph_asset,
    op,
)
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline import config as env_config  # `config` is the assets' run config
from oprag_pipeline.asset_decorators import domain_asset
from oprag_pipeline.concurrency import WAREHOUSE_OP
from oprag_pipeline.index import embed_shards
from oprag_pipeline.index.chunking import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP, chunk_documents
from oprag_pipeline.index.sync import EMBED_WINDOW, SourcePoint, collection_name, dense_texts, sync_collection
from oprag_pipeline.index.vector_cache import CachedDenseEncoder
from oprag_pipeline.index.vector_store import batched
from oprag_pipeline.partitions import domain_partitions
from oprag_pipeline.progress import Progress
from oprag_pipeline.resources import DataDirResource, EmbedderResource, VectorStoreResource, run_config_default
from oprag_pipeline.warehouse import ensure_tables, records, replace_rows

VECTOR_CACHE_ENV = "OPRAG_VECTOR_CACHE_DIR"
ENRICHED_DENSE_ENV = "OPRAG_ENRICHED_DENSE"


def vector_cache_root(data_dir: str | Path, configured: str | None = None) -> Path:
    """Where embedded vectors are kept for reuse: `configured` (the embedder resource's field), else
    `OPRAG_VECTOR_CACHE_DIR`, else `vector_cache/` in the data dir."""
    return EmbedderResource(vector_cache_dir=configured).vector_cache_root(data_dir)


def _encoder(embedder: EmbedderResource, vector_store: VectorStoreResource) -> CachedDenseEncoder:
    return CachedDenseEncoder(embedder.embedder(), embedder.vector_cache_root(vector_store.data_dir))


def _count_check(kb: str, source: str) -> AssetCheckSpec:
    # A partitioned check spec is a preview in the Dagster we pin; it is what records the result against the domain
    # it checked instead of beside every domain. The warning is silenced for this one construction.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return AssetCheckSpec(
            "points_match_source",
            asset=f"{kb}_kb",
            description=f"Point count equals the rows of `{source}`.",
            partitions_def=domain_partitions,
        )


def _result(context: AssetExecutionContext, kb: str, summary, source_rows: int, store, name: str):
    points = store.count(name)
    context.log.info(
        f"{name}: {summary.written:,} written, {summary.deleted:,} deleted, {summary.unchanged:,} unchanged; "
        f"{points:,} points for {source_rows:,} source rows; {summary.embedded:,} texts embedded, the other "
        f"vectors reused"
    )
    yield MaterializeResult(
        metadata={
            "collection": name,
            "points": points,
            "written": summary.written,
            "deleted": summary.deleted,
            "unchanged": summary.unchanged,
            "embedded": summary.embedded,
            "points_per_second": round(summary.points_per_second, 1),
        }
    )
    yield AssetCheckResult(
        check_name="points_match_source",
        passed=points == source_rows,
        metadata={"points": points, "source_rows": source_rows},
    )


class RawKbConfig(Config):
    chunk_tokens: int = Field(default=DEFAULT_CHUNK_TOKENS, description="Tokens per chunk (embedder reads 256).")
    overlap: float = Field(default=DEFAULT_OVERLAP, description="Share of a chunk repeated in the next one.")


@domain_asset(
    group_name="index",
    kinds={"qdrant", "duckdb"},
    deps=["raw_documents"],
    check_specs=[_count_check("raw", "raw_chunks")],
    description="Plain RAG baseline: the source documents as fixed-size token chunks with overlap, no opinion "
    "metadata. Chunk spans are kept in `raw_chunks` so hits map back to the opinions they contain.",
)
def raw_kb(
    context: AssetExecutionContext,
    config: RawKbConfig,
    warehouse: DuckDBResource,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
):
    domain = context.partition_key
    # chunk sizes are counted in the configured embedder's own tokens
    tokenizer = embedder.embedder().document_tokenizer()
    with warehouse.get_connection() as conn:
        ensure_tables(conn, "raw_chunks")
        docs = records(
            conn.execute(
                "SELECT doc_id, text, entity_scope FROM raw_documents WHERE domain = ? ORDER BY doc_id",
                [domain],
            )
        )
        scope = {d["doc_id"]: d["entity_scope"] for d in docs}
        chunks = []
        for start in range(0, len(docs), 5000):
            chunks.extend(
                chunk_documents(
                    [(d["doc_id"], d["text"]) for d in docs[start : start + 5000]],
                    tokenizer,
                    chunk_tokens=config.chunk_tokens,
                    overlap=config.overlap,
                )
            )
        replace_rows(
            conn,
            "raw_chunks",
            [
                {
                    "point_key": f"{c.doc_id}#{c.index}",
                    "doc_id": c.doc_id,
                    "chunk_index": c.index,
                    "char_start": c.char_start,
                    "char_end": c.char_end,
                    "entity_scope": scope[c.doc_id],
                    "text": c.text,
                }
                for c in chunks
            ],
            domain=domain,
        )
    context.log.info(f"{domain}: {len(docs):,} documents → {len(chunks):,} chunks of ≤ {config.chunk_tokens} tokens")
    points = [
        SourcePoint(
            key=f"{c.doc_id}#{c.index}",
            text=c.text,
            payload={
                "domain": domain,
                "doc_id": c.doc_id,
                "chunk_index": c.index,
                "char_start": c.char_start,
                "char_end": c.char_end,
                "entity_scope": scope[c.doc_id],
            },
        )
        for c in chunks
    ]
    store = vector_store.open_store()
    try:
        name = collection_name(domain, "raw")
        encoder = _encoder(embedder, vector_store)
        try:
            summary = sync_collection(store, encoder.embedder, name, points, log=context.log.info, encoder=encoder)
        finally:
            encoder.close()
        yield from _result(context, "raw", summary, len(points), store, name)
    finally:
        store.close()  # builds the index now and frees the shard for the next step of the same run


ENTITY_DOCS_SQL = """
SELECT point_key, doc_id, entity_id, entity_name, tier1_name, tier2_name, sentiment, intensity, impact, emotions,
       evidence_type, sentiment_intensity, author_attributes, entity_scope, text, relevant_text
FROM enriched_entity_docs WHERE domain = ? ORDER BY point_key
"""


EXPORT_BATCH_ROWS = 20_000


DenseMode = env_config.EnrichedDense


def _entity_point(domain: str, r: dict, *, enriched: bool, dense: DenseMode = "joint") -> SourcePoint:
    """One `ENTITY_DOCS_SQL` row (by column name) as a vector-store point."""
    payload = {"domain": domain, "doc_id": r["doc_id"], "entity_id": r["entity_id"], "entity_scope": r["entity_scope"]}
    if enriched:
        author = json.loads(r["author_attributes"]) if r["author_attributes"] else {}
        payload.update(
            {
                **{name: r[name] for name in ENRICHED_PAYLOAD},
                "emotions": list(r["emotions"]),
                **{f"author_{k}": v for k, v in author.items()},
            }
        )
    if not enriched:
        return SourcePoint(key=r["point_key"], text=r["relevant_text"], payload=payload)
    text, relevant = r["text"], r["relevant_text"] or ""
    parts = None
    if dense == "composed" and relevant and text.endswith(relevant):
        parts = (text[: len(text) - len(relevant)], relevant)  # the metadata header, and the entity-split text
    return SourcePoint(key=r["point_key"], text=text, payload=payload, dense_parts=parts)


ENRICHED_PAYLOAD = (
    "entity_name",
    "tier1_name",
    "tier2_name",
    "sentiment",
    "intensity",
    "impact",
    "evidence_type",
    "sentiment_intensity",
)
"""Columns of `enriched_entity_docs` the enriched KB's payload carries as they are (besides emotions, authors)."""


def _export_entity_docs(conn, domain: str, path: Path) -> int:
    """Copy the domain's per-entity documents to a Parquet file, batch by batch; returns the row count."""
    reader = conn.sql(ENTITY_DOCS_SQL, params=[domain]).to_arrow_reader(EXPORT_BATCH_ROWS)
    rows = 0
    with pq.ParquetWriter(path, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def _entity_points(path: Path, domain: str, *, enriched: bool, dense: DenseMode = "joint") -> Iterator[SourcePoint]:
    for batch in pq.ParquetFile(path).iter_batches(batch_size=EXPORT_BATCH_ROWS):
        for r in batch.to_pylist():
            yield _entity_point(domain, r, enriched=enriched, dense=dense)


def _index_entity_docs(context, warehouse, embedder, vector_store, *, kb: str, dense: DenseMode = "joint"):
    """Both per-entity KBs index the same rows; only the embedded text (and payload richness) differ.

    The rows go through a temporary Parquet file and are read back in batches: a large corpus has millions of
    per-entity documents, too many to hold as Python objects, and the warehouse should not stay locked for the
    hour that embedding them can take.
    """
    domain = context.partition_key
    with tempfile.TemporaryDirectory(prefix="oprag-index-") as tmp:
        path = Path(tmp) / "entity_docs.parquet"
        with warehouse.get_connection() as conn:
            source_rows = _export_entity_docs(conn, domain, path)
        store = vector_store.open_store()
        try:
            name = collection_name(domain, kb)
            points = lambda: _entity_points(path, domain, enriched=kb == "enriched", dense=dense)  # noqa: E731
            encoder = _encoder(embedder, vector_store)
            try:
                summary = sync_collection(store, encoder.embedder, name, points, log=context.log.info, encoder=encoder)
            finally:
                encoder.close()
            yield from _result(context, kb, summary, source_rows, store, name)
        finally:
            store.close()


def _default_dense() -> DenseMode:
    return run_config_default(ENRICHED_DENSE_ENV)


def _embedding_store(paths: DataDirResource):
    return embed_shards.embedding_shard_store(paths.shards_uri())


@op(
    ins={"entity_split_docs": In(Nothing), "enriched_entity_docs": In(Nothing)},
    out=DynamicOut(embed_shards.EmbedTask),
    **WAREHOUSE_OP,
)
def plan_embedding(
    context: OpExecutionContext,
    warehouse: DuckDBResource,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
    paths: DataDirResource,
) -> Iterator[DynamicOutput]:
    """Find the distinct texts the two per-entity KBs will embed that the vector cache does not hold, and hand each
    shard its share as Parquet: the shards then need neither the warehouse nor each other."""
    domain = context.partition_key
    started = time.time()
    plan = embed_shards.EmbedPlan(shards=embedder.shards)
    store = _embedding_store(paths)
    dense = _default_dense()
    encoder = _encoder(embedder, vector_store)
    try:
        with tempfile.TemporaryDirectory(prefix="oprag-embed-plan-") as tmp:
            path = Path(tmp) / "entity_docs.parquet"
            with warehouse.get_connection() as conn:
                rows = _export_entity_docs(conn, domain, path)

            progress = Progress(f"{domain}: per-entity points planned", 2 * rows, context.log.info)

            def texts() -> Iterator[list[str]]:
                for enriched in (False, True):  # the entity-split KB's texts, then the enriched KB's
                    points = _entity_points(path, domain, enriched=enriched, dense=dense)
                    for window in batched(points, EXPORT_BATCH_ROWS):
                        yield [text for point in window for text in dense_texts(point)]
                        progress.advance(len(window), f"; {plan.cached:,} texts cached, {sum(plan.pending):,} to embed")

            embed_shards.write_plan(store, domain, embed_shards.pending_texts(texts(), encoder.cache, plan))
    finally:
        encoder.close()
    context.log.info(
        f"{domain}: {rows:,} per-entity documents ask for {plan.requested:,} dense texts, {plan.distinct:,} "
        f"distinct, {plan.cached:,} already in the vector cache; {sum(plan.pending):,} to embed in "
        f"{plan.shards} shard(s) ({', '.join(f'{n:,}' for n in plan.pending)})"
    )
    facts = {"entity_documents": rows, "requested": plan.requested, "distinct": plan.distinct, "cached": plan.cached}
    for index, pending in enumerate(plan.pending):  # every shard, even an empty one, so the collect step runs
        task = embed_shards.EmbedTask(domain, index, plan.shards, pending, started_at=started, plan=facts)
        yield DynamicOutput(task, mapping_key=f"shard_{index}")


@op(out=Out(embed_shards.EmbedResult))
def embed_shard(
    context: OpExecutionContext,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
    paths: DataDirResource,
    task: embed_shards.EmbedTask,
) -> embed_shards.EmbedResult:
    """Embed one shard's texts into the vector cache (flushed every `vector_cache.PART_VECTORS` vectors or
    `vector_cache.FLUSH_SECONDS` seconds, whichever comes first: the unit of resume); no warehouse, no vector
    store."""
    started = time.perf_counter()
    label = f"{task.domain} embedding shard {task.index + 1}/{task.shards}: texts"
    progress = Progress(label, task.texts, context.log.info)
    encoder = _encoder(embedder, vector_store)
    try:
        for texts in embed_shards.read_shard(_embedding_store(paths), task.domain, task.index, EMBED_WINDOW):
            encoder.embed_dense(texts)  # a text another shard or run embedded meanwhile is read back, not embedded
            progress.advance(len(texts), f"; {encoder.stats.embedded:,} embedded")
    finally:
        encoder.close()
    return embed_shards.EmbedResult(task, embedded=encoder.stats.embedded, seconds=time.perf_counter() - started)


@op(out=Out(Nothing))
def collect_embedding(
    context: OpExecutionContext, paths: DataDirResource, results: list[embed_shards.EmbedResult]
) -> None:
    """Remove the shards' inputs and record what the stage did."""
    task = results[0].task
    _embedding_store(paths).clear(task.domain)
    embedded = sum(r.embedded for r in results)
    seconds = time.time() - task.started_at
    context.add_output_metadata(
        {
            **task.plan,
            "embedded_this_run": embedded,
            "shards": task.shards,
            "shard_texts": MetadataValue.json([r.task.texts for r in sorted(results, key=lambda r: r.task.index)]),
            "shard_seconds": MetadataValue.json(
                [round(r.seconds, 1) for r in sorted(results, key=lambda r: r.task.index)]
            ),
            "seconds": round(seconds, 2),
            "texts_per_second": round(embedded / seconds, 1) if seconds > 0 else 0.0,
        }
    )


@graph_asset(
    partitions_def=domain_partitions,
    group_name="index",
    kinds={"parquet", "numpy"},
    ins={
        "entity_split_docs": AssetIn(dagster_type=Nothing),
        "enriched_entity_docs": AssetIn(dagster_type=Nothing),
    },
    description="The dense vectors of the per-entity KBs' distinct texts, in the vector cache, embedded in shards of "
    "the domain (OPRAG_EMBED_SHARDS; steps side by side under a multiprocess or cluster executor) so the KB steps, "
    "which write to the vector store one at a time, only write points. A text already in the cache (from any KB, "
    "run or shard) is not embedded again; a killed run resumes from the vectors its shards flushed.",
)
def entity_doc_vectors(entity_split_docs, enriched_entity_docs):
    tasks = plan_embedding(entity_split_docs=entity_split_docs, enriched_entity_docs=enriched_entity_docs)
    return collect_embedding(tasks.map(embed_shard).collect())


class EnrichedKbConfig(Config):
    dense: DenseMode = Field(
        default=_default_dense(),
        description="'joint': metadata header and text embedded together, as in the reference study. 'composed': "
        "the token-weighted mean of the header's and the text's cached vectors, no encoder pass per document "
        "(benchmarks/bench_pipeline.py measures its top-k overlap with 'joint': 0.35 at k=10 on TripAdvisor, so "
        "it changes what the evaluation compares). Env OPRAG_ENRICHED_DENSE.",
    )


@domain_asset(
    group_name="index",
    kinds={"qdrant"},
    deps=["enriched_entity_docs", "entity_doc_vectors"],
    check_specs=[_count_check("enriched", "enriched_entity_docs")],
    description="O-RAG: one point per (document, entity), its text embedded with the opinion metadata in words, "
    "the same metadata as payload (entity, sentiment, intensity, impact, emotions, author attributes).",
)
def enriched_kb(
    context: AssetExecutionContext,
    config: EnrichedKbConfig,
    warehouse: DuckDBResource,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
):
    yield from _index_entity_docs(context, warehouse, embedder, vector_store, kb="enriched", dense=config.dense)


@domain_asset(
    group_name="index",
    kinds={"qdrant"},
    deps=["entity_split_docs", "entity_doc_vectors"],
    check_specs=[_count_check("entity_split", "entity_split_docs")],
    description="Ablation: the same per-entity split as the enriched KB, embedded without opinion metadata.",
)
def entity_split_kb(
    context: AssetExecutionContext,
    warehouse: DuckDBResource,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
):
    yield from _index_entity_docs(context, warehouse, embedder, vector_store, kb="entity_split")
