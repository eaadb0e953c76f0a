"""Imports follow the pipeline's direction: an early stage must not load a later one's modules or libraries.

Each check runs in a fresh interpreter, because this test process has long since imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _loaded_after(module: str) -> list[str]:
    """The module names in `sys.modules` after a fresh interpreter imports `module`."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"importing {module} failed: {done.stderr.strip().splitlines()[-1:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_ingest_does_not_load_qdrant_or_the_vector_store() -> None:
    loaded = _loaded_after("oprag_pipeline.ingest.assets")
    assert "oprag_pipeline.ingest.assets" in loaded  # the probe really imported the stage
    offenders = [m for m in loaded if m.split(".")[0] in {"qdrant_client", "qdrant_edge"}]
    assert not offenders, f"ingest pulled in Qdrant: {offenders[:5]}"
    assert "oprag_pipeline.index.vector_store" not in loaded


@pytest.mark.parametrize("module", ["oprag_pipeline.registry.store", "oprag_pipeline.schema"])
def test_registry_store_does_not_load_enrich(module: str) -> None:
    loaded = _loaded_after(module)
    assert module in loaded
    enrich = [m for m in loaded if m == "oprag_pipeline.enrich" or m.startswith("oprag_pipeline.enrich.")]
    assert not enrich, f"{module} pulled in the enrich stage: {enrich[:5]}"


STAGES = ("ingest", "registry", "enrich", "index", "evaluate", "generate", "analysis", "importers", "demo")


def test_resources_load_no_stage_module() -> None:
    """Every stage imports `resources`; were it to import a stage at load time (it once pulled `enrich.ratings` for
    two field defaults), loading the ingest would load the enrich stage and its model code with it."""
    loaded = _loaded_after("oprag_pipeline.resources")
    assert "oprag_pipeline.resources" in loaded
    stages = [m for m in loaded if m.startswith("oprag_pipeline.") and m.split(".")[1] in STAGES]
    assert not stages, f"resources.py pulled in stage modules at import: {stages[:5]}"
    heavy = [m for m in loaded if m.split(".")[0] in {"numpy", "fastembed", "onnxruntime", "qdrant_client"}]
    assert not heavy, f"resources.py pulled in {heavy[:5]}"


def test_the_warehouse_module_loads_no_stage() -> None:
    """Every stage imports `oprag_pipeline.warehouse`; it must import none of them back."""
    loaded = _loaded_after("oprag_pipeline.warehouse")
    assert "oprag_pipeline.warehouse" in loaded
    offenders = [m for m in loaded if m.startswith("oprag_pipeline.") and m.split(".")[1] in STAGES]
    assert not offenders, f"oprag_pipeline.warehouse pulled in stage modules: {offenders[:5]}"
