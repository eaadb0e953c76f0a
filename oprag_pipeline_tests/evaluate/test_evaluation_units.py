"""Pure parts of the evaluation: entity selection, question generation, gold mapping, grid scoring, SQL models."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from oprag_pipeline.evaluate.gold import GoldMapper, RegistryEntry, map_gold
from oprag_pipeline.evaluate.metrics import Hit, HitOpinion
from oprag_pipeline.evaluate.questions import (
    QUESTION_TYPES,
    QuestionEntity,
    _verbs_for,
    generate_questions,
    with_article,
)
from oprag_pipeline.evaluate.scoring import score_grid
from oprag_pipeline.evaluate.selection import EntityStats, GoldSupport, choose_evaluation_entities
from oprag_pipeline.evaluate.sql_models import compile_test, load_models, sql_literal

# --- selection ---------------------------------------------------------------------------------------------------


def stats(entity_id: str, name: str, tier1: str, tier2: str, mentions: int, entropy: float) -> EntityStats:
    return EntityStats(entity_id, name, tier1, tier2, mentions, entropy)


def test_entities_need_dispute_and_mentions_and_come_most_mentioned_first() -> None:
    candidates = [
        stats("e1", "breakfast", "food", "meals", 50, 0.9),
        stats("e2", "pool", "facilities", "leisure", 50, 0.3),  # unanimous: no dispute to represent
        stats("e3", "wifi", "amenities", "connectivity", 5, 1.4),  # disputed but too rare
        stats("e4", "dinner", "food", "meals", 80, 1.2),
        stats("e5", "bar", "food", "drinks", 30, 0.9),
        stats("e6", "lounge", "food", "drinks", 30, 1.0),  # same mentions as the bar, more disputed: first
    ]
    chosen = choose_evaluation_entities(candidates, min_entropy=0.6, min_mentions=20, max_entities=10)
    assert [e.entity_id for e in chosen] == ["e4", "e1", "e6", "e5"]  # the most mentioned of the disputed first
    # comparison partners: same tier 2 first, else same tier 1, never itself
    partners = {e.entity_id: e.comparison_id for e in chosen}
    assert partners == {"e4": "e1", "e1": "e4", "e6": "e5", "e5": "e6"}
    assert len(choose_evaluation_entities(candidates, min_entropy=0.6, min_mentions=20, max_entities=2)) == 2


def test_an_entity_with_no_possible_partner_gets_none() -> None:
    chosen = choose_evaluation_entities(
        [stats("e1", "room", "room", "room", 40, 1.0)], min_entropy=0.6, min_mentions=1, max_entities=5
    )
    assert chosen[0].comparison_id is None and chosen[0].comparison_name is None


def test_disputed_entities_with_gold_come_first_where_the_domain_has_gold() -> None:
    candidates = [
        stats("e1", "lobby", "building", "public areas", 90, 0.9),
        stats("e2", "lift", "building", "public areas", 85, 1.0),
        stats("e3", "parking", "access", "parking", 70, 1.1),
        stats("e4", "sauna", "leisure", "spa", 40, 0.8),
        stats("e5", "minibar", "room", "minibar", 30, 1.2),
        stats("e6", "garden", "leisure", "outdoors", 60, 0.2),  # gold, but the corpus does not dispute it
        stats("e7", "terrace", "leisure", "outdoors", 25, 0.9),
    ]
    gold = {
        "e2": GoldSupport(12, 7, 5),  # enough, both sides
        "e4": GoldSupport(30, 20, 10),
        "e5": GoldSupport(9, 5, 4),  # one short of enough
        "e3": GoldSupport(40, 40, 0),  # plenty, but no negative label: no dispute in gold
        "e6": GoldSupport(50, 25, 25),
    }
    plain = choose_evaluation_entities(candidates, min_entropy=0.6, min_mentions=20, max_entities=3)
    assert [e.entity_id for e in plain] == ["e1", "e3", "e4"]  # by mentions, one per tier-2 group first
    chosen = choose_evaluation_entities(
        candidates, min_entropy=0.6, min_mentions=20, max_entities=3, gold=gold, min_gold_mentions=10
    )
    # the gold-backed disputed entities (most mentioned first), then the rest in the plain order; e1 shares the
    # lift's tier-2 group, so the next group (parking) comes before it
    assert [e.entity_id for e in chosen] == ["e2", "e4", "e3"]
    everything = choose_evaluation_entities(
        candidates, min_entropy=0.6, min_mentions=20, max_entities=10, gold=gold, min_gold_mentions=10
    )
    assert [e.entity_id for e in everything] == ["e2", "e4", "e1", "e3", "e5", "e7"]  # the undisputed garden never
    # with a looser gold threshold the minibar qualifies too
    looser = choose_evaluation_entities(
        candidates, min_entropy=0.6, min_mentions=20, max_entities=3, gold=gold, min_gold_mentions=9
    )
    assert [e.entity_id for e in looser] == ["e2", "e4", "e5"]


def test_without_usable_gold_the_choice_is_the_plain_one() -> None:
    candidates = [
        stats("e1", "lobby", "building", "public areas", 90, 0.9),
        stats("e2", "lift", "building", "public areas", 85, 1.0),
        stats("e3", "parking", "access", "parking", 70, 1.1),
        stats("e4", "sauna", "leisure", "spa", 40, 0.8),
    ]
    plain = choose_evaluation_entities(candidates, min_entropy=0.6, min_mentions=20, max_entities=3)
    for gold in ({}, {"e2": GoldSupport(3, 2, 1)}, {"e3": GoldSupport(50, 0, 50)}, {"e9": GoldSupport(50, 20, 30)}):
        assert (
            choose_evaluation_entities(
                candidates, min_entropy=0.6, min_mentions=20, max_entities=3, gold=gold, min_gold_mentions=10
            )
            == plain
        ), gold


# --- questions ---------------------------------------------------------------------------------------------------


ENTITY = QuestionEntity("e7", "front desk", ("front desk", "reception", "the check-in"), "concierge")


def test_questions_cover_every_type_with_distinct_wording_and_stable_ids() -> None:
    questions = generate_questions("hotels", ENTITY, per_type=2)
    assert len(questions) == 2 * len(QUESTION_TYPES)
    assert {q.question_type for q in questions} == set(QUESTION_TYPES)
    assert len({q.question_id for q in questions}) == len(questions)
    assert len({q.text for q in questions}) == len(questions)
    for question_type in QUESTION_TYPES:
        pair = [q for q in questions if q.question_type == question_type]
        assert pair[0].template_id != pair[1].template_id  # a paraphrase, not the same sentence twice
    # aliases are used, not only the canonical name
    assert len({q.entity_phrase for q in questions}) >= 2
    assert all("the concierge" in q.text for q in questions if q.question_type == "comparison")
    assert all(q.text[0].isupper() and q.text.rstrip()[-1] in "?." for q in questions)
    # deterministic, and ids do not depend on the wording
    again = generate_questions("hotels", ENTITY, per_type=2)
    assert [(q.question_id, q.text) for q in again] == [(q.question_id, q.text) for q in questions]
    renamed = generate_questions("hotels", QuestionEntity("e7", "reception", ("desk",), None), per_type=2)
    assert [q.question_id for q in renamed] == [q.question_id for q in questions]
    assert generate_questions("forum", ENTITY, per_type=2)[0].question_id != questions[0].question_id


def test_verbs_agree_with_the_name_a_question_uses() -> None:
    """A plural alias takes plural verbs ("Are the rooms any good?"), a singular one singular verbs, in every
    template; an evaluative adjective that finds a quality ("spotless") is never used to name it in a question."""
    from oprag_pipeline.evaluate.questions import COMPARISON_FALLBACK, TEMPLATES, is_plural

    assert is_plural("the rooms") and is_plural("the policies") and is_plural("double rooms")
    assert not is_plural("the room") and not is_plural("the glass") and not is_plural("the wifi")
    for template in [*(t for ts in TEMPLATES.values() for t in ts), *COMPARISON_FALLBACK]:
        for name in ("the rooms", "the room"):
            text = template.format(e=name, o="the hotel", **_verbs_for(name))
            words = text.lower().rstrip("?.").replace(",", "").split()
            for singular, plural in (("is", "are"), ("was", "were"), ("does", "do"), ("has", "have")):
                wrong = singular if name == "the rooms" else plural
                assert f"{wrong} {name}" not in " ".join(words), text
    rooms = QuestionEntity("e1", "room", ("rooms", "double rooms", "spotless"), "hotel")
    texts = [q.text for q in generate_questions("hotels", rooms, per_type=6)]
    assert any(
        t.startswith(("Are the rooms", "Are the double rooms", "Do the rooms", "Do the double rooms")) for t in texts
    )
    assert not any("the rooms is" in t.lower() or t.startswith(("Is the rooms", "Does the rooms")) for t in texts)
    assert all("spotless" not in t for t in texts)
    cleanliness = QuestionEntity("e2", "cleanliness", ("clean", "spotless", "dirty"), None)
    assert {q.entity_phrase for q in generate_questions("hotels", cleanliness)} == {"the cleanliness"}


def test_comparison_without_partner_compares_with_expectations() -> None:
    alone = QuestionEntity("e1", "wifi", (), None)
    comparisons = [q for q in generate_questions("d", alone, per_type=3) if q.question_type == "comparison"]
    assert len(comparisons) == 3
    assert all("None" not in q.text and "the wifi" in q.text for q in comparisons)


def test_article_is_added_once() -> None:
    assert with_article("front desk") == "the front desk"
    assert with_article("the check-in") == "the check-in"
    assert with_article("Our room") == "Our room"


# --- gold --------------------------------------------------------------------------------------------------------


REGISTRY = [
    RegistryEntry("e1", "breakfast", ("breakfast", "breakfast buffet")),
    RegistryEntry("e2", "room", ("room", "hotel room")),
    RegistryEntry("e3", "staff", ("staff", "hotel staff", "receptionist")),
    RegistryEntry("e4", "location", ("location",)),
]


def test_gold_targets_map_through_aliases_like_the_candidate_miner() -> None:
    mapper = GoldMapper(REGISTRY)
    assert mapper.entity_for_target("The breakfast buffet") == "e1"
    assert mapper.entity_for_target("the great breakfast") == "e1"  # leading modifier dropped
    assert mapper.entity_for_target("rooms") == "e2"  # plural folded
    assert mapper.entity_for_target("parking") is None
    assert mapper.entity_for_target("our lovely breakfast") == "e1"


def test_gold_labels_become_sigma_scores_and_unmapped_labels_are_counted() -> None:
    extra = {
        "gold_opinions": [
            {"target": "the breakfast", "polarity": "positive", "strength": 3, "from": 4, "to": 17},
            {"target": "Breakfast", "polarity": "negative", "strength": 1},  # second label, same entity: first wins
            {"target": "hotel room", "polarity": "negative", "strength": None},
            {"target": "receptionist", "polarity": "neutral"},
            {"target": "parking", "polarity": "negative"},  # no registry entity
            {"target": "location", "polarity": "conflict"},  # no place on the σ-scale
            {"target": None, "category": "FOOD#QUALITY", "polarity": "positive"},
        ],
        "rating_location": 2,
        "rating_rooms": 5,  # the room already has a text label in this document: the text label wins
    }
    gold, unmapped = map_gold(REGISTRY, [("d1", extra)], {"location": ["location", "area"], "rooms": ["room"]})
    by_entity = {g.entity_id: g for g in gold}
    assert set(by_entity) == {"e1", "e2", "e3", "e4"}
    assert (by_entity["e1"].sentiment, by_entity["e1"].sentiment_intensity) == ("positive", 30)
    assert (by_entity["e1"].span_start, by_entity["e1"].span_end) == (4, 17)
    assert by_entity["e2"].sentiment_intensity == -20  # no strength: medium
    assert (by_entity["e3"].sentiment, by_entity["e3"].sentiment_intensity) == ("neutral", 0)
    assert (by_entity["e4"].sentiment_intensity, by_entity["e4"].source) == (-20, "rating_location")
    assert unmapped == 3  # parking, conflict, category-only (the duplicate breakfast label is not "unmapped")
    # which entities a rated aspect covers is the domain's data: without it, stars map to nothing
    without_terms, _ = map_gold(REGISTRY, [("d1", {"rating_location": 2})])
    assert without_terms == []


def test_rated_aspect_terms_are_read_from_the_domain_folder(tmp_path) -> None:
    from oprag_pipeline.evaluate.gold import load_rated_aspects
    from oprag_pipeline.importers import write_rated_aspects
    from oprag_pipeline.settings import RATED_ASPECTS_FILE

    assert load_rated_aspects(tmp_path) == {}
    write_rated_aspects(tmp_path, {"view": ["view", "scenery"]})
    write_rated_aspects(tmp_path, {"view": ["vista"], "noise": ["noise"]})  # a second import adds, never drops
    assert load_rated_aspects(tmp_path) == {"view": ("view", "scenery", "vista"), "noise": ("noise",)}
    (tmp_path / RATED_ASPECTS_FILE).write_text('{"view": "scenery"}', encoding="utf-8")
    with pytest.raises(ValueError, match=RATED_ASPECTS_FILE):
        load_rated_aspects(tmp_path)


# --- scoring -----------------------------------------------------------------------------------------------------


def test_grid_scoring_includes_gold_w1_from_the_retrieved_documents() -> None:
    hits = {
        ("q1", "raw", "hybrid", 10): [
            Hit("p1", (HitOpinion("e1", 20, 20, ("delight",)),), {"type": "solo"}, "d1"),
            Hit("p2", (HitOpinion("e2", -10, 10),), {"type": "family"}, "d2"),
            Hit("p3", (HitOpinion("e1", -20, 30),), {}, "d3"),
        ]
    }
    rows = {r[4]: r[5] for r in score_grid(
        {"q1": "e1"}, hits, {"e1": [20, -20, 0, 10]}, {"type": ["solo", "family", "couple"]},
        gold_corpus={"e1": [30, -30, 0]}, gold_by_doc={("d1", "e1"): 30, ("d3", "e1"): -30, ("d2", "e1"): 0},
    )}  # fmt: skip
    assert rows["entity_match_rate"] == pytest.approx(2 / 3)
    # retrieved gold of entity-matched hits: d1 → 30, d3 → −30 (d2 does not match e1); vs [30, −30, 0]
    # quantile functions: retrieved (−30 | 30 at 1/2), reference (−30, 0, 30 in thirds) → |0−(−30)|·1/6·2 = 10
    assert rows["w1_gold"] == pytest.approx(10.0) and rows["w1_gold_miss"] == 0.0
    assert rows["coverage_type"] == pytest.approx(2 / 3)
    assert rows["coverage_matched_type"] == pytest.approx(1 / 3)


def test_grid_scoring_without_gold_has_no_gold_metric() -> None:
    rows = list(score_grid({"q": "e"}, {("q", "raw", "semantic", 10): []}, {"e": [10]}, {}))
    metrics = {r[4]: r[5] for r in rows}
    assert not any(m.startswith("w1_gold") for m in metrics)
    # nothing retrieved: no W1, a miss, and the combined figure at the worst case
    assert "w1" not in metrics and metrics["w1_miss"] == 1.0 and metrics["w1_incl_miss"] == 60.0
    assert metrics["entity_match_rate"] == 0.0


def test_grid_scoring_adds_the_relevance_proxy_from_the_hybrid_list() -> None:
    hits = {("q", "enriched", "pm2", 10): [Hit("a", (HitOpinion("e", 10, 10),)), Hit("z", (HitOpinion("e", 0, 10),))]}
    ranks = {("q", "enriched"): {"a": 3, "b": 1}}
    rows = {r[4]: r[5] for r in score_grid({"q": "e"}, hits, {"e": [10]}, {}, hybrid_ranks=ranks, hybrid_depth=60)}
    # a at rank 3, z outside the top 60 (counted 61)
    assert rows["relevance_hybrid_rank"] == pytest.approx(32.0) and rows["relevance_in_hybrid_top"] == 0.5


# --- SQL models --------------------------------------------------------------------------------------------------


def render(sql: str, domain: str) -> str:
    return sql.replace("{{ domain }}", sql_literal(domain))


@pytest.fixture
def table(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect(str(tmp_path / "w.duckdb"))
    conn.execute("CREATE TABLE m (domain VARCHAR, id INTEGER, kb VARCHAR, parent VARCHAR)")
    conn.execute("CREATE TABLE p (domain VARCHAR, pid VARCHAR)")
    conn.execute("INSERT INTO p VALUES ('d', 'x'), ('d', 'y'), ('other', 'z')")
    conn.execute(
        "INSERT INTO m VALUES ('d', 1, 'raw', 'x'), ('d', 1, 'bogus', 'z'), ('d', NULL, 'raw', 'y'),"
        " ('other', NULL, 'bogus', 'q')"
    )
    return conn


def test_generic_data_tests_count_offending_rows_of_one_domain(table: duckdb.DuckDBPyConnection) -> None:
    def failing(spec, column=None) -> int:
        return table.execute(render(compile_test("m", spec, column).sql, "d")).fetchone()[0]

    assert failing("not_null", "id") == 1
    assert failing({"unique": {"columns": ["id"]}}) == 1  # id 1 twice (the null id is alone)
    assert failing({"accepted_values": {"values": ["raw", "enriched"]}}, "kb") == 1
    assert failing({"relationships": {"to": "p", "field": "pid"}}, "parent") == 1  # 'z' belongs to another domain
    assert failing({"equal_row_count": {"expected": "SELECT 3"}}) == 0
    assert failing({"equal_row_count": {"expected": "SELECT 5"}}) == 2
    assert failing({"expression": {"name": "x", "failing_rows": "SELECT 0"}}) == 0
    with pytest.raises(ValueError, match="unknown data test"):
        compile_test("m", "not_a_test", "id")


def test_sql_literals_cannot_break_out_of_quotes() -> None:
    assert sql_literal("it's") == "'it''s'"


def test_model_folder_loads_with_lineage_from_ref_and_source(tmp_path: Path) -> None:
    models = tmp_path / "models" / "staging"
    models.mkdir(parents=True)
    (models / "stg_a.sql").write_text("SELECT domain, x FROM {{ source('raw_table') }} WHERE domain = {{ domain }}")
    (tmp_path / "models" / "marts").mkdir()
    (tmp_path / "models" / "marts" / "mart_b.sql").write_text("SELECT * FROM {{ ref('stg_a') }}")
    (tmp_path / "models" / "schema.yaml").write_text(
        "models:\n  - name: mart_b\n    description: B.\n    columns:\n      - name: x\n        tests: [not_null]\n"
    )
    loaded = {m.name: m for m in load_models(tmp_path)}
    assert loaded["stg_a"].sources == ["raw_table"] and loaded["stg_a"].refs == []
    assert loaded["mart_b"].refs == ["stg_a"] and loaded["mart_b"].layer == "marts"
    assert [t.name for t in loaded["mart_b"].tests] == ["x_not_null"]
    (tmp_path / "models" / "marts" / "mart_c.sql").write_text("SELECT * FROM {{ ref('nope') }}")
    with pytest.raises(ValueError, match="unknown model"):
        load_models(tmp_path)


def test_the_project_models_load() -> None:
    root = Path(__file__).resolve().parents[2] / "dbt_like_sql"
    models = {m.name: m for m in load_models(root)}
    assert {"stg_hit_opinions", "stg_question_metrics", "mart_coverage_k20", "mart_fairness"} <= set(models)
    assert all(m.tests for m in models.values())  # every model carries at least one data test
    assert models["mart_coverage_k20"].refs == ["mart_kb_summary"]
