"""Alias-matching benchmark: the shared matcher (`oprag_pipeline.registry.matching`) against the regex matcher the
offline extractor used before it (copied below as `PreviousMatcher`, the same-run baseline), and the offline
extractor's throughput with the matcher in place.

Corpus: the first `--docs` reviews of every `--every`-th TripAdvisor hotel file (needs ../shared/data). The
registry is built the way the pipeline builds it: candidates mined from the first 300 documents, clustered with
MiniLM.

Prints, per matcher: documents per CPU second of matching alone, mentions found, and how many mentions the two
disagree on (`--show-differences N` prints N of them); then reviews/s of `OfflineExtractor.extract` over the
first `--extract-docs` documents (model scorer) with each matcher.

    .venv/bin/python benchmarks/bench_matcher.py [--docs 3000] [--extract-docs 1000] [--every 40] [--shared DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oprag_pipeline.schema import DocumentInput, RegistryEntity  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SAMPLE_DOCS = 300  # the extraction sample's default size


class PreviousMatcher:
    """The offline extractor's matcher before the shared one: one alternation, plural -s/-es by truncation."""

    def __init__(self, entities: Sequence[RegistryEntity]) -> None:
        owner: dict[str, str] = {}
        for entity in entities:
            for alias in sorted({entity.name, *entity.aliases}):
                key = self._normal(alias)
                if len(key) >= 2:
                    owner.setdefault(key, entity.entity_id)
        self.owner = owner
        ordered = sorted(owner, key=lambda a: (-len(a), a))
        pattern = "|".join(self._pattern(a) for a in ordered) or r"(?!x)x"
        self.regex = re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.IGNORECASE)

    @staticmethod
    def _normal(alias: str) -> str:
        return re.sub(r"[\s\-]+", " ", alias.strip().lower())

    @staticmethod
    def _pattern(alias: str) -> str:
        parts = [re.escape(p) for p in re.split(r"[\s\-]+", alias) if p]
        body = r"[\s\-]+".join(parts)
        return body + r"(?:e?s)?" if alias[-1:].isalpha() else body

    def find(self, text: str) -> list[tuple[str, int, int]]:
        found = []
        for match in self.regex.finditer(text):
            key = self._normal(match.group(0))
            owner = self.owner.get(key) or self.owner.get(key[:-1]) or self.owner.get(key[:-2])
            if owner is not None:
                found.append((owner, match.start(), match.end()))
        return found


def load_documents(shared: Path, n: int, every: int) -> tuple[str, list[tuple[str, str]]]:
    texts = shared / "tripadvisor_hotels" / "Texts"
    if texts.is_dir():
        from oprag_pipeline.importers.common import ImportContext
        from oprag_pipeline.importers.tripadvisor import convert_file

        files = sorted(texts.glob("hotel_*"))[::every]
        docs: list[tuple[str, str]] = []
        ctx = ImportContext()
        for path in files:
            for _, _, row in convert_file(path, ctx):
                docs.append((row["doc_id"], row["text"]))
            if len(docs) >= n:
                break
        return f"TripAdvisor (every {every}th hotel file)", docs[:n]
    raise SystemExit(f"{texts} not found: this benchmark needs ../shared/data")


def build_registry(docs: list[tuple[str, str]]) -> list[RegistryEntity]:
    from oprag_pipeline.embeddings import OfflineEmbedder
    from oprag_pipeline.registry.candidates import mine_candidates
    from oprag_pipeline.registry.taxonomy import update_registry

    candidates = mine_candidates(docs[:SAMPLE_DOCS], min_doc_frequency=3, min_share=0.02, limit=150)
    embedder = OfflineEmbedder()
    registry, _ = update_registry(None, candidates, lambda texts: embedder.embed_dense(list(texts)))
    return [
        RegistryEntity(e.entity_id, e.name, tuple(sorted(e.aliases)), e.tier1_name, e.tier2_name)
        for e in registry.active()
    ]


def time_matchers(finders: dict[str, Any], texts: list[str], rounds: int = 5) -> dict[str, tuple[float, list]]:
    """Documents per CPU second of each matcher (best of `rounds`, taken in turn so both see the same load), and
    the mentions each found."""
    best = dict.fromkeys(finders, float("inf"))
    found: dict[str, list] = {}
    for _ in range(rounds):
        for name, find in finders.items():
            started = time.process_time()
            found[name] = [[tuple(m[:3]) for m in find(t)] for t in texts]
            best[name] = min(best[name], time.process_time() - started)
    return {name: (len(texts) / max(best[name], 1e-9), found[name]) for name in finders}


class _PreviousAsShared(PreviousMatcher):
    def mentions(self, text: str) -> list[tuple[str, int, int]]:
        return self.find(text)


def extraction(docs: list[tuple[str, str]], entities: list[RegistryEntity], *, shared_available: bool) -> None:
    """Reviews/s of `OfflineExtractor.extract` (model scorer) with each matcher, batch by batch in turn (the order
    swapped every batch, the model's window cache emptied before each run), so both see the same load on a shared
    machine; wall time and process CPU time (all threads) are both printed."""
    from oprag_pipeline.enrich.offline import OfflineExtractor

    columns = {"previous regex matcher": OfflineExtractor()}
    previous = columns["previous regex matcher"]
    previous._matcher = lambda _entities: _PreviousAsShared(entities)  # type: ignore[method-assign]
    if shared_available:
        columns["shared matcher"] = OfflineExtractor(scorer=previous.scorer)
    documents = [DocumentInput(d, t, f"h{i}") for i, (d, t) in enumerate(docs)]
    previous.extract(documents[:20], entities)  # load the model outside the timing
    wall = dict.fromkeys(columns, 0.0)
    cpu = dict.fromkeys(columns, 0.0)
    opinions = dict.fromkeys(columns, 0)
    cache = getattr(previous.scorer, "_cache", None)  # the aspect model's window cache: each run starts it empty
    for batch, i in enumerate(range(0, len(documents), 250)):
        order = list(columns.items())
        for name, extractor in order if batch % 2 == 0 else order[::-1]:
            if cache is not None:
                cache.clear()
            started, started_cpu = time.perf_counter(), time.process_time()
            outcomes = extractor.extract(documents[i : i + 250], entities)
            wall[name] += time.perf_counter() - started
            cpu[name] += time.process_time() - started_cpu
            opinions[name] += sum(len(o.opinions) for o in outcomes)
    print(f"\noffline extraction of {len(documents):,} reviews, batches of 250 alternating between matchers")
    print(f"{'matcher':<26}{'reviews/s':>12}{'CPU s':>10}{'reviews/CPU s':>15}{'opinions':>10}")
    for name in columns:
        print(
            f"{name:<26}{len(documents) / wall[name]:>12.1f}{cpu[name]:>10.1f}{len(documents) / cpu[name]:>15.1f}"
            f"{opinions[name]:>10,}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--extract-docs", type=int, default=1000)
    parser.add_argument("--every", type=int, default=40)
    parser.add_argument("--show-differences", type=int, default=0, help="print this many differing mentions")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder (default ../shared/data)")
    args = parser.parse_args()

    corpus, docs = load_documents(args.shared, args.docs, args.every)
    texts = [t for _, t in docs]
    entities = build_registry(docs)
    aliases = sum(len(e.aliases) for e in entities)
    print(f"corpus: {corpus}, {len(docs):,} documents; registry: {len(entities)} entities, {aliases} aliases")

    try:
        from oprag_pipeline.registry.matching import AliasMatcher
    except ImportError:
        AliasMatcher = None  # before the shared matcher existed
    finders: dict[str, Any] = {"previous regex matcher": PreviousMatcher(entities).find}
    if AliasMatcher is not None:
        finders["shared matcher"] = AliasMatcher(entities).mentions
    timed = time_matchers(finders, texts)
    print(f"\n{'matcher':<26}{'docs/CPU s':>12}{'mentions':>12}")
    for name, (rate, found) in timed.items():
        print(f"{name:<26}{rate:>12,.0f}{sum(map(len, found)):>12,}")
    if AliasMatcher is not None:
        old, new = timed["previous regex matcher"][1], timed["shared matcher"][1]
        differ = sum(set(a) != set(b) for a, b in zip(old, new, strict=True))
        only_new = sum(len(set(b) - set(a)) for a, b in zip(old, new, strict=True))
        only_old = sum(len(set(a) - set(b)) for a, b in zip(old, new, strict=True))
        print(
            f"documents whose mentions differ: {differ:,}; mentions only in the shared matcher: {only_new:,}, "
            f"only in the previous one: {only_old:,}"
        )
        if args.show_differences:
            shown = 0
            for text, a, b in zip(texts, old, new, strict=True):
                for label, spans in (("only previous", set(a) - set(b)), ("only shared", set(b) - set(a))):
                    for entity_id, start, end in sorted(spans, key=lambda m: m[1]):
                        if shown < args.show_differences:
                            context = text[max(0, start - 25) : end + 25].replace("\n", " ")
                            print(f"  {label:<14} {entity_id:<10} {text[start:end]!r:<24} ...{context}...")
                            shown += 1
    if args.extract_docs:
        extraction(docs[: args.extract_docs], entities, shared_available=AliasMatcher is not None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
