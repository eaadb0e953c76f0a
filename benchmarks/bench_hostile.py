"""Hostile input and command-line misuse, counted: what the README's "nothing lost, nothing blocked" rests on.

    PYTHONPATH=. python benchmarks/bench_hostile.py            # both parts (the CLI part takes a few minutes)
    PYTHONPATH=. python benchmarks/bench_hostile.py --part ingest

Part 1 writes, per hostile class, a domain folder holding a good row, the hostile thing, and another good row, reads
it with the real reader and counts: handled with a clear reason (the expected reason, or the text accepted intact,
or the file listed as skipped with why), rows lost (good rows missing, or rows read that are neither accepted,
quarantined nor duplicates), crashes (an exception out of the reader). Target: all / all / 0 / 0.

Part 2 runs `python -m oprag_pipeline.cli` as a user would, once per misuse, each on a fresh data directory, and
counts: clear (non-zero exit, an `Error:` line naming the problem, no trace), traces (a Python or Dagster stack
trace in the output), exit 0 on error. Target: all / all / 0 / 0.

Every file is invented here (see `oprag_pipeline_tests/hostile.py` for the value classes).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from oprag_pipeline import settings
from oprag_pipeline.ingest import readers
from oprag_pipeline_tests.hostile import CSV_FIELD_SEPARATORS, JSON_FIELD_CLASSES, LINE_CLASSES

ROOT = Path(__file__).resolve().parents[1]
BEFORE = json.dumps({"doc_id": "before", "text": "The kettle boils fast."})
AFTER = json.dumps({"doc_id": "after", "text": "The lid still fits."})


# --------------------------------------------------------------------------------------------------------------
# Part 1: hostile input


@dataclass
class Case:
    name: str
    write: Callable[[Path], None]  # fills the domain folder
    expect: str  # a quarantine reason, "accept:<doc_id>=<text>", "skip:<file>", or "refuse_domain"
    good: tuple[str, ...] = ("before", "after")


def _jsonl(lines: list[bytes | str]) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        data = b"\n".join(line if isinstance(line, bytes) else line.encode() for line in lines) + b"\n"
        (folder / "a.jsonl").write_bytes(data)

    return write


def _file(name: str, data: bytes) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        (folder / "good.jsonl").write_text(BEFORE + "\n" + AFTER + "\n")
        (folder / name).write_bytes(data)

    return write


def _csv_text(text: str) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        (folder / "good.jsonl").write_text(BEFORE + "\n" + AFTER + "\n")
        (folder / "t.csv").write_bytes(f"doc_id,text\nc1,{text}\nc2,next\n".encode())

    return write


def _truncated_gzip() -> bytes:
    lines = "".join(
        json.dumps({"doc_id": f"g{i}", "text": f"Row {i} of {i * 7919 % 1000}."}) + "\n" for i in range(5000)
    )
    whole = gzip.compress(lines.encode())
    return whole[: len(whole) // 2]


def _parquet(folder: Path) -> None:
    (folder / "good.jsonl").write_text(BEFORE + "\n" + AFTER + "\n")
    buffer = io.BytesIO()
    pq.write_table(pa.table({"doc_id": ["p1", "p2"], "text": ["x", "y"], "rating": [float("inf"), 4.0]}), buffer)
    (folder / "r.parquet").write_bytes(buffer.getvalue())


def _symlink_out(folder: Path) -> None:
    (folder / "good.jsonl").write_text(BEFORE + "\n" + AFTER + "\n")
    outside = folder.parent.parent / "outside.jsonl"
    outside.write_text(json.dumps({"doc_id": "outside", "text": "not yours"}) + "\n")
    (folder / "link.jsonl").symlink_to(outside)


def hostile_cases() -> list[Case]:
    cases = []
    for name, fragment, reason in JSON_FIELD_CLASSES:
        key = fragment.split('"')[1]
        base = {"doc_id": "hostile", "text": "Some text."}
        base.pop(key, None)
        line = json.dumps(base)[:-1] + ", " + fragment + "}"
        expect = "accept:hostile" if reason == "accept" else reason
        cases.append(Case(name, _jsonl([BEFORE, line, AFTER]), expect))
    for name, line, reason in LINE_CLASSES:
        cases.append(Case(name, _jsonl([BEFORE, line, AFTER]), reason))
    cases.append(
        Case(
            "jsonl_line_over_64MiB",
            _jsonl([BEFORE, b'{"text": "' + b"x" * (65 << 20) + b'"}', AFTER]),
            "record_too_large",
        )
    )
    for separator in CSV_FIELD_SEPARATORS:
        text = f"before{separator}after"
        cases.append(Case(f"csv_field_with_U+{ord(separator):04X}", _csv_text(text), f"accept:c1={text}"))
    cases.append(
        Case(
            "csv_unclosed_quote",
            _csv_text('"never closed\nc3,third\nc4,fourth'),
            "malformed_csv",
            ("before", "after", "c3", "c4", "c2"),
        )
    )
    cases.append(Case("csv_ragged_row", _csv_text("a,b,c"), "malformed_csv"))
    cases.append(
        Case(
            "csv_invalid_utf8",
            _file("t.csv", b"doc_id,text\nc1,caf\xe9\nc2,fine\n"),
            "undecodable_bytes",
            ("before", "after", "c2"),
        )
    )
    text = "Café crème — «meh»."
    for codec in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
        body = json.dumps({"doc_id": "u1", "text": text}, ensure_ascii=False) + "\n"
        cases.append(Case(f"jsonl_{codec}", _file("wide.jsonl", body.encode(codec)), f"accept:u1={text}"))
    cases.append(
        Case(
            "binary_png_as_csv",
            _file("image.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"),
            "unsupported_encoding",
        )
    )
    cases.append(Case("json_array_100k_deep", _file("deep.json", b"[" * 100_000 + b"]" * 100_000), "json_too_deep"))
    cases.append(
        Case(  # the good record beside the deep one is read: arrays are split element by element
            "json_array_good_and_100k_deep",
            _file("mixed.json", b'[{"doc_id": "g1", "text": "Fine."}, ' + b"[" * 100_000 + b"]" * 100_000 + b"]"),
            "json_too_deep",
            ("before", "after", "g1"),
        )
    )
    cases.append(
        Case(
            "json_array_with_infinity",
            _file("arr.json", b'[{"doc_id": "z", "text": "t", "rating": Infinity}]'),
            "rating_out_of_range",
        )
    )
    cases.append(
        Case(
            "gzip_truncated",
            _file("cut.jsonl.gz", _truncated_gzip()),
            "unreadable_file",
        )
    )
    cases.append(
        Case("parquet_corrupt_footer", _file("bad.parquet", b"PAR1" + b"\x00" * 64 + b"PAR1"), "unreadable_file")
    )
    cases.append(Case("parquet_infinite_rating", _parquet, "rating_out_of_range", ("before", "after", "p2")))
    for name, data in (
        ("notes.txt", b"x"),
        ("dump.jsonl.bz2", b"BZh91AY"),
        (".hidden.jsonl", BEFORE.encode()),
        ("_work.jsonl", BEFORE.encode()),
        ("archive.zip", b"PK\x03\x04"),
    ):
        cases.append(Case(f"file_{name}", _file(name, data), f"skip:{name}"))
    cases.append(Case("symlink_leaving_raw", _symlink_out, "skip:link.jsonl"))
    for name in ("with space", "hôtel-ü", "日本語", "-dash", "..", "linked_outside"):
        cases.append(Case(f"domain_folder_{name}", lambda folder: None, "refuse_domain:" + name, ()))
    return cases


def run_case(case: Case, workdir: Path) -> tuple[bool, int, bool, str]:
    """(handled with a clear reason, rows lost, crashed, note)."""
    data = workdir / case.name.replace("/", "_")
    raw = data / "raw"
    if case.expect.startswith("refuse_domain:"):
        name = case.expect.split(":", 1)[1]
        raw.mkdir(parents=True)
        if name == "linked_outside":
            (data / "elsewhere").mkdir()
            (data / "elsewhere" / "a.jsonl").write_text(BEFORE + "\n")
            (raw / name).symlink_to(data / "elsewhere", target_is_directory=True)
        elif name != "..":
            (raw / name).mkdir()
            (raw / name / "a.jsonl").write_text(BEFORE + "\n")
        try:
            settings.domain_dir(name, data)
        except settings.ConfigError as error:
            listed = name in settings.list_domains(data)
            named = "ASCII letters" in str(error) or "refusing" in str(error)
            return not listed and named, 0, False, str(error)[:80]
        except Exception as error:
            return False, 0, True, repr(error)
        return False, 0, False, "accepted"
    folder = raw / "d"
    folder.mkdir(parents=True)
    case.write(folder)
    accepted: list[dict] = []
    try:
        result = readers.read_domain(folder, max_text_chars=1000, on_batch=lambda b: accepted.extend(b.to_pylist()))
    except Exception as error:
        return False, len(case.good), True, f"{type(error).__name__}: {str(error)[:80]}"
    ids = {row["doc_id"]: row["text"] for row in accepted}
    lost = sum(f.rows_read - f.accepted - f.quarantined - f.duplicates for f in result.files)
    lost += sum(1 for doc_id in case.good if doc_id not in ids)
    if case.expect.startswith("accept:"):
        doc_id, _, text = case.expect[7:].partition("=")
        ok = doc_id in ids and (not text or ids[doc_id] == text)
        return ok, lost, False, "accepted" if ok else f"not accepted intact: {result.quarantined[:1]}"
    if case.expect.startswith("skip:"):
        file = case.expect[5:]
        reasons = {s.file: s.reason for s in result.skipped_files}
        return bool(reasons.get(file)), lost, False, reasons.get(file, "not listed")[:80]
    match = [q for q in result.quarantined if q.reason == case.expect and q.detail]
    note = match[0].detail[:80] if match else f"got {[q.reason for q in result.quarantined]}"
    return bool(match), lost, False, note


def part_ingest() -> bool:
    cases = hostile_cases()
    handled = lost = crashes = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            ok, case_lost, crashed, note = run_case(case, Path(tmp))
            handled += ok
            lost += case_lost
            crashes += crashed
            mark = "ok " if ok and not case_lost and not crashed else "BAD"
            print(f"  {mark} {case.name:<34} {note}")
    print(
        f"hostile classes tried / handled with a clear reason / rows lost / crashes: "
        f"{len(cases)} / {handled} / {lost} / {crashes}"
    )
    return handled == len(cases) and lost == 0 and crashes == 0


# --------------------------------------------------------------------------------------------------------------
# Part 2: command-line misuse


@dataclass
class Misuse:
    name: str
    args: list[str]
    words: tuple[str, ...]  # what the Error: line must name
    env: dict[str, str] | None = None
    setup: Callable[[Path, Path], None] | None = None  # (data dir, scratch dir)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _shop(data: Path, _scratch: Path) -> None:
    (data / "raw" / "shop").mkdir(parents=True, exist_ok=True)
    (data / "raw" / "shop" / "a.jsonl").write_text(BEFORE + "\n" + AFTER + "\n")


def _corrupt_warehouse(data: Path, scratch: Path) -> None:
    _shop(data, scratch)
    (data / "warehouse.duckdb").write_bytes(os.urandom(8192))


def _warehouse(data: Path, scratch: Path) -> None:
    import duckdb

    _shop(data, scratch)
    duckdb.connect(str(data / "warehouse.duckdb")).close()


def _notes(_data: Path, scratch: Path) -> None:
    (scratch / "notes.jsonl").write_text(BEFORE + "\n" + AFTER + "\n")
    (scratch / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
    # no column is plainly the text ("body", "text", "review"... would be taken): the error lists the columns found
    (scratch / "export.csv").write_text("id,words\na,Battery lasts two days.\n")


def _empty_domain(data: Path, scratch: Path) -> None:
    _shop(data, scratch)
    (data / "raw" / "emptydom").mkdir()


def _blank_domain(data: Path, _scratch: Path) -> None:
    (data / "raw" / "blank").mkdir(parents=True)
    (data / "raw" / "blank" / "a.jsonl").write_text(json.dumps({"doc_id": "1", "text": "\u200b"}) + "\n")


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from oprag_pipeline.locks import writer_lock
    with writer_lock(Path(sys.argv[1])):
        (Path(sys.argv[1]) / "held").write_text("1")
        time.sleep(120)
    """
)


def misuses() -> list[Misuse]:
    port = _closed_port()
    return [
        Misuse("max_text_chars_negative", ["run"], ("OPRAG_MAX_TEXT_CHARS",), {"OPRAG_MAX_TEXT_CHARS": "-1"}, _shop),
        Misuse("max_text_chars_word", ["run"], ("OPRAG_MAX_TEXT_CHARS",), {"OPRAG_MAX_TEXT_CHARS": "abc"}, _shop),
        Misuse("extractor_unknown", ["run"], ("OPRAG_EXTRACTOR",), {"OPRAG_EXTRACTOR": "nonsense"}, _shop),
        Misuse("anthropic_without_key", ["run"], ("ANTHROPIC_API_KEY",), {"OPRAG_EXTRACTOR": "anthropic"}, _shop),
        Misuse(
            "openai_without_model", ["run"], ("OPRAG_OPENAI_MODEL",), {"OPRAG_EXTRACTOR": "openai-compatible"}, _shop
        ),
        Misuse("batch_size_zero", ["run"], ("OPRAG_EXTRACT_BATCH_SIZE",), {"OPRAG_EXTRACT_BATCH_SIZE": "0"}, _shop),
        Misuse("batch_size_word", ["run"], ("OPRAG_EXTRACT_BATCH_SIZE",), {"OPRAG_EXTRACT_BATCH_SIZE": "x"}, _shop),
        Misuse("llm_timeout_negative", ["run"], ("OPRAG_LLM_TIMEOUT",), {"OPRAG_LLM_TIMEOUT": "-5"}, _shop),
        Misuse("offline_scorer_unknown", ["run"], ("OPRAG_OFFLINE_SCORER",), {"OPRAG_OFFLINE_SCORER": "gpt"}, _shop),
        Misuse("qdrant_closed_port_run", ["run"], ("QDRANT_URL",), {"QDRANT_URL": f"http://127.0.0.1:{port}"}, _shop),
        Misuse(
            "qdrant_closed_port_query",
            ["query", "lid?", "--domain", "shop"],
            ("QDRANT_URL",),
            {"QDRANT_URL": f"http://127.0.0.1:{port}"},
            _warehouse,
        ),
        Misuse("qdrant_url_not_a_url", ["run"], ("QDRANT_URL",), {"QDRANT_URL": "localhost 6333"}, _shop),
        Misuse("select_unknown_asset", ["run", "--select", "no_such_asset"], ("no_such_asset",), None, _shop),
        Misuse("select_malformed", ["run", "--select", "key:"], ("selection",), None, _shop),
        Misuse("run_unknown_domain", ["run", "--domain", "nosuch"], ("nosuch",), None, _shop),
        Misuse("run_domain_with_space", ["run", "--domain", "with space"], ("ASCII",), None, _shop),
        Misuse("run_domain_dotdot", ["run", "--domain", "../outside"], ("ASCII",), None, _shop),
        Misuse("run_no_domains", ["run"], ("no domains",), None, None),
        Misuse("run_all_rows_refused", ["run", "--domain", "blank"], ("run failed for blank",), None, _blank_domain),
        Misuse("report_unknown_domain", ["report", "--domain", "nosuch"], ("nosuch",), None, _shop),
        Misuse("report_empty_domain", ["report", "--domain", "emptydom"], ("no input files",), None, _empty_domain),
        Misuse("report_domain_outside", ["report", "--domain", "../outside_dom"], ("ASCII",), None, _shop),
        Misuse("status_corrupt_warehouse", ["status"], ("not a readable DuckDB",), None, _corrupt_warehouse),
        Misuse(
            "query_corrupt_warehouse",
            ["query", "lid?", "--domain", "shop"],
            ("not a readable DuckDB",),
            None,
            _corrupt_warehouse,
        ),
        Misuse("query_before_any_run", ["query", "lid?", "--domain", "shop"], ("oprag run",), None, _shop),
        Misuse("query_k_zero", ["query", "lid?", "--domain", "shop", "-k", "0"], ("-k",), None, _shop),
        Misuse(
            "import_huliu_on_jsonl",
            ["import", "huliu", "{scratch}/notes.jsonl", "--domain", "n"],
            ("nothing imported",),
            None,
            _notes,
        ),
        Misuse(
            "import_table_on_image",
            ["import", "table", "{scratch}/image.csv", "--domain", "n", "--text-col", "t"],
            ("nothing imported",),
            None,
            _notes,
        ),
        Misuse(
            "import_semeval_on_jsonl",
            ["import", "semeval-absa", "{scratch}/notes.jsonl", "--domain", "n"],
            ("nothing imported",),
            None,
            _notes,
        ),
        Misuse(
            "import_table_without_text_col",
            ["import", "table", "{scratch}/export.csv", "--domain", "n"],
            ("--text-col", "columns found", "id, words"),
            None,
            _notes,
        ),
        Misuse(
            "import_unsafe_domain",
            ["import", "table", "{scratch}/export.csv", "--domain", "hôtel-ü", "--text-col", "words"],
            ("ASCII",),
            None,
            _notes,
        ),
        Misuse(
            "import_missing_source", ["import", "tripadvisor", "{scratch}/nope", "--domain", "n"], ("nope",), None, None
        ),
        Misuse("run_no_wait_while_locked", ["run", "--no-wait"], ("another oprag run",), None, _shop),
    ]


def run_misuse(misuse: Misuse, scratch: Path) -> tuple[bool, bool, bool, str]:
    """(clear, printed a trace, exited 0, first Error: line)."""
    data = scratch / "data"
    (data / "raw").mkdir(parents=True)
    if misuse.setup:
        misuse.setup(data, scratch)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPRAG_", "QDRANT_", "ANTHROPIC_", "OPENAI_"))}
    env.update({"OPRAG_DATA_DIR": str(data), "DAGSTER_HOME": str(scratch / "home"), "PYTHONPATH": str(ROOT)})
    if "OPRAG_MODEL_DIR" in os.environ:
        env["OPRAG_MODEL_DIR"] = os.environ["OPRAG_MODEL_DIR"]
    env.update(misuse.env or {})
    holder = None
    if misuse.name == "run_no_wait_while_locked":
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(data)], cwd=ROOT, env=env)
        while not (data / "held").exists():
            time.sleep(0.05)
    try:
        args = [a.replace("{scratch}", str(scratch)) for a in misuse.args]
        completed = subprocess.run(
            [sys.executable, "-m", "oprag_pipeline.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=600,
        )
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
    output = completed.stdout + completed.stderr
    trace = "Traceback" in output or "Stack Trace" in output
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    named = all(any(word in line for line in errors) for word in misuse.words)
    registered = (scratch / "home").exists() and misuse.name.startswith("report_") and _partitions(scratch / "home")
    clear = completed.returncode != 0 and not trace and named and not registered
    return clear, trace, completed.returncode == 0, (errors[0] if errors else output.strip()[-100:])[:110]


def _partitions(home: Path) -> list[str]:
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        return instance.get_dynamic_partitions("domain")


def part_cli() -> bool:
    cases = misuses()
    clear = traces = exit_zero = 0
    started = time.perf_counter()
    for misuse in cases:
        with tempfile.TemporaryDirectory() as tmp:
            ok, trace, zero, line = run_misuse(misuse, Path(tmp))
        clear += ok
        traces += trace
        exit_zero += zero
        print(f"  {'ok ' if ok else 'BAD'} {misuse.name:<32} {line}")
    print(
        f"CLI misuses tried / clear / traces / exit 0 on error: {len(cases)} / {clear} / {traces} / {exit_zero} "
        f"({time.perf_counter() - started:.0f} s)"
    )
    return clear == len(cases) and traces == 0 and exit_zero == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["ingest", "cli", "all"], default="all")
    args = parser.parse_args()
    good = True
    if args.part in ("ingest", "all"):
        good &= part_ingest()
    if args.part in ("cli", "all"):
        good &= part_cli()
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
