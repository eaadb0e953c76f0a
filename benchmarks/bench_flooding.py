"""Opinion flooding: how far a flood of near-identical posts moves P_pop and balanced retrieval, with and without
the bounded-source defence (analysis/flooding.py).

Builds a demo hotels domain twice in one temporary data directory: `hotels` as generated, and `hotels_flooded`,
the same files plus N near-identical negative posts from a few accounts about one entity (default: 200 posts from
5 accounts about the pool, which the demo designs as 80% positive). Runs the real pipeline up to the enriched KB
and the source-concentration asset for both, then prints, for the flooded entity:

- P_pop (negative share, mean σ) on the clean domain, on the flooded domain unweighted, and bounded;
- W1 of each flooded estimate to the clean P_pop (how far the flood moved it);
- the σ mix that balanced retrieval (k = 20) returns for a question about the entity, with the plain profile and
  with the bounded profile, and its W1 to the clean P_pop;
- on the clean domain: W1 between bounded and unweighted P_pop per entity (the defence should not move a clean
  domain: ≤ 1 σ-point), for both policies.

    PYTHONPATH=. python benchmarks/bench_flooding.py --docs 600            # ~10 min on 2 shared cores
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import duckdb
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LEVELS = np.arange(-30, 31, 10)

# Invented flood posts: one complaint, reworded a little per post the way copy-paste campaigns are.
OPENERS = ("Warning to everyone:", "Honestly,", "Be aware:", "Just so you know,", "")
BODIES = (
    "the pool was filthy and closed half the time",
    "the pool was dirty and closed most of the time",
    "the pool was filthy and shut half of the time",
)
CLOSERS = (
    "Worst pool I have seen at any hotel, do not book here.",
    "Worst pool I have ever seen at a hotel, do not book.",
    "Worst hotel pool ever, avoid this place.",
)


def flood_rows(n: int, accounts: int, seed: int, end: date) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = f"{rng.choice(OPENERS)} {rng.choice(BODIES)}. {rng.choice(CLOSERS)}".strip()
        rows.append(
            {
                "doc_id": f"flood-{i + 1:04d}",
                "text": text[0].upper() + text[1:],
                "author_id": f"flood_account_{i % accounts + 1}",
                "created_at": (end - timedelta(days=rng.randrange(30))).isoformat(),
                "rating": 1,
            }
        )
    return rows


def shares(counts: dict[int, float]) -> np.ndarray:
    v = np.array([counts.get(int(level), 0.0) for level in LEVELS], dtype=float)
    return v / v.sum() if v.sum() else v


def w1(a: np.ndarray, b: np.ndarray) -> float:
    from oprag_pipeline.analysis.drift import w1_counts

    return w1_counts(a, b)


def describe(p: np.ndarray) -> str:
    return f"negative {p[:3].sum():6.1%}  positive {p[4:].sum():6.1%}  mean σ {float(LEVELS @ p):+6.2f}"


def entity_id(conn, domain: str, name: str) -> str:
    row = conn.execute(
        "SELECT entity_id FROM opinions WHERE domain = ? AND lower(entity_name) = lower(?) LIMIT 1", [domain, name]
    ).fetchone()
    if row is None:
        raise SystemExit(f"{domain}: no registry entity named {name!r}")
    return row[0]


def pop(conn, domain: str, entity: str) -> tuple[np.ndarray, np.ndarray]:
    rows = conn.execute(
        "SELECT sentiment_intensity, unweighted_share, bounded_share FROM source_weighted_pop "
        "WHERE domain = ? AND entity_id = ?",
        [domain, entity],
    ).fetchall()
    return shares({s: u for s, u, _ in rows}), shares({s: b for s, _, b in rows})


def retrieved_mix(store, embedder, profile, domain: str, entity: str, question: str, k: int) -> np.ndarray:
    from oprag_pipeline.index.retrieval import Retriever

    hits = Retriever(store, embedder, profiles={domain: profile}).search(domain, question, k=k, mode="balanced")
    counts: dict[int, float] = {}
    for h in hits:
        if h.payload.get("entity_id") == entity:
            s = int(h.payload["sentiment_intensity"])
            counts[s] = counts.get(s, 0) + 1
    return shares(counts)


def build(data: Path, args: argparse.Namespace) -> None:
    """Generate the clean domain, copy it with the flood added, and run the pipeline for both."""
    from dagster import DagsterInstance

    from oprag_pipeline.demo.authors import END_DATE
    from oprag_pipeline.demo.generator import generate_demo
    from oprag_pipeline.runner import materialize_domains

    generate_demo(data, docs=args.docs, seed=args.seed, domains=("hotels",))
    flooded = data / "raw" / "hotels_flooded"
    shutil.copytree(data / "raw" / "hotels", flooded)
    with (flooded / "flood.jsonl").open("w", encoding="utf-8") as out:
        for row in flood_rows(args.flood, args.accounts, args.seed, END_DATE):
            out.write(json.dumps(row) + "\n")
    (data / "dagster_home").mkdir(exist_ok=True)
    (data / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = DagsterInstance.get()
    # up to the enriched KB and the flooding analysis (entity_split_docs is built together with enriched docs)
    selection = "99+key:source_concentration or 99+key:enriched_kb or key:entity_split_docs"
    for outcome in materialize_domains(["hotels", "hotels_flooded"], selection=selection, instance=instance):
        print(f"{outcome.domain}: {'ok' if outcome.success else 'FAILED'} ({outcome.seconds:.0f} s)", flush=True)
        if not outcome.success:
            raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=600, help="Demo hotel documents (the clean domain).")
    parser.add_argument("--flood", type=int, default=200, help="Injected posts.")
    parser.add_argument("--accounts", type=int, default=5, help="Accounts posting them.")
    parser.add_argument("--entity", default="pool", help="Registry name of the flooded entity.")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("-k", type=int, default=20)
    parser.add_argument("--keep", help="Keep the data directory here instead of a temporary one.")
    parser.add_argument("--measure-only", action="store_true", help="Reuse the pipeline already run in --keep.")
    args = parser.parse_args()

    import os

    data = Path(args.keep or tempfile.mkdtemp(prefix="oprag-flood-"))
    os.environ["OPRAG_DATA_DIR"] = str(data)
    os.environ["DAGSTER_HOME"] = str(data / "dagster_home")

    from oprag_pipeline.analysis.flooding import analyse_sources
    from oprag_pipeline.analysis.retrieval import bounded_profile
    from oprag_pipeline.index.retrieval import OpinionProfile
    from oprag_pipeline.resources import EmbedderResource, open_configured_store
    from oprag_pipeline.sources import SourcedOpinion, near_duplicate_clusters

    started = time.perf_counter()
    if not args.measure_only:
        build(data, args)
    pipeline_s = time.perf_counter() - started

    conn = duckdb.connect(str(data / "warehouse.duckdb"), read_only=True)
    clean_id = entity_id(conn, "hotels", args.entity)
    flood_id = entity_id(conn, "hotels_flooded", args.entity)
    clean, clean_bounded = pop(conn, "hotels", clean_id)
    plain, bounded = pop(conn, "hotels_flooded", flood_id)
    n_flood_opinions = conn.execute(
        "SELECT count(*) FROM opinions WHERE domain = 'hotels_flooded' AND entity_id = ? AND doc_id LIKE 'flood-%'",
        [flood_id],
    ).fetchone()[0]
    print(f"\n{args.flood} posts from {args.accounts} accounts about {args.entity!r}; {n_flood_opinions} became "
          f"opinions on it ({pipeline_s:.0f} s for generation and both pipelines)")  # fmt: skip
    row = conn.execute(
        """SELECT n_opinions, n_authors, top_author_share, duplicate_clusters, duplicated_opinions, votes
           FROM source_concentration WHERE domain = 'hotels_flooded' AND entity_id = ?""",
        [flood_id],
    ).fetchone()
    print(f"flooded entity: {row[0]} opinions, {row[1]} authors, top-5 authors' share {row[2]:.1%}, "
          f"{row[4]} opinions in {row[3]} near-duplicate clusters, {row[5]:.1f} votes after bounding")  # fmt: skip
    print(f"P_pop clean              {describe(clean)}")
    print(f"P_pop flooded unweighted {describe(plain)}   W1 to clean {w1(plain, clean):5.2f}")
    print(f"P_pop flooded bounded    {describe(bounded)}   W1 to clean {w1(bounded, clean):5.2f}")

    store = open_configured_store(data)
    embedder = EmbedderResource().embedder()
    question = f"What do guests think about the {args.entity}?"
    base = OpinionProfile.load(conn, "hotels_flooded")
    defended = bounded_profile(conn, "hotels_flooded")
    clean_profile = OpinionProfile.load(conn, "hotels")
    mix_clean = retrieved_mix(store, embedder, clean_profile, "hotels", clean_id, question, args.k)
    mix_plain = retrieved_mix(store, embedder, base, "hotels_flooded", flood_id, question, args.k)
    mix_defended = retrieved_mix(store, embedder, defended, "hotels_flooded", flood_id, question, args.k)
    store.close()
    print(f'\nbalanced retrieval, k={args.k}, "{question}"')
    print(f"clean domain             {describe(mix_clean)}   W1 to clean P_pop {w1(mix_clean, clean):5.2f}")
    print(f"flooded, no defence      {describe(mix_plain)}   W1 to clean P_pop {w1(mix_plain, clean):5.2f}")
    print(f"flooded, bounded profile {describe(mix_defended)}   W1 to clean P_pop {w1(mix_defended, clean):5.2f}")

    # The defence on the clean domain, both policies, entities with ≥ 20 opinions (fewer: W1 is mostly noise).
    rows = conn.execute(
        """SELECT o.entity_id, o.doc_id, any_value(d.author_id), any_value(o.sentiment_intensity)
           FROM opinions o JOIN raw_documents d USING (domain, doc_id) WHERE o.domain = 'hotels'
           GROUP BY o.entity_id, o.doc_id""",
    ).fetchall()
    texts = dict(conn.execute("SELECT doc_id, text FROM raw_documents WHERE domain = 'hotels'").fetchall())
    clusters = near_duplicate_clusters(texts)
    by_entity: dict[str, list[SourcedOpinion]] = {}
    for e, doc, author, s in rows:
        by_entity.setdefault(e, []).append(SourcedOpinion(doc, author, int(s)))
    print(f"\nclean domain: {len(clusters)} near-duplicate clusters among {len(texts)} documents")
    for policy, cap in (("one_vote", 1), ("cap", 3)):
        moved = [
            (len(ops), analyse_sources(e, e, ops, clusters, policy=policy, cap=cap).estimate.w1)
            for e, ops in by_entity.items()
            if len(ops) >= 20
        ]
        weighted = sum(n * v for n, v in moved) / sum(n for n, _ in moved)
        print(f"  {policy:<8} (cap {cap}): W1 bounded vs unweighted over {len(moved)} entities: "
              f"opinion-weighted mean {weighted:.2f}, max {max(v for _, v in moved):.2f} σ-points")  # fmt: skip
    print(f"  the flooded entity on the clean domain: W1 {w1(clean_bounded, clean):.2f}")
    conn.close()
    if not args.keep:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
