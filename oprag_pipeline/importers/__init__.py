"""Importers: public opinion corpora -> the input contract (`<data_dir>/raw/<domain>/*.jsonl`).

Each format module exposes `convert(source, ctx, **options)`, a generator of `(file, number, row)` triples;
`run_import` owns everything around it (checking arguments, naming the output, writing it atomically,
validating rows) so the contract is enforced in one place for every format.

One import call writes one file, `<domain>/<format>-<source stem>.jsonl`. Re-running the same import replaces
that file in one atomic step, so imports are idempotent and never leave a half-written file behind; importing
a second source into the same domain adds a second file next to the first. doc_ids carry a per-format prefix
(`ta-`, `ukp-`, `absa-`, `hl-`, `ob-`) plus something stable from the source, so files of one domain do not
collide.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from oprag_pipeline.importers import huliu, memd_absa, opiniobank, semeval, table, tripadvisor, ukpconvarg
from oprag_pipeline.importers.common import (
    ImportContext,
    ImportResult,
    Rows,
    logical_stem,
    safe_file_part,
    write_jsonl_atomic,
)
from oprag_pipeline.settings import RATED_ASPECTS_FILE

Converter = Callable[..., Rows]

IMPORTERS: dict[str, Converter] = {
    "tripadvisor": tripadvisor.convert,
    "ukpconvarg": ukpconvarg.convert,
    "semeval-absa": semeval.convert,
    "memd-absa": memd_absa.convert,
    "huliu": huliu.convert,
    "opiniobank": opiniobank.convert,
    "table": table.convert,
}

# Formats whose documents carry `rating_<aspect>` stars, with the entity names each rated aspect covers: written
# next to the documents (`settings.RATED_ASPECTS_FILE`) so the gold mapping holds no domain's vocabulary.
RATED_ASPECTS: dict[str, Mapping[str, Sequence[str]]] = {"tripadvisor": tripadvisor.RATED_ASPECT_TERMS}

__all__ = ["IMPORTERS", "RATED_ASPECTS", "ImportResult", "output_path", "run_import"]


def _check_domain(domain: str) -> str:
    """A domain is a folder name under raw/: refuse anything that would escape it or be ignored by ingest."""
    name = domain.strip()
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith((".", "_")):
        raise ValueError(
            f"invalid domain name {domain!r}: use a plain folder name (no slashes, not starting with '.' or '_')"
        )
    return name


def output_path(fmt: str, source: Path, domain: str, data_dir: Path) -> Path:
    """Where `run_import(fmt, source, domain, data_dir)` writes: `<data_dir>/raw/<domain>/<fmt>-<stem>.jsonl`."""
    return Path(data_dir) / "raw" / _check_domain(domain) / f"{fmt}-{safe_file_part(logical_stem(Path(source)))}.jsonl"


def run_import(
    fmt: str,
    source: Path,
    domain: str,
    data_dir: Path,
    *,
    progress: bool = False,
    **options: Any,
) -> ImportResult:
    """Convert `source` (a file or folder in format `fmt`) into one JSONL file of domain `domain`.

    Raises ValueError for an unknown format (naming the known ones) or a bad domain name, FileNotFoundError
    when `source` does not exist, TypeError for options the format does not take. Records that cannot be
    converted are listed in `ImportResult.skipped`; they never abort the import.
    """
    if fmt not in IMPORTERS:
        raise ValueError(f"unknown import format {fmt!r}; known formats: {', '.join(sorted(IMPORTERS))}")
    source = Path(source).expanduser()
    if not source.exists():
        raise FileNotFoundError(f"import source not found: {source}")
    target = output_path(fmt, source, domain, data_dir)
    ctx = ImportContext(progress=progress)
    rows = IMPORTERS[fmt](source, ctx, **options)
    documents = write_jsonl_atomic(target, rows, ctx)
    written = [target]
    if fmt in RATED_ASPECTS and documents:
        written.append(write_rated_aspects(target.parent, RATED_ASPECTS[fmt]))
    return ImportResult(
        format=fmt,
        domain=_check_domain(domain),
        files_written=written,
        documents=documents,
        skipped=ctx.skipped,
        warnings=ctx.warnings,
    )


def write_rated_aspects(domain_dir: Path, terms: Mapping[str, Sequence[str]]) -> Path:
    """Merge `terms` into the domain's rated-aspects file (atomically, like the documents); returns its path."""
    path = Path(domain_dir) / RATED_ASPECTS_FILE
    merged: dict[str, list[str]] = {}
    if path.exists():
        try:
            merged = {str(k): list(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
        except (ValueError, AttributeError, TypeError) as error:
            raise ValueError(f"{path}: not an object of aspect -> list of names ({error}); remove or fix it") from error
    for aspect, names in terms.items():
        merged[aspect] = list(dict.fromkeys([*merged.get(aspect, []), *names]))
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    ) as handle:
        json.dump(merged, handle, ensure_ascii=False, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(handle.name, path)
    return path
