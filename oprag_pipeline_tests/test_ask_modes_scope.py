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
