"""The Dagster UI after a CLI run, in headless Chromium: screenshots of the pages a new user opens first, and whether
starting the UI's daemon after `oprag run` launches anything.

It materializes the demo corpus at a small size into a fresh data directory and `DAGSTER_HOME` (or reuses a
`--workdir` that already holds one), starts `dg dev` (webserver and daemon, the code location of pyproject's
[tool.dg]) on 127.0.0.1 on a free port, prints whether the job page lists the CLI's runs (the UI's own query: runs
of `domain_refresh_job` tagged with the code location), runs the partitioned check `raw_documents / rows_reconcile`
for one domain on its own through the UI's GraphQL `launchRun` (Dagster 1.13's check page disables "Execute" for a
partitioned check, "not yet supported", and its "Execute all" sends no partition, which the check refuses with an
explanation), and writes PNGs of: the job's page
and its Runs tab, the Overview timeline, the global asset lineage (groups, then expanded), the Partitions tab of
`raw_documents`, the check's result page and its per-partition view, the check's run, the Automation page and the
`evaluation_report` asset's page with its summary (`--pages` picks some by name; without a check page the check is
not run).
It prints the runs the daemon launched by itself while the UI was up (after a CLI run with nothing changed there
should be none) and the check's outcome.

    .venv/bin/python benchmarks/bench_dagster_ui.py [--workdir DIR] [--docs 300] [--out DIR] [--settle 45]
        [--select '*'] [--pages 0_job,0b_job_runs]

Screenshots go to `--out` (default `<workdir>/screenshots`); nothing is written into the repository.
Chromium is Debian's (/usr/bin/chromium), driven by Playwright as in `test_serve_browser.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
LOCATION = "oprag"  # the code location's name in workspace.yaml and pyproject
REPOSITORY = "__repository__"  # the name Dagster gives the one repository of a `Definitions`
JOB = "domain_refresh_job"
# Debian's chromium as the screenshots were taken: no sandbox (root), no GPU, nothing fetched in the background
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHECKED_ASSET = "raw_documents"
CHECK_NAME = "rows_reconcile"
PARTITIONED_ASSET = "raw_documents"
REPORT_ASSET = "evaluation_report"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    venv = Path(sys.executable).parent
    env.update(
        DAGSTER_HOME=str(workdir / "home"),
        OPRAG_DATA_DIR=str(workdir / "data"),
        PYTHONPATH=str(ROOT),
        # `dg` runs the project in the active environment; this one (else it warns that none is active)
        VIRTUAL_ENV=str(venv.parent),
        PATH=f"{venv}{os.pathsep}{env.get('PATH', '')}",
    )
    env.setdefault("OPRAG_MODEL_DIR", str(ROOT / "data" / "models"))
    return env


def materialize(workdir: Path, docs: int, select: str = "*") -> float:
    """The demo corpus through `oprag run`, as `./scripts/main.sh` does; seconds taken (0 when reused)."""
    if (workdir / "data" / "warehouse.duckdb").exists():
        print(f"reusing the materialized pipeline in {workdir}")
        return 0.0
    (workdir / "home").mkdir(parents=True, exist_ok=True)
    oprag = str(Path(sys.executable).parent / "oprag")
    started = time.perf_counter()
    for cmd in ([oprag, "generate-demo", "--docs", str(docs)], [oprag, "run", "--select", select]):
        done = subprocess.run(cmd, cwd=ROOT, env=_env(workdir), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"`{' '.join(cmd[1:])}` failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


class Dagster:
    """`dg dev` (webserver and daemon) in its own process group, stopped with it. (`dagster dev -w workspace.yaml`
    serves the same code location but prints Dagster's SupersessionWarning pointing to `dg dev`.)"""

    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(workdir / "dagster_dev.log", "w")  # noqa: SIM115 - closed in stop()
        dg = str(Path(sys.executable).parent / "dg")
        self.proc = subprocess.Popen(
            [dg, "dev", "-h", "127.0.0.1", "-p", str(self.port)],
            cwd=ROOT,
            env=_env(workdir),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 300.0) -> float:
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"dg dev exited with {self.proc.returncode}; see {self.log.name}")
            try:
                status = self.graphql(
                    "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }"
                )
                entries = status["workspaceOrError"]["locationEntries"]
                if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                    return time.perf_counter() - started
            except OSError:
                pass
            time.sleep(1)
        raise SystemExit(f"the UI did not load the code location within {timeout:.0f} s")

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            payload = json.loads(response.read())
        if payload.get("errors"):
            raise RuntimeError(f"GraphQL errors: {payload['errors']}")
        return payload["data"]

    def runs(self) -> list[dict[str, Any]]:
        data = self.graphql(
            "{ runsOrError(limit: 200) { ... on Runs { results { runId status tags { key value } "
            "assetSelection { path } assetCheckSelection { name } } } } }"
        )
        return data["runsOrError"]["results"]

    def job_runs(self) -> list[dict[str, Any]]:
        """The runs the job page lists: its query's filter (the job's name and the code location's tag)."""
        data = self.graphql(
            """query($filter: RunsFilter!) { runsOrError(filter: $filter, limit: 50) { ... on Runs { results {
                 runId status tags { key value } repositoryOrigin { repositoryLocationName repositoryName } } } } }""",
            {
                "filter": {
                    "pipelineName": JOB,
                    "tags": [{"key": ".dagster/repository", "value": f"{REPOSITORY}@{LOCATION}"}],
                }
            },
        )
        return data["runsOrError"]["results"]

    def automation_paused(self) -> bool:
        """What the job header's "Auto-materialize on/off" badge shows (True: off)."""
        return self.graphql("{ instance { autoMaterializePaused } }")["instance"]["autoMaterializePaused"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def launch_check(ui: Dagster, partition: str) -> str:
    """Run the partitioned check alone for one domain (the job subset the UI would launch, with the partition tag);
    the run's id."""
    node = ui.graphql(
        "query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode { jobNames } } }",
        {"key": {"path": [CHECKED_ASSET]}},
    )["assetNodeOrError"]
    job = next(name for name in node["jobNames"] if name.startswith("__ASSET_JOB"))
    launched = ui.graphql(
        """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
             __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
             ... on InvalidSubsetError { message } ... on RunConfigValidationInvalid { errors { message } } } }""",
        {
            "params": {
                "selector": {
                    "repositoryLocationName": LOCATION,
                    "repositoryName": REPOSITORY,
                    "jobName": job,
                    "assetSelection": [],
                    "assetCheckSelection": [{"assetKey": {"path": [CHECKED_ASSET]}, "name": CHECK_NAME}],
                },
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
            }
        },
    )["launchRun"]
    if launched["__typename"] != "LaunchRunSuccess":
        raise SystemExit(f"launching the check failed: {launched}")
    return launched["run"]["runId"]


def wait_run(ui: Dagster, run_id: str, timeout: float = 300.0) -> str:
    deadline = time.monotonic() + timeout
    status = "?"
    while time.monotonic() < deadline:
        status = ui.graphql("query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }", {"id": run_id})[
            "runOrError"
        ]["status"]
        if status in {"SUCCESS", "FAILURE", "CANCELED"}:
            return status
        time.sleep(1)
    return status


def check_evaluation(ui: Dagster, partition: str) -> dict[str, Any] | None:
    """The latest evaluation of the check for `partition`, as the check page reads it."""
    data = ui.graphql(
        """query($key: AssetKeyInput!, $name: String!) { assetCheckExecutions(assetKey: $key, checkName: $name,
             limit: 10) { runId status evaluation { partition success timestamp } } }""",
        {"key": {"path": [CHECKED_ASSET]}, "name": CHECK_NAME},
    )
    for execution in data["assetCheckExecutions"]:
        evaluation = execution.get("evaluation") or {}
        if evaluation.get("partition") == partition:
            return execution
    return None


def dismiss_newsletter(page, wait_ms: int = 0) -> None:
    """Close the first visit's "Join the Dagster community" dialog (it can open a few seconds after a page loads)."""
    skip = page.get_by_role("button", name="Skip")
    try:
        skip.first.wait_for(state="visible", timeout=wait_ms or 1)
    except Exception:  # Playwright's TimeoutError: no dialog
        return
    skip.first.click()
    page.wait_for_timeout(1000)


def screenshots(ui: Dagster, out: Path, partition: str, check_run: str | None, names: set[str] | None) -> list[Path]:
    """One PNG per page; some pages need a click first (an expanded graph, the report's summary markdown)."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)

    def expand_groups(page) -> None:
        page.mouse.click(1400, 300, button="right")  # the graph's context menu
        page.wait_for_timeout(1000)
        page.locator("text=Expand all groups >> visible=true").first.click()

    def show_summary(page) -> None:
        page.locator("tr:has-text('summary') >> text=[Show Markdown]").first.click()

    def check_partitions(page) -> None:
        page.locator("text=Partitions >> visible=true").last.click()

    pages = {
        "0_job": (f"/locations/{LOCATION}/jobs/{JOB}", None),
        "0b_job_runs": (f"/locations/{LOCATION}/jobs/{JOB}/runs", None),
        "0c_overview": ("/overview/activity/timeline", None),
        "1_asset_lineage_groups": ("/asset-groups", None),
        "1b_asset_lineage_expanded": ("/asset-groups", expand_groups),
        "2_partitions": (f"/assets/{PARTITIONED_ASSET}?view=partitions&partition={partition}", None),
        "3_check_result": (f"/assets/{CHECKED_ASSET}?view=checks&checkDetail={CHECK_NAME}", None),
        "3b_check_partitions": (f"/assets/{CHECKED_ASSET}?view=checks&checkDetail={CHECK_NAME}", check_partitions),
        "3c_check_run": (f"/runs/{check_run}", None),
        "4_automation": ("/automation", None),
        "5_evaluation_report": (f"/assets/{REPORT_ASSET}", None),
        "5b_evaluation_report_summary": (f"/assets/{REPORT_ASSET}", show_summary),
    }
    written = []
    with sync_playwright() as driver:
        # --no-sandbox: CI runs as root, where chromium refuses its sandbox
        # (Playwright gives the browser a fresh temporary profile of its own: no --user-data-dir)
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(ui.url + "/overview", timeout=120_000)
            dismiss_newsletter(page, wait_ms=15_000)
            for name, (path, action) in pages.items():
                if (names is not None and name not in names) or (name.startswith("3") and check_run is None):
                    continue
                page.goto(ui.url + path, timeout=120_000)
                page.wait_for_load_state("load")
                page.wait_for_timeout(6000)  # the UI fills in by GraphQL polls; there is no idle state to await
                dismiss_newsletter(page)
                if action is not None:
                    action(page)
                    page.wait_for_timeout(4000)
                target = out / f"{name}.png"
                page.screenshot(path=str(target), full_page=True)
                written.append(target)
        finally:
            browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="reuse or create this folder (default: a fresh temporary one)")
    parser.add_argument("--docs", type=int, default=300, help="demo documents (the OPRAG_DEMO_DOCS of main.sh)")
    parser.add_argument("--select", default="*", help="the assets `oprag run` materializes (default: all)")
    parser.add_argument("--out", type=Path, help="screenshot folder (default: <workdir>/screenshots)")
    parser.add_argument("--pages", help="comma-separated screenshot names, e.g. 0_job,0b_job_runs (default: all)")
    parser.add_argument(
        "--settle", type=float, default=45.0, help="seconds the daemon runs before its own runs are counted"
    )
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    names = {name.strip() for name in args.pages.split(",") if name.strip()} if args.pages else None
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="oprag-ui-"))).resolve()
    seconds = materialize(workdir, args.docs, args.select)
    if seconds:
        print(f"oprag generate-demo --docs {args.docs} && oprag run: {seconds:.0f} s")
    ui = Dagster(workdir)
    try:
        print(f"dg dev on {ui.url}: code location loaded in {ui.wait_ready():.0f} s")
        cli_runs = [r for r in ui.runs() if {"key": "oprag/trigger", "value": "cli"} in r["tags"]]
        listed = {r["runId"] for r in ui.job_runs()}
        print(
            f"the {JOB} page lists {len(listed & {r['runId'] for r in cli_runs})} of the {len(cli_runs)} CLI runs; "
            f"automation badge: {'off' if ui.automation_paused() else 'on'}"
        )
        before = {r["runId"] for r in ui.runs()}
        time.sleep(args.settle)  # sensor and automation ticks (every 30 s) have had their first evaluation
        started_by_daemon = [r for r in ui.runs() if r["runId"] not in before]
        print(f"runs the daemon launched in its first {args.settle:.0f} s after the CLI run: {len(started_by_daemon)}")
        for run in started_by_daemon:
            tags = {t["key"]: t["value"] for t in run["tags"] if t["key"].startswith("dagster/")}
            print(f"  {run['runId'][:8]} {run['status']} {tags}")
        partition = sorted({t["value"] for r in ui.runs() for t in r["tags"] if t["key"] == "dagster/partition"})[0]
        run_id = None
        if names is None or any(name.startswith("3") for name in names):
            run_id = launch_check(ui, partition)
            status = wait_run(ui, run_id)
            execution = check_evaluation(ui, partition)
            print(
                f"check {CHECKED_ASSET}/{CHECK_NAME} on partition {partition!r}: run {run_id[:8]} {status}; "
                f"evaluation {execution}"
            )
        for path in screenshots(ui, args.out or workdir / "screenshots", partition, run_id, names):
            print(f"screenshot: {path}")
    finally:
        ui.stop()


if __name__ == "__main__":
    main()
