"""Question → entity: the domain's container gives way to a named entity, near-duplicates are answered together,
a question that names nothing is told so first, and `oprag entities` lists what one can ask about.

The fixture is an invented co-working space's member forum: "member" is in most posts (the container), support is
split over four near-duplicate entities, and coffee, wifi and customer feedback are ordinary aspects."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from oprag_pipeline import warehouse
from oprag_pipeline.cli import main
from oprag_pipeline.generate.api import answer_in_context
from oprag_pipeline.generate.compose import compose_offline
from oprag_pipeline.generate.context import DomainKnowledge, Passage, PassageOpinion, _answer_context
from oprag_pipeline.index.retrieval import OpinionProfile
from oprag_pipeline.registry.matching import AliasMatcher
from oprag_pipeline.registry.question import QuestionMatcher, find_containers, find_groups
from oprag_pipeline.registry.store import save_registry
from oprag_pipeline.registry.taxonomy import Entity, Registry
from oprag_pipeline.schema import RegistryEntity

DOMAIN = "cowork"
ENTITIES = [
    # id, name, aliases, tier1, tier2
    ("e1", "member", ("members",), "people and service", "membership"),
    ("e2", "support team", (), "people and service", "support"),
    ("e3", "member support", (), "people and service", "support"),
    ("e4", "chat support", ("support chat",), "people and service", "support"),
    ("e5", "support agents", ("support agent",), "people and service", "support"),
    ("e6", "customer feedback", (), "information and communication", "feedback"),
    ("e7", "coffee", ("the coffee",), "food and drink", "coffee"),
    ("e8", "wifi", ("wi-fi",), "information and communication", "internet"),
]
REGISTRY = [RegistryEntity(i, n, a, t1, t2) for i, n, a, t1, t2 in ENTITIES]
# opinions per entity: (positive, neutral, negative)
OPINIONS = {"e1": (3, 1, 1), "e2": (4, 0, 2), "e3": (1, 0, 3), "e4": (2, 1, 1), "e5": (0, 0, 2), "e6": (1, 1, 0),
            "e7": (5, 0, 5), "e8": (2, 0, 1)}  # fmt: skip
TEXTS = [
    "As a member I love the coffee here.",
    "Members get free wifi but it drops often.",
    "The support team answered my member question fast.",
    "Chat support was slow, members deserve better.",
    "Quiet desks, nice light.",
]
SIGMA = {"positive": 20, "neutral": 0, "negative": -20}


def sigma_counts() -> dict[str, dict[int, int]]:
    return {e: {20: p, 0: n, -20: m} for e, (p, n, m) in OPINIONS.items()}


def question_matcher() -> QuestionMatcher:
    mentions = {e: sum(c) for e, c in OPINIONS.items()}
    return QuestionMatcher(REGISTRY, mentions=mentions, containers=find_containers(REGISTRY, TEXTS))


def test_the_container_is_the_entity_most_documents_name() -> None:
    assert find_containers(REGISTRY, TEXTS) == {"e1"}  # "member" in 4 of 5 posts; coffee, wifi in 1
    fewer = [TEXTS[0], TEXTS[4], "The wifi is fine."]
    assert find_containers(REGISTRY, fewer) == set()  # 1 of 3: no longer what the corpus is about


def test_the_container_does_not_take_a_question_over_a_named_entity() -> None:
    matcher = question_matcher()
    resolved = matcher.resolve("Do members like the coffee?")
    assert resolved.targets == ["e7"] and resolved.set_aside == ["e1"] and resolved.named
    # asked about by itself, the container is the answer's subject
    assert matcher.resolve("What is it like to be a member?").targets == ["e1"]


def test_the_holder_of_the_opinion_gives_way_to_its_target() -> None:
    matcher = QuestionMatcher(REGISTRY, containers=())  # no container: the question's own wording decides
    assert matcher.resolve("How do members feel about the wifi?").targets == ["e8"]
    assert matcher.resolve("What do support agents think of the coffee?").targets == ["e7"]
    # no opinion verb, no holder: both in the question's order
    assert matcher.resolve("member wifi").targets == ["e1", "e8"]


def test_near_duplicates_that_share_a_head_and_an_aspect_area_are_grouped() -> None:
    (group,) = find_groups(REGISTRY, {e: sum(c) for e, c in OPINIONS.items()})
    assert group.head == "support"
    assert set(group.members) == {"e2", "e3", "e4", "e5"}  # "support agents" holds the head as a word
    assert group.members[0] == "e2"  # the most discussed first
    assert "customer feedback" not in group.member_names  # shares a word with none of them as a head


def test_a_compound_that_is_no_entity_is_answered_from_its_heads_group() -> None:
    resolved = question_matcher().resolve("How do members feel about customer support?")
    assert resolved.targets == ["group:support"]
    assert resolved.via_head == {"group:support": "support"} and not resolved.named
    # a member named exactly is answered about itself
    assert question_matcher().resolve("Is the chat support any good?").targets == ["e4"]


def knowledge() -> DomainKnowledge:
    profile = OpinionProfile(AliasMatcher(REGISTRY), sigma_counts())
    return DomainKnowledge(DOMAIN, profile, {e.entity_id: e for e in REGISTRY}, question_matcher())


def passage(rank: int, doc_id: str, text: str, entity_id: str, side: str) -> Passage:
    name = next(e.name for e in REGISTRY if e.entity_id == entity_id)
    opinion = PassageOpinion(entity_id, name, side, "medium", SIGMA[side], 20)
    return Passage(rank, f"p{rank}", doc_id, 1.0 / rank, text, (opinion,))


PASSAGES = [
    passage(1, "d1", "The support team fixed my badge in five minutes, great job.", "e2", "positive"),
    passage(2, "d2", "Member support ignored my emails for a week, terrible.", "e3", "negative"),
    passage(3, "d3", "The coffee is excellent and always fresh.", "e7", "positive"),
    passage(4, "d4", "Support agents were rude when I asked for a refund.", "e5", "negative"),
]


def test_a_group_is_answered_from_the_union_of_its_members_and_names_them() -> None:
    known = knowledge()
    question = "What do people think of customer support?"
    context = _answer_context(known, question, "enriched", "balanced", 20, PASSAGES, known.questions.resolve(question))
    (dist,) = context.entities
    assert dist.entity_id == "group:support"
    assert dist.side_counts() == {"positive": 7, "neutral": 1, "negative": 8}  # e2 + e3 + e4 + e5
    answer = answer_in_context(context, compose_offline)
    first = answer.text.splitlines()[0]
    assert first.startswith("The question names no entity of cowork exactly")
    assert all(name in first for name in ("support team", "member support", "chat support", "support agents"))
    assert {q.doc_id for q in answer.quotes} >= {"d1", "d2", "d4"}  # quotes from every member retrieved
    assert answer.entity_ids == ["group:support"]


def test_a_question_that_names_no_entity_is_told_so_first() -> None:
    known = knowledge()
    question = "Is it worth the monthly price?"
    context = _answer_context(known, question, "enriched", "balanced", 20, PASSAGES, known.questions.resolve(question))
    answer = answer_in_context(context, compose_offline)
    first = answer.text.splitlines()[0]
    assert first.startswith("The question names none of the 8 entities of cowork")
    # it names what it answers instead: the entity most passages are about (ties by id: e2, the support team)
    assert "this answer is about support team instead" in first
    assert answer.entity_ids == ["e2"]
    # said once: the gaps at the end do not repeat it
    assert "names no entity" not in answer.text and answer.text.count("most retrieved passages are about") == 1


def write_warehouse(root: Path) -> None:
    (root / "raw" / DOMAIN).mkdir(parents=True, exist_ok=True)
    (root / "raw" / DOMAIN / "posts.jsonl").write_text("")
    entities = [
        Entity(i, n, f"t2-{t2}", t2, f"t1-{t1}", t1, aliases={n: 1, **{a: 1 for a in al}}, centroid=[0.0])
        for i, n, al, t1, t2 in ENTITIES
    ]
    with duckdb.connect(str(root / "warehouse.duckdb")) as conn:
        warehouse.ensure_tables(conn, "raw_documents", "opinions", "entity_registry", "entity_registry_unmapped")
        warehouse.ensure_tables(conn, "entity_registry_versions")
        save_registry(conn, DOMAIN, Registry(1, entities), {}, None)
        documents, opinions = [], []
        for number, (entity_id, counts) in enumerate(OPINIONS.items()):
            for side, count in zip(("positive", "neutral", "negative"), counts, strict=True):
                for j in range(count):
                    doc_id = f"{entity_id}-{side}-{j}"
                    scope = "Berlin" if j % 2 == 0 else "Lisbon"
                    documents.append({"doc_id": doc_id, "text": TEXTS[number % len(TEXTS)], "entity_scope": scope,
                                      "content_hash": doc_id, "source_file": "posts.jsonl", "source_row": j,
                                      "first_ingest_id": 1, "changed_ingest_id": 1})  # fmt: skip
                    opinions.append({"doc_id": doc_id, "entity_id": entity_id, "entity_name": entity_id,
                                     "sentiment": side, "intensity": "medium", "impact": "medium", "emotions": [],
                                     "evidence_type": "personal_experience", "sentiment_intensity": SIGMA[side],
                                     "impact_score": 20, "confidence": 1.0, "extractor": "test",
                                     "extractor_version": "1", "registry_version": 1})  # fmt: skip
        warehouse.insert_rows(conn, "raw_documents", documents, domain=DOMAIN)
        warehouse.insert_rows(conn, "opinions", opinions, domain=DOMAIN)


def test_entities_command_lists_tier_path_mentions_sentiment_mix_and_aliases(data_dir: Path) -> None:
    write_warehouse(data_dir)
    result = CliRunner().invoke(main, ["entities", "--domain", DOMAIN])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{DOMAIN}: 8 entities, 36 opinions (all documents)"
    coffee = next(line for line in lines if "food and drink › coffee › coffee" in line)
    assert coffee.split()[:7] == ["10", "50%", "(5)", "0%", "(0)", "50%", "(5)"]
    assert lines[lines.index(coffee) + 1].split() == ["aliases:", "the", "coffee"]
    assert any("support › support team" in line and "support group" in line for line in lines)
    assert any("people and service › membership › member" in line and "container" in line for line in lines)
    assert lines.index(coffee) == 2  # most mentioned first, after the header
    listed = json.loads(CliRunner().invoke(main, ["entities", "--domain", DOMAIN, "--json"]).output)
    wifi = next(row for row in listed if row["name"] == "wifi")
    assert wifi["tier_path"] == ["information and communication", "internet", "wifi"]
    assert wifi["sentiment"] == {"positive": 2, "neutral": 0, "negative": 1} and wifi["aliases"] == ["wi-fi"]


def test_entities_command_scope_counts_only_that_scopes_documents(data_dir: Path) -> None:
    write_warehouse(data_dir)
    listed = json.loads(
        CliRunner().invoke(main, ["entities", "--domain", DOMAIN, "--scope", "berlin", "--json"]).output
    )
    coffee = next(row for row in listed if row["name"] == "coffee")
    assert coffee["sentiment"] == {"positive": 3, "neutral": 0, "negative": 3}  # j = 0, 2, 4 of each side
    header = CliRunner().invoke(main, ["entities", "--domain", DOMAIN, "--scope", "LISBON"]).output.splitlines()[0]
    assert header == f"{DOMAIN}: 7 entities, 12 opinions (documents of scope 'Lisbon')"  # no customer feedback there
    assert {row["name"] for row in listed} == {e[1] for e in ENTITIES}
    unknown = CliRunner().invoke(main, ["entities", "--domain", DOMAIN, "--scope", "Paris"])
    assert unknown.exit_code != 0 and "no document of 'cowork' has scope 'Paris'; scopes:" in unknown.output
    assert "'Berlin'" in unknown.output and "'Lisbon'" in unknown.output


def test_entities_command_unknown_domain_lists_the_existing_ones(data_dir: Path) -> None:
    write_warehouse(data_dir)
    result = CliRunner().invoke(main, ["entities", "--domain", "nosuchdomain"])
    assert result.exit_code != 0
    assert result.output.strip().splitlines() == [
        f"Error: unknown domain 'nosuchdomain'; existing domains: {DOMAIN} (folders in {data_dir / 'raw'})"
    ]


@pytest.mark.parametrize("question", ["What do members think of the coffee?", "coffee according to members"])
def test_the_container_never_comes_first_when_something_else_is_named(question: str) -> None:
    assert question_matcher().resolve(question).targets[0] == "e7"


@pytest.mark.parametrize("question", ["Is the member's coffee any good?", "How good is the members' wifi?"])
def test_an_owner_named_in_the_possessive_gives_way_to_what_it_owns(question: str) -> None:
    matcher = QuestionMatcher(REGISTRY, containers=())
    assert matcher.resolve(question).targets in (["e7"], ["e8"])
    assert matcher.resolve(question).set_aside == ["e1"]


def test_the_words_of_asking_give_way_to_the_entity_asked_about() -> None:
    registry = [*REGISTRY, RegistryEntity("e9", "opinion", ("opinions",)), RegistryEntity("e10", "rate", ())]
    matcher = QuestionMatcher(registry, containers=())
    assert matcher.resolve("What are the opinions on the coffee?").targets == ["e7"]
    assert matcher.resolve("How do people rate the wifi?").targets == ["e8"]
    assert matcher.resolve("Is the rate fair?").targets == ["e10"]  # asked about by itself, it is the target


def test_the_holder_gives_way_to_a_head_noun_named_after_the_verb() -> None:
    matcher = QuestionMatcher(REGISTRY, containers=())  # "member" is no container here: the holder rule decides
    resolved = matcher.resolve("How do members feel about customer support?")
    assert resolved.targets == ["group:support"] and resolved.set_aside == ["e1"]
    assert matcher.resolve("label printing support agents").targets  # no verb: nothing is a holder


def test_a_compound_that_is_not_a_kind_of_the_head_stays_out_of_its_group() -> None:
    registry = [*REGISTRY, RegistryEntity("e11", "support ticket system", (), "people and service", "support")]
    (group,) = find_groups(registry, {})
    assert "e11" not in group.members  # "support ticket system" is a ticket system, not support or its people
