"""A wheel install works outside the checkout: built from the working tree, installed into a fresh virtualenv and
run from another folder, the package finds its SQL models inside itself and its data directory under the working
folder, and `oprag --help` runs.

No network: the wheel is built with the project's own setuptools (`--no-build-isolation --no-index`), and the fresh
virtualenv borrows the project virtualenv's dependencies through a `.pth` file instead of downloading them
(`--no-deps`). The `.pth` adds that folder to `sys.path` after the fresh virtualenv's own site-packages, and a `.pth`
file inside it (the checkout's editable install) is not processed, so the checkout cannot be imported instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]

# What runs in the fresh virtualenv, from a folder outside the checkout: where things resolve, and the evaluation
# assets that the definitions build from the SQL models (so the shipped folder is not only found but readable).
PROBE = """
import json
import oprag_pipeline
from oprag_pipeline import definitions, settings

sql = settings.sql_models_dir()
print(json.dumps({
    "package": oprag_pipeline.__file__,
    "checkout": settings.checkout_root() and str(settings.checkout_root()),
    "sql_dir": str(sql),
    "sql_files": sorted(p.relative_to(sql).as_posix() for p in sql.rglob("*.sql")),
    "data_dir": str(settings.data_dir()),
    "warehouse": str(settings.warehouse_path()),
    "sql_assets": sorted(
        k.to_user_string() for k in definitions.defs.resolve_all_asset_keys() if k.path[0].startswith(("mart_", "stg_"))
    ),
}))
"""


def _run(args: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow  # builds and installs a wheel (about 15 s)
def test_a_wheel_installed_in_a_fresh_virtualenv_finds_its_sql_models_and_data_dir(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    # the environment of a user who has set nothing: no OPRAG_* variable, no path pointing into the checkout
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPRAG_", "PYTHON", "PIP_")) and k not in ("VIRTUAL_ENV", "DAGSTER_HOME")
    }

    # `pip install .` from a copy of the working tree, so the build writes nothing into the checkout
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("oprag_pipeline", "dbt_like_sql"):
        shutil.copytree(CHECKOUT / name, source / name, symlinks=True, ignore=ignore)
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w", wheels, source], tmp_path, env)
    (wheel,) = wheels.glob("oprag-*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, env)
    python = venv / "bin" / "python"
    site_packages = Path(
        _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env).strip()
    )
    project_site = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site_packages / "_project_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(project_site)))
    _run([*pip, "--python", python, "install", "-q", "--no-deps", "--no-index", wheel], tmp_path, env)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = json.loads(_run([python, "-c", PROBE], elsewhere, env).strip().splitlines()[-1])

    site_packages = site_packages.resolve()
    assert Path(found["package"]).resolve().is_relative_to(site_packages), found["package"]  # not the checkout
    assert found["checkout"] is None
    assert Path(found["sql_dir"]).resolve() == site_packages / "oprag_pipeline" / "dbt_like_sql"
    shipped = sorted(
        p.relative_to(CHECKOUT / "dbt_like_sql").as_posix() for p in (CHECKOUT / "dbt_like_sql").rglob("*.sql")
    )
    assert found["sql_files"] == shipped
    assert len(found["sql_assets"]) == len(list((CHECKOUT / "dbt_like_sql" / "models").rglob("*.sql")))
    assert Path(found["data_dir"]) == elsewhere.resolve() / "data"
    assert Path(found["warehouse"]) == elsewhere.resolve() / "data" / "warehouse.duckdb"

    # every file of the package the checkout tracks is installed: a data file that package-data misses fails here
    tracked = subprocess.run(
        ["git", "ls-files", "oprag_pipeline"], cwd=CHECKOUT, capture_output=True, text=True, check=False
    )
    if tracked.returncode == 0:
        wanted = {name for name in tracked.stdout.splitlines() if (CHECKOUT / name).is_file()}
        installed = {p.relative_to(site_packages).as_posix() for p in (site_packages / "oprag_pipeline").rglob("*")}
        assert not wanted - installed, sorted(wanted - installed)

    usage = _run([venv / "bin" / "oprag", "--help"], elsewhere, env)
    assert usage.startswith("Usage: oprag")
    assert not any(elsewhere.iterdir()), "nothing is written to the working folder by --help or loading definitions"
