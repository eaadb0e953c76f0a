"""The `oprag` command: help everywhere, and the generate → run → status path on a temporary data directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from oprag_pipeline.cli import main
from oprag_pipeline_tests.conftest import write_lines

SUBCOMMANDS = ["generate-demo", "import", "run", "status"]


def test_help_lists_every_subcommand() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in SUBCOMMANDS:
        assert name in result.output


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_has_help(name: str) -> None:
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and "--help" in result.output


def test_console_script_is_installed() -> None:
    oprag = Path(sys.executable).parent / "oprag"
    completed = subprocess.run([str(oprag), "--help"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0 and "generate-demo" in completed.stdout


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_run_then_status(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    write_lines(data_dir / "raw/shop/a.jsonl", ['{"doc_id": "1", "text": "Sturdy lid."}', "{oops"])
    runner = CliRunner()
    run = runner.invoke(main, ["run", "--select", "raw_documents"])
    assert run.exit_code == 0, run.output
    assert "shop: ok" in run.output
    status = runner.invoke(main, ["status", "--json"])
    assert status.exit_code == 0, status.output
    report = json.loads(status.output)
    shop = report["domains"]["shop"]
    assert "raw_documents" in shop["materialized"]
    assert shop["rows"]["raw_documents"] == 1
    assert shop["quarantine_reasons"] == {"malformed_json": 1}
    text = runner.invoke(main, ["status"]).output
    assert "quarantined for malformed_json" in text


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_run_progress_is_one_line_per_domain_when_not_a_terminal(data_dir: Path, tmp_path: Path) -> None:
    """Piped output (CI logs, `| tee`) gets "[i/n] domain: ok" once per domain, not a progress bar per redraw."""
    import os

    for domain in ("shop", "forum"):
        write_lines(data_dir / f"raw/{domain}/a.jsonl", ['{"doc_id": "1", "text": "Sturdy lid."}'])
    oprag = Path(sys.executable).parent / "oprag"
    environment = {**os.environ, "OPRAG_DATA_DIR": str(data_dir), "DAGSTER_HOME": str(tmp_path / "home")}
    completed = subprocess.run(
        [str(oprag), "run", "--select", "raw_documents"], capture_output=True, text=True, timeout=600, env=environment
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    output = completed.stdout + completed.stderr
    for domain in ("shop", "forum"):
        assert len([line for line in output.splitlines() if f"] {domain}: ok" in line]) == 1, output[-2000:]
    assert "[1/2] " in output and "[2/2] " in output
    assert "domains:" not in output and "domain/s" not in output  # no bar drawn into the pipe


def test_run_rejects_unknown_domain(data_dir: Path) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", ['{"doc_id": "1", "text": "x"}'])
    result = CliRunner().invoke(main, ["run", "--domain", "nope"])
    assert result.exit_code != 0 and "nope" in result.output


# --------------------------------------------------------------------------------------------------------------
# Errors that point the way (issue 38, item 9)


def test_import_help_lists_every_format() -> None:
    from oprag_pipeline.cli import IMPORT_FORMATS
    from oprag_pipeline.importers import IMPORTERS

    assert set(IMPORT_FORMATS) == set(IMPORTERS)
    result = CliRunner().invoke(main, ["import", "--help"])
    assert result.exit_code == 0, result.output
    listed = [line.split()[0] for line in result.output.splitlines() if line.startswith("    ") and line.split()]
    assert set(IMPORTERS) <= set(listed), result.output


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--domain", "nosuchdomain"],
        ["report", "--domain", "nosuchdomain"],
        ["query", "is the lid sturdy?", "--domain", "nosuchdomain"],
        ["ask", "is the lid sturdy?", "--domain", "nosuchdomain"],
    ],
)
def test_unknown_domain_lists_the_existing_ones(data_dir: Path, command: list[str]) -> None:
    write_lines(data_dir / "raw/shop/a.jsonl", ['{"doc_id": "1", "text": "x"}'])
    write_lines(data_dir / "raw/hotels/a.jsonl", ['{"doc_id": "1", "text": "x"}'])
    result = CliRunner().invoke(main, command)
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"Error: unknown domain 'nosuchdomain'; existing domains: hotels, shop (folders in {data_dir / 'raw'})"
    ]


def test_unknown_domain_without_any_domain_says_how_to_make_one(data_dir: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--domain", "nosuchdomain"])
    assert result.exit_code != 0
    (line,) = result.output.strip().splitlines()
    assert "unknown domain 'nosuchdomain'" in line and "oprag generate-demo" in line and "oprag import" in line


def test_import_table_without_text_col_lists_the_columns_found(data_dir: Path, tmp_path: Path) -> None:
    source = write_lines(tmp_path / "export.csv", ["id,words,stars", "a,Battery lasts two days.,5"])
    result = CliRunner().invoke(main, ["import", "table", str(source), "--domain", "phones"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"columns found in {source}: id, words, stars" in result.output
    assert "--text-col" in result.output
    assert not (data_dir / "raw/phones").exists()
    ambiguous = write_lines(tmp_path / "two.csv", ["id,review,text", "a,Battery lasts two days.,Good"])
    result = CliRunner().invoke(main, ["import", "table", str(ambiguous), "--domain", "phones"])
    assert result.exit_code == 2 and "several could be the text (review, text)" in result.output


def test_import_table_guesses_a_plain_text_column(data_dir: Path, tmp_path: Path) -> None:
    source = write_lines(tmp_path / "export.jsonl", ['{"id": "a", "Review": "Battery lasts two days."}'])
    result = CliRunner().invoke(main, ["import", "table", str(source), "--domain", "phones", "--id-col", "id"])
    assert result.exit_code == 0, result.output
    assert "using the column 'Review'" in result.output
    rows = [json.loads(line) for path in (data_dir / "raw/phones").glob("*.jsonl") for line in path.open()]
    assert [(r["doc_id"], r["text"]) for r in rows] == [("a", "Battery lasts two days.")]


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_generate_demo_then_run(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    generated = runner.invoke(main, ["generate-demo", "--docs", "200", "--seed", "3"])
    assert generated.exit_code == 0, generated.output
    assert sorted(p.name for p in (data_dir / "raw").iterdir()) == ["hotels", "seller_forum"]
    assert (data_dir / "truth").is_dir()
    run = runner.invoke(main, ["run", "--select", "raw_documents"])
    assert run.exit_code == 0, run.output
    report = json.loads(runner.invoke(main, ["status", "--json"]).output)
    assert sum(d["rows"]["raw_documents"] for d in report["domains"].values()) == 200


def test_import_table_with_column_mapping(data_dir: Path, tmp_path: Path) -> None:
    source = write_lines(
        tmp_path / "export.csv", ["id,body,stars", "a,Battery lasts two days.,5", "b,Screen scratched in a week.,2"]
    )
    runner = CliRunner()
    other = write_lines(tmp_path / "other.csv", ["id,words,stars", "a,Battery lasts two days.,5"])
    missing = runner.invoke(main, ["import", "table", str(other), "--domain", "phones"])
    assert missing.exit_code != 0 and "--text-col" in missing.output
    result = runner.invoke(
        main,
        [
            "import",
            "table",
            str(source),
            "--domain",
            "phones",
            "--text-col",
            "body",
            "--id-col",
            "id",
            "--rating-col",
            "stars",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for path in (data_dir / "raw/phones").glob("*.jsonl") for line in path.open()]
    assert [(r["doc_id"], r["text"], float(r["rating"])) for r in rows] == [
        ("a", "Battery lasts two days.", 5.0),
        ("b", "Screen scratched in a week.", 2.0),
    ]
