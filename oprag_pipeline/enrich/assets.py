"""Enrichment assets: opinions per (document, entity), author attributes, entity statistics, per-entity documents."""

import json
import time
from collections.abc import Iterator

import pyarrow as pa
from dagster import AssetExecutionContext, AssetSpec, Config, MaterializeResult, MetadataValue, asset, multi_asset
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline.asset_metadata import table_metadata
from oprag_pipeline.enrich import authors, ratings, store
from oprag_pipeline.enrich.documents import render_enriched
from oprag_pipeline.partitions import domain_partitions
from oprag_pipeline.registry.store import registry_entities
from oprag_pipeline.resources import DataDirResource, ExtractorResource
from oprag_pipeline.schema import DocumentInput, rounded_cost


@asset(
    partitions_def=domain_partitions,
    group_name="enrich",
    kinds={"duckdb"},
    pool="warehouse",
    deps=["raw_documents", "entity_registry"],
    description="One row per (document, entity) opinion: sentiment, intensity, impact, emotions, evidence type and "
    "σ-scale score. Extraction is cached by (content hash, registry version, extractor, version), committed per "
    "batch, so re-runs extract only new or changed documents and a killed run resumes where it stopped.",
)
def opinions(
    context: AssetExecutionContext, warehouse: DuckDBResource, extractor: ExtractorResource, paths: DataDirResource
) -> MaterializeResult:
    domain = context.partition_key
    engine = extractor.build()
    started = time.perf_counter()
    with warehouse.get_connection() as conn:
        store.ensure_tables(conn)
        registry_version, entities = registry_entities(conn, domain)
        if not entities:
            context.log.warning(f"{domain}: the entity registry is empty; no opinions can be anchored")
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
        )
        if adaptation.skipped_reason:
            context.log.info(f"{domain}: adaptation ({adaptation.method}) skipped: {adaptation.skipped_reason}")
        elif adaptation.offsets is not None:
            how = "reused from the warehouse" if adaptation.reused else "fitted"
            context.log.info(
                f"{domain}: offsets {adaptation.offsets} {how} ({adaptation.sample_size} mentions labelled by "
                f"{adaptation.method})"
            )
        key = store.CacheKey(registry_version, engine.name, engine.version)
        pending = store.pending_doc_ids(conn, domain, key)
        total = conn.execute("SELECT count(*) FROM raw_documents WHERE domain = ?", [domain]).fetchone()[0]
        context.log.info(
            f"{domain}: {len(pending):,} of {total:,} documents to extract with {engine.name} {engine.version} "
            f"(registry v{registry_version}, {len(entities)} entities); the rest are cached"
        )
        extracted = failed = input_tokens = output_tokens = 0
        failures: dict[str, int] = {}
        for start in range(0, len(pending), extractor.batch_size):
            batch_ids = pending[start : start + extractor.batch_size]
            documents = [
                DocumentInput(doc_id=r[0], text=r[1], content_hash=r[2], title=r[3], entity_scope=r[4])
                for r in store.fetch_documents(conn, domain, batch_ids)
            ]
            outcomes = engine.extract(documents, entities)
            if len(outcomes) != len(documents):
                raise RuntimeError(f"{engine.name} returned {len(outcomes)} outcomes for {len(documents)} documents")
            store.commit_batch(conn, domain, key, outcomes, context.run_id)
            for outcome in outcomes:
                input_tokens += outcome.input_tokens
                output_tokens += outcome.output_tokens
                if outcome.failed:
                    failed += 1
                    reason = (outcome.failure_reason or "unknown").split(":")[0]
                    failures[reason] = failures.get(reason, 0) + 1
                else:
                    extracted += 1
            done = start + len(batch_ids)
            elapsed = time.perf_counter() - started
            context.log.info(
                f"{domain}: extracted {done:,}/{len(pending):,} documents "
                f"({done / elapsed if elapsed else 0:,.0f} docs/s, {failed:,} failed and left pending)"
            )
        counts = store.rebuild_opinions(conn, domain, key)
        table_facts = table_metadata(conn, "opinions", domain)
    elapsed = time.perf_counter() - started
    if failed:
        context.log.warning(f"{domain}: {failed:,} documents failed extraction and stay pending: {failures}")
    return MaterializeResult(
        metadata={
            "extractor": f"{engine.name} {engine.version}",
            "registry_version": registry_version,
            "documents": int(total),
            "extracted_this_run": extracted,
            "cached": int(total) - len(pending),
            "failed_pending": failed,
            "failure_reasons": MetadataValue.json(failures),
            "opinions": counts["opinions"],
            "review_queue": counts["review_queue"],
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "estimated_cost_usd": rounded_cost(engine.estimated_cost_usd(input_tokens, output_tokens)),
            "seconds": round(elapsed, 2),
            **table_facts,
            **adaptation.metadata(),
        }
    )


@asset(
    partitions_def=domain_partitions,
    group_name="enrich",
    kinds={"duckdb"},
    pool="warehouse",
    deps=["raw_documents"],
    description="Author attributes per document (metadata, derived from the corpus, or inferred and marked so), "
    "used only in aggregate for demographic coverage.",
)
def author_attributes(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        conn.execute(authors.SQL)
        conn.execute("BEGIN TRANSACTION")
        conn.execute("DELETE FROM author_attributes WHERE domain = ?", [domain])
        conn.execute(f"INSERT INTO author_attributes {authors.DERIVE_SQL}", {"domain": domain})
        missing = conn.execute(
            """SELECT doc_id, coalesce(title || '. ', '') || text FROM raw_documents d WHERE domain = ?
               AND NOT EXISTS (SELECT 1 FROM author_attributes a WHERE a.domain = d.domain AND a.doc_id = d.doc_id
                               AND a.attribute = 'traveller_type')""",
            [domain],
        ).fetchall()
        inferred = [
            (domain, doc_id, "traveller_type", label, "inferred")
            for doc_id, text in missing
            if (label := authors.infer_traveller_type(text))
        ]
        # inference only where the domain has travellers at all: a forum post saying "my wife" is no traveller
        has_travellers = conn.execute(
            "SELECT count(*) FROM author_attributes WHERE domain = ? AND attribute = 'traveller_type'", [domain]
        ).fetchone()[0] > 0 or len(inferred) >= 0.05 * max(1, len(missing))
        if inferred and has_travellers:
            conn.executemany("INSERT INTO author_attributes VALUES (?, ?, ?, ?, ?)", inferred)
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
            "rows": sum(r[2] for r in summary),
            **table_facts,
        }
    )


@asset(
    partitions_def=domain_partitions,
    group_name="enrich",
    kinds={"duckdb"},
    pool="warehouse",
    deps=["opinions"],
    description="Per entity: mentions, sentiment counts, sentiment entropy H(e) in bits, mean and spread of the "
    "σ-scale score — the basis for choosing entities with genuine disagreement.",
)
def entity_opinion_stats(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        conn.execute(
            """CREATE TABLE IF NOT EXISTS entity_opinion_stats (
                domain VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, entity_name VARCHAR NOT NULL,
                tier1_name VARCHAR, tier2_name VARCHAR, mentions INTEGER NOT NULL, positive INTEGER NOT NULL,
                neutral INTEGER NOT NULL, negative INTEGER NOT NULL, entropy_bits DOUBLE NOT NULL,
                mean_sentiment_intensity DOUBLE, std_sentiment_intensity DOUBLE)"""
        )
        rows = conn.execute(
            """SELECT entity_id, any_value(entity_name), any_value(tier1_name), any_value(tier2_name), count(*),
                      count(*) FILTER (sentiment = 'positive'), count(*) FILTER (sentiment = 'neutral'),
                      count(*) FILTER (sentiment = 'negative'), avg(sentiment_intensity),
                      stddev_pop(sentiment_intensity)
               FROM opinions WHERE domain = ? GROUP BY entity_id ORDER BY count(*) DESC""",
            [domain],
        ).fetchall()
        conn.execute("BEGIN TRANSACTION")
        conn.execute("DELETE FROM entity_opinion_stats WHERE domain = ?", [domain])
        values = [
            [domain, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], store.entropy_bits(r[5:8]), r[8], r[9]]
            for r in rows
        ]
        if values:
            conn.executemany("INSERT INTO entity_opinion_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        conn.execute("COMMIT")
        table_facts = table_metadata(conn, "entity_opinion_stats", domain)
    disputed = sum(1 for v in values if v[9] >= 0.6)
    preview = "\n".join(f"| {v[2]} | {v[5]} | {v[6]} | {v[7]} | {v[8]} | {v[9]:.2f} |" for v in values[:30])
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


@multi_asset(
    partitions_def=domain_partitions,
    group_name="enrich",
    pool="warehouse",
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
        conn.execute(
            """CREATE TABLE IF NOT EXISTS enriched_entity_docs (
                domain VARCHAR NOT NULL, point_key VARCHAR NOT NULL, doc_id VARCHAR NOT NULL,
                entity_id VARCHAR NOT NULL, entity_name VARCHAR NOT NULL, tier1_name VARCHAR, tier2_name VARCHAR,
                sentiment VARCHAR NOT NULL, intensity VARCHAR NOT NULL, impact VARCHAR NOT NULL,
                emotions VARCHAR[] NOT NULL, evidence_type VARCHAR NOT NULL, sentiment_intensity INTEGER NOT NULL,
                author_attributes JSON, entity_scope VARCHAR, created_at TIMESTAMP, relevant_text VARCHAR NOT NULL,
                text VARCHAR NOT NULL);
            CREATE TABLE IF NOT EXISTS entity_split_docs (
                domain VARCHAR NOT NULL, point_key VARCHAR NOT NULL, doc_id VARCHAR NOT NULL,
                entity_id VARCHAR NOT NULL, entity_scope VARCHAR, created_at TIMESTAMP, text VARCHAR NOT NULL);"""
        )
        conn.execute("BEGIN TRANSACTION")
        conn.execute("DELETE FROM enriched_entity_docs WHERE domain = ?", [domain])
        conn.execute("DELETE FROM entity_split_docs WHERE domain = ?", [domain])
        # Streamed in batches: a large corpus has millions of (document, entity) rows, and holding them all as
        # Python objects took 12 GB on 229k reviews. A second cursor reads while the first one writes.
        reader = conn.cursor()
        reader.execute(ENTITY_DOCS_SQL, {"domain": domain})
        documents = 0
        example = ""
        while rows := reader.fetchmany(ENTITY_DOCS_BATCH_ROWS):
            table = _entity_docs_table(domain, rows, config.max_relevant_chars)
            conn.register("_enriched", table)
            conn.execute(f"INSERT INTO enriched_entity_docs ({', '.join(ENTITY_DOCS_COLUMNS)}) SELECT * FROM _enriched")
            conn.execute(
                """INSERT INTO entity_split_docs SELECT domain, point_key, doc_id, entity_id, entity_scope,
                   created_at, relevant_text FROM _enriched"""
            )
            conn.unregister("_enriched")
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
ENTITY_DOCS_COLUMNS = (
    "domain",
    "point_key",
    "doc_id",
    "entity_id",
    "entity_name",
    "tier1_name",
    "tier2_name",
    "sentiment",
    "intensity",
    "impact",
    "emotions",
    "evidence_type",
    "sentiment_intensity",
    "author_attributes",
    "entity_scope",
    "created_at",
    "relevant_text",
    "text",
)


def _entity_docs_table(domain: str, rows: list[tuple], max_relevant_chars: int) -> pa.Table:
    """One batch of `ENTITY_DOCS_SQL` rows as the enriched table's columns, with the rendered text."""
    columns: dict[str, list] = {name: [] for name in ENTITY_DOCS_COLUMNS}
    for r in rows:
        relevant = (r[11] or "")[:max_relevant_chars]
        attrs = dict(r[14] or {})
        text = render_enriched(
            entity_name=r[2],
            tier1=r[3],
            tier2=r[4],
            relevant_text=relevant,
            sentiment=r[5],
            intensity=r[6],
            impact=r[7],
            emotions=list(r[8]),
            evidence_type=r[9],
            sentiment_intensity=r[10],
            author=attrs,
        )
        values = (
            domain,
            f"{r[0]}::{r[1]}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            list(r[8]),
            r[9],
            r[10],
            json.dumps(attrs, sort_keys=True) if attrs else None,
            r[12],
            r[13],
            relevant,
            text,
        )
        for name, value in zip(ENTITY_DOCS_COLUMNS, values, strict=True):
            columns[name].append(value)
    return pa.table(columns)
