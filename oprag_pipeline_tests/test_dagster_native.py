"""Dagster-native operation: the instance's concurrency settings, the warehouse pool, standalone asset checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from oprag_pipeline.cli import dagster_instance
from oprag_pipeline.definitions import build_definitions


def test_cli_instance_uses_current_concurrency_settings(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dagster.yaml the CLI writes loads with one run at a time and a limit of 1 on every pool."""
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    home.mkdir()
    # A file an older oprag wrote, with the legacy key, is brought up to date; a user's own file is left alone.
    (home / "dagster.yaml").write_text("# Written by oprag.\nrun_queue:\n  max_concurrent_runs: 1\n")
    config = dagster_instance().get_concurrency_config()
    assert "run_queue" not in (home / "dagster.yaml").read_text()
    assert config.run_queue_config.max_concurrent_runs == 1
    assert config.pool_config.default_pool_limit == 1
    own = "concurrency:\n  runs:\n    max_concurrent_runs: 3\n"
    (home / "dagster.yaml").write_text(own)
    assert dagster_instance().get_concurrency_config().run_queue_config.max_concurrent_runs == 3


def test_every_asset_is_in_the_warehouse_pool(data_dir: Path) -> None:
    """Each asset opens the single-writer DuckDB file, so each one queues on the `warehouse` pool."""
    graph = build_definitions().resolve_asset_graph()
    outside = sorted(k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).pools != {"warehouse"})
    assert outside == []
