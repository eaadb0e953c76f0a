"""Analysis assets (one partition per domain): opinion timelines with a drift check, source concentration with a
flood-resistant P_pop, and the fairness trade-off curve. Each writes its tables, its plot (PNG next to the report,
embedded in the asset's metadata) and its report section; the maths is in drift.py, flooding.py and fairness.py."""

import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import duckdb
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    PreviewWarning,
)
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline import settings, sources
from oprag_pipeline.analysis import drift, fairness, flooding, plots
from oprag_pipeline.analysis.retrieval import author_group_shares, dated_scores, fair_search
from oprag_pipeline.analysis.section_store import save_section
from oprag_pipeline.asset_decorators import domain_asset
from oprag_pipeline.evaluate.metrics import Hit, HitOpinion, ScoreDistribution
from oprag_pipeline.evaluate.scoring import score_grid
from oprag_pipeline.index.retrieval import OpinionProfile, Retriever, attach_opinions
from oprag_pipeline.partitions import domain_partitions
from oprag_pipeline.resources import DataDirResource, EmbedderResource, VectorStoreResource
from oprag_pipeline.warehouse import ensure_tables, replace_rows

GROUP = "analysis"

TABLES = ("opinion_windows", "opinion_shifts", "source_concentration", "source_weighted_pop", "fairness_tradeoff")
"""The analyses' tables, declared in `oprag_pipeline/warehouse.py`; every row is derived and replaced per domain."""


def _ensure(conn) -> None:
    ensure_tables(conn, *TABLES)


PLOT_FOLDER = "analysis"  # under reports/<domain>/, so the evaluation report's own plots stay as they are


def _out_dir(paths: DataDirResource, domain: str) -> Path:
    out = settings.reports_dir(paths.root) / domain / PLOT_FOLDER
    out.mkdir(parents=True, exist_ok=True)
    return out


def _link(plot: Path | None) -> str | None:
    """The plot as the report links it (relative to report.md)."""
    return f"{PLOT_FOLDER}/{plot.name}" if plot else None


def _disputed(conn, domain: str, min_entropy: float, min_mentions: int) -> list[tuple[str, str]]:
    return conn.execute(
        """SELECT entity_id, entity_name FROM entity_opinion_stats
           WHERE domain = ? AND entropy_bits >= ? AND mentions >= ? ORDER BY mentions DESC, entity_id""",
        [domain, min_entropy, min_mentions],
    ).fetchall()


class OpinionTimelinesConfig(Config):
    window_months: int = Field(default=3, description="Window size in calendar months (3 = quarters).")
    alpha: float = Field(default=drift.DEFAULT_ALPHA, description="False-alarm rate per entity (Bonferroni).")
    min_count: int = Field(default=drift.DEFAULT_MIN_COUNT, description="Least opinions for a window to be tested.")
    max_spike_windows: int = Field(default=drift.DEFAULT_MAX_SPIKE_WINDOWS, description="Longest reactive spike.")
    min_entropy: float = Field(default=0.6, description="Disputed entities: least sentiment entropy H(e) in bits.")
    min_mentions: int = Field(default=20, description="Least opinions an entity needs to get a timeline.")


def _drift_check() -> AssetCheckSpec:
    # A partitioned check spec is a preview in the Dagster we pin; it records the result against the domain it
    # checked instead of beside every domain (as index/assets.py's count checks do). Silenced for this construction.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return AssetCheckSpec(
            "latest_window_matches_all_time",
            asset="opinion_timelines",
            description="Warns when a disputed entity's latest window has drifted from its all-time σ distribution "
            "(the one balanced retrieval matches): consider balancing on a recent window (`oprag query --since`).",
            partitions_def=domain_partitions,
        )


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["opinions", "entity_opinion_stats"],
    check_specs=[_drift_check()],
    description="Each disputed entity's σ distribution per time window, shifts between consecutive windows (W1 "
    "with a permutation test), lasting shift vs reactive spike, and the latest window against all time.",
)
def opinion_timelines(
    context: AssetExecutionContext, config: OpinionTimelinesConfig, warehouse: DuckDBResource, paths: DataDirResource
):
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure(conn)
        entities = _disputed(conn, domain, config.min_entropy, config.min_mentions)
        dated = dated_scores(conn, domain)
        timelines = [
            drift.analyse_entity(
                entity_id,
                name,
                dated.get(entity_id, []),
                months=config.window_months,
                alpha=config.alpha,
                min_count=config.min_count,
                max_spike_windows=config.max_spike_windows,
            )
            for entity_id, name in entities
            if dated.get(entity_id)
        ]
        window_rows, shift_rows = [], []
        for t in timelines:
            tests = {b.index: b for b in t.tests}
            for i, w in enumerate(t.windows):
                s, b = w.shares(), tests.get(i)
                window_rows.append(
                    {
                        "entity_id": t.entity_id,
                        "entity_name": t.entity_name,
                        "window_start": w.start,
                        "window_end": w.end,
                        "n": w.n,
                        "positive": s["positive"],
                        "neutral": s["neutral"],
                        "negative": s["negative"],
                        "mean_sigma": w.mean(),
                        "w1_previous": b.w1 if b else None,
                        "p_adjusted": b.p_adjusted if b else None,
                        "shift_flagged": bool(b and b.significant),
                    }
                )
            shift_rows += [
                {
                    "entity_id": t.entity_id,
                    "kind": s.kind,
                    "shift_start": s.start,
                    "shift_end": s.end,
                    "w1": s.w1,
                    "mean_before": s.mean_before,
                    "mean_after": s.mean_after,
                }
                for s in t.shifts
            ]
        replace_rows(conn, "opinion_windows", window_rows, domain=domain)
        replace_rows(conn, "opinion_shifts", shift_rows, domain=domain)
        out = _out_dir(paths, domain)
        plot = plots.timelines(timelines, out / "opinion_timelines.png", domain) if timelines else None
        section = drift.drift_section(timelines, months=config.window_months, alpha=config.alpha, image=_link(plot))
        save_section(conn, domain, "drift", section)
    drifted = [t for t in timelines if t.drift and t.drift.drifted]
    metadata = {
        "entities": len(timelines),
        "entities_with_shift": sum(t.flagged for t in timelines),
        "shifts": MetadataValue.md(
            "\n".join(f"- {t.entity_name}: {s.kind} from {s.start}" for t in timelines for s in t.shifts) or "none"
        ),
    }
    if plot:
        metadata["plot_timelines"] = MetadataValue.md(plots.embedded(plot))
    yield MaterializeResult(metadata=metadata)
    yield AssetCheckResult(
        check_name="latest_window_matches_all_time",
        passed=not drifted,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "drifted_entities": MetadataValue.json(
                {t.entity_name: round(t.drift.w1_vs_all_time, 2) for t in drifted if t.drift}
            ),
            "alpha": MetadataValue.text(f"{config.alpha:g}"),  # a setting, not a measurement to plot
        },
    )


class SourceConcentrationConfig(Config):
    policy: str = Field(default="one_vote", description="one_vote (per source and entity) or cap.")
    cap: int = Field(default=3, description="With policy=cap: most opinions' weight one source may carry.")
    top_authors: int = Field(default=sources.DEFAULT_TOP_AUTHORS, description="Top authors in the share figure.")
    jaccard: float = Field(default=sources.DEFAULT_JACCARD, description="Near-duplicate threshold (3-shingles).")
    min_mentions: int = Field(default=5, description="Least opinions an entity needs to be analysed.")


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=["opinions", "raw_documents"],
    description="Per entity: share of opinions from its top authors, near-duplicate text clusters, and P_pop with "
    "each source's weight bounded (one vote, or a cap) beside the unweighted P_pop.",
)
def source_concentration(
    context: AssetExecutionContext,
    config: SourceConcentrationConfig,
    warehouse: DuckDBResource,
    paths: DataDirResource,
) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure(conn)
        rows = conn.execute(
            """SELECT o.entity_id, any_value(o.entity_name), o.doc_id, any_value(d.author_id),
                      any_value(o.sentiment_intensity)
               FROM opinions o JOIN raw_documents d ON d.domain = o.domain AND d.doc_id = o.doc_id
               WHERE o.domain = ? GROUP BY o.entity_id, o.doc_id ORDER BY 1, 3""",
            [domain],
        ).fetchall()
        texts = dict(
            conn.execute(
                "SELECT doc_id, text FROM raw_documents WHERE domain = ? AND doc_id IN "
                "(SELECT DISTINCT doc_id FROM opinions WHERE domain = ?)",
                [domain, domain],
            ).fetchall()
        )
        clusters = sources.near_duplicate_clusters(texts, threshold=config.jaccard)
        by_entity: dict[str, list[sources.SourcedOpinion]] = defaultdict(list)
        names: dict[str, str] = {}
        for entity_id, name, doc_id, author_id, sigma in rows:
            names[entity_id] = name
            by_entity[entity_id].append(sources.SourcedOpinion(doc_id, author_id, int(sigma)))
        results = [
            flooding.analyse_sources(
                e, names[e], ops, clusters, policy=config.policy, cap=config.cap, top=config.top_authors
            )
            for e, ops in sorted(by_entity.items())
            if len(ops) >= config.min_mentions
        ]
        concentration_rows, pop_rows = [], []
        for r in results:
            plain, bounded = r.means()
            concentration_rows.append(
                {
                    "entity_id": r.entity_id,
                    "entity_name": r.entity_name,
                    "n_opinions": r.estimate.n_opinions,
                    "n_authors": r.n_authors,
                    "top_author_share": r.top_author_share,
                    "effective_authors": r.effective_authors,
                    "duplicate_clusters": r.duplicate_clusters,
                    "duplicated_opinions": r.duplicated_opinions,
                    "votes": r.estimate.votes,
                    "mean_sigma": plain,
                    "mean_sigma_bounded": bounded,
                    "w1_bounded_vs_unweighted": r.estimate.w1,
                }
            )
            counts = r.estimate.bounded_counts()
            for level, (u, b) in zip(
                range(-30, 31, 10), zip(r.estimate.unweighted, r.estimate.bounded, strict=True), strict=True
            ):
                pop_rows.append(
                    {
                        "entity_id": r.entity_id,
                        "sentiment_intensity": level,
                        "unweighted_share": float(u),
                        "bounded_share": float(b),
                        "bounded_count": counts.get(level, 0),
                    }
                )
        replace_rows(conn, "source_concentration", concentration_rows, domain=domain)
        replace_rows(conn, "source_weighted_pop", pop_rows, domain=domain)
        out = _out_dir(paths, domain)
        plot = plots.concentration(results, out / "source_concentration.png", domain) if results else None
        section = flooding.flooding_section(
            results, policy=config.policy, cap=config.cap, top=config.top_authors, image=_link(plot)
        )
        save_section(conn, domain, "flooding", section)
    worst = max((r.estimate.w1 for r in results), default=0.0)
    metadata = {
        "entities": len(results),
        "near_duplicate_clusters": len(clusters),
        "max_w1_bounded_vs_unweighted": round(worst, 3),
        "duplicate_method": "word 3-shingles, MinHash LSH, exact Jaccard check",
    }
    if plot:
        metadata["plot_concentration"] = MetadataValue.md(plots.embedded(plot))
    return MaterializeResult(metadata=metadata)


class FairnessTradeoffConfig(Config):
    group_weights: list[float] = Field(
        default=list(fairness.DEFAULT_WEIGHTS), description="Author-group shares of the objective on the curve."
    )
    k: int = Field(default=20, description="Hits per question.")
    pool_factor: int = Field(default=fairness.DEFAULT_POOL_FACTOR, description="Candidates per slot.")


def _reference_points(conn, domain: str, k: int, w1_metric: str) -> list[fairness.TradeoffPoint]:
    """Raw hybrid and balanced retrieval at the same k, from the evaluation's own per-question metrics."""
    points = []
    for label, kb, mode in (("raw KB, hybrid", "raw", "hybrid"), ("enriched KB, balanced", "enriched", "balanced")):
        row = conn.execute(
            """WITH per_q AS (
                   SELECT question_id,
                          avg(value) FILTER (metric = ?) AS w1,
                          avg(value) FILTER (metric LIKE 'coverage_matched_%') AS coverage
                   FROM question_metrics WHERE domain = ? AND kb = ? AND mode = ? AND k = ? GROUP BY question_id)
               SELECT avg(w1), avg(coverage), count(*) FROM per_q WHERE w1 IS NOT NULL""",
            [w1_metric, domain, kb, mode, k],
        ).fetchone()
        if row and row[2]:
            points.append(fairness.TradeoffPoint(label, None, float(row[0]), float(row[1] or 0.0), int(row[2])))
    return points


def _fair_hits(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    questions: Sequence[tuple[str, str, str]],
    config: FairnessTradeoffConfig,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
) -> dict[tuple[str, str, str, int], list[Hit]]:
    """Each question's fair retrieval at every group weight of the config, as the scoring grid's hits (mode
    ``fair:<w_g>`` on the enriched KB)."""
    retriever_store = vector_store.open_store()
    retriever = Retriever(retriever_store, embedder.embedder(), profiles={domain: OpinionProfile.load(conn, domain)})
    targets = author_group_shares(conn, domain)
    hits: dict[tuple[str, str, str, int], list[Hit]] = {}
    try:
        for share in config.group_weights:
            sigma_weight, group_weight = fairness.weights_for(share)
            for question_id, _, text in questions:
                found = fair_search(
                    retriever,
                    domain,
                    text,
                    k=config.k,
                    group_shares=targets,
                    sigma_weight=sigma_weight,
                    group_weight=group_weight,
                    pool_factor=config.pool_factor,
                )
                attach_opinions(conn, domain, "enriched", found)
                hits[(question_id, "enriched", f"fair:{share}", config.k)] = [
                    Hit(
                        h.point_id,
                        tuple(
                            HitOpinion(o["entity_id"], o["sentiment_intensity"], o["impact_score"]) for o in h.opinions
                        ),
                        h.author,
                        h.payload["doc_id"],
                    )
                    for h in found
                ]
    finally:
        retriever_store.close()
    return hits


def _gold_by_doc(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[tuple[str, str], int]:
    """(document, entity) → the gold σ-level, for the scoring grid's gold W1."""
    return {
        (d, e): s
        for d, e, s in conn.execute(
            "SELECT doc_id, entity_id, sentiment_intensity FROM gold_opinions WHERE domain = ?", [domain]
        ).fetchall()
    }


def _author_groups(conn: duckdb.DuckDBPyConnection, domain: str) -> dict[str, list[str]]:
    """Each author attribute's values in the domain (the groups whose coverage the grid measures)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for attribute, value in conn.execute(
        "SELECT DISTINCT attribute, value FROM author_attributes WHERE domain = ? ORDER BY ALL", [domain]
    ).fetchall():
        groups[attribute].append(value)
    return groups


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb", "qdrant"},
    deps=["question_metrics", "evaluation_questions", "gold_opinions", "enriched_kb", "author_attributes"],
    description="Fairness-aware multi-objective retrieval as the author-group weight moves: W1 to gold (or to the "
    "extracted corpus without gold) against demographic coverage among entity-matched hits, beside raw and "
    "balanced retrieval.",
)
def fairness_tradeoff(
    context: AssetExecutionContext,
    config: FairnessTradeoffConfig,
    warehouse: DuckDBResource,
    embedder: EmbedderResource,
    vector_store: VectorStoreResource,
    paths: DataDirResource,
) -> MaterializeResult:
    domain = context.partition_key
    with warehouse.get_connection() as conn:
        _ensure(conn)
        questions = conn.execute(
            "SELECT question_id, entity_id, text FROM evaluation_questions WHERE domain = ? ORDER BY question_id",
            [domain],
        ).fetchall()
        corpus = _counts(conn, "opinions", domain)
        gold = _counts(conn, "gold_opinions", domain)
        hits = _fair_hits(conn, domain, questions, config, embedder, vector_store)
        scored = score_grid(
            {q: e for q, e, _ in questions},
            hits,
            corpus,
            _author_groups(conn, domain),
            gold_corpus=gold,
            gold_by_doc=_gold_by_doc(conn, domain),
        )
        w1_metric = "w1_gold" if gold else "w1"
        points = _reference_points(conn, domain, config.k, w1_metric)
        points += fairness.fair_points(
            ((mode, metric, value) for _, _, mode, _, metric, value in scored), config.group_weights, w1_metric
        )
        replace_rows(
            conn,
            "fairness_tradeoff",
            [
                {
                    "variant": p.label,
                    "group_share": p.group_share,
                    "k": config.k,
                    "w1": p.w1,
                    "coverage_matched": p.coverage_matched,
                    "questions": p.questions,
                    "gold": bool(gold),
                }
                for p in points
            ],
            domain=domain,
        )
        out = _out_dir(paths, domain)
        plot = plots.tradeoff(points, out / "fairness_tradeoff.png", domain, gold=bool(gold)) if points else None
        section = fairness.tradeoff_section(points, k=config.k, gold=bool(gold), image=_link(plot))
        save_section(conn, domain, "fairness", section)
    table = "\n".join(
        f"- {p.label} w_g={p.group_share}: W1 {p.w1:.2f}, coverage {p.coverage_matched:.3f}" for p in points
    )
    metadata = {"questions": len(questions), "points": MetadataValue.md(table or "none"), "gold": bool(gold)}
    if plot:
        metadata["plot_tradeoff"] = MetadataValue.md(plots.embedded(plot))
    return MaterializeResult(metadata=metadata)


def _counts(conn, table: str, domain: str) -> dict[str, ScoreDistribution]:
    counts: dict[str, dict[float, int]] = defaultdict(dict)
    for entity_id, score, n in conn.execute(
        f"SELECT entity_id, sentiment_intensity, count(*) FROM {table} WHERE domain = ? GROUP BY ALL", [domain]
    ).fetchall():
        counts[entity_id][float(score)] = int(n)
    return {e: ScoreDistribution.from_counts(c) for e, c in counts.items()}


ANALYSIS_ASSETS = [opinion_timelines, source_concentration, fairness_tradeoff]
