"""Evaluation assets: entities worth asking about, questions, the retrieval grid, gold labels, per-question metrics
and significance tests. The metric tables between them are SQL models in `dbt_like_sql/`; the report that concludes
them is the last stage (`report/`)."""

import json
import time
from collections import defaultdict

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline import rendering as report_writer  # the name the asset bodies use (their code versions hash them)
from oprag_pipeline.asset_decorators import domain_asset
from oprag_pipeline.evaluate.gold import GoldMapper, RegistryEntry, load_rated_aspects, map_gold
from oprag_pipeline.evaluate.grid import (
    COMPARISONS,
    DEPTH_TESTED_METRICS,
    DEPTHS,
    FAMILY,
    HEADLINE_K,
    PRIMARY_METRICS,
    HitRow,
    grid_cells,
    run_grid,
)
from oprag_pipeline.evaluate.llm_questions import generate_with_llm
from oprag_pipeline.evaluate.metrics import Hit, HitOpinion, ScoreDistribution
from oprag_pipeline.evaluate.questions import QuestionEntity, generate_all
from oprag_pipeline.evaluate.scoring import score_grid
from oprag_pipeline.evaluate.selection import EntityStats, GoldSupport, choose_evaluation_entities, gold_supports
from oprag_pipeline.evaluate.stats import compare_clustered, holm
from oprag_pipeline.index.diversify import DEFAULT_LAMBDA
from oprag_pipeline.index.retrieval import OpinionProfile, Retriever
from oprag_pipeline.registry.store import registry_entities
from oprag_pipeline.resources import DataDirResource, EmbedderResource, ExtractorResource, VectorStoreResource
from oprag_pipeline.schema import rounded_cost
from oprag_pipeline.warehouse import ensure_tables, records, replace_rows

GROUP = "evaluation"

TABLES = (
    "evaluation_entities",
    "evaluation_questions",
    "retrieval_runs",
    "gold_opinions",
    "question_metrics",
    "metric_significance",
)
"""The evaluation tables, declared in `oprag_pipeline/warehouse.py`. They are all derived and every asset rewrites
its domain's rows, so one whose columns changed is rebuilt there (`warehouse.REBUILT_ON_CHANGE`)."""


def _ensure_tables(conn) -> None:
    ensure_tables(conn, *TABLES)


class EvaluationEntitiesConfig(Config):
    min_entropy: float = Field(default=0.6, description="Least sentiment entropy H(e) in bits (genuine dispute).")
    min_mentions: int = Field(default=20, description="Least opinions an entity needs for a corpus distribution.")
    max_entities: int = Field(default=10, description="Most entities evaluated (the most disputed first).")
    min_gold_mentions: int = Field(
        default=10,
        description="Where the domain has gold labels, disputed entities with at least this many gold mentions, "
        "positive and negative ones among them, are evaluated first (W1 to gold exists only for them).",
    )


def _distributions(rows) -> dict[str, ScoreDistribution]:
    """(entity_id, score, count) rows to one score distribution per entity."""
    counts: dict[str, dict[float, int]] = defaultdict(dict)
    for entity_id, score, count in rows.fetchall():
        counts[entity_id][float(score)] = int(count)
    return {entity_id: ScoreDistribution.from_counts(c) for entity_id, c in counts.items()}


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["entity_opinion_stats", "entity_registry", "gold_opinions"],
    description="Entities the corpus disagrees on (H(e) ≥ threshold, enough mentions; the most mentioned first, "
    "those gold labels support before the rest where the domain has gold), each with a comparison partner from the "
    "same branch of the taxonomy.",
)
def evaluation_entities(
    context: AssetExecutionContext, config: EvaluationEntitiesConfig, warehouse: DuckDBResource
) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        stats = [
            EntityStats(**r)
            for r in records(
                conn.execute(
                    """SELECT entity_id, entity_name, tier1_name, tier2_name, mentions, entropy_bits
                       FROM entity_opinion_stats WHERE domain = ?""",
                    [domain],
                )
            )
        ]
        gold = {
            entity_id: GoldSupport(int(n), int(positive), int(negative))
            for entity_id, n, positive, negative in conn.execute(
                """SELECT entity_id, count(*), count(*) FILTER (WHERE sentiment_intensity > 0),
                          count(*) FILTER (WHERE sentiment_intensity < 0)
                   FROM gold_opinions WHERE domain = ? GROUP BY entity_id""",
                [domain],
            ).fetchall()
        }
        _, registry = registry_entities(conn, domain)
        aliases = {e.entity_id: list(e.aliases) for e in registry}
        chosen = choose_evaluation_entities(
            stats,
            min_entropy=config.min_entropy,
            min_mentions=config.min_mentions,
            max_entities=config.max_entities,
            gold=gold,
            min_gold_mentions=config.min_gold_mentions,
        )
        gold_backed = [e for e in chosen if gold_supports(gold, e.entity_id, config.min_gold_mentions)]
        rows = [
            {
                "entity_id": e.entity_id,
                "entity_name": e.entity_name,
                "tier1_name": e.tier1_name,
                "tier2_name": e.tier2_name,
                "aliases": aliases.get(e.entity_id, []),
                "mentions": e.mentions,
                "entropy_bits": e.entropy_bits,
                "comparison_id": e.comparison_id,
                "comparison_name": e.comparison_name,
            }
            for e in chosen
        ]
        replace_rows(conn, "evaluation_entities", rows, domain=domain)
    if not chosen:
        context.log.warning(
            f"{domain}: no entity has H(e) ≥ {config.min_entropy} and ≥ {config.min_mentions} mentions "
            f"({len(stats)} entities); the evaluation will be empty"
        )
    table = report_writer.markdown_table(
        ["entity", "mentions", "H(e) bits", "gold mentions (+/−)", "compared with"],
        [
            [
                e.entity_name,
                e.mentions,
                round(e.entropy_bits, 2),
                f"{g.mentions} ({g.positive}/{g.negative})" if (g := gold.get(e.entity_id)) else "—",
                e.comparison_name,
            ]
            for e in chosen
        ],
    )
    return MaterializeResult(
        metadata={
            "entities": len(chosen),
            "entities_with_gold": len(gold_backed),
            "candidates": len(stats),
            "entity_table": MetadataValue.md(table),
        }
    )


class EvaluationQuestionsConfig(Config):
    per_type: int = Field(default=2, description="Questions per entity and question type, each worded differently.")
    generator: str = Field(
        default="offline",
        description="offline (varied templates, deterministic) or llm (the extractor's LLM client writes the "
        "wording; needs OPRAG_EXTRACTOR=anthropic or openai-compatible; same ids and types).",
    )


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["evaluation_entities"],
    description="Questions of five types per entity (experience, impact, emotional, comparison, suggestion), "
    "generated offline from varied templates and the entity's aliases; stable ids, deterministic.",
)
def evaluation_questions(
    context: AssetExecutionContext,
    config: EvaluationQuestionsConfig,
    warehouse: DuckDBResource,
    extractor: ExtractorResource,
) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        entities = [
            QuestionEntity(r["entity_id"], r["entity_name"], tuple(r["aliases"]), r["comparison_name"])
            for r in records(
                conn.execute(
                    """SELECT entity_id, entity_name, aliases, comparison_name FROM evaluation_entities
                       WHERE domain = ? ORDER BY entropy_bits DESC, mentions DESC, entity_id""",
                    [domain],
                )
            )
        ]
        llm_metadata: dict[str, object] = {}
        if config.generator == "offline":
            questions, generator = generate_all(domain, entities, per_type=config.per_type), "offline-templates"
        elif config.generator == "llm":
            client = extractor.build()
            if not hasattr(client, "ask"):
                raise ValueError(
                    f"generator 'llm' needs an LLM extractor (OPRAG_EXTRACTOR=anthropic or openai-compatible), "
                    f"not {client.name!r}"
                )
            questions, report = generate_with_llm(client, domain, entities, per_type=config.per_type)
            generator = f"llm:{client.model}"
            llm_metadata = {
                "from_llm": report.from_llm,
                "completed_from_templates": report.completed_from_templates,
                "entities_failed": report.failed_entities,
                "input_tokens": report.input_tokens,
                "output_tokens": report.output_tokens,
                "estimated_cost_usd": rounded_cost(
                    client.estimated_cost_usd(report.input_tokens, report.output_tokens)
                ),
            }
            if report.failed_entities:
                context.log.warning(
                    f"{domain}: the LLM failed for {report.failed_entities} entities; their questions come from "
                    "the offline templates"
                )
        else:
            raise ValueError(f"unknown question generator {config.generator!r}: use offline or llm")
        rows = [
            {
                "question_id": q.question_id,
                "entity_id": q.entity_id,
                "question_type": q.question_type,
                "variant": q.variant,
                "template_id": q.template_id,
                "entity_phrase": q.entity_phrase,
                "text": q.text,
            }
            for q in questions
        ]
        replace_rows(conn, "evaluation_questions", rows, domain=domain, generator=generator)
    sample = "\n".join(f"- ({q.question_type}) {q.text}" for q in questions[:15])
    return MaterializeResult(
        metadata={
            "questions": len(questions),
            "entities": len(entities),
            "distinct_templates": len({q.template_id for q in questions}),
            "generator": generator,
            "sample": MetadataValue.md(sample or "(none)"),
            **llm_metadata,
        }
    )


class RetrievalRunsConfig(Config):
    mmr_lambda: float = Field(
        default=DEFAULT_LAMBDA, ge=0.0, le=1.0, description="MMR's λ: weight of relevance against redundancy."
    )
    aspect_lambda: float = Field(
        default=DEFAULT_LAMBDA,
        ge=0.0,
        le=1.0,
        description="λ of xQuAD (weight of aspect coverage) and PM-2 (weight of the served aspect).",
    )


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb", "qdrant"},
    deps=["evaluation_questions", "raw_kb", "entity_split_kb", "enriched_kb"],
    description="Every question × knowledge base (raw, entity_split, enriched) × mode (semantic, hybrid; and "
    "opinion-balanced, MMR, xQuAD and PM-2 on the enriched KB) × k (10, 20, 40, 60), one real query each; one row "
    "per hit; ties cut by point id, so a rerun gives the same rows.",
)
def retrieval_runs(
    context: AssetExecutionContext,
    config: RetrievalRunsConfig,
    warehouse: DuckDBResource,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        questions = conn.execute(
            "SELECT question_id, text FROM evaluation_questions WHERE domain = ? ORDER BY question_id", [domain]
        ).fetchall()
        profile = OpinionProfile.load(conn, domain)
    store = vector_store.open_store()
    retriever = Retriever(
        store,
        embedder.embedder(),
        profiles={domain: profile},
        mmr_lambda=config.mmr_lambda,
        aspect_lambda=config.aspect_lambda,
    )
    started = time.perf_counter()
    last_log = [started]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last_log[0] > 10:
            last_log[0] = now
            context.log.info(f"{domain}: retrieval grid {done}/{total} questions ({now - started:.1f} s)")

    rows: list[HitRow] = []
    try:
        for question_rows in run_grid(retriever, domain, questions, progress=progress):
            rows.extend(question_rows)
    finally:
        store.close()
    elapsed = time.perf_counter() - started
    queries = len(questions) * len(grid_cells()) * len(DEPTHS)
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        replace_rows(conn, "retrieval_runs", rows, domain=domain)
    return MaterializeResult(
        metadata={
            "questions": len(questions),
            "queries": queries,
            "hits": len(rows),
            "seconds": round(elapsed, 2),
            "queries_per_second": round(queries / elapsed, 1) if elapsed else 0.0,
        }
    )


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["raw_documents", "entity_registry"],
    description="Gold labels carried by the input (importers' `gold_opinions`, TripAdvisor aspect stars, the demo's "
    "planted labels) mapped onto registry entities, on the σ-scale. Empty for domains without gold.",
)
def gold_opinions(
    context: AssetExecutionContext, warehouse: DuckDBResource, paths: DataDirResource
) -> MaterializeResult:
    domain = context.partition_key
    aspect_terms = load_rated_aspects(paths.domain_dir(domain))
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        _, registry = registry_entities(conn, domain)
        entries = [RegistryEntry(e.entity_id, e.name, tuple(e.aliases)) for e in registry]
        cursor = conn.execute(
            """SELECT doc_id, extra FROM raw_documents
               WHERE domain = ? AND extra IS NOT NULL
                 AND (json_exists(extra, '$.gold_opinions') OR extra LIKE '%"rating\\_%' ESCAPE '\\')
               ORDER BY doc_id""",
            [domain],
        )
        documents = []
        while batch := cursor.fetchmany(10_000):
            documents.extend((doc_id, json.loads(extra)) for doc_id, extra in batch)
        gold, unmapped = map_gold(entries, documents, aspect_terms)
        replace_rows(conn, "gold_opinions", gold, domain=domain)
    by_source: dict[str, int] = defaultdict(int)
    for g in gold:
        by_source[g.source] += 1
    names = {e.entity_id: e.name for e in registry}
    aspects_mapped = {
        aspect: sorted(names[i] for i in ids)
        for aspect, ids in GoldMapper(entries, aspect_terms).aspect_entities.items()
    }
    context.log.info(f"{domain}: {len(gold):,} gold opinions on registry entities, {unmapped:,} labels unmapped")
    return MaterializeResult(
        metadata={
            "gold_opinions": len(gold),
            "documents_with_gold": len(documents),
            "labels_unmapped": unmapped,
            "rated_aspects_mapped": MetadataValue.json(dict(sorted(aspects_mapped.items()))),
            "by_source": MetadataValue.json(dict(by_source)),
        }
    )


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["stg_hit_opinions", "author_attributes", "gold_opinions", "evaluation_questions"],
    description="Per question × KB × mode × k: entity match, σ and impact spread, distinct emotions, W1 to the "
    "corpus (and to gold where present) over retrievals that found opinions, the miss indicator and the old combined "
    "figure, the hybrid-rank relevance proxy, demographic coverage overall and among entity-matched hits — computed "
    "by the pure functions of `evaluate/metrics.py`.",
)
def question_metrics(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        question_entities = dict(
            conn.execute(
                "SELECT question_id, entity_id FROM evaluation_questions WHERE domain = ?", [domain]
            ).fetchall()
        )
        entity_ids = sorted(set(question_entities.values()))
        # The corpus distributions come counted from SQL: a popular entity of a large corpus has hundreds of
        # thousands of opinions, and the metrics need only how many sit at each σ-level.
        distribution_sql = """SELECT entity_id, sentiment_intensity, count(*) FROM {table}
                              WHERE domain = ? AND entity_id IN (SELECT unnest(?)) GROUP BY ALL"""
        corpus_scores = _distributions(conn.execute(distribution_sql.format(table="opinions"), [domain, entity_ids]))
        gold_corpus = _distributions(conn.execute(distribution_sql.format(table="gold_opinions"), [domain, entity_ids]))
        gold_by_doc: dict[tuple[str, str], int] = {}
        for doc_id, entity_id, score in conn.execute(
            """SELECT doc_id, entity_id, sentiment_intensity FROM gold_opinions
               WHERE domain = ? AND entity_id IN (SELECT unnest(?))
                 AND doc_id IN (SELECT DISTINCT doc_id FROM retrieval_runs WHERE domain = ?)""",
            [domain, entity_ids, domain],
        ).fetchall():
            gold_by_doc[(doc_id, entity_id)] = score
        groups: dict[str, list[str]] = defaultdict(list)
        for attribute, value in conn.execute(
            "SELECT DISTINCT attribute, value FROM author_attributes WHERE domain = ? ORDER BY ALL", [domain]
        ).fetchall():
            groups[attribute].append(value)
        authors: dict[str, dict[str, str]] = defaultdict(dict)
        for doc_id, attribute, value in conn.execute(
            """SELECT a.doc_id, a.attribute, a.value FROM author_attributes a
               WHERE a.domain = ? AND a.doc_id IN (SELECT DISTINCT doc_id FROM retrieval_runs WHERE domain = ?)""",
            [domain, domain],
        ).fetchall():
            authors[doc_id][attribute] = value
        cells: dict[tuple[str, str, str, int], dict[int, tuple[str, str, list]]] = {
            (q, kb, mode, k): {} for q in question_entities for kb, mode in grid_cells() for k in DEPTHS
        }
        for q, kb, mode, k, rank, point_id, doc_id, entity_id, score, impact, emotions in conn.execute(
            """SELECT question_id, kb, mode, k, rank, point_id, doc_id, entity_id, sentiment_intensity, impact_score,
                      emotions
               FROM stg_hit_opinions WHERE domain = ? ORDER BY question_id, kb, mode, k, rank""",
            [domain],
        ).fetchall():
            hit = cells[(q, kb, mode, k)].setdefault(rank, (point_id, doc_id, []))
            if entity_id is not None:
                hit[2].append(HitOpinion(entity_id, score, impact, tuple(emotions or ())))
        hits = {
            key: [
                Hit(point_id, tuple(opinions), authors.get(doc_id, {}), doc_id)
                for _, (point_id, doc_id, opinions) in sorted(ranked.items())
            ]
            for key, ranked in cells.items()
        }
        # the relevance proxy's reference: each KB's plain hybrid list of the question at the deepest k
        hybrid_depth = max(DEPTHS)
        hybrid_ranks: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        for (q, kb, mode, k), ranked in cells.items():
            if mode == "hybrid" and k == hybrid_depth:
                hybrid_ranks[(q, kb)] = {point_id: rank for rank, (point_id, _, _) in ranked.items()}
        rows = [
            {"question_id": q, "kb": kb, "mode": mode, "k": k, "metric": metric, "value": value}
            for q, kb, mode, k, metric, value in score_grid(
                question_entities,
                hits,
                corpus_scores,
                groups,
                gold_corpus=gold_corpus,
                gold_by_doc=gold_by_doc,
                hybrid_ranks=hybrid_ranks,
                hybrid_depth=hybrid_depth,
            )
        ]
        replace_rows(conn, "question_metrics", rows, domain=domain)
    return MaterializeResult(
        metadata={
            "rows": len(rows),
            "questions": len(question_entities),
            "gold_aware": bool(gold_corpus),
            "metrics": MetadataValue.json(sorted({r["metric"] for r in rows})),
        }
    )


def primary_metric(metrics: set[str]) -> str:
    """The family's metric for a domain: the first of `PRIMARY_METRICS` it has values for."""
    return next((m for m in PRIMARY_METRICS if m in metrics), PRIMARY_METRICS[-1])


def significance_rows(
    values: dict[tuple[int, str], dict[tuple[str, str], dict[str, float]]], clusters: dict[str, str]
) -> list[dict]:
    """Every comparison of `COMPARISONS` on every metric at k = 20, and on `DEPTH_TESTED_METRICS` at the other
    depths, at the entity level; the declared family (primary
    metric, k = 20) marked `headline` with Holm-adjusted p, the rest `exploratory` (p_holm null).

    Rows are `metric_significance`'s columns by name, all but `domain`."""
    primary = primary_metric({metric for _, metric in values})
    rows = []
    for (k, metric), cells in sorted(values.items()):
        if k != HEADLINE_K and metric not in DEPTH_TESTED_METRICS:
            continue  # other depths: fidelity and match only (the depth curves show the rest, untested)
        for treatment, baseline in COMPARISONS:
            if treatment not in cells or baseline not in cells:
                continue
            c = compare_clustered(metric, treatment[0], cells[treatment], baseline[0], cells[baseline], clusters)
            if not c.n_entities:
                continue
            family = (
                "headline"
                if (metric, k) == (primary, HEADLINE_K) and (treatment, baseline) in FAMILY
                else ("exploratory")
            )
            rows.append(
                {
                    **c.row(),
                    "mode": treatment[1],
                    "baseline_mode": baseline[1],
                    "k": k,
                    "family": family,
                    "p_holm": None,
                }
            )
    headline = [r for r in rows if r["family"] == "headline"]
    for row, adjusted in zip(headline, holm([r["p_value"] for r in headline]), strict=True):
        row["p_holm"] = adjusted
    return rows


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["stg_question_metrics"],
    description="Paired comparisons at the entity level (metric averaged over each entity's questions, then a "
    "Wilcoxon signed-rank test and a cluster-bootstrap 95% CI over entities) for every metric, mode and k; the "
    "declared headline family (primary W1 at k = 20: each method vs plain RAG, balanced vs PM-2) Holm-corrected, "
    "the rest exploratory.",
)
def metric_significance(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        values: dict[tuple[int, str], dict[tuple[str, str], dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
        clusters: dict[str, str] = {}
        for question_id, entity_id, kb, mode, k, metric, value in conn.execute(
            """SELECT question_id, entity_id, kb, mode, k, metric, value FROM stg_question_metrics
               WHERE domain = ?""",
            [domain],
        ).fetchall():
            values[(k, metric)][(kb, mode)][question_id] = value
            clusters[question_id] = entity_id
        rows = significance_rows(values, clusters)
        replace_rows(conn, "metric_significance", rows, domain=domain)
    headline = [r for r in rows if r["family"] == "headline"]
    table = report_writer.markdown_table(
        ["metric", "comparison", "entities", "Δ (95% CI)", "p", "p Holm"],
        [
            [
                r["metric"],
                f"{r['treatment']} {r['mode']} vs {r['baseline']} {r['baseline_mode']}",
                r["n_entities"],
                f"{r['mean_difference']:+.2f} [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]",
                r["p_value"],
                r["p_holm"],
            ]
            for r in headline
        ],
    )
    return MaterializeResult(
        metadata={
            "tests": len(rows),
            "headline_tests": len(headline),
            "headline_family": MetadataValue.md(table),
        }
    )
