"""Enrichment assets: opinions per (document, entity), author attributes, entity statistics, per-entity documents."""

import json
import time
from collections import Counter
from collections.abc import Iterator

import pyarrow as pa
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetSpec,
    Config,
    DynamicOut,
    DynamicOutput,
    In,
    MaterializeResult,
    MetadataValue,
    Nothing,
    OpExecutionContext,
    Out,
    graph_asset,
    op,
)
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline.asset_decorators import domain_asset, domain_multi_asset
from oprag_pipeline.asset_metadata import table_metadata
from oprag_pipeline.concurrency import WAREHOUSE_OP
from oprag_pipeline.enrich import authors, ratings, shards, store
from oprag_pipeline.enrich.documents import render_enriched
from oprag_pipeline.partitions import domain_partitions
from oprag_pipeline.progress import Progress
from oprag_pipeline.registry.store import registry_entities
from oprag_pipeline.resources import DataDirResource, ExtractorResource
from oprag_pipeline.schema import rounded_cost, total_cost
from oprag_pipeline.warehouse import batches_of_records, ensure_tables, insert_rows, records, replace_rows


def _shard_store(extractor: ExtractorResource, paths: DataDirResource) -> shards.ShardStore:
    return shards.ShardStore(extractor.shard_uri or paths.shards_uri())


def _merge_parts(conn, shard_store: shards.ShardStore, domain: str) -> int:
    """Load every complete part the domain's shards wrote into the extraction cache, then remove the shards'
    files; the documents merged. Parts of a killed run are merged the same way by the next run."""
    merged = 0
    for header_path, detail_path in shard_store.complete_parts(domain):
        header, detail = shard_store.read_part(header_path, detail_path)
        store.commit_tables(conn, header, detail)
        merged += header.num_rows
    shard_store.clear(domain)
    return merged


@op(
    ins={"raw_documents": In(Nothing), "entity_registry": In(Nothing)},
    out=DynamicOut(shards.ShardTask),
    **WAREHOUSE_OP,
)
def plan_extraction(
    context: OpExecutionContext, warehouse: DuckDBResource, extractor: ExtractorResource, paths: DataDirResource
) -> Iterator[DynamicOutput]:
    """Adapt the extractor to the domain, find the documents to extract, and hand each shard its documents as
    Parquet: the shards then need neither the warehouse nor each other."""
    domain = context.partition_key
    started = time.time()
    engine = extractor.build()
    shard_store = _shard_store(extractor, paths)
    with warehouse.get_connection() as conn:
        store.ensure_tables(conn)
        resumed = _merge_parts(conn, shard_store, domain)
        if resumed:
            context.log.info(f"{domain}: {resumed:,} documents committed by the shards of an interrupted run merged")
        registry_version, entities = registry_entities(conn, domain)
        if not entities:
            context.log.warning(f"{domain}: the entity registry is empty; no opinions can be anchored")
        presampled: list[str] = []

        def cache_presampled(adapted, outcomes: list) -> None:
            # the documents the intensity fit extracted, as the adapted extractor answers them: cached, not redone
            key = store.CacheKey(registry_version, adapted.name, adapted.version)
            store.commit_batch(conn, domain, key, outcomes, context.run_id)
            presampled.extend(o.doc_id for o in outcomes)

        engine, adaptation = ratings.adapt_extractor(
            engine,
            conn,
            domain,
            entities,
            ratings.load_rated_aspects(paths.domain_dir(domain)),
            mode=extractor.adapt,
            registry_version=registry_version,
            sample_size=extractor.adapt_sample,
            min_mentions=extractor.adapt_min_mentions,
            run_id=context.run_id,
            intensity=extractor.intensity_source(),
            on_extracted=cache_presampled,
        )
        if adaptation.skipped_reason:
            context.log.info(f"{domain}: adaptation ({adaptation.method}) skipped: {adaptation.skipped_reason}")
        elif adaptation.offsets is not None:
            how = "reused from the warehouse" if adaptation.reused else "fitted"
            context.log.info(
                f"{domain}: offsets {adaptation.offsets}"
                f"{'' if adaptation.head is None else ' and a residual head'} {how} ({adaptation.sample_size} "
                f"mentions labelled by {adaptation.method})"
            )
        if adaptation.intensity is not None:
            how = "reused from the warehouse" if adaptation.reused else "learnt"
            context.log.info(f"{domain}: intensity levels {how} from {adaptation.intensity_opinions} rated opinions")
        elif adaptation.intensity_skipped:
            context.log.info(f"{domain}: intensity from the cue rule: {adaptation.intensity_skipped}")
        key = store.CacheKey(registry_version, engine.name, engine.version)
        pending = store.pending_doc_ids(conn, domain, key)
        total = conn.execute("SELECT count(*) FROM raw_documents WHERE domain = ?", [domain]).fetchone()[0]
        context.log.info(
            f"{domain}: {len(pending):,} of {total:,} documents to extract with {engine.name} {engine.version} "
            f"(registry v{registry_version}, {len(entities)} entities) in {extractor.shards} shard(s); the rest "
            "are cached"
        )
        plan = {"documents": int(total), "cached": int(total) - len(pending) - len(presampled),
                "extracted_while_adapting": len(presampled), "resumed_from_parts": resumed,
                "adaptation": adaptation.metadata()}  # fmt: skip
        tasks = []
        for index, doc_ids in enumerate(shards.split_into_shards(pending, extractor.shards)):
            folder = shard_store.shard_folder(domain, index, extractor.shards)
            batches = (
                store.fetch_documents(conn, domain, doc_ids[i : i + extractor.batch_size])
                for i in range(0, len(doc_ids), extractor.batch_size)
            )
            written = shard_store.write_input(folder, batches)
            tasks.append(
                shards.ShardTask(
                    domain=domain,
                    index=index,
                    shards=extractor.shards,
                    folder=folder,
                    documents=written,
                    registry_version=registry_version,
                    extractor=engine.name,
                    extractor_version=engine.version,
                    entities=tuple(entities),
                    adaptation=adaptation,
                    started_at=started,
                    plan=plan,
                )
            )
    for task in tasks:  # every shard, even an empty one, so the merge step always runs
        yield DynamicOutput(task, mapping_key=f"shard_{task.index}")


@op(out=Out(shards.ShardResult))
def extract_shard(
    context: OpExecutionContext, extractor: ExtractorResource, paths: DataDirResource, task: shards.ShardTask
) -> shards.ShardResult:
    """Extract one shard's documents, each batch written as a Parquet part (the unit of resume); no warehouse."""
    started = time.perf_counter()
    engine = ratings.adapted_extractor(extractor.build(), task.adaptation, task.extractor, task.extractor_version)
    key = store.CacheKey(task.registry_version, task.extractor, task.extractor_version)
    shard_store = _shard_store(extractor, paths)
    label = f"{task.domain} shard {task.index + 1}/{task.shards}"
    progress = Progress(f"{label}: extracted", task.documents, context.log.info, every_s=0)
    extracted = failed = input_tokens = output_tokens = 0
    failures: dict[str, int] = {}
    if task.documents:
        for number, documents in enumerate(shard_store.read_input(task.folder, extractor.batch_size)):
            outcomes = engine.extract(documents, list(task.entities))
            if len(outcomes) != len(documents):
                raise RuntimeError(f"{engine.name} returned {len(outcomes)} outcomes for {len(documents)} documents")
            shard_store.write_part(task.folder, number, *store.batch_tables(task.domain, key, outcomes, context.run_id))
            for outcome in outcomes:
                input_tokens += outcome.input_tokens
                output_tokens += outcome.output_tokens
                if outcome.failed:
                    failed += 1
                    reason = (outcome.failure_reason or "unknown").split(":")[0]
                    failures[reason] = failures.get(reason, 0) + 1
                else:
                    extracted += 1
            progress.advance(len(documents), f"; {failed:,} failed and left pending")
    return shards.ShardResult(
        task=task,
        extracted=extracted,
        failed=failed,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        failures=failures,
        seconds=time.perf_counter() - started,
        cost_usd=engine.estimated_cost_usd(input_tokens, output_tokens),
    )


@op(out=Out(Nothing), **WAREHOUSE_OP)
def merge_extraction(
    context: OpExecutionContext,
    warehouse: DuckDBResource,
    extractor: ExtractorResource,
    paths: DataDirResource,
    results: list[shards.ShardResult],
) -> None:
    """The shards' parts into the extraction cache, then the opinions tables rebuilt from it."""
    task = results[0].task
    domain = task.domain
    key = store.CacheKey(task.registry_version, task.extractor, task.extractor_version)
    with warehouse.get_connection() as conn:
        merged = _merge_parts(conn, _shard_store(extractor, paths), domain)
        counts = store.rebuild_opinions(conn, domain, key)
        table_facts = table_metadata(conn, "opinions", domain)
    extracted = sum(r.extracted for r in results) + task.plan["extracted_while_adapting"]
    failed = sum(r.failed for r in results)
    failures = dict(sum((Counter(r.failures) for r in results), Counter()))
    input_tokens = sum(r.input_tokens for r in results)
    output_tokens = sum(r.output_tokens for r in results)
    if failed:
        context.log.warning(f"{domain}: {failed:,} documents failed extraction and stay pending: {failures}")
    context.add_output_metadata(
        {
            "extractor": f"{task.extractor} {task.extractor_version}",
            "registry_version": task.registry_version,
            "documents": task.plan["documents"],
            "extracted_this_run": extracted,
            "cached": task.plan["cached"],
            "failed_pending": failed,
            "failure_reasons": MetadataValue.json(failures),
            "shards": task.shards,
            "shard_documents": MetadataValue.json([r.task.documents for r in results]),
            "merged_documents": merged,
            "resumed_from_parts": task.plan["resumed_from_parts"],
            "opinions": counts["opinions"],
            "review_queue": counts["review_queue"],
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "estimated_cost_usd": rounded_cost(total_cost(r.cost_usd for r in results)),
            "seconds": round(time.time() - task.started_at, 2),
            **table_facts,
            **task.plan["adaptation"],
        }
    )


@graph_asset(
    partitions_def=domain_partitions,
    group_name="enrich",
    kinds={"duckdb", "parquet"},
    ins={"raw_documents": AssetIn(dagster_type=Nothing), "entity_registry": AssetIn(dagster_type=Nothing)},
    description="One row per (document, entity) opinion: sentiment, intensity, impact, emotions, evidence type and "
    "σ-scale score. Extraction runs in shards of the domain (OPRAG_EXTRACT_SHARDS, steps side by side under a "
    "multiprocess or cluster executor), each writing Parquet parts that one step merges into the warehouse. It is "
    "cached by (content hash, registry version, extractor, version) and committed per batch, so re-runs extract "
    "only new or changed documents and a killed run resumes from the last part any shard wrote.",
)
def opinions(raw_documents, entity_registry):
    tasks = plan_extraction(raw_documents=raw_documents, entity_registry=entity_registry)
    return merge_extraction(tasks.map(extract_shard).collect())


@domain_asset(
    group_name="enrich",
    kinds={"duckdb"},
    deps=["raw_documents"],
    description="Author attributes per document (metadata, derived from the corpus, or inferred and marked so), "
    "used only in aggregate for demographic coverage.",
)
def author_attributes(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        ensure_tables(conn, authors.TABLE)
        conn.execute("BEGIN TRANSACTION")
        conn.execute("DELETE FROM author_attributes WHERE domain = ?", [domain])
        conn.execute(f"INSERT INTO author_attributes BY NAME SELECT * FROM ({authors.DERIVE_SQL})", {"domain": domain})
        missing = conn.execute(
            """SELECT doc_id, coalesce(title || '. ', '') || text FROM raw_documents d WHERE domain = ?
               AND NOT EXISTS (SELECT 1 FROM author_attributes a WHERE a.domain = d.domain AND a.doc_id = d.doc_id
                               AND a.attribute = 'traveller_type')""",
            [domain],
        ).fetchall()
        inferred = [
            {"doc_id": doc_id, "attribute": "traveller_type", "value": label, "source": "inferred"}
            for doc_id, text in missing
            if (label := authors.infer_traveller_type(text))
        ]
        # inference only where the domain has travellers at all: a forum post saying "my wife" is no traveller
        has_travellers = conn.execute(
            "SELECT count(*) FROM author_attributes WHERE domain = ? AND attribute = 'traveller_type'", [domain]
        ).fetchone()[0] > 0 or len(inferred) >= 0.05 * max(1, len(missing))
        if inferred and has_travellers:
            insert_rows(conn, "author_attributes", inferred, domain=domain)
        conn.execute("COMMIT")
        summary = conn.execute(
            """SELECT attribute, source, count(*), count(DISTINCT value) FROM author_attributes WHERE domain = ?
               GROUP BY ALL ORDER BY ALL""",
            [domain],
        ).fetchall()
        table_facts = table_metadata(conn, "author_attributes", domain)
    table = "\n".join(f"| {a} | {s} | {n:,} | {v} |" for a, s, n, v in summary)
    return MaterializeResult(
        metadata={
            "attributes": MetadataValue.md("| attribute | source | documents | groups |\n|---|---|---|---|\n" + table),
            "rows": sum(n for _, _, n, _ in summary),
            **table_facts,
        }
    )


@domain_asset(
    group_name="enrich",
    kinds={"duckdb"},
    deps=["opinions"],
    description="Per entity: mentions, sentiment counts, sentiment entropy H(e) in bits, mean and spread of the "
    "σ-scale score — the basis for choosing entities with genuine disagreement.",
)
def entity_opinion_stats(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        ensure_tables(conn, "entity_opinion_stats")
        values = records(
            conn.execute(
                """SELECT entity_id, any_value(entity_name) AS entity_name, any_value(tier1_name) AS tier1_name,
                          any_value(tier2_name) AS tier2_name, count(*) AS mentions,
                          count(*) FILTER (sentiment = 'positive') AS positive,
                          count(*) FILTER (sentiment = 'neutral') AS neutral,
                          count(*) FILTER (sentiment = 'negative') AS negative,
                          avg(sentiment_intensity) AS mean_sentiment_intensity,
                          stddev_pop(sentiment_intensity) AS std_sentiment_intensity
                   FROM opinions WHERE domain = ? GROUP BY entity_id ORDER BY count(*) DESC""",
                [domain],
            )
        )
        for v in values:
            v["entropy_bits"] = store.entropy_bits([v["positive"], v["neutral"], v["negative"]])
        replace_rows(conn, "entity_opinion_stats", values, domain=domain)
        table_facts = table_metadata(conn, "entity_opinion_stats", domain)
    disputed = sum(1 for v in values if v["entropy_bits"] >= 0.6)
    preview = "\n".join(
        f"| {v['entity_name']} | {v['mentions']} | {v['positive']} | {v['neutral']} | {v['negative']} "
        f"| {v['entropy_bits']:.2f} |"
        for v in values[:30]
    )
    return MaterializeResult(
        metadata={
            "entities": len(values),
            "entities_with_entropy_ge_0_6": disputed,
            "preview": MetadataValue.md(
                "| entity | mentions | + | 0 | − | H(e) bits |\n|---|---|---|---|---|---|\n" + preview
            ),
            **table_facts,
        }
    )


class EntityDocsConfig(Config):
    max_relevant_chars: int = Field(default=1500, description="Relevant text kept per (document, entity).")


ENTITY_DOCS_SQL = """
SELECT o.doc_id, o.entity_id, o.entity_name, o.tier1_name, o.tier2_name, o.sentiment, o.intensity, o.impact,
       o.emotions, o.evidence_type, o.sentiment_intensity, o.evidence_text, o.entity_scope, o.created_at,
       a.attrs
FROM opinions o
LEFT JOIN (SELECT doc_id, map_from_entries(list(struct_pack(k := attribute, v := value) ORDER BY attribute)) AS attrs
           FROM author_attributes WHERE domain = $domain GROUP BY doc_id) a USING (doc_id)
WHERE o.domain = $domain
ORDER BY o.doc_id, o.entity_id
"""


@domain_multi_asset(
    group_name="enrich",
    specs=[
        AssetSpec(
            "enriched_entity_docs",
            deps=["opinions", "author_attributes"],
            kinds={"duckdb"},
            description="One document per (source document, entity): the relevant text with its opinion and author "
            "attributes rendered into the text (what the enriched KB embeds) and kept as columns.",
        ),
        AssetSpec(
            "entity_split_docs",
            deps=["opinions"],
            kinds={"duckdb"},
            description="The same per-entity split with no opinion metadata: the ablation between raw chunks and "
            "enrichment.",
        ),
    ],
)
def enriched_entity_docs(
    context: AssetExecutionContext, config: EntityDocsConfig, warehouse: DuckDBResource
) -> Iterator[MaterializeResult]:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        ensure_tables(conn, "enriched_entity_docs", "entity_split_docs")
        conn.execute("BEGIN TRANSACTION")
        conn.execute("DELETE FROM enriched_entity_docs WHERE domain = ?", [domain])
        conn.execute("DELETE FROM entity_split_docs WHERE domain = ?", [domain])
        # Streamed in batches: a large corpus has millions of (document, entity) rows, and holding them all as
        # Python objects took 12 GB on 229k reviews. A second cursor reads while the first one writes.
        reader = conn.cursor()
        reader.execute(ENTITY_DOCS_SQL, {"domain": domain})
        documents = 0
        example = ""
        for rows in batches_of_records(reader, ENTITY_DOCS_BATCH_ROWS):
            table = _entity_docs_table(domain, rows, config.max_relevant_chars)
            insert_rows(conn, "enriched_entity_docs", table)
            split = table.select(["domain", "point_key", "doc_id", "entity_id", "entity_scope", "created_at"])
            insert_rows(conn, "entity_split_docs", split.append_column("text", table.column("relevant_text")))
            example = example or table.column("text")[0].as_py()
            documents += table.num_rows
            context.log.info(f"{domain}: {documents:,} entity documents written")
        reader.close()
        conn.execute("COMMIT")
        sources = conn.execute(
            "SELECT count(DISTINCT doc_id) FROM enriched_entity_docs WHERE domain = ?", [domain]
        ).fetchone()[0]
    yield MaterializeResult(
        asset_key="enriched_entity_docs",
        metadata={"documents": documents, "source_documents": sources, "example": MetadataValue.text(example)},
    )
    yield MaterializeResult(
        asset_key="entity_split_docs", metadata={"documents": documents, "source_documents": sources}
    )


ENTITY_DOCS_BATCH_ROWS = 50_000


def _entity_docs_table(domain: str, rows: list[dict], max_relevant_chars: int) -> pa.Table:
    """One batch of `ENTITY_DOCS_SQL` rows as the enriched table's columns, with the rendered text."""
    out: list[dict] = []
    for r in rows:
        relevant = (r["evidence_text"] or "")[:max_relevant_chars]
        attrs = dict(r["attrs"] or {})
        emotions = list(r["emotions"])
        text = render_enriched(
            entity_name=r["entity_name"],
            tier1=r["tier1_name"],
            tier2=r["tier2_name"],
            relevant_text=relevant,
            sentiment=r["sentiment"],
            intensity=r["intensity"],
            impact=r["impact"],
            emotions=emotions,
            evidence_type=r["evidence_type"],
            sentiment_intensity=r["sentiment_intensity"],
            author=attrs,
        )
        out.append(
            {
                "domain": domain,
                "point_key": f"{r['doc_id']}::{r['entity_id']}",
                **{name: r[name] for name in ENTITY_DOC_COPIED},
                "emotions": emotions,
                "author_attributes": json.dumps(attrs, sort_keys=True) if attrs else None,
                "relevant_text": relevant,
                "text": text,
            }
        )
    return pa.Table.from_pylist(out)


ENTITY_DOC_COPIED = (
    "doc_id",
    "entity_id",
    "entity_name",
    "tier1_name",
    "tier2_name",
    "sentiment",
    "intensity",
    "impact",
    "evidence_type",
    "sentiment_intensity",
    "entity_scope",
    "created_at",
)
"""`ENTITY_DOCS_SQL` columns `enriched_entity_docs` keeps as they are."""
