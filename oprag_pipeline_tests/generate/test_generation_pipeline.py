"""Generation through Dagster on the generated demo corpus: answers for every evaluation question, their fidelity,
paired tests, the skipped preference study, the report's section, and `oprag ask`."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from oprag_pipeline.cli import main
from oprag_pipeline_tests.conftest import GENERATION_DOMAIN as DOMAIN

# End-to-end: real processes or whole pipeline runs (minutes); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow


def query(data_dir: Path, sql: str, *params) -> list[tuple]:
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        return conn.execute(sql, list(params)).fetchall()


def test_every_question_has_both_answers_with_corpus_shares(generation_demo) -> None:
    data_dir, metadata = generation_demo
    questions = query(data_dir, "SELECT count(*) FROM evaluation_questions WHERE domain = ?", DOMAIN)[0][0]
    assert questions > 0
    rows = query(data_dir, "SELECT question_id, entity_id, variant, kb, answer_json FROM generated_answers")
    assert len(rows) == 2 * questions == metadata["generated_answers"]["answers"]
    stats = {
        r[0]: (r[1], r[2], r[3], r[4])
        for r in query(data_dir, "SELECT entity_id, mentions, positive, neutral, negative FROM entity_opinion_stats")
    }
    for _, entity_id, variant, kb, answer_json in rows:
        answer = json.loads(answer_json)
        assert all(q["grounded"] for q in answer["quotes"])
        if variant == "plain":
            assert kb == "raw" and answer["stated"] == []
            continue
        stated = next(s for s in answer["stated"] if s["entity_id"] == entity_id)
        mentions, *sides = stats[entity_id]
        assert stated["basis"] == mentions
        assert [stated["shares"][s] for s in ("positive", "neutral", "negative")] == pytest.approx(
            [n / mentions for n in sides]
        )
        quoted_sides = {q["sentiment"] for q in answer["quotes"] if q["entity_id"] == entity_id}
        missing = {s for s, n in zip(("positive", "neutral", "negative"), sides, strict=True) if n} - quoted_sides
        assert all(any(side in gap for gap in answer["gaps"]) for side in missing)  # an unquoted side is named


def test_fidelity_compares_the_two_answers_with_paired_tests(generation_demo) -> None:
    data_dir, _ = generation_demo
    means = dict(
        ((variant, metric), value)
        for variant, metric, value in query(
            data_dir, "SELECT variant, metric, avg(value) FROM generation_metrics GROUP BY ALL"
        )
    )
    assert means[("opinion_aware", "w1")] == 0.0  # it states the extracted corpus shares per σ-level
    assert means[("plain", "w1")] > 0.0
    assert means[("opinion_aware", "grounded_quote_rate")] == means[("plain", "grounded_quote_rate")] == 1.0
    erased = query(
        data_dir,
        """SELECT m.value FROM generation_metrics m JOIN generation_metrics h USING (domain, question_id, variant)
           WHERE m.variant = 'opinion_aware' AND m.metric = 'minority_erased' AND h.metric = 'has_minority'
             AND h.value = 1""",
    )
    assert erased and all(v == 0.0 for (v,) in erased)
    tests = {
        r[0]: r[1:]
        for r in query(
            data_dir,
            """SELECT metric, n_questions, treatment_mean, baseline_mean, p_value, n_entities
               FROM generation_significance""",
        )
    }
    n, treatment, baseline, p, entities = tests["w1"]
    assert n == query(data_dir, "SELECT count(*) FROM evaluation_questions")[0][0]
    # tested over entities, as the retrieval tables: one unit per evaluated entity with opinions in the corpus
    assert entities == query(data_dir, "SELECT count(DISTINCT entity_id) FROM evaluation_questions")[0][0]
    assert treatment < baseline and p is not None and 0 <= p <= 1
    assert "w1_gold" in tests  # the demo carries planted labels


def test_preference_study_is_skipped_without_a_judge_and_the_report_has_the_section(generation_demo) -> None:
    data_dir, metadata = generation_demo
    assert "skipped: no LLM judge configured" in metadata["answer_preference"]["status"]
    assert query(data_dir, "SELECT count(*) FROM answer_preferences")[0][0] == 0
    report = (data_dir / "reports" / DOMAIN / "report.md").read_text()
    assert "## Generation: does the answer carry the spread of opinions?" in report
    assert "template filled with real statistics" in report and "minority-erasure rate" in report
    page = (data_dir / "reports" / DOMAIN / "report.html").read_text()
    assert page.index("<h2>Generation") < page.index("</body>")
    figures = json.loads((data_dir / "reports" / DOMAIN / "metrics.json").read_text())
    assert figures["generation"]["tests"]["w1"]["baseline_mean"] > 0


def test_oprag_ask_prints_the_distribution_and_cited_quotes(generation_demo) -> None:
    data_dir, _ = generation_demo
    (name,) = query(
        data_dir,
        "SELECT entity_name FROM evaluation_entities WHERE domain = ? ORDER BY mentions DESC LIMIT 1",
        DOMAIN,
    )[0]
    runner = CliRunner()
    env = {"OPRAG_DATA_DIR": str(data_dir)}
    result = runner.invoke(main, ["ask", f"What do people think of the {name}?", "--domain", DOMAIN], env=env)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith(f"{name}: ") for line in lines) and "In the corpus:" in result.output
    assert "##" not in result.output and "**" not in result.output  # readable text, not raw markdown
    assert f"[{DOMAIN}-" in result.output
    plain = runner.invoke(
        main, ["ask", f"What about the {name}?", "--domain", DOMAIN, "--kb", "raw", "--json"], env=env
    )
    assert plain.exit_code == 0, plain.output
    answer = json.loads(plain.output)
    assert answer["kb"] == "raw" and answer["mode"] == "hybrid" and answer["stated"] == []
    missing = runner.invoke(main, ["ask", "anything", "--domain", "no_such_domain"], env=env)
    assert missing.exit_code == 1 and "Traceback" not in missing.output
    assert len(missing.output.strip().splitlines()) == 1 and "no_such_domain" in missing.output


def test_preference_study_with_an_llm_judge_through_dagster(generation_demo, monkeypatch, tmp_path) -> None:
    """Last in this file: it fills `answer_preferences`, which the skip test above expects empty."""
    import secrets

    from dagster import DagsterInstance

    from oprag_pipeline.generate.answers_report import generation_section
    from oprag_pipeline.generate.assets import JUDGE_ENV, answer_preference
    from oprag_pipeline_tests.conftest import materialize_domain
    from oprag_pipeline_tests.fake_llm_server import FakeLLMServer

    data_dir, _ = generation_demo
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + secrets.token_hex(8))
    monkeypatch.setenv(JUDGE_ENV, "anthropic")
    with FakeLLMServer() as server, DagsterInstance.local_temp(str(tmp_path)) as instance:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)  # the SDK reads it
        metadata = materialize_domain([answer_preference], data_dir, instance, DOMAIN)["answer_preference"]
        judged = len(server.requests)
    questions = query(data_dir, "SELECT count(*) FROM evaluation_questions WHERE domain = ?", DOMAIN)[0][0]
    assert metadata["status"] == "judged" and metadata["pairs"] == questions == judged and metadata["failed"] == 0
    rows = query(data_dir, "SELECT treatment_position, treatment_preferred FROM answer_preferences")
    assert len(rows) == questions and {r[0] for r in rows} == {"A", "B"}
    # the fake judge prefers the answer that states shares, wherever it stands: the opinion-aware one
    assert metadata["opinion_aware_preference_rate"] > 0.5
    assert metadata["ci_low"] <= metadata["opinion_aware_preference_rate"] <= metadata["ci_high"]
    assert metadata["input_tokens"] > 0
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        section = generation_section(conn, DOMAIN)
    assert "the opinion-aware answer was preferred in" in section.markdown
