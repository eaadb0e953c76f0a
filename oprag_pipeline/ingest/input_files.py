"""Which files of a domain folder are inputs, in what order, and why every other file is not read."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

SUPPORTED_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet")

# Why files are not read at all: listed, never silently ignored.
SKIP_HIDDEN = "hidden file (name starts with '.'): editors and partial downloads"
SKIP_UNDERSCORE = "name starts with '_': reserved for work files"
SKIP_SYMLINK_OUTSIDE = "symbolic link to a path outside data/raw"
SKIP_NOT_A_FILE = "not a regular file"


def logical_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


_OTHER_COMPRESSIONS = {".bz2": "bzip2", ".xz": "xz", ".zst": "zstandard", ".zip": "zip", ".7z": "7-zip"}


@dataclass(frozen=True)
class SkippedFile:
    """A file in a domain folder that is not read, and why: shown in the asset's metadata and the run log."""

    file: str
    reason: str


def scan_input_files(domain_dir: Path, raw_root: Path | None = None) -> tuple[list[Path], list[SkippedFile]]:
    """(input files in a stable order, every other file with the reason it is not read).

    The order decides which of two conflicting rows wins. Links are followed only where they stay inside
    `raw_root` (default: the domain folder's parent, i.e. data/raw), so a link cannot pull outside files into
    the warehouse.
    """
    root = (raw_root or domain_dir.parent).resolve()
    inputs: list[Path] = []
    skipped: list[SkippedFile] = []
    for folder, dirnames, filenames in os.walk(domain_dir, followlinks=False):
        folder_path = Path(folder)
        for name in sorted(dirnames):
            path = folder_path / name
            relative = str(path.relative_to(domain_dir))
            if path.is_symlink():
                dirnames.remove(name)
                skipped.append(SkippedFile(relative + "/", "symbolic link to a folder: not followed"))
            elif name.startswith((".", "_")):
                dirnames.remove(name)
                skipped.append(SkippedFile(relative + "/", SKIP_HIDDEN if name[0] == "." else SKIP_UNDERSCORE))
        dirnames.sort()
        for name in filenames:
            path = folder_path / name
            relative = str(path.relative_to(domain_dir))
            reason = _skip_reason(path, name, root)
            if reason is None:
                inputs.append(path)
            else:
                skipped.append(SkippedFile(relative, reason))
    inputs.sort()
    skipped.sort(key=lambda item: item.file)
    return inputs, skipped


def _skip_reason(path: Path, name: str, root: Path) -> str | None:
    if name.startswith("."):
        return SKIP_HIDDEN
    if name.startswith("_"):
        return SKIP_UNDERSCORE
    if path.is_symlink():
        target = path.resolve()
        if not target.is_relative_to(root):
            return f"{SKIP_SYMLINK_OUTSIDE} ({target})"
    if not path.is_file():
        return SKIP_NOT_A_FILE
    suffix = path.suffix.lower()
    if suffix in _OTHER_COMPRESSIONS:
        return f"compressed with {_OTHER_COMPRESSIONS[suffix]}: only gzip (.gz) is read; decompress it or use gzip"
    logical = logical_suffix(path)
    if logical not in SUPPORTED_SUFFIXES:
        shown = logical or "(none)"
        return f"unsupported file type {shown!r}: inputs are {', '.join(SUPPORTED_SUFFIXES)}, optionally gzipped"
    return None


def list_input_files(domain_dir: Path) -> list[Path]:
    """Input files of a domain in a stable order (see `scan_input_files` for those that are not)."""
    return scan_input_files(domain_dir)[0]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
