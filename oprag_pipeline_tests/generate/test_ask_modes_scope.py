"""`oprag ask` through a real index built by the pipeline: every retrieval mode of the evaluation grid, and answers
restricted to one `entity_scope` (the product, the hotel a document is about)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from dagster import AssetSelection, DagsterInstance

from oprag_pipeline.cli import main
from oprag_pipeline.generate.api import ASK_MODES, ask
from oprag_pipeline_tests.conftest import materialize_domain
from oprag_pipeline_tests.serving import serving

# End-to-end: a pipeline run up to the index (a minute or two); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow

DOMAIN = "stays"
SCOPES = ("Grand Plaza", "Harbour Inn")
UP_TO_INDEX = AssetSelection.groups("ingest", "registry", "enrich", "index")


@pytest.fixture(scope="module")
def scoped_domain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """120 generated hotel reviews split over two hotels (`entity_scope`), run through the pipeline up to the index."""
    from oprag_pipeline.definitions import ALL_ASSETS
    from oprag_pipeline.demo import generate_demo

    root = tmp_path_factory.mktemp("scoped")
    data_dir = root / "data"
    generate_demo(data_dir, docs=120, seed=7, domains=("hotels",))
    rows = [
        json.loads(line)
        for shard in sorted((data_dir / "raw" / "hotels").glob("*.jsonl"))
        for line in shard.read_text().splitlines()
        if line.strip()
    ]
    shutil.rmtree(data_dir / "raw" / "hotels")
    (data_dir / "raw" / DOMAIN).mkdir(parents=True)
    with (data_dir / "raw" / DOMAIN / "reviews.jsonl").open("w") as out:
        for i, row in enumerate(rows):
            out.write(json.dumps({**row, "entity_scope": SCOPES[i % 2]}) + "\n")
    (root / "home").mkdir()
    previous = os.environ.get("OPRAG_DATA_DIR")
    os.environ["OPRAG_DATA_DIR"] = str(data_dir)
    try:
        with DagsterInstance.local_temp(str(root / "home")) as instance:
            materialize_domain(ALL_ASSETS, data_dir, instance, DOMAIN, selection=UP_TO_INDEX)
        yield data_dir
    finally:
        if previous is None:
            os.environ.pop("OPRAG_DATA_DIR", None)
        else:
            os.environ["OPRAG_DATA_DIR"] = previous


def _most_mentioned(data_dir: Path) -> str:
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        (name,) = conn.execute(
            "SELECT entity_name FROM opinions WHERE domain = ? GROUP BY ALL ORDER BY count(*) DESC, 1 LIMIT 1",
            [DOMAIN],
        ).fetchone()
    return name


def test_ask_accepts_every_mode_of_the_grid(scoped_domain: Path) -> None:
    name = _most_mentioned(scoped_domain)
    runner = CliRunner()
    env = {"OPRAG_DATA_DIR": str(scoped_domain)}
    assert set(ASK_MODES) == {"semantic", "hybrid", "balanced", "mmr", "xquad", "pm2", "fair"}
    for mode in ASK_MODES:
        result = runner.invoke(
            main, ["ask", f"What do guests think of the {name}?", "--domain", DOMAIN, "--mode", mode, "--json"], env=env
        )
        assert result.exit_code == 0, (mode, result.output)
        answer = json.loads(result.output)
        assert answer["mode"] == mode and answer["kb"] == "enriched"
        assert answer["stated"], mode  # the entity's corpus shares, whatever the retrieval
    default = ask(f"What do guests think of the {name}?", domain=DOMAIN, data_dir=scoped_domain)
    assert default.context.mode == "pm2"
    refused = runner.invoke(main, ["ask", "anything", "--domain", DOMAIN, "--kb", "raw", "--mode", "pm2"], env=env)
    assert refused.exit_code == 2 and "enriched" in refused.output and "Traceback" not in refused.output


def _scope_of_docs(data_dir: Path) -> dict[str, str]:
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        return dict(
            conn.execute("SELECT doc_id, entity_scope FROM raw_documents WHERE domain = ?", [DOMAIN]).fetchall()
        )


def test_a_scope_restricts_retrieval_shares_and_quotes_in_every_mode_and_kb(scoped_domain: Path) -> None:
    name = _most_mentioned(scoped_domain)
    scope_of = _scope_of_docs(scoped_domain)
    for kb, mode in [*(("enriched", m) for m in ASK_MODES), ("raw", "hybrid"), ("entity_split", "semantic")]:
        result = ask(
            f"What do guests think of the {name}?", domain=DOMAIN, kb=kb, mode=mode, scope="harbour INN",
            data_dir=scoped_domain,
        )  # fmt: skip
        passages = result.context.passages
        assert passages and {scope_of[p.doc_id] for p in passages} == {"Harbour Inn"}, (kb, mode)
        assert {scope_of[q.doc_id] for q in result.answer.quotes} <= {"Harbour Inn"}
        assert result.answer.scope == result.context.scope == "Harbour Inn" and result.scope_match is None
        assert result.answer.text.startswith("Scope: Harbour Inn only.")
    # the corpus shares count the scope's opinions only
    entity = result.context.entities[0]
    with duckdb.connect(str(scoped_domain / "warehouse.duckdb"), read_only=True) as conn:
        (scoped,) = conn.execute(
            """SELECT count(*) FROM opinions o JOIN raw_documents d USING (domain, doc_id)
               WHERE o.domain = ? AND o.entity_id = ? AND d.entity_scope = 'Harbour Inn'""",
            [DOMAIN, entity.entity_id],
        ).fetchone()
        (everywhere,) = conn.execute(
            "SELECT count(*) FROM opinions WHERE domain = ? AND entity_id = ?", [DOMAIN, entity.entity_id]
        ).fetchone()
    assert 0 < entity.total == scoped < everywhere
    aware = ask(f"What do guests think of the {name}?", domain=DOMAIN, scope="Harbour Inn", data_dir=scoped_domain)
    stated = aware.answer.stated_for(aware.context.entities[0].entity_id)
    assert stated is not None and stated.basis == aware.context.entities[0].total


def test_a_scope_named_in_the_question_is_recognised_and_printed(scoped_domain: Path) -> None:
    name = _most_mentioned(scoped_domain)
    scope_of = _scope_of_docs(scoped_domain)
    result = ask(f"Is the {name} at the grand plaza any good?", domain=DOMAIN, data_dir=scoped_domain)
    assert result.scope_match is not None and result.scope_match.scope == "Grand Plaza"
    assert {scope_of[p.doc_id] for p in result.context.passages} == {"Grand Plaza"}
    assert result.context.question == f"Is the {name} at the grand plaza any good?"
    assert result.context.entities and result.context.entities[0].entity_name == name
    runner = CliRunner()
    env = {"OPRAG_DATA_DIR": str(scoped_domain)}
    cli = runner.invoke(main, ["ask", f"What about the Grand Plaza's {name}?", "--domain", DOMAIN], env=env)
    assert cli.exit_code == 0, cli.output
    assert "scope: 'Grand Plaza' (named in the question)" in cli.stderr
    assert cli.stdout.startswith("Scope: Grand Plaza only.")


def test_scopes_command_and_scoped_query(scoped_domain: Path) -> None:
    runner = CliRunner()
    env = {"OPRAG_DATA_DIR": str(scoped_domain)}
    listed = runner.invoke(main, ["scopes", "--domain", DOMAIN, "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    counts = {r["scope"]: r["documents"] for r in json.loads(listed.output)}
    assert counts == dict.fromkeys(SCOPES, 60)
    text = runner.invoke(main, ["scopes", "--domain", DOMAIN], env=env)
    assert text.exit_code == 0 and "2 scopes, 120 documents" in text.output and "Grand Plaza" in text.output
    query = runner.invoke(
        main, ["query", "breakfast", "--domain", DOMAIN, "--scope", "grand plaza", "-k", "5"], env=env
    )
    assert query.exit_code == 0, query.output
    assert "scope 'Grand Plaza'" in query.output and "documents of scope 'Grand Plaza'" in query.output
    unknown = runner.invoke(main, ["ask", "anything", "--domain", DOMAIN, "--scope", "Ritz"], env=env)
    assert unknown.exit_code == 1 and "'Grand Plaza'" in unknown.output and "Traceback" not in unknown.output


SCREENSHOTS = Path(__file__).resolve().parents[2] / "data" / "screenshots"


@pytest.fixture(scope="module")
def served(scoped_domain: Path) -> Iterator[str]:
    with serving(scoped_domain) as url:
        yield url


def test_the_page_offers_examples_scopes_and_modes_and_shows_both_answers_side_by_side(served: str) -> None:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); .ci/run installs it")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(300_000)
            page.goto(served + "/", timeout=300_000)
            html = page.content()
            assert "<script" not in html and "<link" not in html and "@import" not in html  # nothing fetched
            assert page.locator("select[name=mode] option").count() == len(ASK_MODES)
            assert page.locator("select[name=mode]").input_value() == "pm2"
            assert sorted(page.locator("#scopes option").evaluate_all("os => os.map(o => o.value)")) == list(SCOPES)
            examples = page.locator(".examples a")
            assert examples.count() >= 2
            assert any("Grand Plaza's" in t or "Harbour Inn's" in t for t in examples.all_inner_texts())
            examples.first.click()
            page.wait_for_selector("section.panel", timeout=300_000)
            aware, plain = page.locator("section.panel").all()
            left, right = aware.bounding_box(), plain.bounding_box()
            assert left and right and abs(left["y"] - right["y"]) < 2 and right["x"] > left["x"] + left["width"]
            assert right["x"] + right["width"] > 0.9 * 1400  # the answers use the width: no empty right side
            assert "In the corpus:" in aware.inner_text()
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "serve_answer.png"), full_page=True)

            page.fill("input[name=scope]", "harbour inn")
            page.select_option("select[name=mode]", "balanced")
            page.click("button[type=submit]")
            page.wait_for_selector("p.scope", timeout=300_000)
            assert "Harbour Inn" in page.locator("p.scope").inner_text()
            assert "balanced retrieval" in page.locator("section.panel .meta").first.inner_text()
            page.screenshot(path=str(SCREENSHOTS / "serve_scoped.png"), full_page=False)
        finally:
            browser.close()
