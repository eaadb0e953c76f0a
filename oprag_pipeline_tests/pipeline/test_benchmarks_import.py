"""Every benchmark still imports: a benchmark is only run by hand, so a renamed symbol it uses would otherwise be
found by the next person who needs its figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[2] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_module_imports(path: Path) -> None:
    name = f"_oprag_benchmark_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
