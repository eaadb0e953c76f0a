"""Index a domain's three knowledge bases through the pipeline's own index assets, with stand-in dense vectors.

Why this exists: the evaluation benchmark's target is set on the whole TripAdvisor corpus (229k reviews), whose
knowledge bases hold millions of points. Embedding them with MiniLM on 2 CPU cores takes many hours, far longer than
the evaluation grid the benchmark times. A random dense vector takes the same space as a MiniLM vector of the same
dimension, but indexing and searching it is slower (random 384-d vectors have none of the structure HNSW exploits:
`bench_stand_in_dense.py` measured 1.7 times the indexing time and 1.3-1.9 times the query time on 50,000 texts), so
timings measured on it are an upper bound. For timing at full size this writes:

* every point the real `raw_kb`, `entity_split_kb` and `enriched_kb` assets write (same chunks, texts, payloads,
  point ids and content hashes, through the same sync and vector-store adapter);
* the project's real BM25 sparse vectors;
* a dense vector per text drawn from a normal distribution seeded by the text's hash (deterministic, unit norm).

The retrieved hits are therefore meaningless for the dense half of hybrid search; only timings and sizes measured on
such an index are worth quoting. `entity_opinion_stats` is materialized too, since the evaluation reads it.

    .venv/bin/python benchmarks/index_stand_in_dense.py --data-dir DATA_DIR --domain DOMAIN [--assets raw_kb,...]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ASSETS = ("entity_opinion_stats", "raw_kb", "entity_split_kb", "enriched_kb")


class StandInDenseEmbedder:
    """The project's embedder with its dense half replaced by hash-seeded random unit vectors."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.dim = real.dim

    def embed_dense(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out[i] = np.random.default_rng(seed).standard_normal(self.dim, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_sparse(self, texts: Sequence[str]) -> list:
        return self.real.embed_sparse(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--domain", required=True)
    parser.add_argument("--assets", default=",".join(ASSETS), help=f"comma-separated subset of {', '.join(ASSETS)}")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.assets.split(",") if name.strip()]
    if unknown := sorted(set(chosen) - set(ASSETS)):
        parser.error(f"unknown assets: {', '.join(unknown)}")
    data_dir = args.data_dir.resolve()
    # The definitions read the data directory from the environment when they are imported.
    os.environ["OPRAG_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DAGSTER_HOME", str(data_dir / "dagster_home"))

    from dagster import AssetKey, DagsterInstance, materialize

    from oprag_pipeline.definitions import ALL_ASSETS
    from oprag_pipeline.resources import EmbedderResource, build_resources
    from oprag_pipeline.runner import QUIET_LOGS, register_domains

    class StandInEmbedderResource(EmbedderResource):
        def embedder(self):  # type: ignore[override]
            return StandInDenseEmbedder(super().embedder())

    resources = {**build_resources(data_dir), "embedder": StandInEmbedderResource()}
    started = time.perf_counter()
    with DagsterInstance.get() as instance:
        register_domains(instance, [args.domain])
        result = materialize(
            ALL_ASSETS,
            selection=[AssetKey(name) for name in chosen],
            partition_key=args.domain,
            instance=instance,
            resources=resources,
            run_config=QUIET_LOGS,
            tags={"oprag/trigger": "bench-stand-in-dense"},
            raise_on_error=False,
        )
    print(f"{'indexed' if result.success else 'FAILED'} {args.domain} in {time.perf_counter() - started:,.0f} s")
    if not result.success:
        sys.exit(1)


if __name__ == "__main__":
    main()
