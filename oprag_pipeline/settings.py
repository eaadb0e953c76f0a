"""Where things live on disk.

Every path is resolved from the environment at call time (not import time) so that tests, the CLI and
`dagster dev` can each point the same code at a different data directory without reloading modules.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DATA_DIR_ENV = "OPRAG_DATA_DIR"
WAREHOUSE_ENV = "OPRAG_WAREHOUSE"
MAX_TEXT_CHARS_ENV = "OPRAG_MAX_TEXT_CHARS"
SQL_DIR_ENV = "OPRAG_SQL_DIR"

EXTRACTOR_ENV = "OPRAG_EXTRACTOR"
EXTRACT_BATCH_SIZE_ENV = "OPRAG_EXTRACT_BATCH_SIZE"

DEFAULT_MAX_TEXT_CHARS = 100_000
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


class ConfigError(ValueError):
    """A setting or argument the user can fix; the CLI prints its message as one line, without a traceback."""


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


def _positive_int(variable: str, default: int) -> int:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{variable}={raw!r} is not a whole number (default {default})") from None
    if value < 1:
        raise ConfigError(f"{variable}={raw!r} must be at least 1 (default {default})")
    return value


def max_text_chars() -> int:
    """Texts longer than this are quarantined: they would dominate chunking and extraction cost."""
    return _positive_int(MAX_TEXT_CHARS_ENV, DEFAULT_MAX_TEXT_CHARS)


def extractor_kind() -> str:
    """`OPRAG_EXTRACTOR`: offline (default), anthropic or openai-compatible."""
    from oprag_pipeline.enrich.factory import EXTRACTORS

    kind = os.environ.get(EXTRACTOR_ENV, "").strip() or "offline"
    if kind not in EXTRACTORS:
        raise ConfigError(f"{EXTRACTOR_ENV}={kind!r} is not an extractor; choose one of {', '.join(EXTRACTORS)}")
    return kind


def extract_batch_size() -> int:
    """`OPRAG_EXTRACT_BATCH_SIZE`: documents per committed extraction batch (500 offline, 20 for an LLM, 10,000 for
    `anthropic-batch`, where each batch is one Message Batch: many small ones would each wait their turn)."""
    try:
        kind = extractor_kind()
    except ConfigError:  # reported on its own; the batch size is still checked
        kind = "offline"
    return _positive_int(EXTRACT_BATCH_SIZE_ENV, {"offline": 500, "anthropic-batch": 10_000}.get(kind, 20))


def _check_float(variable: str, *, minimum: float) -> None:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{variable}={raw!r} is not a number") from None
    if not value > minimum:  # also refuses nan
        raise ConfigError(f"{variable}={raw!r} must be greater than {minimum:g}")


def _check_price(variable: str) -> None:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return
    parts = raw.split(",")
    try:
        ok = len(parts) == 2 and all(float(part) >= 0 for part in parts)
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"{variable}={raw!r} must be 'input,output' in USD per million tokens, e.g. '3,15'")


def configuration_problems(*, pipeline: bool = True) -> list[str]:
    """Every problem with the environment, one line each (secrets are never shown, only whether they are set).

    `pipeline` adds what only a run needs (the extractor and its credentials); a query or a status read does not.
    Checked once when a command starts, so a typo fails in a second with its name rather than minutes into a run.
    """
    problems: list[str] = []

    def check(action) -> object:
        try:
            return action()
        except ConfigError as error:
            problems.append(str(error))
            return None

    check(max_text_chars)
    check(lambda: _positive_int("OPRAG_QDRANT_SEGMENT_KB", 1))
    check(lambda: _check_float("OPRAG_LLM_TIMEOUT", minimum=0))
    url = os.environ.get("QDRANT_URL", "").strip()
    if url and not re.match(r"https?://[^\s/]+", url):
        problems.append(f"QDRANT_URL={url!r} is not an http(s) URL, e.g. http://localhost:6333")
    if not pipeline:
        return problems
    kind = check(extractor_kind)
    check(extract_batch_size)
    scorer = os.environ.get("OPRAG_OFFLINE_SCORER", "").strip()
    if scorer and scorer not in ("model", "vader"):
        problems.append(f"OPRAG_OFFLINE_SCORER={scorer!r} must be 'model' or 'vader'")
    if kind in ("anthropic", "anthropic-batch"):
        if not os.environ.get("ANTHROPIC_API_KEY", "").strip():
            problems.append(f"{EXTRACTOR_ENV}={kind} needs ANTHROPIC_API_KEY in the environment (it is not set)")
        check(lambda: _check_price("OPRAG_ANTHROPIC_PRICE_PER_MTOK"))
    if kind == "openai-compatible":
        if not os.environ.get("OPRAG_OPENAI_MODEL", "").strip():
            problems.append(f"{EXTRACTOR_ENV}=openai-compatible needs OPRAG_OPENAI_MODEL (the model id to ask)")
        mode = os.environ.get("OPRAG_OPENAI_MODE", "").strip().lower()
        if mode and mode not in ("tools", "json", "json_schema"):
            problems.append(f"OPRAG_OPENAI_MODE={mode!r} must be tools, json or json_schema")
        check(lambda: _check_price("OPRAG_OPENAI_PRICE_PER_MTOK"))
    return problems


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
