"""The data directory's writer lock: one writing process at a time.

The DuckDB warehouse and the embedded vector shards each admit a single writing process, so a run holds an exclusive
file lock on the data directory (`<data>/.oprag-run.lock`, an OS lock that dies with its process, so a killed run
never leaves it stuck); a step's process whose ancestor holds it (the multiprocess executor's children) runs under
that hold, as does a step whose run was launched by the holder (its `oprag/pid` and `oprag/host` tags). A second run
waits for it, or refuses, and says who holds it; a query probes it to tell "busy" from "broken".

It sits below `resources` (whose warehouse resource takes it for every run), `runner` (which tags runs with the
holder's pid and host) and the CLI, and imports no other module of the pipeline.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

LOCK_FILE = ".oprag-run.lock"
HOLDER_FILE = ".oprag-run.holder.json"  # who holds the lock, for the message a waiting process prints
TAG_PID = "oprag/pid"
TAG_HOST = "oprag/host"


class WriterBusyError(RuntimeError):
    """Another process is writing this data directory and the caller chose not to wait."""


def _holder(data_dir: Path) -> str:
    try:
        info = json.loads((data_dir / HOLDER_FILE).read_text())
        return f"pid {info['pid']} on {info['host']}, since {info['since']}"
    except (OSError, ValueError, KeyError):
        return "holder unknown"


def writer_busy(data_dir: Path) -> str | None:
    """Who is writing `data_dir` right now (a description), or None when nobody is; takes no lasting lock."""
    lock_path = data_dir / LOCK_FILE
    if not lock_path.exists():
        return None
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return _holder(data_dir)
    lock.release()
    return None


_HELD: dict[str, int] = {}  # data directories whose writer lock this process holds -> nesting depth


@contextmanager
def writer_lock(
    data_dir: Path,
    *,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
    run_tags: dict[str, str] | None = None,
) -> Iterator[None]:
    """Hold the data directory's writer lock; wait for it (telling `on_wait` once) or raise WriterBusyError.

    Re-entrant within a process: the CLI takes it around a run, and the run's data-directory resource takes it
    again (which is how runs launched by `dagster dev` wait for a CLI run and the other way round). A step of a run
    whose launching process holds it (`run_tags`: the CLI's pid and host) runs under that hold, wherever the
    step's process is: a child of the run's process (multiprocess) or a Celery worker's.
    """
    key = str(data_dir.resolve())
    if _HELD.get(key):
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(data_dir / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if _held_by_ancestor(data_dir) or _held_by_launcher(data_dir, run_tags or {}):
            # a step process of a run whose process holds the lock (the multiprocess executor's children, a Celery
            # worker's): the run holds it
            yield
            return
        holder = _holder(data_dir)
        if not wait:
            raise WriterBusyError(
                f"another oprag run is writing {data_dir} ({holder}); try again when it has finished"
            ) from None
        if on_wait is not None:
            on_wait(f"another oprag run is writing {data_dir} ({holder}); waiting for it to finish (Ctrl-C to stop)")
        lock.acquire()
    _HELD[key] = 1
    try:
        since = datetime.now(UTC).isoformat(timespec="seconds")
        (data_dir / HOLDER_FILE).write_text(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since})
        )
        yield
    finally:
        _HELD.pop(key, None)
        (data_dir / HOLDER_FILE).unlink(missing_ok=True)
        lock.release()


def _ancestors() -> Iterator[int]:
    """This process's parent, its parent, and so on (Linux's /proc; elsewhere the parent alone)."""
    pid = os.getppid()
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        yield pid
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        pid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), 0)


def _held_by_ancestor(data_dir: Path) -> bool:
    """Whether the writer lock's holder is an ancestor of this process on this host."""
    try:
        info = json.loads((data_dir / HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return False
    if info.get("host") != socket.gethostname():
        return False
    return int(info.get("pid", 0)) in set(_ancestors())


def _held_by_launcher(data_dir: Path, run_tags: dict[str, str]) -> bool:
    """Whether the writer lock's holder is the process that launched the run with these tags (`oprag run`)."""
    if not run_tags.get(TAG_PID):
        return False
    try:
        info = json.loads((data_dir / HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return False
    return str(info.get("pid")) == run_tags[TAG_PID] and info.get("host") == run_tags.get(TAG_HOST)
