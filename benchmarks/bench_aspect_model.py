"""Aspect-sentiment benchmark: the committed model as calibrated today, the same model without calibration (the
previous extractor), and a VADER baseline, all in the same run.

Prints (targets in brackets)
1. MAMS ATSA test (regression floor >= 0.82 for the network): the network as trained, with the training prior
   divided out, the whole scoring path before and after calibration, and VADER.
2. MEMD-ABSA books / clothing / hotel test (../shared/data/memd_absa, measure only; explicit aspects, gold
   positive/negative): 2-way accuracy (a "neutral" answer is a miss) [>= 0.85 each], the neutral share, precision
   where the scorer commits, macro-F1 over positive/negative and the majority baseline. Every explicit aspect of a
   sentence is scored in one call, as the extractor scores a document's mentions.
3. Adaptation from a labelled sample of the domain, with gold as the oracle teacher (MEMD-ABSA train): sample
   size 0 / 100 / 300 / 1,000 -> test figures, through `calibration.fit_label_bias`.
4. TripAdvisor (deterministic subset of hotel files): the offline extractor (alias matching, pooling, adjective
   reading) on the rated aspects as registry entities; agreement on pairs rated >= 4 or <= 2 [>= 0.85], the
   neutral share among them, committed precision, and Spearman between σ and the aspect's stars over every rated
   pair with an opinion [>= 0.5]; also σ with a constant "medium" intensity (the sign alone).
5. Adaptation from the corpus's own ratings: offsets fitted to star-derived weak labels of 0 / 100 / 300 / 1,000
   mentions from other hotels of the same shuffle, measured on the evaluation hotels of 4.
5b. Self-training, the pipeline's default adaptation: the residual head fitted on the unadapted model's own answers
   that VADER agrees with, on unlabelled text of the domain (MEMD-ABSA train sentences, other TripAdvisor hotels),
   300 / 1,000 mentions examined, with the head's bias held at zero (as the pipeline fits it) and learnt.
6. Precision variants (issue: determinism without per-item scoring): the committed dynamic-int8 graph scored item
   by item (the default) against batch-invariant graphs of the same weights scored in sorted padded batches: fp32
   (dequantised) and static int8 (`quantize_static`, calibrated on 300 MAMS ATSA *train* aspects), fully int8 and
   with the feed-forward output projections left fp32. MAMS ATSA test accuracy [floor 0.82], max |logit
   difference| of an item alone against the same item in sorted and in random mixed batches, MEMD-ABSA 2-way.
7. Throughput of the offline extractor on ~150-word TripAdvisor reviews [>= 60 reviews/s on 2 cores] for the same
   paths plus the uncalibrated one, two interleaved rounds: wall-clock rate, CPU seconds, per-CPU-second rate with
   the load average, ratios against the default path and the share of opinions labelled the same.

    .venv/bin/python benchmarks/bench_aspect_model.py [--hotels 20] [--reviews 400] [--memd-max 800] [--skip ...]

Needs ../shared/data (or --mams / --memd / --tripadvisor); parts whose data is absent are skipped with a message.
All sections take about 15 minutes on 2 shared cores (`--skip quantisation throughput` saves half).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"

from oprag_pipeline.enrich import cues  # noqa: E402
from oprag_pipeline.enrich.aspect_model import (  # noqa: E402
    LABELS,
    MODEL_DIR,
    MODEL_FILE,
    AspectItem,
    AspectSentimentModel,
    pad_batch,
)
from oprag_pipeline.enrich.offline import OfflineExtractor, VaderClauseScorer  # noqa: E402
from oprag_pipeline.importers.tripadvisor import RATED_ASPECT_TERMS as ASPECT_TERMS  # noqa: E402
from oprag_pipeline.schema import DocumentInput, RegistryEntity, sentiment_intensity  # noqa: E402
from oprag_training.train_aspect_model import metrics, read_mams  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extractor_sets import (  # noqa: E402
    demo_emotions_section,
    dmaste_unseen_section,
    goemotions_section,
    polar_figures,
    strength_section,
)

# TripAdvisor's <Rating> columns: Overall, Value, Rooms, Location, Cleanliness, Check-in/front desk, Service, Business
RATING_COLUMN = {"value": 1, "rooms": 2, "location": 3, "cleanliness": 4, "checkin": 5, "service": 6}
MEMD_DOMAINS = ("Books", "Clothing", "Hotel")
POS, NEU, NEG = LABELS.index("positive"), LABELS.index("neutral"), LABELS.index("negative")


# ------------------------------------------------------------------------------------------------ the scorers
def uncalibrated_view(model: AspectSentimentModel) -> AspectSentimentModel:
    """The previous scoring path on the same session and logits cache: no prior correction, no lexicon tie-break."""
    old = AspectSentimentModel(
        model.session,
        model.encoder,
        temperature=model.temperature,
        workers=model.workers,
        emotion_labels=model.emotion_labels,
        emotion_untrained=[e for e in model.emotion_labels if e not in model.emotion_trained],
        strength_cuts=model.strength_cuts,
        emotion_thresholds=model.emotion_thresholds,
    )
    old._cache = model._cache
    old.correct_prior = False
    old.use_lexicon = False
    return old


def dequantized_graph(path: Path) -> bytes:
    """The int8 graph with every ``DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul`` chain replaced by an fp32
    ``MatMul`` on the dequantised weights: the same weights, activations no longer quantised per batch."""
    import onnx
    from onnx import helper, numpy_helper

    graph_model = onnx.load(str(path))
    g = graph_model.graph
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    consumers: dict[str, list[Any]] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    replaced, dropped, weights = {}, set(), []
    for n in g.node:
        if n.op_type != "MatMulInteger":
            continue
        dql = producer[n.input[0]]
        cast = consumers[n.output[0]][0]
        mul = consumers[cast.output[0]][0]
        scales = producer[mul.input[1]]
        q = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        zero = numpy_helper.to_array(inits[n.input[3]]).astype(np.float32)
        scale = numpy_helper.to_array(inits[scales.input[1]]).astype(np.float32)
        name = f"{n.input[1]}_fp32"
        weights.append(numpy_helper.from_array(((q - zero) * scale).astype(np.float32), name))
        replaced[id(n)] = helper.make_node("MatMul", [dql.input[0], name], [mul.output[0]], name=f"{n.name}_fp32")
        dropped.update({id(dql), id(cast), id(mul), id(scales)})
    nodes = [replaced.get(id(n), n) for n in g.node if id(n) not in dropped]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(weights)
    used = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return graph_model.SerializeToString()


def static_int8_graph(fp32: bytes, calibration: Sequence[AspectItem], fp32_ffn_out: bool = False) -> bytes:
    """The fp32 graph statically quantised (``quantize_static``): fixed activation scales calibrated on
    ``calibration`` (MAMS *training* aspects, each run alone so padding never enters a range), QDQ format, int8
    per-channel weights, uint8 activations, MatMul nodes only (those ``quantize_dynamic`` quantised, plus attention).
    Ranges: the 99.999th percentile of |activation| (MinMax, Entropy and the 99.99th percentile measured no better
    on MAMS). ``fp32_ffn_out`` leaves the six feed-forward output projections (input: the 1,536-wide GELU output,
    whose range a fixed scale covers worst) in fp32. With fixed scales an item's logits depend on the item only."""
    import contextlib
    import io
    import tempfile

    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    encoded = AspectSentimentModel.load().encoder.encode(calibration)

    class Reader(CalibrationDataReader):
        """One unpadded item per feed; ``set_range`` lets the calibrator collect item by item (a histogram over
        tensors of different sequence lengths cannot be built in one call)."""

        def __init__(self) -> None:
            self.rows = iter(encoded)

        def __len__(self) -> int:
            return len(encoded)

        def set_range(self, start_index: int, end_index: int) -> None:
            self.rows = iter(encoded[start_index:end_index])

        def get_next(self) -> dict[str, np.ndarray] | None:
            row = next(self.rows, None)
            return None if row is None else pad_batch([row])

    graph = onnx.load_from_string(fp32).graph
    widths = {i.name: tuple(i.dims) for i in graph.initializer}
    ffn_out = [n.name for n in graph.node if n.op_type == "MatMul" and widths.get(n.input[1], ())[:1] == (1536,)]
    # the calibrator prints a line per collected item: keep the benchmark's own output readable
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "static.onnx"
        src.write_bytes(fp32)
        quantize_static(
            str(src),
            str(dst),
            Reader(),
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.Percentile,
            nodes_to_exclude=ffn_out if fp32_ffn_out else [],
            extra_options={"CalibStridedMinMax": 1, "CalibPercentile": 99.999},
        )
        return dst.read_bytes()


class BatchedModel(AspectSentimentModel):
    """A graph whose logits do not depend on batch companions, scored in padded batches: items sorted by length
    (little padding), ``batch_size`` per run, batches spread over ``workers`` threads of single-threaded runs (the
    per-item path's threading), logits returned in input order."""

    batch_size = 8

    @classmethod
    def from_graph(cls, graph: bytes, workers: int) -> BatchedModel:
        import onnxruntime as ort

        base = AspectSentimentModel.load()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        return cls(session, base.encoder, temperature=base.temperature, workers=workers, train_prior=base.train_prior)

    def _score(
        self, encoded: Sequence[tuple[list[int], int, int]], outputs: Sequence[str] = ("logits",)
    ) -> list[np.ndarray]:
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        groups = [order[k : k + self.batch_size] for k in range(0, len(order), self.batch_size)]

        def run(group: list[int]) -> np.ndarray:
            feeds = {n: v for n, v in pad_batch([encoded[i] for i in group]).items() if n in self._input_names}
            return np.concatenate(self.session.run(list(outputs), feeds), axis=1)

        if self.workers > 1 and len(groups) > 1:
            if self._pool is None or self._pool[0] != os.getpid():
                self._pool = (os.getpid(), ThreadPoolExecutor(self.workers, thread_name_prefix="aspect-batch"))
            results = list(self._pool[1].map(run, groups))
        else:
            results = [run(g) for g in groups]
        out: list[np.ndarray] = [np.zeros(len(LABELS), dtype=np.float32)] * len(encoded)
        for group, rows in zip(groups, results, strict=True):
            for i, row in zip(group, rows, strict=True):
                out[i] = row
        return out


def mixed_batch_logits(model: AspectSentimentModel, items: Sequence[AspectItem], seed: int) -> np.ndarray:
    """Logits of ``items`` run through ``model.session`` in random padded batches of 2-16 mixed companions (no
    sorting, so lengths and padding differ from any other composition), in input order."""
    encoded = model.encoder.encode(items)
    order = list(range(len(items)))
    rng = random.Random(seed)
    rng.shuffle(order)
    out = np.zeros((len(items), len(LABELS)), dtype=np.float32)
    names = {i.name for i in model.session.get_inputs()}
    k = 0
    while k < len(order):
        group = order[k : k + rng.randint(2, 16)]
        feeds = {n: v for n, v in pad_batch([encoded[i] for i in group]).items() if n in names}
        out[group] = model.session.run(["logits"], feeds)[0]
        k += len(group)
    return out


# ----------------------------------------------------------------------------------------------------- data
def memd_sentence_spans(sentence: dict[str, Any]) -> tuple[str, dict[tuple[int, int], set[str]]]:
    """One MEMD-ABSA sentence as (tokens joined by single spaces, {explicit aspect character span: its labels}).

    Aspect spans are token ranges [from, to), -1 for an implicit aspect (skipped: it has no span to score)."""
    tokens = sentence["raw_words"].split(" ")
    starts, pos = [], 0
    for token in tokens:
        starts.append(pos)
        pos += len(token) + 1
    spans: dict[tuple[int, int], set[str]] = {}
    for quad in sentence["quadruples"]:
        lo, hi = int(quad["aspect"]["from"]), int(quad["aspect"]["to"])
        if lo >= 0:
            spans.setdefault((starts[lo], starts[hi - 1] + len(tokens[hi - 1])), set()).add(quad["sentiment"])
    return " ".join(tokens), spans


def read_memd(path: Path) -> list[tuple[str, list[tuple[int, int]], list[tuple[int, int, int]]]]:
    """Per sentence: (text, every explicit aspect span, [(start, end, gold label)] of positive/negative aspects)."""
    rows = []
    for sentence in json.loads(path.read_text(encoding="utf-8")):
        text, spans = memd_sentence_spans(sentence)
        gold = [
            (s, e, POS if labels == {"POS"} else NEG)
            for (s, e), labels in spans.items()
            if labels in ({"POS"}, {"NEG"})
        ]
        if spans:
            rows.append((text, sorted(spans), gold))
    return rows


def read_tripadvisor(folder: Path, n_files: int, seed: int = 7, first: int = 0) -> list[tuple[str, list[int]]]:
    """(text, ratings) for the reviews of a deterministic sample of hotel files (``first`` files of the shuffle
    skipped)."""
    files = sorted(folder.glob("*.txt"))
    random.Random(seed).shuffle(files)
    return [review for f in files[first : first + n_files] for review in read_tripadvisor_file(f)]


def rated_entities() -> list[RegistryEntity]:
    """The rated aspects as registry entities, named by the importer's terms (tripadvisor.RATED_ASPECT_TERMS)."""
    return [RegistryEntity(entity_id=a, name=terms[0], aliases=tuple(terms[1:])) for a, terms in ASPECT_TERMS.items()]


# -------------------------------------------------------------------------------------------------- figures
# 2-way accuracy (neutral a miss), neutral share, committed precision, macro-F1 and the majority baseline
two_way = polar_figures


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def label_of(sentiment: str) -> int:
    return LABELS.index(sentiment)


def mams_section(
    args: argparse.Namespace,
    new: AspectSentimentModel,
    old: AspectSentimentModel,
    candidate: AspectSentimentModel | None = None,
) -> None:
    path = args.mams / "MAMS-ATSA" / "test.xml"
    if not path.exists():
        print(f"MAMS absent at {path}: skipped")
        return
    data = read_mams(path)
    items = [e.item for e in data]
    gold = np.array([e.label for e in data])
    t = time.perf_counter()
    network = metrics(new.logits(items), gold)
    dt = time.perf_counter() - t
    prior = metrics(new.probabilities(items), gold)
    before = metrics(np.array([[p.scores[lab] for lab in LABELS] for p in old.predict(items)]), gold)
    after = metrics(np.array([[p.scores[lab] for lab in LABELS] for p in new.predict(items)]), gold)
    vader = np.array(
        [label_of(cues.vader_polarity(cues.vader_compound(cues.local_clause(i.text, i.start, i.end)))) for i in items]
    )
    print(f"MAMS-ATSA test n={network['n']} (3-way accuracy / macro-F1), {len(items) / dt:.0f} aspects/s:")
    print(f"  network as trained        {network['accuracy']:.4f} / {network['macro_f1']:.4f}  [floor 0.82]")
    print(f"  network, review prior      {prior['accuracy']:.4f} / {prior['macro_f1']:.4f}")
    print(f"  scoring path before (rules only)            {before['accuracy']:.4f} / {before['macro_f1']:.4f}")
    print(f"  scoring path now (prior + rules + lexicon)  {after['accuracy']:.4f} / {after['macro_f1']:.4f}")
    print(f"  VADER clause                                {float((vader == gold).mean()):.4f}")
    if candidate is not None:
        t = time.perf_counter()
        net = metrics(candidate.logits(items), gold)
        rate = len(items) / (time.perf_counter() - t)
        path_now = metrics(np.array([[p.scores[lab] for lab in LABELS] for p in candidate.predict(items)]), gold)
        print(f"  candidate network          {net['accuracy']:.4f} / {net['macro_f1']:.4f}  ({rate:.0f} aspects/s)")
        print(f"  candidate scoring path                      {path_now['accuracy']:.4f} / {path_now['macro_f1']:.4f}")


def memd_section(args: argparse.Namespace, scorers: dict[str, Callable[[list, list], list[str]]]) -> None:
    if not args.memd.exists():
        print(f"MEMD-ABSA absent at {args.memd}: skipped")
        return
    print("MEMD-ABSA test, explicit aspects with gold positive/negative (2-way; neutral = miss) [target acc >= 0.85]:")
    print(
        f"  {'domain':9s} {'scorer':11s} {'n':>5s} {'acc':>6s} {'neutral':>8s} {'commit-P':>9s} {'macroF1':>8s} "
        f"{'majority':>9s}"
    )
    for domain in MEMD_DOMAINS:
        rows = read_memd(args.memd / domain / "Test.json")
        rows = [r for r in rows if r[2]][: args.memd_max]
        items = [(text, s, e) for text, spans, _ in rows for s, e in spans]
        index = {item: i for i, item in enumerate(items)}
        gold_keys = [(text, s, e) for text, _, gold in rows for s, e, _ in gold]
        gold = np.array([g for _, _, gl in rows for _, _, g in gl])
        for name, score in scorers.items():
            labels = score(items, [])
            pred = np.array([label_of(labels[index[k]]) for k in gold_keys])
            m = two_way(pred, gold)
            print(
                f"  {domain:9s} {name:11s} {m['n']:5d} {m['acc']:6.3f} {m['neutral']:8.3f} {m['precision']:9.3f} "
                f"{m['macro_f1']:8.3f} {m['majority']:9.3f}"
            )


def read_memd_labelled(path: Path) -> list[tuple[list[tuple[str, int, int]], list[int]]]:
    """Per sentence of a training split: every explicit aspect (text, start, end) and its gold label, neutral
    included (what a teacher labelling a sample would give). An aspect with conflicting labels is left out."""
    code = {"POS": POS, "NEU": NEU, "NEG": NEG}
    out = []
    for sentence in json.loads(path.read_text(encoding="utf-8")):
        text, spans = memd_sentence_spans(sentence)
        kept = [(span, labels.pop()) for span, labels in sorted(spans.items()) if len(labels) == 1]
        if kept:
            out.append(([(text, s, e) for (s, e), _ in kept], [code[label] for _, label in kept]))
    return out


def memd_test_scorer(args: argparse.Namespace, domain: str) -> Callable[[AspectSentimentModel], dict[str, float]]:
    """`two_way` figures of a model on a MEMD-ABSA domain's test split (up to ``--memd-max`` sentences with gold
    positive/negative aspects), every explicit aspect of a sentence scored in one call."""
    rows = [r for r in read_memd(args.memd / domain / "Test.json") if r[2]][: args.memd_max]
    items = [(text, s, e) for text, spans, _ in rows for s, e in spans]
    index = {item: i for i, item in enumerate(items)}
    gold_keys = [(text, s, e) for text, _, gold in rows for s, e, _ in gold]
    gold = np.array([g for _, _, gl in rows for _, _, g in gl])

    def score(model: AspectSentimentModel) -> dict[str, float]:
        labels_now = [p.sentiment for p in model.predict(items)]
        return two_way(np.array([label_of(labels_now[index[k]]) for k in gold_keys]), gold)

    return score


def adaptation_section(args: argparse.Namespace, model: AspectSentimentModel) -> None:
    """Oracle-teacher adaptation: gold labels of N training aspects of the domain stand in for an LLM's; the
    model learns per-class offsets from them (calibration.fit_label_bias) and is measured on the test split."""
    from oprag_pipeline.enrich.calibration import fit_label_bias, fit_residual_head

    if not args.memd.exists():
        print(f"MEMD-ABSA absent at {args.memd}: adaptation skipped")
        return
    sizes = (0, 100, 300, 1000)
    print(
        "adaptation from a labelled in-domain sample (oracle teacher: MEMD-ABSA train gold), by sample size: 2-way "
        "test accuracy / neutral share / macro-F1 on gold positive-negative / share of gold-neutral aspects kept "
        "neutral:"
    )
    for domain in MEMD_DOMAINS:
        sentences = read_memd_labelled(args.memd / domain / "Train.json")
        random.Random(0).shuffle(sentences)
        two_way_test = memd_test_scorer(args, domain)
        # gold-neutral test aspects (scored with their sentence's other aspects): does adaptation erase neutral?
        test_labelled = read_memd_labelled(args.memd / domain / "Test.json")[: args.memd_max]
        neutral_items = [it for spans, labels in test_labelled for it, y in zip(spans, labels, strict=True) if y == NEU]
        context = [it for spans, _ in test_labelled for it in spans]
        cells: dict[str, list[str]] = {"offsets": [], "residual head": []}
        for size in sizes:
            sample_items: list[tuple[str, int, int]] = []
            sample_labels: list[int] = []
            for spans, labels in sentences:
                if len(sample_items) >= size:
                    break
                sample_items += spans
                sample_labels += labels
            for method, cell in cells.items():
                model.label_bias = None
                model.residual_head = None
                if size:
                    probs = model.probabilities(sample_items)
                    if method == "offsets":
                        model.label_bias = fit_label_bias(probs, sample_labels)
                    else:
                        model.residual_head = fit_residual_head(model.features(sample_items), probs, sample_labels)
                m = two_way_test(model)
                kept = [p.sentiment == "neutral" for p in model.predict(neutral_items, other_aspects=context)]
                kept_neutral = f"{np.mean(kept):.2f} of {len(kept)}" if kept else "none in gold"
                cell.append(f"{size}: {m['acc']:.3f}/{m['neutral']:.3f}/{m['macro_f1']:.3f}/{kept_neutral}")
        model.label_bias = None
        model.residual_head = None
        for method, cell in cells.items():
            print(f"  {domain:9s} {method:13s} " + " | ".join(cell))


def rated_mentions(reviews: list[tuple[str, list[int]]]) -> tuple[list[tuple[str, int, int]], list[int]]:
    """Every mention of a rated aspect's gold term in the reviews, with that aspect's star rating (a weak label)."""
    import re

    items, stars = [], []
    for text, rating in reviews:
        for aspect, terms in ASPECT_TERMS.items():
            star = rating[RATING_COLUMN[aspect]]
            if star < 1:
                continue
            alternation = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
            for m in re.finditer(rf"(?<![\w-])(?:{alternation})(?:e?s)?(?![\w-])", text, re.IGNORECASE):
                items.append((text, m.start(), m.end()))
                stars.append(star)
    return items, stars


def rating_adaptation_section(args: argparse.Namespace, model: AspectSentimentModel) -> None:
    """Adaptation from the corpus's own ratings: per-class offsets fitted to star-derived weak labels
    (calibration.rating_weak_label) of mentions in hotels *not* used for evaluation, measured on the evaluation
    hotels of `tripadvisor_section` through the extractor."""
    from oprag_pipeline.enrich.calibration import fit_label_bias, fit_residual_head, rating_weak_label

    if not args.tripadvisor.exists():
        print(f"TripAdvisor absent at {args.tripadvisor}: rating adaptation skipped")
        return
    files = sorted(args.tripadvisor.glob("*.txt"))
    random.Random(7).shuffle(files)
    adaptation_hotels = files[args.hotels : 2 * args.hotels]  # the next files of the same shuffle: disjoint
    reviews = []
    for f in adaptation_hotels:
        reviews += read_tripadvisor_file(f)
    random.Random(0).shuffle(reviews)
    items, stars = rated_mentions(reviews)
    print(
        f"adaptation from the corpus's own ratings ({len(adaptation_hotels)} other hotels, {len(items)} rated "
        "mentions available), measured on the evaluation hotels:"
    )
    for size in (0, 100, 300, 1000):
        for method in ("offsets", "residual head") if size else ("none",):
            model.label_bias = None
            model.residual_head = None
            note = ""
            if size:
                labels = [rating_weak_label(s) for s in stars[:size]]
                probs = model.probabilities(items[:size])
                if method == "offsets":
                    model.label_bias = fit_label_bias(probs, labels)
                    note = " offsets " + ", ".join(
                        f"{lab} {b:+.2f}" for lab, b in zip(LABELS, model.label_bias, strict=True)
                    )
                else:
                    model.residual_head = fit_residual_head(model.features(items[:size]), probs, labels)
                    note = " residual head"
            model._cache.clear()
            tripadvisor_section(args, {f"{size:>4d}": OfflineExtractor(scorer=model)}, header=size == 0, note=note)
    model.label_bias = None
    model.residual_head = None


def self_training_section(args: argparse.Namespace, model: AspectSentimentModel) -> None:
    """Self-training, the pipeline's default adaptation (`ratings.fit_self_offsets`): the unadapted model labels
    unlabelled in-domain text (MEMD-ABSA *train* sentences, their labels never read; mentions of the rated aspects'
    terms in 20 other TripAdvisor hotels, their stars never read), the answers VADER agrees with are kept and the
    residual head is fitted on them with its bias held at zero; measured on the test split / the evaluation hotels
    as in sections 2 and 4. Also with the bias learnt (what holding it avoids), and whether invented factual
    sentences stay neutral after the fit."""
    from oprag_pipeline.enrich.calibration import fit_residual_head
    from oprag_pipeline.enrich.ratings import self_labels

    facts = [
        (text, text.index(term), text.index(term) + len(term))
        for text, term in (
            ("The parcel came with a printed receipt.", "receipt"),
            ("We booked the room in March.", "room"),
            ("The second chapter is set in Lisbon.", "chapter"),
            ("The jacket has two inside pockets.", "pockets"),
            ("They serve breakfast from seven.", "breakfast"),
            ("The laptop ships with a charger and a sleeve.", "charger"),
        )
    ]

    def facts_neutral() -> int:
        return sum(p.sentiment == "neutral" for p in model.predict(facts))

    def fit(documents: list[list[tuple[str, int, int]]], size: int, fixed_bias: bool) -> str:
        model.label_bias = None
        model.residual_head = None
        model._cache.clear()
        items, labels, examined = self_labels(model, documents, size)
        model.residual_head = fit_residual_head(
            model.features(items), model.probabilities(items), labels, learn_bias=not fixed_bias
        )
        model._cache.clear()
        neutral = facts_neutral()
        counts = np.bincount(np.array(labels), minlength=3)
        shares = " / ".join(f"{n} {lab[:3]}" for lab, n in zip(LABELS, counts, strict=True))
        return f"kept {len(items)} of {examined} ({shares}); factual sentences neutral {neutral} of {len(facts)}"

    sizes = (300, 1000)
    print(
        "self-training on unlabelled in-domain text (answers the lexicon agrees with; residual head), by mentions "
        "examined: 2-way test accuracy / neutral share / committed precision / macro-F1:"
    )
    if args.memd.exists():
        for domain in MEMD_DOMAINS:
            pool = [spans for spans, _ in read_memd_labelled(args.memd / domain / "Train.json")]
            random.Random(0).shuffle(pool)
            two_way_test = memd_test_scorer(args, domain)
            for size in (0, *sizes):
                for fixed in (True, False) if size else (True,):
                    note = f"unadapted; factual sentences neutral {facts_neutral()} of {len(facts)}"
                    if size:
                        note = ("bias 0 " if fixed else "bias learnt ") + fit(pool, size, fixed)
                    m = two_way_test(model)
                    print(
                        f"  {domain:9s} {size:5d}: {m['acc']:.3f} / {m['neutral']:.3f} / {m['precision']:.3f} / "
                        f"{m['macro_f1']:.3f} (majority {m['majority']:.3f}) {note}"
                    )
            model.label_bias = None
            model.residual_head = None
            model._cache.clear()
    else:
        print(f"MEMD-ABSA absent at {args.memd}: its part skipped")
    if not args.tripadvisor.exists():
        print(f"TripAdvisor absent at {args.tripadvisor}: its part skipped")
        return
    files = sorted(args.tripadvisor.glob("*.txt"))
    random.Random(7).shuffle(files)
    reviews = [r for f in files[args.hotels : 2 * args.hotels] for r in read_tripadvisor_file(f)]
    random.Random(0).shuffle(reviews)
    documents = []
    for text, rating in reviews:
        mentions, _ = rated_mentions([(text, rating)])
        documents.append(mentions)
    model._cache.clear()
    tripadvisor_section(args, {"   0": OfflineExtractor(scorer=model)}, header=True, note=" unadapted")
    for size in sizes:
        for fixed in (True, False):
            note = fit(documents, size, fixed)
            tripadvisor_section(
                args,
                {f"{size:4d}": OfflineExtractor(scorer=model)},
                header=False,
                note=(" bias 0 " if fixed else " bias learnt ") + note,
            )
    model.label_bias = None
    model.residual_head = None
    model._cache.clear()


def read_tripadvisor_file(path: Path) -> list[tuple[str, list[int]]]:
    """(text, ratings) of every review in one hotel file."""
    reviews, content = [], None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("<Content>"):
            content = line[len("<Content>") :]
        elif line.startswith("<Rating>"):
            rating = [int(x) for x in line[len("<Rating>") :].split()]
            if content and len(rating) >= 7:
                reviews.append((content, rating))
            content = None
    return reviews


def tripadvisor_section(
    args: argparse.Namespace,
    extractors: dict[str, OfflineExtractor],
    header: bool = True,
    note: str = "",
    first_file: int = 0,
) -> None:
    if not args.tripadvisor.exists():
        print(f"TripAdvisor absent at {args.tripadvisor}: skipped")
        return
    reviews = read_tripadvisor(args.tripadvisor, args.hotels, first=first_file)[: args.ta_reviews]
    documents = [DocumentInput(doc_id=str(i), text=t, content_hash=str(i)) for i, (t, _) in enumerate(reviews)]
    entities = rated_entities()
    if header:
        which = f"files {first_file}-{first_file + args.hotels - 1} of the seed-7 shuffle"
        print(f"TripAdvisor: {len(reviews)} reviews of {args.hotels} hotel files ({which}); rated aspects as entities")
    if header:
        print(
            f"  {'scorer':8s} {'pairs':>6s} {'agree':>6s} {'neutral':>8s} {'commit-P':>9s} {'σ-pairs':>8s} "
            f"{'Spearman σ':>11s} {'sign only':>10s}  [targets agree 0.85, Spearman 0.5]"
        )
    for name, extractor in extractors.items():
        outcomes = extractor.extract(documents, entities)
        hits, neutral, stars, sigma, sign = [], [], [], [], []
        for outcome, (_, rating) in zip(outcomes, reviews, strict=True):
            for opinion in outcome.opinions:
                star = rating[RATING_COLUMN[opinion.entity_id]]
                if star < 1:
                    continue
                stars.append(star)
                sigma.append(sentiment_intensity(opinion.sentiment, opinion.intensity))
                sign.append({"positive": 1, "neutral": 0, "negative": -1}[opinion.sentiment])
                if star != 3:
                    gold = "positive" if star >= 4 else "negative"
                    hits.append(opinion.sentiment == gold)
                    neutral.append(opinion.sentiment == "neutral")
        h, nt = np.array(hits), np.array(neutral)
        print(
            f"  {name:8s} {len(h):6d} {h.mean():6.3f} {nt.mean():8.3f} {h[~nt].mean():9.3f} {len(stars):8d} "
            f"{spearman(stars, sigma):11.3f} {spearman(stars, sign):10.3f}{note}"
        )


def intensity_section(args: argparse.Namespace, model: AspectSentimentModel) -> None:
    """Intensity levels learnt from the corpus's own ratings (`ratings.fit_intensity_from_ratings`, as the pipeline
    fits them: per-aspect stars, the pipeline's rule for which rating labels which mention, 2,000 sampled mentions)
    on hotels of the rating-adaptation section, judged on the evaluation hotels of section 4 and on 20 hotels no
    section fits anything on (the next files of the same shuffle)."""
    from oprag_pipeline.config import INTENSITY_SAMPLE_MENTIONS
    from oprag_pipeline.enrich.ratings import document_rated_mentions, fit_intensity_from_ratings
    from oprag_pipeline.registry.matching import AliasMatcher

    if not args.tripadvisor.exists():
        print(f"TripAdvisor absent at {args.tripadvisor}: intensity skipped")
        return
    reviews = read_tripadvisor(args.tripadvisor, args.hotels, first=args.hotels)
    random.Random(0).shuffle(reviews)
    entities = rated_entities()
    matcher = AliasMatcher(entities)
    mentions = []
    for i, (text, rating) in enumerate(reviews):
        extra = {f"rating_{aspect}": rating[column] for aspect, column in RATING_COLUMN.items() if rating[column] >= 1}
        found, _ = document_rated_mentions(
            str(i), text, None, extra, matcher, {e.entity_id: [e.entity_id] for e in entities}
        )
        mentions += found
        if len(mentions) >= INTENSITY_SAMPLE_MENTIONS:
            break
    model._cache.clear()
    base = OfflineExtractor(scorer=model)
    documents = [DocumentInput(doc_id=str(i), text=t, content_hash=str(i)) for i, (t, _) in enumerate(reviews)]
    t = time.perf_counter()
    fit = fit_intensity_from_ratings(base, mentions[:INTENSITY_SAMPLE_MENTIONS], documents, entities)
    took = time.perf_counter() - t
    calibration, opinions = fit.calibration, fit.opinions
    if calibration is None:
        print(f"intensity from ratings: skipped ({fit.skipped_reason})")
        return
    sizes = {
        side: getattr(calibration, side).size if getattr(calibration, side) else 0 for side in ("positive", "negative")
    }
    print(
        f"intensity levels learnt from the ratings of {args.hotels} other hotels ({opinions} rated opinions: "
        f"{sizes['positive']} positive, {sizes['negative']} negative; {took:.0f} s), judged on:"
    )
    learnt = OfflineExtractor(scorer=model, intensity_calibration=calibration)
    for first in (0, 2 * args.hotels):
        tripadvisor_section(args, {"cues": base, "learnt": learnt}, header=True, first_file=first)


def precision_variants(args: argparse.Namespace) -> dict[str, BatchedModel]:
    """The batch-invariant alternatives to the committed dynamic-int8 graph, built from its weights in this run: the
    fp32 graph (dequantised) and two static-int8 graphs calibrated on 300 MAMS ATSA *training* aspects: all MatMuls
    int8 ("int8-static"), or the feed-forward output projections left fp32 ("int8-mixed")."""
    fp32 = dequantized_graph(MODEL_DIR / MODEL_FILE)
    train = read_mams(args.mams / "MAMS-ATSA" / "train.xml")
    random.Random(0).shuffle(train)
    calibration = [e.item for e in train[:300]]
    t = time.perf_counter()
    graphs = {
        "int8-static": static_int8_graph(fp32, calibration),
        "int8-mixed": static_int8_graph(fp32, calibration, fp32_ffn_out=True),
        "fp32": fp32,
    }
    took = time.perf_counter() - t
    print(f"static int8 graphs calibrated on {len(calibration)} MAMS ATSA train aspects in {took:.0f} s")
    return {name: BatchedModel.from_graph(graph, workers=args.threads) for name, graph in graphs.items()}


def quantisation_section(
    args: argparse.Namespace, new: AspectSentimentModel, variants: dict[str, BatchedModel], labels: Callable
) -> None:
    """Accuracy and determinism of each precision: the committed path (dynamic int8, item by item) against the
    batch-invariant graphs scored in sorted padded batches; max |logit difference| of an item alone against the
    same item in sorted batches and in random mixed batches of 2-16 (two seeds); then MEMD-ABSA 2-way for each."""
    path = args.mams / "MAMS-ATSA" / "test.xml"
    if not path.exists():
        print(f"MAMS absent at {path}: quantisation skipped")
        return
    data = read_mams(path)
    items = [e.item for e in data]
    gold = np.array([e.label for e in data])
    probe = items[:300]
    print(
        f"precision variants: MAMS-ATSA test network accuracy / macro-F1 (n={len(items)}) [floor 0.82]; max |logit "
        f"diff| alone vs batched on {len(probe)} test aspects, and share of those whose label moves:"
    )
    new._cache.clear()
    per_item = new.logits(items)
    alone = per_item[: len(probe)]
    mixed = np.vstack([mixed_batch_logits(new, probe, seed) for seed in (1, 2)])
    moved = float((mixed.argmax(1).reshape(2, -1) != alone.argmax(1)).any(axis=0).mean())
    m = metrics(per_item, gold)
    print(
        f"  {'int8 dynamic, per item (now)':30s} {m['accuracy']:.4f} / {m['macro_f1']:.4f}  per item: deterministic; "
        f"in mixed batches it would move by {float(np.abs(mixed - np.tile(alone, (2, 1))).max()):.3g} "
        f"({moved:.3f} of labels)"
    )
    for name, model in variants.items():
        model._cache.clear()
        batched = model.logits(items)
        solo = np.vstack([model.session.run(["logits"], pad_batch([e]))[0] for e in model.encoder.encode(probe)])
        mixed = np.vstack([mixed_batch_logits(model, probe, seed) for seed in (1, 2)])
        m = metrics(batched, gold)
        print(
            f"  {name + ', batched':30s} {m['accuracy']:.4f} / {m['macro_f1']:.4f}  max diff alone vs sorted batches "
            f"{float(np.abs(batched[: len(probe)] - solo).max()):.3g}, vs mixed batches "
            f"{float(np.abs(mixed - np.tile(solo, (2, 1))).max()):.3g}"
        )
    memd_section(args, {"now": labels(new), **{name: labels(model) for name, model in variants.items()}})


def throughput_section(
    args: argparse.Namespace,
    new: AspectSentimentModel,
    old: AspectSentimentModel,
    variants: dict[str, BatchedModel],
    candidate: AspectSentimentModel | None = None,
) -> None:
    if not args.tripadvisor.exists():
        print("TripAdvisor absent: throughput skipped")
        return
    texts = [t for t, _ in read_tripadvisor(args.tripadvisor, 200, seed=1) if 120 <= len(t.split()) <= 180]
    texts = texts[: args.reviews]
    documents = [DocumentInput(doc_id=str(i), text=t, content_hash=str(i)) for i, t in enumerate(texts)]
    entities = rated_entities()
    paths: dict[str, AspectSentimentModel] = {"int8 per-item, before": old, "int8 per-item, now": new}
    paths.update({f"{name} batched": model for name, model in variants.items()})
    if candidate is not None:
        paths["candidate"] = candidate
    extractors = {name: OfflineExtractor(scorer=m) for name, m in paths.items()}
    print(
        f"throughput: offline extractor on {len(texts)} TripAdvisor reviews of 120-180 words, {args.threads} "
        "threads, two rounds interleaved (cold logits cache each time):"
    )
    wall: dict[str, list[float]] = {name: [] for name in paths}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    labels: dict[str, list[str]] = {}
    for _ in range(2):
        for name, extractor in extractors.items():
            paths[name]._cache.clear()
            load = os.getloadavg()[0]
            t, c = time.perf_counter(), time.process_time()
            outcomes = extractor.extract(documents, entities)
            wall[name].append(len(texts) / (time.perf_counter() - t))
            cpu[name].append(time.process_time() - c)
            per_cpu = len(texts) / (cpu[name][-1] / args.threads)
            labels[name] = [o.sentiment for out in outcomes for o in out.opinions]
            print(
                f"  {name:22s} {wall[name][-1]:6.1f} reviews/s wall, {cpu[name][-1]:5.1f} CPU-s, {per_cpu:6.1f} per "
                f"{args.threads} CPU-seconds (what {args.threads} idle cores would give; load average {load:.1f})",
                flush=True,
            )
    base = "int8 per-item, now"
    print(f"  against {base} (sum over both rounds; ratio > 1 is faster) and opinions labelled the same:")
    for name in paths:
        if name == base:
            continue
        same = np.mean([a == b for a, b in zip(labels[base], labels[name], strict=True)])
        print(
            f"    {name:20s} wall {sum(wall[name]) / sum(wall[base]):.2f}x, per CPU-second "
            f"{sum(cpu[base]) / sum(cpu[name]):.2f}x; same label {same:.4f} of {len(labels[base])}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mams", type=Path, default=SHARED / "mams")
    ap.add_argument("--memd", type=Path, default=SHARED / "memd_absa")
    ap.add_argument("--tripadvisor", type=Path, default=SHARED / "tripadvisor_hotels" / "Texts")
    ap.add_argument("--hotels", type=int, default=20, help="TripAdvisor hotel files for agreement/Spearman")
    ap.add_argument("--ta-reviews", type=int, default=1500, help="cap on those reviews")
    ap.add_argument("--memd-max", type=int, default=800, help="sentences per MEMD-ABSA domain")
    ap.add_argument("--reviews", type=int, default=400, help="reviews for the throughput run")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=[
            "mams",
            "memd",
            "adaptation",
            "tripadvisor",
            "ratings",
            "intensity",
            "self",
            "quantisation",
            "throughput",
            "dmaste",
            "goemotions",
            "strength",
            "demo",
        ],
    )
    ap.add_argument(
        "--candidate",
        type=Path,
        help="a model folder written by train_aspect_model (e.g. --joint) to measure beside the committed one",
    )
    args = ap.parse_args()
    started = time.perf_counter()
    new = AspectSentimentModel.load(threads=args.threads)
    old = uncalibrated_view(new)
    vader = VaderClauseScorer()
    candidate = AspectSentimentModel.load(args.candidate, threads=args.threads) if args.candidate else None

    def labels(scorer: Any) -> Callable[[list, list], list[str]]:
        return lambda items, others: [p.sentiment for p in scorer.predict(items, other_aspects=others)]

    if "mams" not in args.skip:
        mams_section(args, new, old, candidate)
    if "memd" not in args.skip:
        scorers = {"before": labels(old), "now": labels(new), "VADER": labels(vader)}
        if candidate is not None:
            scorers["candidate"] = labels(candidate)
            scorers["cand-uncal"] = labels(uncalibrated_view(candidate))
        memd_section(args, scorers)
    models = {"now": new, **({"candidate": candidate} if candidate is not None else {})}
    if "dmaste" not in args.skip:
        uncalibrated = {"cand-uncal": uncalibrated_view(candidate)} if candidate is not None else {}
        dmaste_unseen_section(SHARED, {**models, **uncalibrated, "VADER": vader})
    if "goemotions" not in args.skip:
        goemotions_section(SHARED, models)
    if "strength" not in args.skip:
        strength_section(SHARED, models)
    if "demo" not in args.skip:
        demo_emotions_section({name: OfflineExtractor(scorer=m) for name, m in models.items()})
    if "adaptation" not in args.skip:
        adaptation_section(args, new)
    if "tripadvisor" not in args.skip:
        scorers_ta: list[tuple[str, Any]] = [("before", old), ("now", new), ("VADER", vader)]
        if candidate is not None:
            scorers_ta.append(("cand", candidate))
        extractors = {n: OfflineExtractor(scorer=s) for n, s in scorers_ta}
        if candidate is not None and candidate.intensity_source == "strength":
            # the candidate's polarity with the cue rule's intensity instead of its strength head
            cues_view = AspectSentimentModel.load(args.candidate, threads=args.threads)
            cues_view.intensity_source = "cues"
            extractors["cand-cue"] = OfflineExtractor(scorer=cues_view)
        # the committed path with OPRAG_DOCUMENT_TONE=ignore: no tone read from the rest of the review
        extractors["no-tone"] = OfflineExtractor(scorer=new, review_tone=False)
        if candidate is not None:
            extractors["cand-no-tone"] = OfflineExtractor(scorer=candidate, review_tone=False)
        tripadvisor_section(args, extractors)
        # hotels no fit of any section ever reads (files 40-59 of the same shuffle)
        tripadvisor_section(args, extractors, first_file=2 * args.hotels)
    if "ratings" not in args.skip:
        rating_adaptation_section(args, new)
    if "intensity" not in args.skip:
        intensity_section(args, new)
    if "self" not in args.skip:
        self_training_section(args, new)
    # the batch-invariant precision variants are built for the quantisation section (and then timed too)
    variants = precision_variants(args) if "quantisation" not in args.skip else {}
    if "quantisation" not in args.skip:
        quantisation_section(args, new, variants, labels)
    if "throughput" not in args.skip:
        throughput_section(args, new, old, variants, candidate)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
