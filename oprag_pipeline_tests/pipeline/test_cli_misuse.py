"""Misused commands fail with a non-zero exit and one clear line each, never a stack trace (unless --debug).

Every case here exited 0 on error or printed a Dagster traceback on the earlier code.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from oprag_pipeline.cli import main
from oprag_pipeline_tests.conftest import CHECKOUT, write_lines

# End-to-end: real processes or whole pipeline runs (minutes); the fast tier is `-m "not slow"`.
pytestmark = pytest.mark.slow

GOOD = json.dumps({"doc_id": "1", "text": "Sturdy lid, fast boil."})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Dagster home of its own (the CLI exports DAGSTER_HOME; monkeypatch restores it)."""
    path = tmp_path / "dagster_home"
    monkeypatch.setenv("DAGSTER_HOME", str(path))
    for name in ("OPRAG_EXTRACTOR", "OPRAG_EXTRACT_BATCH_SIZE", "OPRAG_MAX_TEXT_CHARS", "QDRANT_URL", "OPRAG_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    return path


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def assert_clear(result, *words: str, code: int | None = None) -> None:
    """Non-zero exit through click (no other exception escaped), with the words in an `Error:` line."""
    assert result.exit_code != 0, result.output
    if code is not None:
        assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert errors, result.output
    for word in words:
        assert any(word in line for line in errors), (word, result.output)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --------------------------------------------------------------------------------------------------------------
# Configuration: checked once at start, one line per problem


@pytest.mark.parametrize(
    ("env", "word"),
    [
        ({"OPRAG_MAX_TEXT_CHARS": "-1"}, "OPRAG_MAX_TEXT_CHARS"),
        ({"OPRAG_MAX_TEXT_CHARS": "abc"}, "OPRAG_MAX_TEXT_CHARS"),
        ({"OPRAG_EXTRACTOR": "nonsense"}, "OPRAG_EXTRACTOR"),
        ({"OPRAG_EXTRACTOR": "anthropic"}, "ANTHROPIC_API_KEY"),
        ({"OPRAG_EXTRACTOR": "openai-compatible"}, "OPRAG_OPENAI_MODEL"),
        ({"OPRAG_EXTRACT_BATCH_SIZE": "0"}, "OPRAG_EXTRACT_BATCH_SIZE"),
        ({"OPRAG_LLM_TIMEOUT": "soon"}, "OPRAG_LLM_TIMEOUT"),
    ],
)
def test_bad_setting_is_refused_before_anything_runs(data_dir: Path, home: Path, env: dict, word: str) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    result = invoke("run", env=env)
    assert_clear(result, word, code=2)
    assert not (data_dir / "warehouse.duckdb").exists()  # nothing was written
    assert not home.exists() or not any(home.glob("history/runs/*"))


def test_every_problem_is_listed_on_its_own_line(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    env = {"OPRAG_MAX_TEXT_CHARS": "-1", "OPRAG_EXTRACTOR": "nonsense", "OPRAG_EXTRACT_BATCH_SIZE": "0"}
    result = invoke("run", env=env)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 3
    assert [v for v in env if any(v in line for line in errors)] == list(env)


def test_negative_max_text_chars_no_longer_replaces_a_good_ingest(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    assert invoke("run", "--select", "raw_documents").exit_code == 0
    result = invoke("run", "--select", "raw_documents", env={"OPRAG_MAX_TEXT_CHARS": "-1"})
    assert_clear(result, "at least 1")
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM raw_documents").fetchone()[0] == 1


@pytest.mark.parametrize("command", [["run"], ["query", "anything", "--domain", "shop"]])
def test_unreachable_qdrant_is_one_line(data_dir: Path, home: Path, command: list[str]) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    duckdb.connect(str(data_dir / "warehouse.duckdb")).close()
    result = invoke(*command, env={"QDRANT_URL": f"http://127.0.0.1:{closed_port()}"})
    assert_clear(result, "cannot reach the Qdrant server", "QDRANT_URL")


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (["query", "lid", "--domain", "shop"], ["materialize the index first", "oprag run --domain shop"]),
        (["ask", "what about the lid?", "--domain", "shop"], ["no table", "oprag run --domain shop"]),
    ],
)
def test_reading_a_domain_before_its_run_says_what_to_run(
    data_dir: Path, home: Path, command: list[str], words: list[str]
) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    duckdb.connect(str(data_dir / "warehouse.duckdb")).close()  # a warehouse, but nothing materialized
    assert_clear(invoke(*command), *words)


def test_unknown_asset_selection_lists_the_assets(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    result = invoke("run", "--select", "no_such_asset")
    assert_clear(result, "no_such_asset", "raw_documents", code=2)


def test_corrupt_warehouse_is_named_by_status_and_run(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    (data_dir / "warehouse.duckdb").write_bytes(os.urandom(8192))
    assert_clear(invoke("status"), "not a readable DuckDB database")
    assert_clear(invoke("run", "--select", "raw_documents"), "not a readable DuckDB database")


# --------------------------------------------------------------------------------------------------------------
# Domains: validated where they enter


@pytest.mark.parametrize("name", ["with space", "hôtel-ü", "日本語", "-dash", "../outside_dom"])
def test_unsafe_domain_names_are_refused_everywhere(data_dir: Path, home: Path, tmp_path: Path, name: str) -> None:
    source = write_lines(tmp_path / "export.csv", ["id,body", "a,Battery lasts two days."])
    for command in (
        ["run", "--domain", name],
        ["report", "--domain", name],
        ["query", "x", "--domain", name],
        ["import", "table", str(source), "--text-col", "body", f"--domain={name}"],
    ):
        assert_clear(invoke(*command), "ASCII letters, digits, '-' and '_'")
    assert sorted(p.name for p in (data_dir / "raw").iterdir()) == []


def test_unsafe_domain_folder_is_named_and_the_rest_runs(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    write_lines(data_dir / "raw/with space/a.jsonl", [GOOD])
    result = invoke("run", "--select", "raw_documents")
    assert result.exit_code == 0, result.output
    assert "invalid domain name 'with space'" in result.output and "shop: ok" in result.output


def test_report_on_unknown_or_empty_domain_registers_nothing(data_dir: Path, home: Path) -> None:
    from dagster import DagsterInstance

    write_lines(data_dir / "raw/shop/a.jsonl", [GOOD])
    (data_dir / "raw/emptydom").mkdir()
    assert_clear(invoke("report", "--domain", "nosuch"), "nosuch")
    assert_clear(invoke("report", "--domain", "emptydom"), "no input files")
    if home.exists():
        with DagsterInstance.from_config(str(home)) as instance:
            assert instance.get_dynamic_partitions("domain") == []


def test_domain_whose_rows_are_all_refused_fails_with_the_reason(data_dir: Path, home: Path) -> None:
    write_lines(data_dir / "raw/blank/a.jsonl", [json.dumps({"doc_id": "1", "text": "\u200b"})])
    result = invoke("run", "--domain", "blank")
    assert_clear(result, "run failed for blank")
    assert "no document accepted" in result.output and "missing_text" in result.output
    assert "Stack Trace" not in result.output and "Traceback" not in result.output


# --------------------------------------------------------------------------------------------------------------
# Imports that read nothing they understand fail


@pytest.mark.parametrize(
    ("fmt", "name", "content"),
    [
        ("huliu", "notes.jsonl", b'{"doc_id": "1", "text": "a note"}\n{"doc_id": "2", "text": "another"}\n'),
        ("semeval-absa", "notes.jsonl", b'{"doc_id": "1", "text": "a note"}\n'),
        ("table", "image.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"),
    ],
)
def test_import_of_the_wrong_file_fails_and_writes_nothing(
    data_dir: Path, home: Path, tmp_path: Path, fmt: str, name: str, content: bytes
) -> None:
    source = tmp_path / name
    source.write_bytes(content)
    extra = ["--text-col", "text"] if fmt == "table" else []
    result = invoke("import", fmt, str(source), "--domain", "notes", *extra)
    assert_clear(result, "nothing imported")
    assert not (data_dir / "raw" / "notes").exists()


# --------------------------------------------------------------------------------------------------------------
# Unexpected errors: one line, the traceback only on request


def test_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    data_dir: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import oprag_pipeline.status

    def broken(**_kwargs):
        raise RuntimeError("the instance exploded")

    monkeypatch.setattr(oprag_pipeline.status, "collect_status", broken)
    result = invoke("status")
    assert_clear(result, "RuntimeError: the instance exploded", "--debug")
    debug = invoke("--debug", "status")
    assert isinstance(debug.exception, RuntimeError)


def test_no_traceback_from_a_real_process(tmp_path: Path) -> None:
    """The console script itself, with a bad value that used to raise while the definitions were imported."""
    env = {**os.environ, "OPRAG_DATA_DIR": str(tmp_path / "data"), "OPRAG_MAX_TEXT_CHARS": "abc"}
    env["DAGSTER_HOME"] = str(tmp_path / "home")
    write_lines(tmp_path / "data/raw/shop/a.jsonl", [GOOD])
    completed = subprocess.run(
        [sys.executable, "-m", "oprag_pipeline.cli", "run"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=CHECKOUT,
    )
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr + completed.stdout
    assert completed.stderr.strip().splitlines() == [
        "Error: OPRAG_MAX_TEXT_CHARS='abc' is not a whole number (default 100000)"
    ]
