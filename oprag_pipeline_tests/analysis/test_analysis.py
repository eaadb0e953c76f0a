"""The analyses' maths on hand-computed cases: fairness objective and selection, drift windows and tests, source
weighting against floods; the drift detector on the demo corpus's planted shifts across seeds."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from oprag_pipeline import sources
from oprag_pipeline.analysis import drift, flooding
from oprag_pipeline.analysis.fairness import Candidate, FairnessTargets, objective, select_fair, total_variation
from oprag_pipeline.evaluate.metrics import wasserstein1

# ---------------------------------------------------------------------------------------------------------------
# Fairness-aware selection
# ---------------------------------------------------------------------------------------------------------------


def test_total_variation_of_hand_made_shares() -> None:
    assert total_variation({"x": 1, "y": 1}, {"x": 0.5, "y": 0.5}) == 0.0
    assert total_variation({"x": 2}, {"x": 0.5, "y": 0.5}) == 0.5
    assert total_variation({"z": 3}, {"x": 0.5, "y": 0.5}) == 1.0  # disjoint supports
    assert total_variation({}, {"x": 1.0}) == 1.0  # nothing selected yet


# Best first by relevance. σ: A B D positive, C E negative. Groups: A B C business, D E leisure.
_POOL = [
    Candidate("A", 30, {"traveller": "business"}),
    Candidate("B", 30, {"traveller": "business"}),
    Candidate("C", -30, {"traveller": "business"}),
    Candidate("D", 30, {"traveller": "leisure"}),
    Candidate("E", -30, {"traveller": "leisure"}),
]
_TARGETS = FairnessTargets({30: 0.5, -30: 0.5}, {"traveller": {"business": 0.5, "leisure": 0.5}})


@pytest.mark.parametrize(
    ("sigma_weight", "group_weight", "expected"),
    [
        (0.0, 0.0, ["A", "B"]),  # no objective: relevance order
        (1.0, 0.0, ["A", "C"]),  # σ only: C and E both balance σ (TV 0); C is more relevant
        (0.0, 1.0, ["A", "D"]),  # groups only: D and E both balance groups; D is more relevant
        (0.5, 0.5, ["A", "E"]),  # both: only E balances σ and groups at once (J = 0; C and D give 0.25)
    ],
)
def test_greedy_selection_follows_the_weighted_objective(
    sigma_weight: float, group_weight: float, expected: list[str]
) -> None:
    chosen = select_fair(_POOL, 2, _TARGETS, sigma_weight=sigma_weight, group_weight=group_weight)
    assert [c.key for c in chosen] == expected


def test_objective_adds_the_weighted_terms_and_treats_missing_groups_as_uncovered() -> None:
    pair = [_POOL[0], _POOL[2]]  # σ balanced (TV 0), both business (TV 0.5)
    assert objective(pair, _TARGETS, sigma_weight=0.3, group_weight=0.7) == pytest.approx(0.7 * 0.5)
    unknown = [Candidate("U", 30)]  # no author attribute at all: the group term is 1
    assert objective(unknown, _TARGETS, sigma_weight=0.0, group_weight=1.0) == 1.0
    with pytest.raises(ValueError, match="non-negative"):
        select_fair(_POOL, 2, _TARGETS, sigma_weight=-1.0, group_weight=1.0)


def test_fair_search_covers_the_author_groups_of_the_entity(tmp_path: Path) -> None:
    from oprag_pipeline.analysis.retrieval import fair_search
    from oprag_pipeline.index.retrieval import OpinionProfile, Retriever
    from oprag_pipeline.index.vector_store import EdgeVectorStore, IndexPoint, point_uuid
    from oprag_pipeline.registry.matching import AliasMatcher
    from oprag_pipeline_tests.index.test_balancing import FixedEmbedder, _vector

    store = EdgeVectorStore(tmp_path / "qdrant")
    name = "d.enriched_kb"
    store.ensure_collection(name, 8)
    # 24 wifi opinions, all −20: the 12 closest to the query are business travellers, the other 12 leisure.
    points = []
    for i in range(24):
        business = i < 12
        vector = _vector(0) + (0.01 if business else 0.5) * _vector(200 + i)
        points.append(
            IndexPoint(
                id=point_uuid(f"p{i}"),
                dense=vector / np.linalg.norm(vector),
                sparse=([1], [1.0 + (24 - i) / 100]),  # sparse agrees with dense: business first
                payload={
                    "domain": "d",
                    "doc_id": f"d{i}",
                    "entity_id": "wifi",
                    "sentiment_intensity": -20,
                    "author_traveller_type": "business" if business else "leisure",
                    "content_hash": str(i),
                },
            )
        )
    store.upsert(name, points)
    profile = OpinionProfile(AliasMatcher.from_aliases({"wifi": ["wifi"]}), {"wifi": {-20: 24}})
    retriever = Retriever(store, FixedEmbedder(), profiles={"d": profile})
    shares = {"wifi": {"traveller_type": {"business": 0.5, "leisure": 0.5}}}
    options = {"k": 6, "group_shares": shares, "pool_factor": 4}
    relevance_only = fair_search(retriever, "d", "how is the wifi?", sigma_weight=1.0, group_weight=0.0, **options)
    fair = fair_search(retriever, "d", "how is the wifi?", sigma_weight=0.5, group_weight=0.5, **options)
    store.close()
    assert [h.payload["author_traveller_type"] for h in relevance_only] == ["business"] * 6
    groups = sorted(h.payload["author_traveller_type"] for h in fair)
    assert groups == ["business"] * 3 + ["leisure"] * 3


# ---------------------------------------------------------------------------------------------------------------
# Drift
# ---------------------------------------------------------------------------------------------------------------


def test_w1_on_the_sigma_scale_by_hand_and_against_the_metrics_module() -> None:
    assert drift.w1_counts(drift.level_counts([30]), drift.level_counts([-30])) == 60.0
    # [0, 10] vs [10, 10]: half the mass moves one step of 10
    assert drift.w1_counts(drift.level_counts([0, 10]), drift.level_counts([10, 10])) == pytest.approx(5.0)
    a, b = [-30, -10, 0, 0, 20, 30], [-20, -20, 10, 30]
    assert drift.w1_counts(drift.level_counts(a), drift.level_counts(b)) == pytest.approx(wasserstein1(a, b))
    with pytest.raises(ValueError, match="σ-scale"):
        drift.level_counts([15])


def test_permutation_p_value_is_exact_for_tiny_samples() -> None:
    # 4 scores, C(4, 2) = 6 ways to split them; only the observed split and its mirror reach W1 = 60.
    w1, p = drift.permutation_w1([30, 30], [-30, -30])
    assert w1 == 60.0
    assert p == pytest.approx(2 / 6)


def test_windows_are_calendar_aligned_and_keep_gaps() -> None:
    dated = [("2023-01-15", 10), ("2023-03-31", 20), ("2023-04-01", -10), ("2023-10-02", 0)]
    windows = drift.build_windows(dated, 3)
    assert [w.start for w in windows] == [date(2023, 1, 1), date(2023, 4, 1), date(2023, 7, 1), date(2023, 10, 1)]
    assert [w.n for w in windows] == [2, 1, 0, 1]
    assert windows[-1].end == date(2024, 1, 1)
    assert [w.start for w in drift.build_windows([("2024-05-05", 0)], 12)] == [date(2024, 1, 1)]


def _windows(*levels: int, n: int = 10) -> list[drift.Window]:
    """Quarterly windows from 2023, each holding n copies of one σ-score."""
    out = []
    start = date(2023, 1, 1)
    for level in levels:
        end = drift._add_months(start, 3)
        out.append(drift.Window(start, end, (level,) * n))
        start = end
    return out


def test_consecutive_tests_flag_only_the_changed_boundary_with_bonferroni() -> None:
    tests = drift.consecutive_tests(_windows(30, 30, -30))
    assert [t.index for t in tests] == [1, 2]
    assert tests[0].w1 == 0.0 and not tests[0].significant
    assert tests[1].w1 == 60.0 and tests[1].significant
    assert tests[1].p_adjusted == pytest.approx(2 * tests[1].p_value)
    assert tests[1].start == date(2023, 7, 1)


def test_a_spike_that_returns_is_told_apart_from_a_lasting_shift() -> None:
    spike = drift.analyse_entity("e", "e", [(w.start, s) for w in _windows(30, 30, -30, 30, 30) for s in w.scores])
    assert [(s.kind, s.start, s.end) for s in spike.shifts] == [("spike", date(2023, 7, 1), date(2023, 10, 1))]
    lasting = drift.analyse_entity("e", "e", [(w.start, s) for w in _windows(30, 30, -30, -30, -30) for s in w.scores])
    assert [(s.kind, s.start) for s in lasting.shifts] == [("lasting", date(2023, 7, 1))]
    assert (lasting.shifts[0].mean_before, lasting.shifts[0].mean_after) == (30.0, -30.0)
    # the latest window is all −30 while all time is 40% +30: it has drifted from what balancing matches
    assert lasting.drift is not None and lasting.drift.drifted
    assert lasting.drift.w1_vs_all_time == pytest.approx(0.4 * 60)
    assert spike.drift is not None and not spike.drift.drifted


def test_recency_weights_halve_per_half_life_and_keep_the_count() -> None:
    today = date(2025, 1, 1)
    dated = [(today, 30)] * 5 + [(date(2024, 1, 2), -30)] * 5  # 365 days old = two half-lives of 182.5 days
    # weights 5 × 1 and 5 × 0.25: shares 0.8 / 0.2 of 10 opinions
    assert drift.recency_weighted_counts(dated, now=today, half_life_days=182.5) == {30: 8, -30: 2}


def _truth_scores(data_dir: Path, domain: str) -> dict[str, list[tuple[str, int]]]:
    from oprag_pipeline.demo.truth import iter_jsonl

    by_entity: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for m in iter_jsonl(data_dir / "truth" / domain / "mentions.jsonl"):
        by_entity[m["entity_id"]].append((m["created_at"], m["sentiment_intensity"]))
    return by_entity


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_planted_shift_found_at_its_time_and_other_entities_flagged_at_the_stated_rate(tmp_path: Path) -> None:
    """The demo plants one lasting shift per domain (truth/…/entities.json). On the planted labels, with quarterly
    windows and α = 0.05: the shift is found in the quarter holding its date or the next one, in every seed;
    entities without a planted shift are flagged no more often than α allows (binomial tail ≥ 0.001)."""
    import json

    from oprag_pipeline.demo.generator import generate_demo

    alpha, flagged, tested = 0.05, 0, 0
    for seed in (0, 1, 2):
        root = tmp_path / f"seed{seed}"
        generate_demo(root, docs=4000, seed=seed)
        for domain in ("hotels", "seller_forum"):
            truth = json.loads((root / "truth" / domain / "entities.json").read_text())
            planted = {
                e["entity_id"]: date.fromisoformat(e["shift"]["date"]) for e in truth["entities"] if "shift" in e
            }
            assert planted, f"{domain}: the demo must plant a shifting entity"
            for entity_id, dated in _truth_scores(root, domain).items():
                timeline = drift.analyse_entity(entity_id, entity_id, dated, months=3, alpha=alpha, seed=seed)
                if entity_id in planted:
                    when = planted[entity_id]
                    quarter = date(when.year, 3 * ((when.month - 1) // 3) + 1, 1)
                    allowed = {quarter, drift._add_months(quarter, 3)}
                    lasting = [s.start for s in timeline.shifts if s.kind == "lasting"]
                    assert set(lasting) & allowed, (seed, domain, entity_id, lasting)
                elif timeline.tests:
                    tested += 1
                    flagged += timeline.flagged
    assert tested >= 60
    assert stats.binom.sf(flagged - 1, tested, alpha) >= 0.001, f"{flagged} of {tested} entities flagged"


# ---------------------------------------------------------------------------------------------------------------
# Flooding
# ---------------------------------------------------------------------------------------------------------------


def test_concentration_figures_by_hand() -> None:
    assert sources.top_author_share({"a": 5, "b": 3, "c": 2}, top=1) == 0.5
    assert sources.top_author_share({"a": 5, "b": 3, "c": 2}, top=2) == 0.8
    assert sources.effective_sources([1, 1, 1, 1]) == pytest.approx(4.0)
    assert sources.effective_sources([2, 1, 1]) == pytest.approx(1 / 0.375)


def test_shingles_and_near_duplicate_clusters() -> None:
    assert sources.shingles("The pool was filthy") == {"the pool was", "pool was filthy"}
    assert sources.jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    base = "the pool was filthy and closed half the time and the staff did nothing about it all week long"
    texts = {
        "k1": base,
        "k2": base.replace("all week long", "all week"),  # a copy with two words dropped
        "k3": "breakfast was generous and the coffee was excellent every single morning of our stay",
        "k4": base + " avoid",
    }
    assert sources.near_duplicate_clusters(texts) == [["k1", "k2", "k4"]]


def test_sources_link_authors_and_copies_and_weights_are_bounded() -> None:
    opinions = [
        sources.SourcedOpinion("k1", "x", -30),
        sources.SourcedOpinion("k2", "x", -30),
        sources.SourcedOpinion("k3", "y", 30),
        sources.SourcedOpinion("k4", None, 30),
        sources.SourcedOpinion("k5", None, 0),
    ]
    source_of = sources.sources(opinions, [["k3", "k4"]])
    assert source_of["k1"] == source_of["k2"] and source_of["k3"] == source_of["k4"]
    assert len(set(source_of.values())) == 3  # {k1, k2}, {k3, k4}, {k5}
    assert flooding.bounded_weights(source_of, policy="one_vote") == {"k1": 0.5, "k2": 0.5, "k3": 0.5, "k4": 0.5,
                                                                      "k5": 1.0}  # fmt: skip
    assert set(flooding.bounded_weights(source_of, policy="cap", cap=2).values()) == {1.0}
    with pytest.raises(ValueError, match="policy"):
        flooding.bounded_weights(source_of, policy="median")


def test_bounded_pop_by_hand_and_kept_beside_the_unweighted() -> None:
    # one flooding author with four −30 opinions, two independent authors at +30
    opinions = [sources.SourcedOpinion(f"f{i}", "flood", -30) for i in range(4)]
    opinions += [sources.SourcedOpinion("a", "a", 30), sources.SourcedOpinion("b", "b", 30)]
    result = flooding.analyse_sources("e", "e", opinions, [], policy="one_vote")
    est = result.estimate
    assert est.unweighted[0] == pytest.approx(4 / 6) and est.unweighted[-1] == pytest.approx(2 / 6)
    assert est.bounded[0] == pytest.approx(1 / 3) and est.bounded[-1] == pytest.approx(2 / 3)
    # CDFs 2/3 and 1/3 over the six steps below +30: W1 = 10 × 6 × 1/3
    assert est.w1 == pytest.approx(20.0)
    assert est.votes == pytest.approx(3.0)
    assert est.bounded_counts() == {-30: 2, 30: 4}  # rescaled to the 6 real opinions
    assert result.top_author_share == 1.0  # the top 5 authors are all 3 of them
    assert flooding.analyse_sources("e", "e", opinions, [], top=1).top_author_share == pytest.approx(4 / 6)


def test_query_timeline_and_profile_options() -> None:
    from oprag_pipeline.analysis.query import profile_builder

    lasting = drift.analyse_entity("e", "wifi", [(w.start, s) for w in _windows(30, 30, -30, -30) for s in w.scores])
    text = "\n".join(drift.render_timeline(lasting))
    assert "Timeline of wifi (e)" in text and "lasting shift from 2023-07-01" in text
    assert text.count("← shift") == 1
    assert profile_builder("d", since=None, half_life_days=None) is None  # all time: balanced mode's own default
    with pytest.raises(ValueError, match="not both"):
        profile_builder("d", since=date(2024, 1, 1), half_life_days=30.0)


def test_analysis_sections_reach_the_html_report_as_html() -> None:
    """report.md and report.html carry the same analysis sections; the HTML one is rendered, tables included."""
    import duckdb

    from oprag_pipeline.analysis.section_store import analysis_html, analysis_markdown, save_section

    conn = duckdb.connect(":memory:")
    assert analysis_html(conn, "d") == ""  # no analysis ran: nothing appended
    save_section(conn, "d", "drift", "## Opinion drift\n\n| entity | shift |\n| --- | --- |\n| pool | lasting |\n")
    save_section(conn, "other", "drift", "## Someone else's drift\n")
    html = analysis_html(conn, "d")
    assert "<h2>Opinion drift</h2>" in html and "<table>" in html and "<td>lasting</td>" in html
    assert "Someone else" not in html and "Someone else" not in analysis_markdown(conn, "d")


def test_group_fair_searcher_takes_its_weights_from_the_tradeoff_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    """`oprag query --mode groups --group-weight W` is the trade-off asset's retrieval at w_g = W, w_σ = 1 − W."""
    import duckdb

    from oprag_pipeline.analysis import query as analysis_query

    seen = {}

    def recording_fair_search(retriever, domain, query, **kwargs):
        seen.update(kwargs, domain=domain, query=query)
        return []

    monkeypatch.setattr(analysis_query, "fair_search", recording_fair_search)
    conn = duckdb.connect()
    conn.execute("CREATE TABLE opinions (domain VARCHAR, doc_id VARCHAR, entity_id VARCHAR)")
    conn.execute("CREATE TABLE author_attributes (domain VARCHAR, doc_id VARCHAR, attribute VARCHAR, value VARCHAR)")
    conn.execute("INSERT INTO opinions VALUES ('d', '1', 'e1'), ('d', '2', 'e1')")
    conn.execute("INSERT INTO author_attributes VALUES ('d', '1', 'type', 'solo'), ('d', '2', 'type', 'family')")
    search = analysis_query.group_fair_searcher("d", "the pool?", k=7, group_weight=0.25)
    assert search(conn, object()) == []
    assert seen["k"] == 7 and seen["query"] == "the pool?"
    assert seen["sigma_weight"] == 0.75 and seen["group_weight"] == 0.25
    assert seen["group_shares"] == {"e1": {"type": {"solo": 0.5, "family": 0.5}}}


def test_fair_points_average_each_weight_and_skip_a_weight_without_w1() -> None:
    from oprag_pipeline.analysis.fairness import fair_points

    scores = [
        ("fair:0.0", "w1_gold", 4.0), ("fair:0.0", "w1_gold", 6.0),
        ("fair:0.0", "coverage_matched_age", 0.5), ("fair:0.0", "coverage_matched_region", 1.0),
        ("fair:1.0", "coverage_matched_age", 1.0),  # no W1 at this weight: nothing found on the entity
        ("hybrid", "w1_gold", 9.0),  # another mode of the grid: not a trade-off point
    ]  # fmt: skip
    points = fair_points(scores, [0.0, 1.0], "w1_gold")
    assert [(p.group_share, p.w1, p.coverage_matched, p.questions) for p in points] == [(0.0, 5.0, 0.75, 2)]
    assert fair_points(scores, [0.0], "w1") == []  # the domain's W1 metric decides
