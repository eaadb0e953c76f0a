"""Generation assets: an answer to every evaluation question from the opinion-aware and the plain pipeline, their
fidelity to the corpus (and gold), paired tests between the two, and an optional LLM-judged preference study.

Thin on purpose: the answers come from `api.answer_in_context`, the figures from the pure functions of
`fidelity.py`, the tests from `evaluate/stats.py`.
"""

import json
import time
from collections import defaultdict

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline.asset_decorators import domain_asset
from oprag_pipeline.enrich.offline import OfflineExtractor
from oprag_pipeline.evaluate.metrics import ScoreDistribution
from oprag_pipeline.evaluate.stats import compare_clustered
from oprag_pipeline.generate.answer import Answer
from oprag_pipeline.generate.api import WRITERS, answer_in_context, build_writer
from oprag_pipeline.generate.context import DomainKnowledge, gather
from oprag_pipeline.generate.fidelity import answer_fidelity, conveyed_distribution, read_back
from oprag_pipeline.generate.judge import PairToJudge, judge_pairs
from oprag_pipeline.index.retrieval import BALANCED, Retriever
from oprag_pipeline.resources import EmbedderResource, VectorStoreResource, run_config_fallback
from oprag_pipeline.schema import rounded_cost, total_cost
from oprag_pipeline.warehouse import ensure_tables, replace_rows, table_exists

GROUP = "generation"
# The two answers compared for every question: the opinion-aware pipeline (balanced retrieval on the enriched KB,
# corpus statistics in the answer) and plain RAG (hybrid retrieval of raw chunks).
VARIANTS = {"opinion_aware": ("enriched", BALANCED), "plain": ("raw", "hybrid")}
JUDGE_ENV = "OPRAG_JUDGE"

TABLES = ("generated_answers", "generation_metrics", "generation_significance", "answer_preferences")
"""The generation stage's tables, declared in `oprag_pipeline/warehouse.py` (which also relaxes `cost_usd`, NOT NULL
in warehouses made before a writer's price could be unknown)."""


def _ensure_tables(conn) -> None:
    ensure_tables(conn, *TABLES)


class GeneratedAnswersConfig(Config):
    k: int = Field(default=20, description="Passages retrieved per answer (the report's headline depth).")
    writer: str = Field(
        default="offline",
        description="offline (the deterministic composer), anthropic or openai-compatible (keys and models from "
        "the environment, as for the extractor).",
    )


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb", "qdrant"},
    deps=["evaluation_questions", "raw_kb", "enriched_kb", "entity_opinion_stats"],
    description="For every evaluation question, an opinion-aware answer (balanced retrieval on the enriched KB, "
    "corpus shares, quotes from every side) and a plain-RAG answer (hybrid retrieval of raw chunks), with their "
    "stated shares, quotes and validation flags.",
)
def generated_answers(
    context: AssetExecutionContext,
    config: GeneratedAnswersConfig,
    warehouse: DuckDBResource,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
) -> MaterializeResult:
    domain = context.partition_key
    if config.writer not in WRITERS:
        raise ValueError(f"unknown writer {config.writer!r}; choose one of {', '.join(WRITERS)}")
    write = build_writer(config.writer)
    started = time.perf_counter()
    rows: list[dict] = []
    store = vector_store.open_store()
    try:
        with warehouse.get_connection() as conn:
            _ensure_tables(conn)
            questions = conn.execute(
                "SELECT question_id, entity_id, text FROM evaluation_questions WHERE domain = ? ORDER BY question_id",
                [domain],
            ).fetchall()
            knowledge = DomainKnowledge.load(conn, domain)
            retriever = Retriever(store, embedder.embedder(), profiles={domain: knowledge.profile})
            for question_id, entity_id, text in questions:
                for variant, (kb, mode) in VARIANTS.items():
                    answer_context = gather(
                        conn, retriever, knowledge, text, kb=kb, mode=mode, k=config.k, entity_ids=[entity_id]
                    )
                    try:
                        answer = answer_in_context(answer_context, write)
                    except RuntimeError as error:  # an LLM request that failed every attempt: recorded, not fatal
                        context.log.warning(f"{domain} {question_id} {variant}: no answer ({error})")
                        continue
                    rows.append(
                        {
                            "question_id": question_id,
                            "entity_id": entity_id,
                            "variant": variant,
                            "kb": kb,
                            "mode": mode,
                            "k": config.k,
                            "writer": answer.writer,
                            "answer_text": answer.text,
                            "answer_json": json.dumps(answer.to_dict(), ensure_ascii=False),
                            "flags": list(answer.flags),
                            "input_tokens": answer.input_tokens,
                            "output_tokens": answer.output_tokens,
                            "cost_usd": answer.cost_usd,
                        }
                    )
            replace_rows(conn, "generated_answers", rows, domain=domain)
    finally:
        store.close()
    flagged = sum(bool(r["flags"]) for r in rows)
    sample = next((r["answer_text"] for r in rows if r["variant"] == "opinion_aware"), "(no questions)")
    return MaterializeResult(
        metadata={
            "answers": len(rows),
            "questions": len(questions),
            "writer": rows[0]["writer"] if rows else config.writer,
            "flagged_answers": flagged,
            "input_tokens": sum(r["input_tokens"] for r in rows),
            "output_tokens": sum(r["output_tokens"] for r in rows),
            "estimated_cost_usd": rounded_cost(total_cost(r["cost_usd"] for r in rows)),
            "seconds": round(time.perf_counter() - started, 2),
            "sample_answer": MetadataValue.md(sample),
        }
    )


def _distributions(conn, table: str, domain: str) -> dict[str, ScoreDistribution]:
    counts: dict[str, dict[float, int]] = defaultdict(dict)
    for entity_id, score, n in conn.execute(
        f"SELECT entity_id, sentiment_intensity, count(*) FROM {table} WHERE domain = ? GROUP BY ALL", [domain]
    ).fetchall():
        counts[entity_id][float(score)] = int(n)
    return {e: ScoreDistribution.from_counts(c) for e, c in counts.items()}


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["generated_answers", "gold_opinions"],
    description="Per answer: W1 between the corpus σ distribution of the question's entity and the one the answer "
    "conveys (stated shares, else read back by the offline extractor), W1 to gold where present, minority "
    "erasure, share error and tolerance, grounded-quote rate; paired Wilcoxon tests opinion-aware vs plain.",
)
def generation_fidelity(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    # an answer is no review: what it conveys is what it states, so a neutral mention stays neutral
    extractor = OfflineExtractor(review_tone=False)
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        answers = conn.execute(
            "SELECT question_id, entity_id, variant, answer_json FROM generated_answers WHERE domain = ?", [domain]
        ).fetchall()
        corpus = _distributions(conn, "opinions", domain)
        has_gold = table_exists(conn, "gold_opinions")
        gold = _distributions(conn, "gold_opinions", domain) if has_gold else {}
        knowledge = DomainKnowledge.load(conn, domain)
        registry = list(knowledge.entities.values())
        rows: list[dict] = []
        values: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
        entity_of: dict[str, str] = {}  # question → its entity: the unit the tests run over
        for question_id, entity_id, variant, answer_json in answers:
            if entity_id not in corpus:
                continue
            entity_of[question_id] = entity_id
            answer = Answer.from_dict(json.loads(answer_json))
            read = {} if answer.stated_for(entity_id) else read_back(answer.text, extractor, registry)
            figures = answer_fidelity(
                conveyed_distribution(answer, entity_id, read), corpus[entity_id], answer.quotes, gold.get(entity_id)
            )
            figures["flagged"] = float(bool(answer.flags))
            for metric, value in figures.items():
                rows.append({"question_id": question_id, "variant": variant, "metric": metric, "value": float(value)})
                values[metric][variant][question_id] = float(value)
        replace_rows(conn, "generation_metrics", rows, domain=domain)
        tests: list[dict] = []
        for metric, by_variant in sorted(values.items()):
            if not set(by_variant.get("opinion_aware", {})) & set(by_variant.get("plain", {})):
                continue
            # over entities, as the retrieval tables: an entity's ~10 questions share its corpus distribution and
            # most of their evidence, so they are one observation, not ten
            c = compare_clustered(
                metric, "opinion_aware", by_variant["opinion_aware"], "plain", by_variant["plain"], entity_of
            )
            tests.append(c.row())
        replace_rows(conn, "generation_significance", tests, domain=domain)
    from oprag_pipeline.generate.answers_report import RATES
    from oprag_pipeline.rendering import change_label, markdown_table

    table = markdown_table(
        ["metric", "plain", "opinion-aware", "change", "p"],
        [
            [
                t["metric"],
                t["baseline_mean"],
                t["treatment_mean"],
                # a rate's change in points: a minority-erasure rate from 1% to 25% is not "+2400.0%"
                change_label(
                    t["treatment_mean"], t["baseline_mean"], t["relative_change_label"], rate=t["metric"] in RATES
                ),
                t["p_value"],
            ]
            for t in tests
        ],
    )
    return MaterializeResult(
        metadata={"answers": len(answers), "rows": len(rows), "opinion_aware_vs_plain": MetadataValue.md(table)}
    )


class AnswerPreferenceConfig(Config):
    judge: str = Field(
        default="",
        description="anthropic or openai-compatible to run the judge (keys and models from the environment); empty: "
        f"env {JUDGE_ENV}; unset there too: the study is skipped.",
    )
    seed: int = Field(default=0, description="Seed of the A/B position draw (reports reproduce).")


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["generated_answers"],
    description="Blind pairwise preference of an LLM judge between the opinion-aware and the plain answer of every "
    "question (randomised positions, 'which better conveys the range of opinions'), with a bootstrap CI of the "
    f"preference rate. Skipped, and says so, when no judge is configured ({JUDGE_ENV}).",
)
def answer_preference(
    context: AssetExecutionContext, config: AnswerPreferenceConfig, warehouse: DuckDBResource
) -> MaterializeResult:
    domain = context.partition_key
    judge = config.judge or run_config_fallback(JUDGE_ENV)
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        if not judge:
            replace_rows(conn, "answer_preferences", [], domain=domain)
            message = f"skipped: no LLM judge configured (set {JUDGE_ENV}=anthropic or openai-compatible)"
            context.log.info(f"{domain}: preference study {message}")
            return MaterializeResult(metadata={"status": message})
        if judge not in ("anthropic", "openai-compatible"):
            raise ValueError(f"{JUDGE_ENV} must be anthropic or openai-compatible, not {judge!r}")
        from oprag_pipeline.resources import llm_client

        client = llm_client(judge)
        by_question: dict[str, dict[str, str]] = defaultdict(dict)
        questions: dict[str, str] = {}
        for question_id, variant, text, question in conn.execute(
            """SELECT a.question_id, a.variant, a.answer_text, q.text FROM generated_answers a
               JOIN evaluation_questions q USING (domain, question_id) WHERE a.domain = ? ORDER BY a.question_id""",
            [domain],
        ).fetchall():
            by_question[question_id][variant] = text
            questions[question_id] = question
        pairs = [
            PairToJudge(q, questions[q], v["opinion_aware"], v["plain"])
            for q, v in sorted(by_question.items())
            if "opinion_aware" in v and "plain" in v
        ]
        result = judge_pairs(client, pairs, seed=config.seed)
        name = f"{client.name}:{client.model}"
        replace_rows(
            conn,
            "answer_preferences",
            [
                {
                    "question_id": j.question_id,
                    "judge": name,
                    "treatment_position": j.treatment_position,
                    "verdict": j.verdict,
                    "treatment_preferred": j.treatment_preferred,
                    "reason": j.reason,
                }
                for j in result.judgements
            ],
            domain=domain,
        )
    return MaterializeResult(
        metadata={
            "status": "judged",
            "judge": name,
            "pairs": len(pairs),
            "failed": result.failed,
            "opinion_aware_preference_rate": result.rate,
            "ci_low": result.ci_low,
            "ci_high": result.ci_high,
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            "estimated_cost_usd": rounded_cost(client.estimated_cost_usd(result.input_tokens, result.output_tokens)),
        }
    )
