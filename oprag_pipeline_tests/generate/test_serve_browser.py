"""`oprag serve` in a real headless Chromium (Debian's package, driven by Playwright): ask a question of the demo
domain through the form and see both answers, the distribution chart and each quote once."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from oprag_pipeline_tests.conftest import GENERATION_DOMAIN as DOMAIN
from oprag_pipeline_tests.serving import serving

# End-to-end: real processes or whole pipeline runs (minutes); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def served(generation_demo) -> Iterator[tuple[str, Path]]:
    data_dir, _ = generation_demo
    with serving(data_dir) as url:
        yield url, data_dir


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); .ci/run installs it")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")
    with playwright_api.sync_playwright() as driver:
        # Playwright's own browser download is unreachable here: drive the system's chromium. --no-sandbox: CI runs
        # as root, where chromium refuses its sandbox.
        launched = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def test_asking_through_the_page_shows_answers_chart_and_quotes(served, browser) -> None:
    url, data_dir = served
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        name, positive, neutral, negative = conn.execute(
            """SELECT entity_name, positive, neutral, negative FROM entity_opinion_stats
               WHERE domain = ? AND entity_id IN (SELECT entity_id FROM evaluation_entities) ORDER BY mentions DESC
               LIMIT 1""",
            [DOMAIN],
        ).fetchone()
    page = browser.new_page()
    page.goto(url + "/", timeout=60_000)
    page.select_option("select[name=domain]", DOMAIN)
    page.fill("input[name=q]", f"What do people think of the {name}?")
    page.click("button[type=submit]")
    page.wait_for_selector("section.panel", timeout=120_000)

    titles = page.locator("section.panel h2").all_inner_texts()
    assert titles == ["Opinion-aware answer", "Plain RAG answer"]
    aware, plain = page.locator("section.panel").all()
    assert f"{name}:" in aware.inner_text() and "In the corpus:" in aware.inner_text()

    chart = aware.locator("svg.chart").first
    assert chart.is_visible() and f"{name}: corpus vs retrieved" in chart.get_attribute("aria-label")
    corpus_bars = chart.locator("rect[class^=bar-]")
    total = positive + neutral + negative
    widths = {}
    for index in range(corpus_bars.count()):
        bar = corpus_bars.nth(index)
        if bar.get_attribute("y") == "30":  # the first row: the corpus
            widths[bar.get_attribute("class")[4:]] = float(bar.get_attribute("width"))
    counts = {"positive": positive, "neutral": neutral, "negative": negative}
    assert set(widths) == {s for s, n in counts.items() if n}
    span = sum(widths.values())
    for side, width in widths.items():  # bar lengths are the corpus shares
        assert width / span == pytest.approx(counts[side] / total, abs=0.01)

    cites = aware.locator("ul.quotes cite").all_inner_texts()
    assert cites and all(c.startswith(f"{DOMAIN}-") for c in cites)
    assert plain.locator("ul.quotes cite").count() > 0 and "In the corpus:" not in plain.inner_text()
    assert "Passages retrieved by plain RAG (no opinion labels)" in plain.inner_text()
    for panel in (aware, plain):  # each quote once on the page, in the answer itself
        quotes = panel.locator("q").all_inner_texts()
        assert quotes and len(quotes) == len(set(quotes))
        assert "unlabelled" not in panel.inner_text()
    page.close()


def test_the_page_refuses_an_unknown_domain_with_a_message(served, browser) -> None:
    url, _ = served
    page = browser.new_page()
    page.goto(url + "/?domain=nowhere&q=anything", timeout=60_000)
    assert "unknown domain 'nowhere'" in page.locator("p.error").inner_text()
    assert page.locator("section.panel").count() == 0
    page.close()
