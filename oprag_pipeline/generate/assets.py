"""Generation assets: an answer to every evaluation question from the opinion-aware and the plain pipeline, their
fidelity to the corpus (and gold), paired tests between the two, and an optional LLM-judged preference study.

Thin on purpose: the answers come from `api.answer_in_context`, the figures from the pure functions of
`fidelity.py`, the tests from `evaluate/stats.py`.
"""

import json
import time
from collections import defaultdict

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline import config as env_config  # `config` is the assets' run config
from oprag_pipeline.enrich.offline import OfflineExtractor
from oprag_pipeline.evaluate.metrics import ScoreDistribution
from oprag_pipeline.evaluate.stats import compare_paired
from oprag_pipeline.generate.answer import Answer
from oprag_pipeline.generate.api import WRITERS, answer_in_context, build_writer
from oprag_pipeline.generate.context import DomainKnowledge, gather
from oprag_pipeline.generate.fidelity import answer_fidelity, conveyed_distribution, read_back
from oprag_pipeline.generate.judge import PairToJudge, judge_pairs
from oprag_pipeline.index.retrieval import BALANCED, Retriever
from oprag_pipeline.partitions import domain_partitions
from oprag_pipeline.resources import EmbedderResource, VectorStoreResource
from oprag_pipeline.schema import rounded_cost, total_cost

GROUP = "generation"
# The two answers compared for every question: the opinion-aware pipeline (balanced retrieval on the enriched KB,
# corpus statistics in the answer) and plain RAG (hybrid retrieval of raw chunks).
VARIANTS = {"opinion_aware": ("enriched", BALANCED), "plain": ("raw", "hybrid")}
JUDGE_ENV = "OPRAG_JUDGE"

DDL = """
CREATE TABLE IF NOT EXISTS generated_answers (
    domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, entity_id VARCHAR NOT NULL, variant VARCHAR NOT NULL,
    kb VARCHAR NOT NULL, mode VARCHAR NOT NULL, k INTEGER NOT NULL, writer VARCHAR NOT NULL,
    answer_text VARCHAR NOT NULL, answer_json JSON NOT NULL, flags VARCHAR[] NOT NULL, input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL, cost_usd DOUBLE
);
CREATE TABLE IF NOT EXISTS generation_metrics (
    domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, variant VARCHAR NOT NULL, metric VARCHAR NOT NULL,
    value DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS generation_significance (
    domain VARCHAR NOT NULL, metric VARCHAR NOT NULL, treatment VARCHAR NOT NULL, baseline VARCHAR NOT NULL,
    n_questions INTEGER NOT NULL, treatment_mean DOUBLE, baseline_mean DOUBLE, relative_change DOUBLE,
    relative_change_label VARCHAR NOT NULL, mean_difference DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
    wilcoxon_statistic DOUBLE, p_value DOUBLE
);
CREATE TABLE IF NOT EXISTS answer_preferences (
    domain VARCHAR NOT NULL, question_id VARCHAR NOT NULL, judge VARCHAR NOT NULL, treatment_position VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL, treatment_preferred DOUBLE NOT NULL, reason VARCHAR NOT NULL
);
"""


def _ensure_tables(conn) -> None:
    for statement in filter(str.strip, DDL.split(";")):
        conn.execute(statement)
    # cost_usd is NULL for a writer whose price is unknown; warehouses made before that had it NOT NULL
    conn.execute("ALTER TABLE generated_answers ALTER COLUMN cost_usd DROP NOT NULL")


def _replace(conn, table: str, domain: str, rows: list[list]) -> None:
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute(f"DELETE FROM {table} WHERE domain = ?", [domain])
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


class GeneratedAnswersConfig(Config):
    k: int = Field(default=20, description="Passages retrieved per answer (the report's headline depth).")
    writer: str = Field(
        default="offline",
        description="offline (the deterministic composer), anthropic or openai-compatible (keys and models from "
        "the environment, as for the extractor).",
    )


@asset(
    partitions_def=domain_partitions,
    group_name=GROUP,
    pool="warehouse",
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
    rows: list[list] = []
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
                        [domain, question_id, entity_id, variant, kb, mode, config.k, answer.writer, answer.text,
                         json.dumps(answer.to_dict(), ensure_ascii=False), answer.flags, answer.input_tokens,
                         answer.output_tokens, answer.cost_usd]
                    )  # fmt: skip
            _replace(conn, "generated_answers", domain, rows)
    finally:
        store.close()
    flagged = sum(bool(r[10]) for r in rows)
    sample = next((r[8] for r in rows if r[3] == "opinion_aware"), "(no questions)")
    return MaterializeResult(
        metadata={
            "answers": len(rows),
            "questions": len(questions),
            "writer": rows[0][7] if rows else config.writer,
            "flagged_answers": flagged,
            "input_tokens": sum(r[11] for r in rows),
            "output_tokens": sum(r[12] for r in rows),
            "estimated_cost_usd": rounded_cost(total_cost(r[13] for r in rows)),
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


@asset(
    partitions_def=domain_partitions,
    group_name=GROUP,
    pool="warehouse",
    kinds={"duckdb"},
    deps=["generated_answers", "gold_opinions"],
    description="Per answer: W1 between the corpus σ distribution of the question's entity and the one the answer "
    "conveys (stated shares, else read back by the offline extractor), W1 to gold where present, minority "
    "erasure, share error and tolerance, grounded-quote rate; paired Wilcoxon tests opinion-aware vs plain.",
)
def generation_fidelity(context: AssetExecutionContext, warehouse: DuckDBResource) -> MaterializeResult:
    domain = context.partition_key
    extractor = OfflineExtractor()
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        answers = conn.execute(
            "SELECT question_id, entity_id, variant, answer_json FROM generated_answers WHERE domain = ?", [domain]
        ).fetchall()
        corpus = _distributions(conn, "opinions", domain)
        has_gold = bool(
            conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'gold_opinions'"
            ).fetchone()[0]
        )
        gold = _distributions(conn, "gold_opinions", domain) if has_gold else {}
        knowledge = DomainKnowledge.load(conn, domain)
        registry = list(knowledge.entities.values())
        rows: list[list] = []
        values: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
        for question_id, entity_id, variant, answer_json in answers:
            if entity_id not in corpus:
                continue
            answer = Answer.from_dict(json.loads(answer_json))
            read = {} if answer.stated_for(entity_id) else read_back(answer.text, extractor, registry)
            figures = answer_fidelity(
                conveyed_distribution(answer, entity_id, read), corpus[entity_id], answer.quotes, gold.get(entity_id)
            )
            figures["flagged"] = float(bool(answer.flags))
            for metric, value in figures.items():
                rows.append([domain, question_id, variant, metric, float(value)])
                values[metric][variant][question_id] = float(value)
        _replace(conn, "generation_metrics", domain, rows)
        tests: list[list] = []
        for metric, by_variant in sorted(values.items()):
            shared = sorted(set(by_variant.get("opinion_aware", {})) & set(by_variant.get("plain", {})))
            if not shared:
                continue
            c = compare_paired(
                metric,
                "opinion_aware",
                [by_variant["opinion_aware"][q] for q in shared],
                "plain",
                [by_variant["plain"][q] for q in shared],
            )
            tests.append(
                [domain, metric, c.treatment, c.baseline, c.n_questions, c.treatment_mean, c.baseline_mean,
                 c.relative_change, c.relative_change_label, c.mean_difference, c.ci_low, c.ci_high,
                 c.wilcoxon_statistic, c.p_value]
            )  # fmt: skip
        _replace(conn, "generation_significance", domain, tests)
    from oprag_pipeline.evaluate.report import markdown_table

    table = markdown_table(
        ["metric", "plain", "opinion-aware", "change", "p"], [[t[1], t[6], t[5], t[8], t[13]] for t in tests]
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


@asset(
    partitions_def=domain_partitions,
    group_name=GROUP,
    pool="warehouse",
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
    judge = config.judge or env_config.raw(JUDGE_ENV)
    with warehouse.get_connection() as conn:
        _ensure_tables(conn)
        if not judge:
            _replace(conn, "answer_preferences", domain, [])
            message = f"skipped: no LLM judge configured (set {JUDGE_ENV}=anthropic or openai-compatible)"
            context.log.info(f"{domain}: preference study {message}")
            return MaterializeResult(metadata={"status": message})
        if judge not in ("anthropic", "openai-compatible"):
            raise ValueError(f"{JUDGE_ENV} must be anthropic or openai-compatible, not {judge!r}")
        from oprag_pipeline.enrich.factory import build_extractor

        client = build_extractor(judge)
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
        _replace(
            conn,
            "answer_preferences",
            domain,
            [[domain, j.question_id, name, j.treatment_position, j.verdict, j.treatment_preferred, j.reason]
             for j in result.judgements],
        )  # fmt: skip
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
