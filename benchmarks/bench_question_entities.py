"""Which entity does a question get answered about? The share of a domain's evaluation questions whose first
answered entity is the one the question was generated for.

Each evaluation question (table `evaluation_questions`) was generated for one entity. Here it is asked the way a
user asks it (`oprag ask`: no entity given, only the question's words), answered by the offline composer on the
enriched KB, and the answer's first entity is compared with the question's own:

- exact: the first answered entity is the question's entity;
- in group: it is a group of near-duplicate entities that includes the question's entity (grouping at answer time,
  `registry/question.py`), counted with the exact ones in "right";
- unnamed: the question named no entity and the answer fell back to the entity most retrieved passages are about;
- other entity: the answer is first about another entity the question named (the forum's "sellers" in "How do
  sellers feel about …", a registry entity "opinion" in "What are the opinions on …").

    .venv/bin/python benchmarks/bench_question_entities.py --data-dir D [--domain seller_forum] [--show 10]

D is a data directory on which `oprag run` has completed (e.g. `oprag --data-dir D generate-demo --docs 600`, then
`oprag --data-dir D run`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--domain", action="append", help="Domain (repeatable; default: every evaluated domain).")
    parser.add_argument("-k", type=int, default=20)
    parser.add_argument("--show", type=int, default=0, help="Print this many misses per domain.")
    args = parser.parse_args()
    os.environ["OPRAG_DATA_DIR"] = str(args.data_dir.resolve())

    import duckdb

    from oprag_pipeline import settings
    from oprag_pipeline.generate.compose import compose_offline
    from oprag_pipeline.generate.context import DomainKnowledge, gather
    from oprag_pipeline.index.retrieval import Retriever
    from oprag_pipeline.resources import EmbedderResource, open_configured_store

    root = settings.data_dir()
    store = open_configured_store(root)
    retriever = Retriever(store, EmbedderResource().embedder())
    try:
        with duckdb.connect(str(settings.warehouse_path()), read_only=True) as conn:
            domains = args.domain or [
                d for (d,) in conn.execute("SELECT DISTINCT domain FROM evaluation_questions ORDER BY 1").fetchall()
            ]
            for domain in domains:
                knowledge = DomainKnowledge.load(conn, domain)
                questions = conn.execute(
                    "SELECT question_id, entity_id, text FROM evaluation_questions WHERE domain = ? "
                    "ORDER BY question_id",
                    [domain],
                ).fetchall()
                outcome: Counter[str] = Counter()
                misses: list[str] = []
                started = time.perf_counter()
                for _question_id, target, text in questions:
                    context = gather(conn, retriever, knowledge, text, kb="enriched", k=args.k)
                    answer = compose_offline(context)
                    first = answer.entity_ids[0] if answer.entity_ids else None
                    members = getattr(context, "groups", {}).get(first, ()) if first else ()
                    if first == target:
                        kind = "exact"
                    elif target in members:
                        kind = "in group"
                    elif not context.named_in_question:
                        kind = "unnamed"
                    else:
                        kind = "other entity"
                    outcome[kind] += 1
                    if kind not in ("exact", "in group") and len(misses) < args.show:
                        name = knowledge.entities[target].name if target in knowledge.entities else target
                        got = context.entities[0].entity_name if context.entities else "-"
                        misses.append(f"  {kind}: {text!r} for {name!r}, answered about {got!r}")
                n = len(questions)
                right = outcome["exact"] + outcome["in group"]
                parts = ", ".join(f"{kind} {count}" for kind, count in sorted(outcome.items()))
                print(
                    f"{domain}: {right}/{n} = {right / n:.1%} answered first about the question's entity ({parts}); "
                    f"{time.perf_counter() - started:.1f} s"
                    if n
                    else f"{domain}: no evaluation questions"
                )
                for line in misses:
                    print(line)
    finally:
        store.close()


if __name__ == "__main__":
    main()
