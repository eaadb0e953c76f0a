"""`oprag run` with OPRAG_EXECUTOR=celery: the steps run as dagster-celery tasks on two Celery worker processes
(Debian's redis-server as broker and result backend, started here and stopped after), and the warehouse tables and
the Qdrant collections are the in-process run's, also when a worker process is killed in the middle of a shard."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterEventType, DagsterInstance

from oprag_pipeline import concurrency
from oprag_pipeline.demo import generate_demo
from oprag_pipeline.locks import TAG_HOST, TAG_PID, WriterBusyError, writer_lock
from oprag_pipeline.resources import build_resources

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = "hotels"
SELECTION = '+key:"raw_kb" or +key:"entity_split_kb" or +key:"enriched_kb"'
KBS = ("raw_kb", "entity_split_kb", "enriched_kb")
TABLES = ("raw_documents", "entity_registry", "opinions", "enriched_entity_docs")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throw-away redis-server on a free loopback port, no persistence; its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian package redis-server): no broker for the Celery executor")
    import redis

    port = _free_port()
    log = tmp_path_factory.mktemp("redis") / "redis.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        else:
            pytest.fail(f"redis-server did not answer on port {port}: {log.read_text()[-2000:]}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _env(data_dir: Path, home: Path, executor: str, broker: str = "") -> dict[str, str]:
    env = {
        **os.environ,
        "OPRAG_DATA_DIR": str(data_dir),
        "DAGSTER_HOME": str(home),
        "OPRAG_EXECUTOR": executor,
        "OPRAG_EXTRACT_SHARDS": "2",
        "OPRAG_EMBED_SHARDS": "2",
        "OPRAG_EXTRACT_BATCH_SIZE": "10",
    }
    env.pop("OPRAG_WAREHOUSE", None)
    env.pop("OPRAG_SHARD_URI", None)
    if broker:
        env["OPRAG_CELERY_BROKER"] = broker
    return env


@contextmanager
def _workers(env: dict[str, str], logs: Path) -> Iterator[list[subprocess.Popen]]:
    """Two Celery worker processes of one prefork child each: `w1` serves the warehouse queue and the shards' queue,
    `w2` the shards' queue only. Stopped (their whole process groups) on the way out."""
    logs.mkdir(parents=True, exist_ok=True)
    celery = str(Path(sys.executable).with_name("celery"))
    queues = {"w1": "oprag-warehouse,dagster", "w2": "dagster"}
    procs = []
    try:
        for name, queue in queues.items():
            with (logs / f"{name}.log").open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [celery, "-A", "oprag_pipeline.celery_app", "worker", "-Q", queue, "-c", "1",
                         "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
                        env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                    )
                )  # fmt: skip
        deadline = time.monotonic() + 180
        while not all(" ready." in (logs / f"{name}.log").read_text() for name in queues):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                pytest.fail("the Celery workers did not start: " + (logs / "w1.log").read_text()[-3000:])
            time.sleep(0.5)
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def _run_command() -> list[str]:
    return [sys.executable, "-m", "oprag_pipeline.cli", "run", "--select", SELECTION]


def _outcome(data_dir: Path, home: Path) -> dict:
    """The key warehouse tables' sorted rows, each collection's point count and payloads, and the run's events."""
    tables = {}
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        for table in TABLES:
            tables[table] = conn.execute(f"SELECT * FROM {table} WHERE domain = ? ORDER BY ALL", [DOMAIN]).fetchall()
    store = build_resources(data_dir)["vector_store"].open_store()
    collections = {}
    try:
        for kb in KBS:
            name = f"{DOMAIN}.{kb}"
            collections[kb] = (store.count(name), sorted(_payloads(store, name).items()))
    finally:
        store.close()
    with DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_run_records()
        events = [e for e in instance.all_logs(run.dagster_run.run_id) if e.dagster_event]
    return {"tables": tables, "collections": collections, "events": events}


def _payloads(store, name: str) -> dict[str, str]:
    """Every point's whole payload, as canonical JSON, by point id (the embedded engine's scroll)."""
    shard, payloads, offset = store._shard(name), {}, None
    while True:
        records, offset = shard.scroll(store._edge.ScrollRequest(offset=offset, limit=2048, with_payload=True))
        for record in records:
            payloads[str(record.id)] = json.dumps(record.payload, sort_keys=True, default=str)
        if offset is None:
            return payloads


def _prepare(tmp_path: Path, label: str) -> tuple[Path, Path]:
    data_dir, home = tmp_path / label / "data", tmp_path / label / "home"
    generate_demo(data_dir, docs=160, seed=3, domains=(DOMAIN,))
    home.mkdir(parents=True)
    return data_dir, home


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp_path = tmp_path_factory.mktemp("in_process")
    data_dir, home = _prepare(tmp_path, "run")
    started = time.perf_counter()
    env = _env(data_dir, home, "in_process")
    done = subprocess.run(_run_command(), env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return {**_outcome(data_dir, home), "seconds": time.perf_counter() - started}


def _assert_same(reference: dict, outcome: dict) -> None:
    versions = [{row[-2] for row in run["tables"]["opinions"]} for run in (reference, outcome)]
    assert versions[0] == versions[1], f"the extractor changed between the two runs (its files replaced?): {versions}"
    for table, rows in reference["tables"].items():
        assert rows, f"{table} is empty"
        assert outcome["tables"][table] == rows, f"{table} differs from the in-process run's"
    for kb, (count, payloads) in reference["collections"].items():
        assert count > 0 and count == len(payloads)
        assert outcome["collections"][kb] == (count, payloads), f"{kb} differs from the in-process run's"
    opinions = outcome["tables"]["opinions"]
    assert len(opinions) == len({repr(row) for row in opinions}), "an opinion row is duplicated"


def _steps(events, kind: DagsterEventType) -> Counter:
    return Counter(e.step_key for e in events if e.dagster_event.event_type == kind)


@pytest.mark.slow
def test_a_celery_run_gives_the_in_process_tables_and_collections(
    in_process: dict, broker: str, tmp_path: Path
) -> None:
    data_dir, home = _prepare(tmp_path, "celery")
    env = _env(data_dir, home, "celery", broker)
    with _workers(env, tmp_path / "logs"):
        started = time.perf_counter()
        done = subprocess.run(_run_command(), env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert "DuplicateTaskNameWarning" not in done.stderr
    outcome = _outcome(data_dir, home)
    _assert_same(in_process, outcome)
    events = outcome["events"]
    workers = {
        e.step_key: e.dagster_event.event_specific_data.metadata["Celery worker"].value
        for e in events
        if e.dagster_event.event_type == DagsterEventType.ENGINE_EVENT and "in celery worker" in (e.message or "")
    }
    succeeded = _steps(events, DagsterEventType.STEP_SUCCESS)
    assert set(workers) == set(succeeded), "a step ran outside the Celery workers"
    assert {w.split("@")[0] for w in workers.values()} == {"w1", "w2"}
    shard_steps = [k for k in succeeded if "extract_shard" in k or "embed_shard" in k]
    assert len(shard_steps) == 4
    parquet_only = ("extract_shard", "embed_shard", "collect_embedding")
    assert all(workers[k].startswith("w1@") for k in workers if not any(s in k for s in parquet_only))
    print(f"\nin-process run {in_process['seconds']:.1f} s, celery run (2 workers) {seconds:.1f} s")


@pytest.mark.slow
def test_a_worker_killed_mid_shard_is_retried_and_nothing_is_lost_or_duplicated(
    in_process: dict, broker: str, tmp_path: Path
) -> None:
    data_dir, home = _prepare(tmp_path, "killed")
    env = _env(data_dir, home, "celery", broker)
    output = tmp_path / "run.log"
    with _workers(env, tmp_path / "logs"), output.open("w") as out:
        run = subprocess.Popen(_run_command(), env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            killed = _kill_a_shard_once_it_has_committed_a_part(home, data_dir, run, output)
            run.wait(timeout=1800)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert run.returncode == 0, output.read_text()[-3000:]
    outcome = _outcome(data_dir, home)
    _assert_same(in_process, outcome)
    step, pid = killed
    events = outcome["events"]
    starts = [e for e in events if e.dagster_event.event_type == DagsterEventType.STEP_START and e.step_key == step]
    assert len(starts) == 2 and starts[0].dagster_event.pid == pid != starts[1].dagster_event.pid
    assert _steps(events, DagsterEventType.STEP_SUCCESS)[step] == 1
    assert not _steps(events, DagsterEventType.STEP_FAILURE)


def _kill_a_shard_once_it_has_committed_a_part(
    home: Path, data_dir: Path, run: subprocess.Popen, output: Path
) -> tuple[str, int]:
    """SIGKILL the worker process running an extraction shard after the shard has committed a Parquet part and
    before it has finished; the shard's step key and the killed pid."""
    deadline = time.monotonic() + 900

    def alive() -> None:
        assert run.poll() is None, "the run ended before a shard could be killed: " + output.read_text()[-3000:]

    # the instance is opened once the run has created its storage (the shards' inputs are written by then)
    while not (data_dir / "shards" / DOMAIN).exists() and time.monotonic() < deadline:
        alive()
        time.sleep(0.2)
    with DagsterInstance.from_config(str(home)) as instance:
        while time.monotonic() < deadline:
            alive()
            records = instance.get_run_records()
            if records:
                events = [e for e in instance.all_logs(records[0].dagster_run.run_id) if e.dagster_event]
                done = {e.step_key for e in events if e.dagster_event.event_type == DagsterEventType.STEP_SUCCESS}
                running = {
                    e.step_key: e.dagster_event.pid
                    for e in events
                    if e.dagster_event.event_type == DagsterEventType.STEP_START
                    and "extract_shard" in (e.step_key or "")
                    and e.step_key not in done
                }
                for step, pid in sorted(running.items()):
                    index = int(step.split("shard_")[-1].rstrip("]"))
                    folder = data_dir / "shards" / DOMAIN / f"shard-{index:03d}-of-002"
                    if pid and list(folder.glob("part-*.header.parquet")):
                        # frozen first, then the step's events read again: on a loaded machine the shard may have
                        # finished since the read above, and a finished step is no mid-shard kill
                        os.kill(pid, signal.SIGSTOP)
                        again = instance.all_logs(records[0].dagster_run.run_id)
                        if any(
                            e.dagster_event
                            and e.step_key == step
                            and e.dagster_event.event_type == DagsterEventType.STEP_SUCCESS
                            for e in again
                        ):
                            os.kill(pid, signal.SIGCONT)
                            continue
                        os.kill(pid, signal.SIGKILL)
                        return step, pid
            time.sleep(0.2)
    pytest.fail("no extraction shard was seen running with a committed part")


def test_the_run_and_its_workers_share_one_celery_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """`OPRAG_EXECUTOR=celery` selects dagster-celery's executor; the worker app reads the same broker setting and
    acknowledges a step only once it has finished, requeueing it when the process running it dies."""
    import importlib

    from oprag_pipeline import celery_app, definitions

    url = "redis://127.0.0.1:1/3"
    monkeypatch.setenv("OPRAG_EXECUTOR", "celery")
    monkeypatch.setenv("OPRAG_CELERY_BROKER", url)
    assert definitions.build_definitions().executor.name == "celery"
    app = importlib.reload(celery_app).app
    assert app.conf.broker_url == url and app.conf.result_backend == url
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost and app.conf.worker_prefetch_multiplier == 1
    assert "execute_plan" in app.tasks
    assert concurrency.WAREHOUSE_STEP["op_tags"]["dagster-celery/queue"] == concurrency.WAREHOUSE_QUEUE
    with pytest.raises(ValueError, match="OPRAG_CELERY_BROKER"):
        concurrency.executor("celery", 2, broker="")


def test_a_step_runs_under_the_hold_of_the_process_that_launched_its_run(tmp_path: Path) -> None:
    """A Celery worker is no child of `oprag run`: its warehouse steps find the lock held by the process named in
    the run's tags and run under that hold; any other run's steps still wait (here: refuse)."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from oprag_pipeline.locks import writer_lock\n"
         "with writer_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(120)", str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        host = socket.gethostname()
        with writer_lock(tmp_path, wait=False, run_tags={TAG_PID: str(holder.pid), TAG_HOST: host}):
            pass
        with pytest.raises(WriterBusyError), writer_lock(tmp_path, wait=False, run_tags={TAG_PID: "1", TAG_HOST: host}):
            pass
    finally:
        holder.kill()
        holder.wait()
