"""Ingest benchmark: import ../shared/data/tripadvisor_hotels, then materialize `raw_documents` through Dagster.

Prints documents/s and peak RSS of the materialization (targets: >= 20,000 reviews/s, < 2 GB), and as a baseline
measured in the same run, DuckDB's own `read_json` of the same files (no validation, no quarantine).

    .venv/bin/python benchmarks/bench_ingest.py [--source DIR] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "tripadvisor_hotels" / "Texts"


def materialize_in_child(data_dir: Path) -> None:
    """Runs in a fresh interpreter so its peak RSS is the ingest step's own, not the importer's."""
    from dagster import DagsterInstance, materialize

    from oprag_pipeline.ingest.assets import raw_documents
    from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
    from oprag_pipeline.resources import build_resources

    with tempfile.TemporaryDirectory() as home, DagsterInstance.local_temp(home) as instance:
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["tripadvisor"])
        started = time.perf_counter()
        result = materialize(
            [raw_documents],
            partition_key="tripadvisor",
            instance=instance,
            resources=build_resources(data_dir=data_dir),
        )
        elapsed = time.perf_counter() - started
    meta = {k: v.value for k, v in result.asset_materializations_for_node("raw_documents")[0].metadata.items()}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    step_seconds = meta["rows_read"] / meta["docs_per_second"]
    print(
        f"RESULT {meta['rows_read']} {meta['documents']} {meta['quarantined']} "
        f"{step_seconds:.3f} {elapsed:.3f} {peak_mb:.0f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        materialize_in_child(args.child)
        return 0
    if not args.source.exists():
        print(f"skipped: {args.source} not present (the real corpora live in ../shared/data)")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = (args.work or Path(scratch)) / "data"
        env = {**os.environ, "OPRAG_DATA_DIR": str(data_dir), "DAGSTER_HOME": str(Path(scratch) / "home")}
        oprag = [sys.executable, "-m", "oprag_pipeline.cli"]
        started = time.perf_counter()
        subprocess.run(
            [*oprag, "import", "tripadvisor", str(args.source), "--domain", "tripadvisor"], env=env, check=True
        )
        import_seconds = time.perf_counter() - started
        child = subprocess.run(
            [sys.executable, __file__, "--child", str(data_dir)], env=env, check=True, capture_output=True, text=True
        )
        line = next(line for line in child.stdout.splitlines() if line.startswith("RESULT "))
        rows_read, documents, quarantined, seconds, run_seconds, peak_mb = line.split()[1:]

        import duckdb

        files = sorted(str(p) for p in (data_dir / "raw" / "tripadvisor").glob("*.jsonl"))
        started = time.perf_counter()
        with duckdb.connect() as conn:
            baseline_rows = conn.execute(
                "SELECT count(*) FROM read_json(?, format='newline_delimited', maximum_object_size=100000000)", [files]
            ).fetchone()[0]
        baseline_seconds = time.perf_counter() - started

    rate = int(rows_read) / float(seconds)
    baseline_rate = baseline_rows / baseline_seconds
    print(f"import tripadvisor:          {import_seconds:8.1f} s")
    print(
        f"raw_documents:               {int(rows_read):,} rows read, {int(documents):,} accepted, "
        f"{int(quarantined):,} quarantined"
    )
    print(
        f"raw_documents throughput:    {rate:10,.0f} docs/s   (target >= 20,000)   {float(seconds):.1f} s in the step"
    )
    print(f"whole Dagster run:           {float(run_seconds):10.1f} s (instance, run and step bookkeeping included)")
    print(f"raw_documents peak RSS:      {float(peak_mb):10,.0f} MB       (target < 2,048)")
    print(
        f"baseline duckdb read_json:   {baseline_rate:10,.0f} docs/s   (no validation; ours is "
        f"{rate / baseline_rate:.2f}x of it)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
