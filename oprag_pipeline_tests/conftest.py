"""Shared fixtures: a throw-away data directory and a real (on-disk, SQLite-backed) Dagster instance."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CHECKOUT = Path(__file__).resolve().parents[1]

# Tests point OPRAG_DATA_DIR at temporary folders; the offline models are assembled once into the checkout's cache
# instead of once per temporary folder.
os.environ.setdefault("OPRAG_MODEL_DIR", str(CHECKOUT / "data" / "models"))


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (`-n 2`) each worker gets a Dagster home of its own: the workers inherit one DAGSTER_HOME
    from scripts/test.sh, and two processes migrating one SQLite run storage at once fail each other. The model
    cache is shared on purpose: its assembly is locked and builds once (test_concurrent_assembly_builds_once)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        import tempfile

        os.environ["DAGSTER_HOME"] = tempfile.mkdtemp(prefix=f"oprag-dagster-{worker}-")


def shared_corpus(name: str) -> Path:
    """A corpus from ../shared/data, or a skip that says why it is missing."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"{path} not present: the real corpora in ../shared/data are only on development machines")
    return path


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "data"
    (root / "raw").mkdir(parents=True)
    monkeypatch.setenv("OPRAG_DATA_DIR", str(root))
    monkeypatch.delenv("OPRAG_WAREHOUSE", raising=False)
    return root


@pytest.fixture
def dagster_instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    with DagsterInstance.local_temp(str(home)) as instance:
        yield instance


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        for line in lines:
            handle.write(line if isinstance(line, bytes) else line.encode("utf-8"))
            handle.write(b"\n")
    return path


@pytest.fixture(autouse=True)
def _no_network_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a paid API by accident: a real key in the developer's shell is hidden."""
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        if name in os.environ:
            monkeypatch.delenv(name)


def materialize_domain(
    assets, data_dir: Path, instance: DagsterInstance, domain: str, selection=None, run_config=None
) -> dict:
    """Materialize `assets` for one domain through Dagster with the real resources; metadata per asset key."""
    from dagster import AssetCheckSeverity, materialize

    from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
    from oprag_pipeline.resources import build_resources

    if domain not in instance.get_dynamic_partitions(DOMAIN_PARTITIONS_NAME):
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, [domain])
    result = materialize(
        assets,
        partition_key=domain,
        instance=instance,
        resources=build_resources(data_dir),
        selection=selection,
        run_config=run_config,
    )
    assert result.success
    # a failed check of severity WARN is a warning the asset raises on purpose (e.g. opinion drift), not a failure
    checks = {
        c.asset_key.to_user_string(): c.passed or c.severity == AssetCheckSeverity.WARN
        for c in result.get_asset_check_evaluations()
    }
    assert all(checks.values()), checks
    return {
        e.asset_key.to_user_string(): {
            k: v.value for k, v in e.step_materialization_data.materialization.metadata.items()
        }
        for e in result.get_asset_materialization_events()
    }


GENERATION_DOMAIN = "seller_forum"


@pytest.fixture(scope="session")
def generation_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    """A small demo corpus (`oprag generate-demo --docs 200`, all of it in the seller-forum domain) run through the
    whole graph, generation included; shared by the generation and `oprag serve` tests (one run per session).

    200 documents of one domain, not 100 of each of two: at 100 the only gold-backed entity with the 20 mentions an
    evaluated entity needs was the fulfilment fee, planted 17 to 1 negative, so whether it counted as disputed
    (H(e) >= 0.6) turned on the extractor's mistakes, and with it whether the evaluation had gold at all."""
    from oprag_pipeline.definitions import ALL_ASSETS
    from oprag_pipeline.demo import generate_demo

    root = tmp_path_factory.mktemp("generation")
    data_dir = root / "data"
    generate_demo(data_dir, docs=200, seed=7, domains=(GENERATION_DOMAIN,))
    (root / "home").mkdir()
    previous = os.environ.get("OPRAG_DATA_DIR")
    os.environ["OPRAG_DATA_DIR"] = str(data_dir)
    try:
        with DagsterInstance.local_temp(str(root / "home")) as instance:
            # three evaluated entities (the gold-backed ones come first): 30 questions keep the session fixture short
            entities = {"ops": {"evaluation_entities": {"config": {"max_entities": 3}}}}
            metadata = materialize_domain(ALL_ASSETS, data_dir, instance, GENERATION_DOMAIN, run_config=entities)
        yield data_dir, metadata
    finally:
        if previous is None:
            os.environ.pop("OPRAG_DATA_DIR", None)
        else:
            os.environ["OPRAG_DATA_DIR"] = previous
