"""Where things live on disk.

Every path is resolved from the environment at call time (not import time) so that tests, the CLI and
`dagster dev` can each point the same code at a different data directory without reloading modules.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "OPRAG_DATA_DIR"
WAREHOUSE_ENV = "OPRAG_WAREHOUSE"
MAX_TEXT_CHARS_ENV = "OPRAG_MAX_TEXT_CHARS"
SQL_DIR_ENV = "OPRAG_SQL_DIR"

DEFAULT_MAX_TEXT_CHARS = 100_000
RATED_ASPECTS_FILE = "_rated_aspects.json"
"""In a domain folder: `{aspect: [entity names that honestly name it]}` for the documents' `rating_<aspect>` columns,
written by the importer that knows the source's rated aspects and read by the gold mapping; the leading underscore
keeps ingest from reading it as documents."""


def project_root() -> Path:
    """The checkout root: the folder that holds `pyproject.toml`."""
    return Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """`OPRAG_DATA_DIR`, else `data/` in the checkout."""
    configured = os.environ.get(DATA_DIR_ENV)
    return Path(configured).expanduser().resolve() if configured else project_root() / "data"


def raw_dir(base: Path | None = None) -> Path:
    """Input folder: one sub-folder per domain."""
    return (base or data_dir()) / "raw"


def truth_dir(base: Path | None = None) -> Path:
    """Planted ground truth of generated corpora; the pipeline itself never reads it."""
    return (base or data_dir()) / "truth"


def warehouse_path(base: Path | None = None) -> Path:
    """`OPRAG_WAREHOUSE`, else `warehouse.duckdb` inside the data directory."""
    configured = os.environ.get(WAREHOUSE_ENV)
    if configured and base is None:
        return Path(configured).expanduser().resolve()
    return (base or data_dir()) / "warehouse.duckdb"


def sql_models_dir() -> Path:
    """`OPRAG_SQL_DIR`, else `dbt_like_sql/` in the checkout: the SQL models of the evaluation marts."""
    configured = os.environ.get(SQL_DIR_ENV)
    return Path(configured).expanduser().resolve() if configured else project_root() / "dbt_like_sql"


def reports_dir(base: Path | None = None) -> Path:
    """`reports/<domain>/` holds each domain's evaluation report."""
    return (base or data_dir()) / "reports"


def max_text_chars() -> int:
    """Texts longer than this are quarantined: they would dominate chunking and extraction cost."""
    return int(os.environ.get(MAX_TEXT_CHARS_ENV, DEFAULT_MAX_TEXT_CHARS))


def list_domains(base: Path | None = None) -> list[str]:
    """Domains are the sub-folders of `raw/` (hidden folders excluded)."""
    root = raw_dir(base)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
