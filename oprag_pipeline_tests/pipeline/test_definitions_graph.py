"""The asset graph as Dagster resolves it: every dependency named by string is a real asset of the definitions.

A `deps=["some_name"]` that names nothing is not an error to Dagster: it becomes an external asset that is never
materialized, and the asset depending on it silently loses its upstream. So the names are checked here.
"""

from __future__ import annotations

import pytest
from dagster import AssetKey

from oprag_pipeline.definitions import build_definitions


def test_every_dependency_names_an_asset_of_the_definitions() -> None:
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    materializable = {key for key in graph.get_all_asset_keys() if graph.get(key).is_materializable}
    assert AssetKey("raw_documents") in materializable  # the graph was really read
    dangling = {
        (key.to_user_string(), parent.to_user_string())
        for key in materializable
        for parent in graph.get(key).parent_keys
        if parent not in materializable
    }
    assert not dangling, f"dependencies on assets that do not exist: {sorted(dangling)}"


def test_every_asset_check_targets_an_asset_of_the_definitions() -> None:
    """An asset check (standalone `@asset_check(asset=...)` or a spec on an asset) names its target by key too; a
    wrong name would leave the check attached to an asset nothing materializes, so it never runs."""
    graph = build_definitions().resolve_asset_graph()
    materializable = {key for key in graph.get_all_asset_keys() if graph.get(key).is_materializable}
    checks = set(graph.asset_check_keys)
    assert any(c.name == "rows_reconcile" for c in checks)  # the standalone checks were really read
    orphans = sorted(f"{c.asset_key.to_user_string()}:{c.name}" for c in checks if c.asset_key not in materializable)
    assert not orphans, f"asset checks on assets that do not exist: {orphans}"


def test_the_pipeline_runs_from_ingest_to_the_report() -> None:
    """The graph is one chain, not islands: the report is downstream of ingest."""
    graph = build_definitions().resolve_asset_graph()
    upstream = graph.get_ancestor_asset_keys(AssetKey("evaluation_report"))
    for stage in ("raw_documents", "entity_registry", "opinions", "enriched_kb", "raw_kb", "question_metrics"):
        assert AssetKey(stage) in upstream, stage


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_loading_the_definitions_raises_no_deprecation_warning() -> None:
    """A deprecated Dagster call (e.g. `define_asset_job(partitions_def=…)`) warns on every `dagster dev`; the job
    takes its partitions from its assets instead. Run in a fresh interpreter so already-imported modules do not
    hide the warnings of module import."""
    import subprocess
    import sys

    script = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from oprag_pipeline.definitions import defs\n"
        "    job = defs.resolve_job_def('domain_refresh_job')\n"
        "found = [f'{w.category.__name__}: {w.message}' for w in caught\n"
        "         if issubclass(w.category, DeprecationWarning) and 'oprag_pipeline' in w.filename]\n"
        "assert job.partitions_def is not None, 'the refresh job lost its domain partitions'\n"
        "print('\\n'.join(found))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "", result.stdout
