"""Generation benchmark: fidelity of opinion-aware vs plain-RAG answers, the time of one `ask`, and a screenshot of
`oprag serve` taken in headless Chromium.

The domain must have been run through the pipeline first (`oprag run`: `generation_fidelity` is part of the graph).
Figures come from what the pipeline stored (`generation_significance`: each metric averaged over an entity's
questions, then paired over entities), so they are the ones the report shows. Latency: the median of `ask` over a
few evaluation questions for each pipeline, next to the same run's retrieval alone (the baseline: what answering
adds to retrieving).

    .venv/bin/python benchmarks/bench_generation.py --data-dir DATA_DIR [--domain D ...] [--questions 5]
        [--screenshot serve.png] [--report-screenshot report.png]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oprag_pipeline import settings  # noqa: E402

METRICS = ("w1", "w1_gold", "minority_erased", "grounded_quote_rate", "shares_within_tolerance", "share_error")


def fidelity_table(conn: duckdb.DuckDBPyConnection, domain: str) -> list[str]:
    from oprag_pipeline.generate.answers_report import RATES
    from oprag_pipeline.rendering import change_label

    rows = conn.execute(
        """SELECT metric, n_entities, n_questions, baseline_mean, treatment_mean, relative_change_label, ci_low,
                  ci_high, p_value
           FROM generation_significance WHERE domain = ?""",
        [domain],
    ).fetchall()
    by_metric = {r[0]: r for r in rows}
    lines = [f"{'metric':<26}{'ent.':>5}{'q.':>5}{'plain':>10}{'aware':>10}{'change':>14}   95% CI of diff      p"]
    for metric in METRICS:
        if metric in by_metric:
            _, entities, n, plain, aware, change, low, high, p = by_metric[metric]
            change = change_label(aware, plain, change, rate=metric in RATES)  # a rate's change in points
            p_text = "n/a" if p is None else f"{p:.2g}"
            lines.append(
                f"{metric:<26}{entities or 0:>5}{n:>5}{plain:>10.3f}{aware:>10.3f}{change:>14}   "
                f"[{low:+.3f}, {high:+.3f}]  {p_text}"
            )
    return lines


def latency(data_dir: Path, domain: str, questions: list[str]) -> list[str]:
    from oprag_pipeline.generate.api import ask
    from oprag_pipeline.index.retrieval import OpinionProfile, Retriever
    from oprag_pipeline.resources import EmbedderResource, open_configured_store

    embedder = EmbedderResource().embedder()
    ask(questions[0], domain=domain, data_dir=data_dir)  # warm-up: model loading is not part of the figure
    lines = []
    for kb, mode in (("enriched", "balanced"), ("raw", "hybrid")):
        asked, searched = [], []
        for question in questions:
            started = time.perf_counter()
            ask(question, domain=domain, kb=kb, mode=mode, data_dir=data_dir)
            asked.append(time.perf_counter() - started)
            store = open_configured_store(data_dir)
            with duckdb.connect(str(settings.warehouse_path(data_dir)), read_only=True) as conn:
                profile = OpinionProfile.load(conn, domain)
            started = time.perf_counter()
            Retriever(store, embedder, {domain: profile}).search(domain, question, k=20, mode=mode, kb=kb)
            searched.append(time.perf_counter() - started)
            store.close()
        lines.append(
            f"{kb:>8}/{mode:<9} ask median {statistics.median(asked) * 1000:7.0f} ms   "
            f"(baseline, retrieval alone on an open store: {statistics.median(searched) * 1000:6.0f} ms)"
        )
    return lines


def screenshot(data_dir: Path, domain: str, question: str, path: Path) -> None:
    import uvicorn
    from playwright.sync_api import sync_playwright

    from oprag_pipeline.generate.web import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(data_dir), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(f"http://127.0.0.1:{port}/?domain={domain}&q={question}", timeout=180_000)
            page.screenshot(path=str(path), full_page=True)
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    print(f"screenshot of oprag serve: {path}")


def report_screenshot(data_dir: Path, domain: str, path: Path) -> None:
    """The report's first screen as a reader opens it (1400 x 900, not the whole page): the verdict and the table of
    contents must be on it."""
    from playwright.sync_api import sync_playwright

    report = settings.reports_dir(data_dir) / domain / "report.html"
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(report.resolve().as_uri(), timeout=60_000)
        page.screenshot(path=str(path))
        browser.close()
    print(f"screenshot of the report's first screen: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--domain", action="append", help="repeatable; default: every domain of the data directory")
    parser.add_argument("--questions", type=int, default=5, help="evaluation questions timed per pipeline")
    parser.add_argument("--screenshot", type=Path, help="write a screenshot of the page for the first domain")
    parser.add_argument("--report-screenshot", type=Path, help="write the first domain's report's first screen")
    args = parser.parse_args()
    data_dir = (args.data_dir or settings.data_dir()).resolve()
    domains = args.domain or settings.list_domains(data_dir)
    for domain in domains:
        with duckdb.connect(str(settings.warehouse_path(data_dir)), read_only=True) as conn:
            documents = conn.execute("SELECT count(*) FROM raw_documents WHERE domain = ?", [domain]).fetchone()[0]
            questions = [
                r[0]
                for r in conn.execute(
                    "SELECT text FROM evaluation_questions WHERE domain = ? ORDER BY question_id LIMIT ?",
                    [domain, args.questions],
                ).fetchall()
            ]
            print(f"\n== {domain}: {documents:,} documents, fidelity of answers (opinion-aware vs plain RAG, k = 20)")
            print("\n".join(fidelity_table(conn, domain)))
        if questions:
            print("\n".join(latency(data_dir, domain, questions)))
    if args.screenshot and domains:
        with duckdb.connect(str(settings.warehouse_path(data_dir)), read_only=True) as conn:
            first = conn.execute(
                "SELECT text FROM evaluation_questions WHERE domain = ? ORDER BY question_id LIMIT 1", [domains[0]]
            ).fetchone()
        screenshot(data_dir, domains[0], first[0] if first else "What do people think?", args.screenshot)
    if args.report_screenshot and domains:
        report_screenshot(data_dir, domains[0], args.report_screenshot)


if __name__ == "__main__":
    main()
