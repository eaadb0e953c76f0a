"""Imports follow the pipeline's direction: an early stage must not load a later one's modules or libraries.

Each check runs in a fresh interpreter, because this test process has long since imported everything.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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


STAGES = ("ingest", "registry", "enrich", "index", "evaluate", "generate", "analysis", "report", "importers", "demo")


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


# --- the import graph read from the source (benchmarks/import_graph.py), imports inside functions included ----------

IMPORT_GRAPH = REPO / "benchmarks" / "import_graph.py"


def _import_graph_module():
    """`benchmarks/import_graph.py`, loaded from its file as `test_benchmarks_import.py` loads every benchmark."""
    name = "_oprag_benchmark_import_graph"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, IMPORT_GRAPH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_the_package_has_no_import_cycle_counting_imports_inside_functions() -> None:
    graph_module = _import_graph_module()
    graph = graph_module.import_graph()
    assert sum(e.nested for edges in graph.values() for e in edges) > 0  # the imports inside functions are read
    found = graph_module.cycles(graph)
    described = [
        f"{e.source}:{e.line} -> {e.target}" for component in found for e in graph_module.cycle_edges(graph, component)
    ]
    assert not found, f"import cycles: {found}; their imports: {described}"


def test_the_graph_sees_a_cycle_closed_inside_a_function(tmp_path: Path) -> None:
    """The check is not vacuous: a cycle whose closing import runs only when a function is called is found, and a
    `TYPE_CHECKING` import (never executed) is not an edge."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def late():\n    from pkg import high\n    return high\n")
    (package / "high.py").write_text("from pkg.low import late\n")
    (package / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import high\n")
    (package / "other.py").write_text("from . import typed\n")
    graph_module = _import_graph_module()
    graph = graph_module.import_graph(tmp_path, "pkg")
    assert graph_module.cycles(graph) == [["pkg.high", "pkg.low"]]
    assert [e.target for e in graph["pkg.typed"]] == []
    assert [e.target for e in graph["pkg.other"]] == ["pkg.typed"]
    typed = graph_module.import_graph(tmp_path, "pkg", type_checking=True)["pkg.typed"]
    assert [e.target for e in typed] == ["pkg.high"]


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("oprag_pipeline.resources", "oprag_pipeline.runner"),  # the writer lock lives in `locks`
        ("oprag_pipeline.locks", "oprag_pipeline."),
        ("oprag_pipeline.sources", "oprag_pipeline."),  # source grouping, shared by fairness and flooding
        ("oprag_pipeline.rendering", "oprag_pipeline."),  # tables and inline plots, below every stage
        ("oprag_pipeline.index.", "oprag_pipeline.analysis."),
        ("oprag_pipeline.registry.", "oprag_pipeline.enrich."),  # the registry runs before the extraction
    ],
)
def test_no_backward_import_anywhere_in_a_module(importer: str, imported: str) -> None:
    graph = _import_graph_module().import_graph()
    backward = [
        f"{e.source}:{e.line} -> {e.target}"
        for module, edges in graph.items()
        if module == importer or module.startswith(importer)
        for e in edges
        if e.target == imported or e.target.startswith(imported)
    ]
    assert not backward, f"backward imports: {backward}"


PIPELINE_ORDER = ("ingest", "registry", "enrich", "index", "evaluate", "generate", "analysis", "report")
"""The stages in the pipeline's direction; the report comes last. Generation and the analyses import neither other."""


def test_no_stage_imports_a_later_one() -> None:
    """A stage may import the stages before it, never one after: the report reads every stage, and none reads it
    (the tables and inline plots they put in their metadata come from `oprag_pipeline.rendering`)."""
    graph = _import_graph_module().import_graph()
    position = {stage: i for i, stage in enumerate(PIPELINE_ORDER)}

    def stage(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in position else None

    assert any(stage(m) == "report" for m in graph)  # the report stage was really read
    forward = [
        f"{e.source}:{e.line} -> {e.target}"
        for module, edges in graph.items()
        if stage(module) is not None
        for e in edges
        if stage(e.target) is not None and position[stage(e.target)] > position[stage(module)]
    ]
    assert not forward, f"imports of a later stage: {forward}"
