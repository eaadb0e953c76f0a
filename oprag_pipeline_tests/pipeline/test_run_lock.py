"""One writer per data directory: a second run waits or refuses, a query says the index is busy, and a run killed
with SIGKILL is marked failed when the next one starts. Real processes, a real file lock, a real Dagster instance.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from dagster import DagsterInstance, DagsterRunStatus

from oprag_pipeline import locks
from oprag_pipeline.cli import main
from oprag_pipeline.locks import writer_busy
from oprag_pipeline_tests.conftest import CHECKOUT, write_lines

# End-to-end: real processes or whole pipeline runs (minutes); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow

GOOD = json.dumps({"doc_id": "1", "text": "Sturdy lid, fast boil."})

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import duckdb
    from oprag_pipeline.locks import writer_lock
    data, seconds = Path(sys.argv[1]), float(sys.argv[2])
    with writer_lock(data):
        conn = duckdb.connect(str(data / "warehouse.duckdb")) if len(sys.argv) > 3 else None
        (data / "held").write_text("1")
        time.sleep(seconds)
        (data / "released").write_text(str(time.time()))
    """
)


def hold_lock(data_dir: Path, seconds: float, *, open_warehouse: bool = False) -> subprocess.Popen:
    """Another process holding the writer lock (and, if asked, the warehouse open for writing)."""
    args = [sys.executable, "-c", HOLDER, str(data_dir), str(seconds)] + (["warehouse"] if open_warehouse else [])
    process = subprocess.Popen(args, cwd=CHECKOUT, env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    deadline = time.monotonic() + 60
    while not (data_dir / "held").exists():
        assert process.poll() is None and time.monotonic() < deadline, "lock holder did not start"
        time.sleep(0.05)
    return process


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "dagster_home"
    monkeypatch.setenv("DAGSTER_HOME", str(path))
    return path


def test_busy_lock_names_its_holder(data_dir: Path) -> None:
    holder = hold_lock(data_dir, 30)
    try:
        assert f"pid {holder.pid}" in (locks.writer_busy(data_dir) or "")
        with pytest.raises(locks.WriterBusyError, match=f"pid {holder.pid}"), locks.writer_lock(data_dir, wait=False):
            pass
    finally:
        holder.kill()
        holder.wait()
    # the OS released the lock with the killed process: nothing stale is left behind
    assert locks.writer_busy(data_dir) is None
    with locks.writer_lock(data_dir, wait=False):
        pass


def test_second_run_refuses_with_no_wait(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    holder = hold_lock(data_dir, 30)
    try:
        result = CliRunner().invoke(main, ["run", "--select", "raw_documents", "--no-wait"])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"another oprag run is writing {data_dir} (pid {holder.pid}" in result.output


def test_second_run_waits_for_the_first(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    holder = hold_lock(data_dir, 25)  # longer than the CLI takes to start, so it must find the lock held
    result = CliRunner().invoke(main, ["run", "--select", "raw_documents"])
    holder.wait()
    assert result.exit_code == 0, result.output
    assert "waiting for it to finish" in result.output and "shop: ok" in result.output
    released = float((data_dir / "released").read_text())
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        finished = conn.execute("SELECT epoch(max(finished_at)) FROM ingest_runs").fetchone()[0]
    assert finished >= released - 1.0  # the ingest ran after the holder let go (1 s: clock rounding)


def test_query_while_a_run_writes_says_busy_and_when_to_retry(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    duckdb.connect(str(data_dir / "warehouse.duckdb")).close()
    holder = hold_lock(data_dir, 60, open_warehouse=True)
    try:
        result = CliRunner().invoke(main, ["query", "is the lid sturdy?", "--domain", "shop"])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "is busy" in result.output and f"pid {holder.pid}" in result.output and "retry when" in result.output


def test_run_killed_with_sigkill_is_marked_failed_by_the_next_run(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD, json.dumps({"doc_id": "2", "text": "The lid cracked."})])
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT), "DAGSTER_HOME": str(home), "OPRAG_DATA_DIR": str(data_dir)}
    victim = subprocess.Popen(
        [sys.executable, "-m", "oprag_pipeline.cli", "run"],
        cwd=CHECKOUT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    run_id = None
    while run_id is None:
        assert victim.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.5)
        # Only once the victim holds the writer lock: `oprag run` creates the instance's storage before it takes the
        # lock, and opening the instance while its SQLite migrations run can fail the victim (seen under load).
        if writer_busy(data_dir) is not None:
            try:
                with DagsterInstance.from_config(str(home)) as instance:
                    started = instance.get_run_records()
            except Exception:  # the run is still creating the instance's SQLite storage (migrations): look again
                continue
            run_id = next((r.dagster_run.run_id for r in started if r.dagster_run.status.value == "STARTED"), None)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.STARTED  # what SIGKILL leaves behind

    result = CliRunner().invoke(main, ["run", "--select", "raw_documents"])
    assert result.exit_code == 0, result.output
    assert f"marked run {run_id} failed" in result.output
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE


def test_status_while_a_run_writes_shows_what_it_can(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    duckdb.connect(str(data_dir / "warehouse.duckdb")).close()
    holder = hold_lock(data_dir, 60, open_warehouse=True)
    try:
        result = CliRunner().invoke(main, ["status"])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 0, result.output
    assert "busy: a run is writing it" in result.output and "shop:" in result.output


def test_a_run_launched_by_dagster_waits_for_the_lock_too(data_dir: Path, dagster_instance: DagsterInstance) -> None:
    """Not through the CLI: Dagster's own `materialize`, as `dagster dev` launches runs; the warehouse resource holds
    the lock for the run, so a scheduled run and a manual one cannot collide."""
    from oprag_pipeline.ingest.assets import raw_documents
    from oprag_pipeline_tests.conftest import materialize_domain

    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    holder = hold_lock(data_dir, 8)
    try:
        materialize_domain([raw_documents], data_dir, dagster_instance, "shop")
    finally:
        holder.wait()
    released = float((data_dir / "released").read_text())
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        finished = conn.execute("SELECT epoch(max(finished_at)) FROM ingest_runs").fetchone()[0]
    assert finished >= released - 1.0
    assert locks.writer_busy(data_dir) is None  # released when the run ended
