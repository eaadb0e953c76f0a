"""Where things live on disk (the variables that move them are declared in `config.py`).

Every path is resolved from the environment at call time (not import time) so that tests, the CLI and
`dagster dev` can each point the same code at a different data directory without reloading modules.

Run from a checkout, the data directory and the SQL models are the checkout's `data/` and `dbt_like_sql/`. Installed
from a wheel (`pip install .`), there is no checkout: the data directory is `./data` of the current working folder
and the SQL models are the copy shipped inside the package (`oprag_pipeline/dbt_like_sql/`, found with
`importlib.resources`). `OPRAG_DATA_DIR` and `OPRAG_SQL_DIR` override both.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from oprag_pipeline import config
from oprag_pipeline.config import ConfigError

DATA_DIR_ENV = "OPRAG_DATA_DIR"
WAREHOUSE_ENV = "OPRAG_WAREHOUSE"
SQL_DIR_ENV = "OPRAG_SQL_DIR"
MODEL_DIR_ENV = "OPRAG_MODEL_DIR"
DEVICE_ENV = "OPRAG_DEVICE"

RATED_ASPECTS_FILE = "_rated_aspects.json"
"""In a domain folder: `{aspect: [entity names that honestly name it]}` for the documents' `rating_<aspect>` columns,
written by the importer that knows the source's rated aspects and read by the gold mapping; the leading underscore
keeps ingest from reading it as documents."""

# A domain name becomes a folder, a Dagster partition key and part of Qdrant collection names (`<domain>.raw_kb`),
# so it must be valid in all three on every platform: ASCII letters and digits, '-' and '_', starting with a letter
# or digit (a leading '-' reads as a command-line option, a leading '.' or '_' marks a hidden or work folder), at
# most 64 characters (well under every file-system and Qdrant limit, with room for the collection suffixes).
DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
DOMAIN_NAME_RULE = "ASCII letters, digits, '-' and '_', starting with a letter or digit, at most 64 characters"


SQL_MODELS_FOLDER = "dbt_like_sql"
"""The SQL models' folder: at the top of the checkout, and (through the symbolic link
`oprag_pipeline/dbt_like_sql`, which the wheel's package data follows) inside the installed package."""


def checkout_root() -> Path | None:
    """The checkout the package runs from (the folder holding `pyproject.toml` and `dbt_like_sql/` next to
    `oprag_pipeline/`), or None when the package is installed (a wheel in site-packages)."""
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / SQL_MODELS_FOLDER).is_dir():
        return root
    return None


def project_root() -> Path:
    """The checkout root; installed from a wheel, the current working folder, which then plays its part (it holds
    `data/` and `registry_overrides/`)."""
    return checkout_root() or Path.cwd()


def data_dir() -> Path:
    """`OPRAG_DATA_DIR` if set, else `data/` in the checkout; installed from a wheel (no checkout), `./data` of the
    current working folder."""
    return config.value(DATA_DIR_ENV) or project_root() / "data"


def models_dir() -> Path:
    """`OPRAG_MODEL_DIR`, else `models/` inside the data directory: where the offline MiniLM and BM25 folders are
    assembled on first use."""
    return config.value(MODEL_DIR_ENV) or data_dir() / "models"


def device() -> str:
    """`OPRAG_DEVICE`: which onnxruntime providers the ONNX models run on (`accelerators.select_providers`)."""
    return config.value(DEVICE_ENV)


def raw_dir(base: Path | None = None) -> Path:
    """Input folder: one sub-folder per domain."""
    return (base or data_dir()) / "raw"


def truth_dir(base: Path | None = None) -> Path:
    """Planted ground truth of generated corpora; the pipeline itself never reads it."""
    return (base or data_dir()) / "truth"


def warehouse_path(base: Path | None = None) -> Path:
    """`OPRAG_WAREHOUSE`, else `warehouse.duckdb` inside the data directory."""
    configured = config.value(WAREHOUSE_ENV)
    if configured and base is None:
        return configured
    return (base or data_dir()) / "warehouse.duckdb"


def sql_models_dir() -> Path:
    """The SQL models of the evaluation marts: `OPRAG_SQL_DIR` if set, else `dbt_like_sql/` in the checkout; installed
    from a wheel, the copy in the package (`importlib.resources`: `oprag_pipeline/dbt_like_sql/` in site-packages)."""
    configured = config.value(SQL_DIR_ENV)
    if configured:
        return configured
    root = checkout_root()
    if root is not None:
        return root / SQL_MODELS_FOLDER
    return Path(str(resources.files("oprag_pipeline") / SQL_MODELS_FOLDER))


def reports_dir(base: Path | None = None) -> Path:
    """`reports/<domain>/` holds each domain's evaluation report."""
    return (base or data_dir()) / "reports"


def check_domain_name(name: str) -> str:
    """The name itself if it is a safe domain name, else ConfigError saying which characters are allowed."""
    if not DOMAIN_NAME.fullmatch(name or ""):
        raise ConfigError(f"invalid domain name {name!r}: use {DOMAIN_NAME_RULE}")
    return name


def domain_dir(name: str, base: Path | None = None) -> Path:
    """`raw/<name>/`, refusing unsafe names and a folder (or link) that resolves outside `raw/`."""
    root = raw_dir(base)
    folder = root / check_domain_name(name)
    if folder.exists() and not folder.resolve().is_relative_to(root.resolve()):
        raise ConfigError(f"domain {name!r}: {folder} leads outside {root} ({folder.resolve()}); refusing to read it")
    return folder


def list_domains(base: Path | None = None) -> list[str]:
    """Domains are the sub-folders of `raw/` with a safe name (hidden and `_` folders excluded)."""
    root = raw_dir(base)
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and DOMAIN_NAME.fullmatch(p.name) and p.resolve().is_relative_to(root.resolve())
    )


def refused_domain_folders(base: Path | None = None) -> dict[str, str]:
    """Sub-folders of `raw/` that look like domains but are not read, with the reason (shown, never silent)."""
    root = raw_dir(base)
    if not root.is_dir():
        return {}
    refused: dict[str, str] = {}
    for path in sorted(root.iterdir()):
        if not path.is_dir() or path.name.startswith((".", "_")):
            continue
        if not DOMAIN_NAME.fullmatch(path.name):
            refused[path.name] = f"invalid domain name {path.name!r}: rename the folder using {DOMAIN_NAME_RULE}"
        elif not path.resolve().is_relative_to(root.resolve()):
            refused[path.name] = f"domain folder {path.name!r} links outside {root}; refusing to read it"
    return refused
