"""How well the entity registry covers what people hold opinions about, on real corpora and on the demo.

For each corpus the registry is built the way the pipeline builds it (the `extraction_sample` SQL on an in-memory
DuckDB, `mine_candidates` with the asset's defaults, `update_registry` with the offline MiniLM embedder), once with
the current code and once with the previous miner (the determiner/copula miner and its taxonomy, loaded from git
history at `--baseline`, on the previous 300-document sample) in the same run. Every measure goes through the
shared alias matcher (`registry.matching.AliasMatcher`), i.e. what the opinions table would hold:

* coverage: share of gold (document, target span) pairs where the matcher finds a registry mention overlapping
  the span;
* precision: mention-weighted share of the registry: over every mention the matcher finds in the corpus, the share
  whose entity is a gold target, i.e. its name (normalised as the miner does) is a gold term of the corpus or the
  head word of one;
* TripAdvisor: coverage of the rated (review, aspect) pairs: the review has a mention of an entity *named* by one
  of the aspect's terms (`importers.tripadvisor.RATED_ASPECT_TERMS`, the mapping the gold mapper reads), against
  the upper bound,
  the share of rated pairs whose review text contains one of those terms at all, or an adjective of a quality
  among them ("clean" for cleanliness; same matcher, the terms as aliases); `of_bound` is the share of the pairs
  within the bound that are covered;
* demo: a planted concept is recovered when the entities of one registry tier 2 hold at least half of its planted
  mentions, and split when a second tier 2 holds at least a fifth (a concept is planted as several targets, "the
  front desk" and "the check-in"; see `demo_scores`, which prints the earlier per-id measure beside it).

    PYTHONPATH=. python benchmarks/bench_registry.py [--corpora mams,memd,tripadvisor,demo] [--tripadvisor-reviews 2000]

Data: ../shared/data (skipped with a message where absent); the demo is generated into a temporary folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import types
import xml.etree.ElementTree as ElementTree
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from oprag_pipeline.registry import assets as registry_assets
from oprag_pipeline.registry.candidates import ATTRIBUTES, candidate_key, mine_candidates
from oprag_pipeline.registry.matching import AliasMatcher
from oprag_pipeline.registry.taxonomy import update_registry
from oprag_pipeline.resources import EmbedderResource
from oprag_pipeline.schema import RegistryEntity

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent.parent / "shared" / "data"
if not SHARED.exists():
    SHARED = Path("/work/shared/data")


@dataclass
class Corpus:
    name: str
    documents: list[tuple[str, str]]  # (doc_id, text)
    gold_spans: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)  # doc_id → (start, end, term)
    measured: set[str] | None = None  # doc ids whose gold is measured (all when None)


# ---------------------------------------------------------------------------------------------------- corpora


def mams(group: int = 1) -> Corpus | None:
    """MAMS ATSA: the registry is built from all splits (the domain), coverage is measured on the test split.
    `group` > 1 joins that many consecutive sentences into one document (MAMS has no review ids)."""
    folder = SHARED / "mams" / "MAMS-ATSA"
    if not folder.exists():
        return None
    sentences: list[tuple[str, str, list[tuple[int, int, str]]]] = []
    test: set[int] = set()
    for split in ("train", "val", "test"):
        for sentence in ElementTree.parse(folder / f"{split}.xml").getroot().iter("sentence"):
            text = sentence.findtext("text") or ""
            spans = [
                (int(t.get("from")), int(t.get("to")), t.get("term"))
                for t in sentence.iter("aspectTerm")
                if t.get("from") is not None
            ]
            if split == "test":
                test.add(len(sentences))
            sentences.append((split, text, spans))
    return _grouped("mams" + (f" ({group}-sentence docs)" if group > 1 else " (sentences)"), sentences, test, group)


def _grouped(name: str, sentences: Sequence[tuple[str, str, list]], measured_rows: set[int], group: int) -> Corpus:
    corpus = Corpus(name, [], {}, set())
    for first in range(0, len(sentences), group):
        doc_id = f"d{first}"
        parts: list[str] = []
        spans: list[tuple[int, int, str]] = []
        offset = 0
        for row in range(first, min(first + group, len(sentences))):
            _, text, row_spans = sentences[row]
            if row in measured_rows:
                spans += [(offset + s, offset + e, term) for s, e, term in row_spans]
                corpus.measured.add(doc_id)
            parts.append(text)
            offset += len(text) + 1
        corpus.documents.append((doc_id, " ".join(parts)))
        corpus.gold_spans[doc_id] = spans
    return corpus


def memd(domain: str) -> Corpus | None:
    """MEMD-ABSA (tokenised sentences + quadruples): all splits, explicit aspects only (from >= 0)."""
    folder = SHARED / "memd_absa" / domain
    if not folder.exists():
        return None
    sentences = []
    for split in ("Train", "Dev", "Test"):
        for row in json.loads((folder / f"{split}.json").read_text(encoding="utf-8")):
            tokens = row["raw_words"].split()
            starts, position = [], 0
            for token in tokens:
                starts.append(position)
                position += len(token) + 1
            text = " ".join(tokens)
            spans = []
            for quadruple in row["quadruples"]:
                aspect = quadruple["aspect"]
                if aspect["from"] is not None and aspect["from"] >= 0 and aspect["to"] > aspect["from"]:
                    start, end = starts[aspect["from"]], starts[aspect["to"] - 1] + len(tokens[aspect["to"] - 1])
                    spans.append((start, end, text[start:end]))
            sentences.append((split, text, spans))
    return _grouped(f"memd {domain.lower()}", sentences, set(range(len(sentences))), 1)


@dataclass
class RatedCorpus:
    name: str
    documents: list[tuple[str, str]]
    ratings: dict[str, dict[str, float]]  # doc_id → aspect → stars


TRIPADVISOR_ASPECTS = ("value", "rooms", "location", "cleanliness", "checkin", "service")  # business: hardly rated


def tripadvisor(limit: int, per_hotel: int = 3) -> RatedCorpus | None:
    """A deterministic subset: the first `per_hotel` full (not collapsed) reviews of each hotel file in name order,
    until `limit` reviews; `limit` 0 takes every full review of every hotel (the whole corpus)."""
    if limit <= 0:
        limit = per_hotel = sys.maxsize
    from oprag_pipeline.importers.tripadvisor import parse_blocks

    folder = SHARED / "tripadvisor_hotels" / "Texts"
    if not folder.exists():
        return None
    names = ("overall", "value", "rooms", "location", "cleanliness", "checkin", "service", "business")
    documents, ratings = [], {}
    for path in sorted(folder.glob("hotel_*.txt")):
        taken = 0
        for number, block in parse_blocks(path.read_text(encoding="utf-8", errors="replace")):
            text = block.get("content", "")
            if "showReview(" in text or len(text) < 200 or "rating" not in block:
                continue
            stars = [float(x) for x in block["rating"].split()[: len(names)]]
            rated = {a: s for a, s in zip(names, stars, strict=False) if a in TRIPADVISOR_ASPECTS and s > 0}
            doc_id = f"{path.stem}-{number}"
            documents.append((doc_id, text))
            ratings[doc_id] = rated
            taken += 1
            if taken >= per_hotel:
                break
        if len(documents) >= limit:
            break
    return RatedCorpus(f"tripadvisor ({len(documents)} reviews)", documents[:limit], ratings)


def demo(docs: int = 2000) -> tuple[Corpus, dict[str, str]]:
    """The generated hotel and forum demo corpora (one domain each); spans carry the planted entity name."""
    from oprag_pipeline.demo import generate_demo

    folder = Path(tempfile.mkdtemp(prefix="bench-registry-demo-"))
    generate_demo(folder, docs=docs, seed=7)
    corpus = Corpus("demo", [], {}, None)
    domain_of: dict[str, str] = {}
    for path in sorted((folder / "raw").glob("*/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            doc_id = f"{path.parent.name}/{row['doc_id']}"
            text = (row.get("title") + ". " if row.get("title") else "") + row["text"]
            shift = len(row["title"]) + 2 if row.get("title") else 0
            corpus.documents.append((doc_id, text))
            domain_of[doc_id] = path.parent.name
            corpus.gold_spans[doc_id] = [
                (g["from"] + shift, g["to"] + shift, g["category"])
                for g in row.get("gold_opinions") or []
                if g.get("from") is not None
            ]
    return corpus, domain_of


# ---------------------------------------------------------------------------------------------------- registries


def _sample(documents: Sequence[tuple[str, str]], **params: int) -> list[tuple[str, str]]:
    """The pipeline's `extraction_sample` SQL over these documents (no strata: no scope or rating here)."""
    conn = duckdb.connect()
    conn.execute(
        "CREATE TABLE raw_documents (domain VARCHAR, doc_id VARCHAR, title VARCHAR, text VARCHAR, "
        "entity_scope VARCHAR, rating DOUBLE)"
    )
    conn.executemany("INSERT INTO raw_documents VALUES ('d', ?, NULL, ?, NULL, NULL)", [list(d) for d in documents])
    rows = conn.execute(registry_assets.SAMPLE_SQL, {"domain": "d", "seed": "oprag", **params}).fetchall()
    text_of = dict(documents)
    return [(doc_id, text_of[doc_id]) for doc_id, _, _ in rows]


def _load_previous(commit: str) -> tuple[types.ModuleType, types.ModuleType]:
    """The previous miner and taxonomy as modules, from git history (they are not kept in the tree)."""
    modules = []
    for name in ("candidates", "taxonomy"):
        source = subprocess.run(
            ["git", "show", f"{commit}:oprag_pipeline/registry/{name}.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        source = source.replace("from oprag_pipeline.registry.candidates import", "from previous_candidates import")
        spec = importlib.util.spec_from_loader(f"previous_{name}", loader=None)
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"previous_{name}"] = module
        exec(compile(source, f"{commit}:{name}.py", "exec"), module.__dict__)
        modules.append(module)
    return modules[0], modules[1]


@dataclass
class Built:
    entities: list[RegistryEntity]
    sample_documents: int
    seconds: float


def build_current(documents: Sequence[tuple[str, str]], embed: Callable) -> Built:
    started = time.perf_counter()
    sample_config = registry_assets.SampleConfig()
    sample = _sample(
        documents,
        sentences=sample_config.sentences,
        min_documents=sample_config.min_documents,
        max_documents=sample_config.max_documents,
    )
    config = registry_assets.CandidateConfig()
    candidates = mine_candidates(
        sample,
        min_doc_frequency=config.min_doc_frequency,
        min_sentence_share=config.min_sentence_share,
        limit=config.limit,
    )
    registry, _ = update_registry(None, candidates, embed)
    return Built(_entities(registry), len(sample), time.perf_counter() - started)


def build_previous(documents: Sequence[tuple[str, str]], embed: Callable, previous: tuple) -> Built:
    old_candidates, old_taxonomy = previous
    started = time.perf_counter()
    sample = _sample(documents, sentences=0, min_documents=300, max_documents=300)  # the old 300-document sample
    candidates = old_candidates.mine_candidates(sample, min_doc_frequency=3, min_share=0.02, limit=150)
    registry, _ = old_taxonomy.update_registry(None, candidates, embed)
    return Built(_entities(registry), len(sample), time.perf_counter() - started)


def _entities(registry) -> list[RegistryEntity]:
    return [
        RegistryEntity(e.entity_id, e.name, tuple(e.aliases), e.tier1_name, e.tier2_name) for e in registry.active()
    ]


# ---------------------------------------------------------------------------------------------------- measures


def _mentions(built: Built, documents: Sequence[tuple[str, str]]) -> dict[str, list[tuple[str, int, int]]]:
    matcher = AliasMatcher(built.entities)
    return {doc_id: matcher.mentions(text) for doc_id, text in documents}


PRONOUNS = frozenset("it they them this that these those one ones it's its their mine this one".split())
"""MEMD-ABSA marks pronouns as explicit aspects ("they fit well"): a third of clothing's spans. A pronoun is the
product itself by anaphora, which no alias can name, so coverage is printed with and without them."""


def span_scores(corpus: Corpus, built: Built) -> dict[str, float]:
    found = _mentions(built, corpus.documents)
    measured = corpus.measured if corpus.measured is not None else set(corpus.gold_spans)
    total = covered = pronouns = 0
    gold_keys: set[str] = set()
    for doc_id in measured:
        for start, end, term in corpus.gold_spans.get(doc_id, []):
            if term.lower() in PRONOUNS:
                pronouns += 1
                continue
            total += 1
            key = candidate_key(term.lower())
            gold_keys |= {key, key.split()[-1]} if key else set()
            covered += any(s < end and start < e for _, s, e in found[doc_id])
    names = {e.entity_id: candidate_key(e.name.lower()) for e in built.entities}
    weights = Counter(entity for doc_id in measured for entity, _, _ in found[doc_id])
    good = sum(n for entity, n in weights.items() if names[entity] in gold_keys)
    return {
        "entities": len(built.entities),
        "coverage": covered / total if total else 0.0,
        "precision": good / sum(weights.values()) if weights else 0.0,
        "gold_pairs": total,
        "with_pronouns": covered / (total + pronouns) if total + pronouns else 0.0,
    }


def rated_scores(corpus: RatedCorpus, built: Built) -> dict[str, float]:
    from oprag_pipeline.importers.tripadvisor import RATED_ASPECT_TERMS as ASPECT_TERMS

    found = _mentions(built, corpus.documents)
    terms = {aspect: {candidate_key(t) for t in words} for aspect, words in ASPECT_TERMS.items()}
    aspect_entities: dict[str, set[str]] = defaultdict(set)
    for entity in built.entities:
        key = candidate_key(entity.name.lower())
        matches = [aspect for aspect, words in terms.items() if key in words]
        if len(matches) == 1:
            aspect_entities[matches[0]].add(entity.entity_id)
    # The aspect is mentioned at all when one of its terms is in the text, or an adjective that names a quality
    # among its terms ("clean" for cleanliness, "cheap" for price): the registry can hold such a quality too.
    term_matcher = AliasMatcher(
        [
            RegistryEntity(aspect, aspect, (*words, *(a for w in words for a in ATTRIBUTES.get(w, ()))))
            for aspect, words in ASPECT_TERMS.items()
        ]
    )
    pairs = covered = bounded = covered_in_bound = 0
    per_aspect: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for doc_id, text in corpus.documents:
        in_text = {aspect for aspect, _, _ in term_matcher.mentions(text)}
        entities = {entity for entity, _, _ in found[doc_id]}
        for aspect in corpus.ratings.get(doc_id, {}):
            hit = bool(aspect_entities.get(aspect, set()) & entities)
            pairs += 1
            covered += hit
            bounded += aspect in in_text
            covered_in_bound += hit and aspect in in_text
            row = per_aspect[aspect]
            row[0] += 1
            row[1] += hit
            row[2] += aspect in in_text
    return {
        "entities": len(built.entities),
        "coverage": covered / pairs if pairs else 0.0,
        "bound": bounded / pairs if pairs else 0.0,
        "of_bound": covered_in_bound / bounded if bounded else 0.0,
        "pairs": pairs,
        "per_aspect": {a: f"{r[1] / r[0]:.2f}/{r[2] / r[0]:.2f}" for a, r in sorted(per_aspect.items())},
    }


def demo_scores(corpus: Corpus, built: Built, domain_of: dict[str, str]) -> dict[str, object]:
    """Planted concepts against the registry, by two measures printed side by side.

    The demo plants *concepts*, and a concept's surface forms are often different targets: "check-in" is planted
    as "the check-in", "the front desk" and "reception"; "bathroom" as "the bathroom" and "the shower"; "room rate"
    as "the price" and "the cost". A registry that gives "front desk" and "check-in" one id would be wrong (one
    can praise the desk and curse the check-in); the right registry gives them distinct ids *in one aspect area*.

    * strict (the earlier measure): recovered when one entity id holds at least half of the concept's planted
      mentions, split when a second id holds at least a fifth. It counts a concept of several targets as
      unrecovered and split however well the registry files them, so it is kept only for comparison.
    * by area (the measure the target applies to): the same rule over registry tier 2s instead of entity ids:
      recovered when the entities of one tier 2 hold at least half of the planted mentions, split when the
      entities of a *second* tier 2 hold at least a fifth, i.e. the registry filed the concept's forms under
      unrelated areas. A concept spread across unrelated ids therefore still counts as split.
    * form_split: one planted surface form (normalised as the miner does: "the beds" is "bed") whose mentions two
      entity ids each hold a fifth of: the same words given two ids, always a defect.
    * merged: pairs of concepts of different planted tier 2 that are recovered by the same registry tier 2, so
      filing everything under one area cannot pass the measure by area unnoticed.
    """
    from oprag_pipeline.demo import phrases

    planted_area = {spec.name: spec.tier2 for spec in (*phrases.HOTEL_ENTITIES, *phrases.FORUM_ENTITIES)}
    found = _mentions(built, corpus.documents)
    area_of = {e.entity_id: f"{e.tier1_name} > {e.tier2_name}" for e in built.entities}
    text_of = dict(corpus.documents)
    holders: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    form_holders: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for doc_id, spans in corpus.gold_spans.items():
        for start, end, planted in spans:
            hit = next((entity for entity, s, e in found[doc_id] if s < end and start < e), None)
            holders[(domain_of[doc_id], planted)][hit or "-"] += 1
            form = candidate_key(" ".join(w for w in text_of[doc_id][start:end].lower().split() if w != "the"))
            form_holders[(planted, form)][hit or "-"] += 1

    def judged(counts: Counter[str]) -> tuple[str | None, bool]:
        """(the holder of at least half the mentions or None, whether a second holder has a fifth)."""
        total = sum(counts.values())
        ranked = [(holder, n) for holder, n in counts.most_common() if holder != "-"]
        first = ranked[0][0] if ranked and ranked[0][1] >= 0.5 * total else None
        return first, len(ranked) > 1 and ranked[1][1] >= 0.2 * total

    strict_recovered, strict_split, recovered, split, missed = [], [], [], [], []
    area_of_concept: dict[tuple[str, str], str] = {}
    for planted, counts in holders.items():
        first, second = judged(counts)
        strict_recovered += [planted] if first else []
        strict_split += [planted] if second else []
        areas: Counter[str] = Counter()
        for entity, n in counts.items():
            areas[area_of.get(entity, "-")] += n
        first, second = judged(areas)
        if first:
            recovered.append(planted)
            area_of_concept[planted] = first
        else:
            missed.append(planted)
        split += [planted] if second else []
    merged = sorted(
        f"{a[1]} + {b[1]}"
        for a in area_of_concept
        for b in area_of_concept
        if a < b and area_of_concept[a] == area_of_concept[b] and planted_area.get(a[1]) != planted_area.get(b[1])
    )
    form_split = sorted(f"{p}: {f}" for (p, f), counts in form_holders.items() if judged(counts)[1])
    n = len(holders)
    return {
        "entities": len(built.entities),
        "planted": n,
        "strict_recovered": len(strict_recovered) / n if n else 0.0,
        "strict_split": len(strict_split),
        "recovered": len(recovered) / n if n else 0.0,
        "split": sorted(p for _, p in split),
        "missed": sorted(p for _, p in missed),
        "merged": merged,
        "form_split": form_split,
    }


def _row(name: str, label: str, built: Built, scores: dict) -> None:
    shown = "  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in scores.items())
    print(f"{name:<34} {label:<8} sample={built.sample_documents:<5} build={built.seconds:5.1f}s  {shown}", flush=True)


def _preview(built: Built, n: int = 25) -> None:
    print("    " + "; ".join(f"{e.tier1_name} > {e.tier2_name} > {e.name}" for e in built.entities[:n]))


def _taxonomy(built: Built) -> None:
    """The whole taxonomy, tier 1 by tier 1, so a reader can check that each entity sits under a sensible name."""
    tree: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for entity in built.entities:
        tree[entity.tier1_name][entity.tier2_name].append(entity.name)
    for tier1, tier2s in tree.items():
        print(f"    [{tier1}] " + "; ".join(f"{t2}: {', '.join(names)}" for t2, names in tier2s.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default="mams,memd,tripadvisor,demo")
    parser.add_argument("--tripadvisor-reviews", type=int, default=2000, help="0: the whole corpus.")
    parser.add_argument("--build-time-reviews", type=int, default=5000, help="TripAdvisor reviews for the timing.")
    parser.add_argument("--baseline", default="e456638", help="Commit holding the previous miner and taxonomy.")
    parser.add_argument("--show", action="store_true", help="Print the first entities of each registry.")
    parser.add_argument("--taxonomy", action="store_true", help="Print every registry's whole taxonomy.")
    parser.add_argument("--no-previous", action="store_true", help="Measure the current code only (half the time).")
    args = parser.parse_args()
    chosen = set(args.corpora.split(","))
    embed = EmbedderResource().embed_dense
    previous = _load_previous(args.baseline)
    builds = (
        ("current", lambda docs: build_current(docs, embed)),
        ("previous", lambda docs: build_previous(docs, embed, previous)),
    )[: 1 if args.no_previous else 2]

    span_corpora: list[Corpus | None] = []
    if "mams" in chosen:
        span_corpora += [mams(1), mams(8)]
    if "memd" in chosen:
        span_corpora += [memd(d) for d in ("Books", "Clothing", "Hotel")]
    for corpus in span_corpora:
        if corpus is None:
            print("skipped: a corpus is absent under ../shared/data")
            continue
        for label, build in builds:
            built = build(corpus.documents)
            _row(corpus.name, label, built, span_scores(corpus, built))
            if args.show:
                _preview(built)
            if args.taxonomy and label == "current":
                _taxonomy(built)
    if "tripadvisor" in chosen:
        rated = tripadvisor(args.tripadvisor_reviews)
        if rated is None:
            print("skipped: ../shared/data/tripadvisor_hotels is absent")
        else:
            for label, build in builds:
                built = build(rated.documents)
                _row(rated.name, label, built, rated_scores(rated, built))
                if args.show:
                    _preview(built)
                if args.taxonomy and label == "current":
                    _taxonomy(built)
            timing = tripadvisor(args.build_time_reviews, per_hotel=10)
            for label, build in builds if args.build_time_reviews else ():
                built = build(timing.documents)
                matcher = AliasMatcher(built.entities)
                started = time.perf_counter()
                for _, text in timing.documents:
                    matcher.mentions(text)
                per_second = len(timing.documents) / (time.perf_counter() - started)
                print(
                    f"build time, {timing.name}, {label}: {built.seconds:.1f} s for the registry "
                    f"({len(built.entities)} entities); alias matching {per_second:,.0f} reviews/s"
                )
    if "demo" in chosen:
        corpus, domain_of = demo()
        for label, build in builds:
            for domain in sorted(set(domain_of.values())):
                docs = [d for d in corpus.documents if domain_of[d[0]] == domain]
                sub = Corpus(f"demo {domain}", docs, {d: corpus.gold_spans[d] for d, _ in docs})
                built = build(docs)
                _row(sub.name, label, built, demo_scores(sub, built, domain_of))
                if args.show:
                    _preview(built)
                if args.taxonomy and label == "current":
                    _taxonomy(built)


if __name__ == "__main__":
    main()
