"""The extractor's measurement sets beyond MAMS, MEMD-ABSA and TripAdvisor, for ``bench_aspect_model.py``.

* DMASTE dev + test of book, grocery, pet and toy: Amazon categories no model was trained on (no train split).
* GoEmotions test through the project's emotion mapping: micro-F1 of the emotion head, the cue lexicon, and both.
* The VADER ground-truth sentences held back from training (a fifth of each file): Spearman of the strength head
  with the raters' mean, against VADER's own compound score.
* The demo corpus's planted emotions (``oprag generate-demo``): precision and recall of the extractor's emotions.

Every section skips with a message when its data is absent. A scorer is anything with ``predict`` (the runtime
model, the VADER clause scorer).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oprag_pipeline.enrich import cues
from oprag_pipeline.enrich.aspect_model import LABELS, AspectItem, AspectSentimentModel
from oprag_pipeline.enrich.offline import OfflineExtractor
from oprag_pipeline.schema import DocumentInput, RegistryEntity
from oprag_training.converters import (
    PROJECT_EMOTIONS,
    goemotions_labels,
    held_back,
    read_dmaste,
    read_goemotions,
    read_vader_groundtruth,
)
from oprag_training.train_extractor import GENERAL, UNSEEN_CATEGORIES, VADER_FILES

POS, NEU, NEG = LABELS.index("positive"), LABELS.index("neutral"), LABELS.index("negative")


def polar_figures(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """2-way accuracy on gold positive/negative (neutral a miss), neutral share, committed precision, macro-F1 over
    the two polar classes and the majority baseline (the same figures as the MEMD-ABSA section)."""
    committed = pred != NEU
    f1 = []
    for c in (POS, NEG):
        tp = float(((pred == c) & (gold == c)).sum())
        fp = float(((pred == c) & (gold != c)).sum())
        fn = float(((pred != c) & (gold == c)).sum())
        f1.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return {
        "n": len(gold),
        "acc": float((pred == gold).mean()),
        "neutral": float((~committed).mean()),
        "precision": float((pred[committed] == gold[committed]).mean()) if committed.any() else float("nan"),
        "macro_f1": float(np.mean(f1)),
        "majority": float(max((gold == POS).mean(), (gold == NEG).mean())),
    }


def dmaste_unseen_section(shared: Path, scorers: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """2-way figures on DMASTE's four categories without a train split, every aspect of a review in one call."""
    folder = shared / "dmaste"
    if not folder.exists():
        print(f"DMASTE absent at {folder}: skipped")
        return {}
    examples = read_dmaste(folder / c / f"{split}.txt" for c in UNSEEN_CATEGORIES for split in ("dev", "test"))
    by_text: dict[str, list[Any]] = {}
    for example in examples:
        by_text.setdefault(example.text, []).append(example)
    polar = [e for e in examples if e.polarity != "neutral"]
    gold = np.array([LABELS.index(e.polarity) for e in polar])
    print(
        f"DMASTE dev+test of {', '.join(UNSEEN_CATEGORIES)} (never trained on): {len(polar)} gold positive/negative "
        f"aspects of {len(by_text)} reviews (2-way; neutral = miss) [target acc >= 0.90]:"
    )
    print(f"  {'scorer':12s} {'n':>5s} {'acc':>6s} {'neutral':>8s} {'commit-P':>9s} {'macroF1':>8s} {'majority':>9s}")
    out = {}
    for name, scorer in scorers.items():
        labels: dict[tuple[str, int, int], str] = {}
        for text, group in by_text.items():
            items = [(text, e.start, e.end) for e in group]
            for item, prediction in zip(items, scorer.predict(items), strict=True):
                labels[item] = prediction.sentiment
        pred = np.array([LABELS.index(labels[(e.text, e.start, e.end)]) for e in polar])
        m = polar_figures(pred, gold)
        out[name] = m
        print(
            f"  {name:12s} {m['n']:5d} {m['acc']:6.3f} {m['neutral']:8.3f} {m['precision']:9.3f} "
            f"{m['macro_f1']:8.3f} {m['majority']:9.3f}"
        )
    return out


def micro_f1(pred: Sequence[set[str]], gold: Sequence[set[str]]) -> dict[str, float]:
    """Micro precision, recall and F1 of predicted emotion sets against gold sets."""
    tp = sum(len(p & g) for p, g in zip(pred, gold, strict=True))
    n_pred, n_gold = sum(len(p) for p in pred), sum(len(g) for g in gold)
    precision, recall = tp / max(1, n_pred), tp / max(1, n_gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "micro_f1": f1}


def goemotions_section(shared: Path, models: Mapping[str, AspectSentimentModel]) -> None:
    """GoEmotions test, labels mapped to the project's emotions: the emotion head (text read as a target-less
    window, as the trainer saw it), the cue lexicon, and the head with the cues for emotions it has no data for."""
    folder = shared / "goemotions"
    if not folder.exists():
        print(f"GoEmotions absent at {folder}: skipped")
        return
    rows = read_goemotions(folder / "test.tsv", goemotions_labels(folder / "labels.txt"))
    gold = [set(r.emotions) for r in rows]
    print(f"GoEmotions test ({len(rows)} comments, {sum(map(len, gold))} mapped emotions) [target micro-F1 >= 0.45]:")
    lexicon = [set(cues.emotions(r.text)) for r in rows]
    print(_emotion_line("cue lexicon", micro_f1(lexicon, gold)))
    for name, model in models.items():
        if "emotion_logits" not in model.head_outputs:
            continue
        probs, _ = model.heads([AspectItem(r.text, category=GENERAL) for r in rows])
        trained = set(model.emotion_trained)
        limit, sources = model.emotion_thresholds, model.emotion_sources
        head = [
            {e for e, v in zip(model.emotion_labels, p, strict=True) if e in trained and v >= limit[e]} for p in probs
        ]
        # as the extractor combines them: the head where its source is "head"/"both", the cues where "cues"/"both"
        both = [
            {e for e in h if sources.get(e) in ("head", "both")}
            | {e for e in lex if sources.get(e) in ("cues", "both")}
            for h, lex in zip(head, lexicon, strict=True)
        ]
        print(_emotion_line(f"{name} head", micro_f1(head, gold)))
        print(_emotion_line(f"{name} as combined", micro_f1(both, gold)))
        per = []
        for emotion in PROJECT_EMOTIONS:
            g = [{emotion} & s for s in gold]
            if sum(map(len, g)):
                f = micro_f1([{emotion} & s for s in head], g)["micro_f1"]
                lf = micro_f1([{emotion} & s for s in lexicon], g)["micro_f1"]
                per.append(f"{emotion} {f:.2f}/{lf:.2f}")
        print(f"    per emotion, head/cues F1: {', '.join(per)}")


def _emotion_line(name: str, m: Mapping[str, float]) -> str:
    return f"  {name:22s} P {m['precision']:.3f}  R {m['recall']:.3f}  micro-F1 {m['micro_f1']:.3f}"


def strength_section(shared: Path, models: Mapping[str, AspectSentimentModel]) -> None:
    """Spearman with the raters' mean on the VADER ground-truth sentences held back from training."""
    from scipy.stats import spearmanr

    folder = shared / "vader_groundtruth"
    if not folder.exists():
        print(f"VADER ground truth absent at {folder}: skipped")
        return
    print(
        "VADER ground truth, the fifth of each file held back from training: Spearman with the mean rating "
        "[target >= 0.6]:"
    )
    for file in VADER_FILES:
        rows = [r for r in read_vader_groundtruth(folder / f"{file}_GroundTruth.txt") if held_back(r.key)]
        gold = [r.rating for r in rows]
        parts = [f"VADER compound {spearmanr(gold, [cues.vader_compound(r.text) for r in rows]).statistic:.3f}"]
        for name, model in models.items():
            if "strength" in model.head_outputs:
                _, strength = model.heads([AspectItem(r.text, category=GENERAL) for r in rows])
                parts.append(f"{name} head {spearmanr(gold, strength).statistic:.3f}")
        print(f"  {file:22s} n={len(rows):5d}  " + "  ".join(parts))


def demo_emotions_section(extractors: Mapping[str, OfflineExtractor], docs: int = 600) -> None:
    """Emotions against the demo corpus's planted truth: the truth's entities as the registry, each planted
    mention compared with the opinion extracted for its entity in its document."""
    import json

    from oprag_pipeline.demo.generator import DOMAINS, generate_demo
    from oprag_pipeline.demo.truth import entities_truth, iter_jsonl

    with tempfile.TemporaryDirectory() as tmp:
        generate_demo(Path(tmp), docs=docs, seed=7, workers=1)
        truths: list[tuple[str, list[DocumentInput], list[RegistryEntity], list[dict[str, Any]]]] = []
        for domain in DOMAINS:
            entities = [
                RegistryEntity(entity_id=e["entity_id"], name=e["entity_name"], aliases=tuple(e["aliases"]))
                for e in entities_truth(domain)["entities"]
            ]
            documents = []
            for path in sorted((Path(tmp) / "raw" / domain).glob("*.jsonl")):
                for line in path.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        row = json.loads(line)
                        documents.append(DocumentInput(str(row["doc_id"]), str(row["text"]), str(row["doc_id"])))
            mentions = list(iter_jsonl(Path(tmp) / "truth" / domain / "mentions.jsonl"))
            truths.append((domain, documents, entities, mentions))
        print(f"demo corpus ({docs} documents, seed 7): emotions of the opinion extracted for each planted mention:")
        for name, extractor in extractors.items():
            counts: Counter[str] = Counter()
            for _domain, documents, entities, mentions in truths:
                found = {}
                for document, outcome in zip(documents, extractor.extract(documents, entities), strict=True):
                    for opinion in outcome.opinions:
                        found[(document.doc_id, opinion.entity_id)] = set(opinion.emotions)
                for mention in mentions:
                    key = (str(mention["doc_id"]), mention["entity_id"])
                    if key not in found:
                        continue
                    truth, got = set(mention["emotions"]), found[key]
                    counts["tp"] += len(truth & got)
                    counts["fp"] += len(got - truth)
                    counts["fn"] += len(truth - got)
                    counts["matched"] += 1
            p = counts["tp"] / max(1, counts["tp"] + counts["fp"])
            r = counts["tp"] / max(1, counts["tp"] + counts["fn"])
            f = 2 * p * r / (p + r) if p + r else 0.0
            print(f"  {name:22s} P {p:.3f}  R {r:.3f}  F1 {f:.3f}  ({counts['matched']} mentions matched)")


def main() -> None:
    """These sections alone, for the committed model and an optional candidate folder."""
    import argparse
    import os

    from oprag_pipeline.enrich.offline import VaderClauseScorer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--candidate", type=Path, help="a model folder written by oprag_training.train_extractor")
    ap.add_argument("--demo-docs", type=int, default=600)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    models = {"committed": AspectSentimentModel.load(threads=args.threads)}
    if args.candidate:
        models["candidate"] = AspectSentimentModel.load(args.candidate, threads=args.threads)
    dmaste_unseen_section(args.shared, {**models, "VADER": VaderClauseScorer()})
    goemotions_section(args.shared, models)
    strength_section(args.shared, models)
    demo_emotions_section({n: OfflineExtractor(scorer=m) for n, m in models.items()}, args.demo_docs)


if __name__ == "__main__":
    main()
