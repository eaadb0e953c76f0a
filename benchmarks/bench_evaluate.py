"""Evaluation benchmark: the whole evaluation grid on an already indexed domain, with the time of every stage.

What runs: `oprag run --select 'group:evaluation'` for the domain, in a fresh process on the data directory's own
Dagster instance — evaluation entities, questions (10 entities × 5 types × 2 wordings = 100 questions by
default), the retrieval grid (every question × {raw, entity_split, enriched} × {semantic, hybrid} plus balanced on
the enriched KB × k ∈ {10, 20, 40, 60}), gold labels, per-question metrics, the SQL marts with their data tests,
the paired tests and the report. Step durations are read back from what Dagster recorded.

Target: 100 questions on the full TripAdvisor hotel corpus (229k reviews) in ≤ 5 minutes. The domain
must have been enriched and indexed first (`oprag import tripadvisor … && oprag run`); the corpus size the figure
belongs to is printed with it.

At the corpus's full size the knowledge bases hold millions of points, and embedding them with MiniLM on 2 cores
takes many hours. `--stand-in-dense` first indexes the domain through the pipeline's own index assets with real
BM25 and hash-seeded random dense vectors (see `index_stand_in_dense.py`). `bench_stand_in_dense.py` measured them
against MiniLM vectors of the same 50,000 texts: queries took 1.3-1.9 times as long and indexing 1.7 times, so the
timings are an upper bound; the retrieved hits mean nothing, so quote no metric from such a run.

    .venv/bin/python benchmarks/bench_evaluate.py --data-dir DATA_DIR --domain DOMAIN [--stand-in-dense]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_enrich import ROOT, known_run_ids, oprag, recorded_runs

TARGET_SECONDS = 300.0


def evaluation_stages() -> list[str]:
    """The evaluation group's assets as the definitions list them (read from there, not a copy of them)."""
    from oprag_pipeline.definitions import ALL_ASSETS

    return [k.to_user_string() for a in ALL_ASSETS for k in a.keys if a.group_names_by_key.get(k) == "evaluation"]


def corpus_size(data_dir: Path, domain: str) -> dict[str, int]:
    import duckdb

    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        count = lambda sql: conn.execute(sql, [domain]).fetchone()[0]  # noqa: E731
        return {
            "documents": count("SELECT count(*) FROM raw_documents WHERE domain = ?"),
            "opinions": count("SELECT count(*) FROM opinions WHERE domain = ?"),
            "raw chunks": count("SELECT count(*) FROM raw_chunks WHERE domain = ?"),
            "entity documents": count("SELECT count(*) FROM enriched_entity_docs WHERE domain = ?"),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data")
    parser.add_argument("--domain", required=True)
    parser.add_argument(
        "--stand-in-dense",
        action="store_true",
        help="index the enriched domain first with real BM25 and random dense vectors (timing only)",
    )
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    if not (data_dir / "warehouse.duckdb").exists():
        sys.exit(f"no warehouse in {data_dir}: enrich and index the domain first (oprag --data-dir … run)")
    if args.stand_in_dense:
        started = time.perf_counter()
        script = Path(__file__).with_name("index_stand_in_dense.py")
        command = [sys.executable, str(script), "--data-dir", str(data_dir), "--domain", args.domain]
        if subprocess.run(command, cwd=ROOT).returncode != 0:
            sys.exit("indexing with stand-in dense vectors failed")
        print(f"indexed with stand-in dense vectors in {time.perf_counter() - started:,.0f} s (timing only)")
    size = corpus_size(data_dir, args.domain)
    if not size["entity documents"]:
        sys.exit(f"{args.domain}: nothing is enriched and indexed in {data_dir}; run the pipeline first")
    env = {k: v for k, v in os.environ.items() if k not in {"OPRAG_DATA_DIR", "OPRAG_WAREHOUSE"}}
    env.update({"DAGSTER_HOME": str(data_dir / "dagster_home"), "TQDM_DISABLE": "1"})
    log = data_dir / "bench_evaluate.log"
    before = known_run_ids(data_dir)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    oprag(data_dir, ["run", "--domain", args.domain, "--select", "group:evaluation"], env, log)
    wall = time.perf_counter() - started
    runs = [r for r in recorded_runs(data_dir, before) if r.domain == args.domain]
    if not runs or not runs[0].success:
        sys.exit(f"the evaluation run failed; see {log}")
    run = runs[0]
    grid = run.metadata.get("retrieval_runs", {})
    print(f"domain {args.domain} in {data_dir}")
    print("corpus: " + ", ".join(f"{v:,} {k}" for k, v in size.items()))
    print(
        f"questions {grid.get('questions')}, queries {grid.get('queries'):,}, hits {grid.get('hits'):,}, "
        f"{grid.get('queries_per_second')} queries/s in the grid step"
    )
    print(f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (2 cores)")
    print()
    print(f"{'stage':<26} {'seconds':>9}")
    total = 0.0
    for stage in evaluation_stages():
        seconds = sum(v for k, v in run.steps.items() if k == stage or k.startswith(f"{stage}."))
        total += seconds
        print(f"{stage:<26} {seconds:>9.2f}")
    print(f"{'all steps':<26} {total:>9.2f}")
    print(f"{'Dagster run (start→end)':<26} {run.seconds:>9.2f}")
    print(f"{'process incl. start-up':<26} {wall:>9.2f}")
    verdict = "met" if run.seconds <= TARGET_SECONDS else "NOT met"
    print(f"\ntarget ≤ {TARGET_SECONDS:.0f} s for 100 questions: {verdict} on {size['documents']:,} documents")


if __name__ == "__main__":
    main()
