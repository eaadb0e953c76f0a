"""Offline aspect-sentiment model: a fine-tuned MiniLM-L6 classifier run through onnxruntime.

Why this shape:

* Lexicon scoring tops out around 0.67-0.75 aspect-polarity accuracy (implied negatives, comparisons with the past,
  contrast inside one sentence), so the default extractor needs a contextual model. A 6-layer MiniLM fine-tuned on
  MAMS (Apache-2.0) is the smallest model that gets close to the target on two CPU cores.
* The runtime needs only ``onnxruntime`` + ``tokenizers`` (both come with fastembed); torch is a training-only extra.
* Cost grows with tokens, not with review length: each aspect is scored on a short window (the sentence around the
  aspect, cropped to a few dozen tokens), each item is run unpadded (alone, so the int8 model is deterministic;
  see `AspectSentimentModel`), and repeated (window, aspect) pairs are served from a small cache.

Input encoding (shared with training, so both sides agree byte for byte)::

    [CLS] left-context < aspect > right-context [SEP] aspect-or-category [SEP]

The ``<`` ``>`` markers say *which* mention is meant when the same sentence has several aspects with different
polarities; the second segment repeats the aspect term (or gives the category name when the aspect has no span).
The classifier reads the [CLS] vector and the vector at the opening marker.

A model trained with ``--joint`` (its graph has an ``anchor_batch`` input) reads every aspect of a window in one
sequence instead (``AspectEncoder.encode_joint``) and is loaded the same way; the committed model is per-aspect,
because the joint one, better on MAMS, was not better out of domain (``MODEL_CARD.md``).

Calibration for text other than MAMS (``AspectSentimentModel.probabilities`` and ``predict``):

* MAMS was built so that every sentence holds aspects of different polarities; 44% of its training labels are
  "neutral" (mostly aspects merely named beside an evaluated one). A softmax trained on it carries that prior, and
  out of domain it answered "neutral" for 13-24% of aspects people had labelled positive or negative. The training
  label shares are stored in ``model_meta.json`` (``train_label_prior``), divided out (``logit - log prior``)
  and replaced by the label shares of targets named in ordinary reviews (``REVIEW_TARGET_PRIOR``), i.e. the
  posterior under the prior of the text it is used on (label-shift correction; Saerens et al., 2002). Nothing is
  fitted to a corpus: the training shares are counts of MAMS's labels, and the review shares come from the label
  statistics published for the standard review benchmarks (see ``REVIEW_TARGET_PRIOR``).
* When the network still says neutral, the aspect is the only aspect named in its clause, the clause is
  evaluative by VADER's own documented threshold (|compound| >= 0.05), and the network itself prefers the same
  polarity over the opposite one, the two sources agree on a direction: the network's neutral and that polarity
  swap places (``lexicon_tiebreak``). "Only aspect in its clause" is what keeps MAMS's genuine neutrals: there the
  clause's opinion belongs to a neighbouring aspect ("the <dinner> was late but the pasta was great").

A domain's own calibration (per-class offsets ``label_bias``, a ``residual_head`` on the head features) is applied
here; it is fitted from labelled data in ``calibration.py``.
"""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from oprag_pipeline.schema import sentiment_intensity

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILE = "aspect_sentiment.onnx"
LABELS: tuple[str, ...] = ("negative", "neutral", "positive")

CLS_ID = 101
SEP_ID = 102
OPEN_MARK = "<"
CLOSE_MARK = ">"

# Window sizes (in word-piece tokens). Training uses the same values, so runtime windows look like training windows.
MAX_CONTEXT_TOKENS = 80
MAX_ASPECT_TOKENS = 8
SHORT_SENTENCE_WORDS = 6
# When an implied-opinion pattern (cues.implied_polarity) disagrees with the model, keep this share of the model's
# probabilities; the rest goes to the pattern's label.
RULE_WEIGHT_KEEP = 0.35

NEUTRAL = LABELS.index("neutral")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")


@dataclass(frozen=True)
class AspectItem:
    """One aspect to score: a span ``text[start:end]`` (a target term), or a category name with no span."""

    text: str
    start: int | None = None
    end: int | None = None
    category: str | None = None

    @property
    def aspect(self) -> str:
        """The aspect phrase placed in the second segment."""
        if self.category:
            return self.category
        if self.start is not None and self.end is not None:
            return self.text[self.start : self.end]
        return ""


@dataclass(frozen=True)
class AspectPrediction:
    """Model output for one aspect. ``scores`` maps each label to its probability; ``confidence`` is the top one."""

    sentiment: str
    intensity: str
    confidence: float
    scores: dict[str, float] = field(default_factory=dict)
    intensity_score: float = 0.0
    # a model with an emotion head: the probability of each emotion it was trained on, read in the aspect's window
    emotion_scores: dict[str, float] = field(default_factory=dict)
    # a model with a strength head: the window's rating on -1 (very negative) .. +1 (very positive); None without
    strength: float | None = None
    # the emotions the head calls present (each above its threshold, ``model_meta.json``'s emotion_thresholds)
    emotions: tuple[str, ...] = ()
    # the emotions for which the cue lexicon's reading counts too (``AspectSentimentModel.emotion_sources``)
    emotion_cues: tuple[str, ...] = ()

    @property
    def sentiment_intensity(self) -> int:
        """The σ-scale value (±10/20/30, 0 for neutral) from docs/design.md."""
        return sentiment_intensity(self.sentiment, self.intensity)


@lru_cache(maxsize=256)
def sentence_bounds(text: str) -> tuple[int, ...]:
    """Where each sentence of ``text`` starts, then ``len(text)``: sentence i is ``text[b[i]:b[i + 1]]``.

    Cached: every mention of a document asks for its sentence, and scanning a review for sentence ends was about 5%
    of the offline extractor's time (cProfile, 400 TripAdvisor reviews)."""
    return (0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text))


def sentence_window(text: str, start: int, end: int, widen_short: bool = True) -> tuple[int, int]:
    """Character bounds of the sentence holding ``text[start:end]``.

    A very short sentence ("Never again.") carries little context on its own, so its neighbours are added unless
    ``widen_short`` is False.
    """
    bounds = sentence_bounds(text)
    idx = 0
    for i in range(len(bounds) - 1):
        if bounds[i] <= start < bounds[i + 1] or (start >= bounds[i] and i == len(bounds) - 2):
            idx = i
            break
    lo, hi = bounds[idx], bounds[idx + 1]
    # extend to cover the whole aspect span if it crosses a boundary
    while hi < end and idx + 1 < len(bounds) - 1:
        idx += 1
        hi = bounds[idx + 1]
    if widen_short and len(text[lo:hi].split()) < SHORT_SENTENCE_WORDS:
        first = bounds.index(lo)
        lo = bounds[max(0, first - 1)]
        last = bounds.index(hi)
        hi = bounds[min(len(bounds) - 1, last + 1)]
    return lo, hi


class AspectEncoder:
    """Turns aspect items into model inputs using only the ``tokenizers`` package (no torch, no transformers)."""

    def __init__(self, tokenizer: Any, max_context: int = MAX_CONTEXT_TOKENS) -> None:
        self.tokenizer = tokenizer
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.max_context = max_context
        self.open_id = int(tokenizer.token_to_id(OPEN_MARK))
        self.close_id = int(tokenizer.token_to_id(CLOSE_MARK))

    @classmethod
    def from_dir(cls, model_dir: Path | str = MODEL_DIR, max_context: int = MAX_CONTEXT_TOKENS) -> AspectEncoder:
        """Load ``tokenizer.json`` from the model folder."""
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json")), max_context=max_context)

    def window(self, item: AspectItem) -> tuple[str, int | None, int | None]:
        """The text actually scored: the aspect's sentence (span aspects) or the given text (category aspects)."""
        if item.start is None or item.end is None or item.category:
            return item.text, None, None
        lo, hi = sentence_window(item.text, item.start, item.end)
        return item.text[lo:hi], item.start - lo, item.end - lo

    def encode(self, items: Sequence[AspectItem]) -> list[tuple[list[int], int, int]]:
        """Each item as (ids, length of the first segment incl. [CLS]/[SEP], index of the aspect anchor token)."""
        windows = [self.window(it) for it in items]
        contexts = self.tokenizer.encode_batch([w[0] for w in windows], add_special_tokens=False)
        aspects = self.tokenizer.encode_batch([it.aspect or "general" for it in items], add_special_tokens=False)
        out = []
        for (_, s, e), ctx, asp in zip(windows, contexts, aspects, strict=True):
            ids = list(ctx.ids)
            anchor_in_ctx: int | None = None
            if s is not None and e is not None:
                tok = [i for i, (a, b) in enumerate(ctx.offsets) if a < e and b > s]
                if tok:
                    first, last = tok[0], tok[-1]
                    ids = [*ids[:first], self.open_id, *ids[first : last + 1], self.close_id, *ids[last + 1 :]]
                    anchor_in_ctx = first
            ctx_ids, marker = self._crop(ids, anchor_in_ctx)
            aspect_ids = list(asp.ids)[:MAX_ASPECT_TOKENS]
            first_len = len(ctx_ids) + 2
            seq = [CLS_ID, *ctx_ids, SEP_ID, *aspect_ids, SEP_ID]
            anchor = 1 + marker if marker is not None else first_len  # marker, or first token of the 2nd segment
            out.append((seq, first_len, anchor))
        return out

    def encode_joint(self, items: Sequence[AspectItem]) -> list[JointGroup]:
        """The ``joint`` encoding: the span aspects of one window marked together in one sequence
        (``[CLS] … < a > … < b > … [SEP]``) and the category aspects of one text as trailing segments
        (``[CLS] text [SEP] cat1 [SEP] cat2 [SEP]``), so one encoder pass scores all of them and each aspect is
        read with the others in view. Aspects whose tokens overlap another's, or a window too long to keep every
        marker inside ``max_context``, fall back to one group per aspect (still joint-encoded, alone)."""
        windows = [self.window(it) for it in items]
        by_window: dict[tuple[str, bool], list[int]] = {}
        for i, (w, s, e) in enumerate(windows):
            by_window.setdefault((w, s is None or e is None), []).append(i)
        texts = list({w for w, _ in by_window})
        encoded_text = dict(zip(texts, self.tokenizer.encode_batch(texts, add_special_tokens=False), strict=True))
        groups: list[JointGroup] = []
        for (w, is_category), members in by_window.items():
            ctx = encoded_text[w]
            if is_category:
                groups.extend(self._category_group(list(ctx.ids), [items[i] for i in members], members))
                continue
            spans: list[tuple[int, int, int]] = []  # (first token, last token, item index)
            loose: list[int] = []
            for i in members:
                _, s, e = windows[i]
                tok = [t for t, (a, b) in enumerate(ctx.offsets) if a < e and b > s]  # type: ignore[operator]
                if tok:
                    spans.append((tok[0], tok[-1], i))
                else:
                    loose.append(i)
            spans.sort()
            overlap = any(spans[j + 1][0] <= spans[j][1] for j in range(len(spans) - 1))
            if len(spans) > 1 and (overlap or len(ctx.ids) + 2 * len(spans) > self.max_context):
                for span in spans:
                    groups.append(self._span_group(list(ctx.ids), [span]))
            elif spans:
                groups.append(self._span_group(list(ctx.ids), spans))
            for i in loose:  # the span fell between tokens: the window, with the aspect as a category segment
                groups.extend(self._category_group(list(ctx.ids), [items[i]], [i]))
        return groups

    def _span_group(self, ids: list[int], spans: Sequence[tuple[int, int, int]]) -> JointGroup:
        marked: list[int] = []
        anchors_in_ctx: list[int] = []
        prev = 0
        for first, last, _ in spans:
            marked.extend(ids[prev:first])
            anchors_in_ctx.append(len(marked))
            marked.extend([self.open_id, *ids[first : last + 1], self.close_id])
            prev = last + 1
        marked.extend(ids[prev:])
        n = self.max_context
        if len(marked) > n:  # one aspect (several only when they all fit): centre the crop on the marked span(s)
            lo_mark, hi_mark = anchors_in_ctx[0], anchors_in_ctx[-1]
            lo = max(0, min((lo_mark + hi_mark) // 2 - n // 2, len(marked) - n))
            marked = marked[lo : lo + n]
            anchors_in_ctx = [a - lo for a in anchors_in_ctx]
        seq = [CLS_ID, *marked, SEP_ID]
        return JointGroup(seq, len(seq), tuple(1 + a for a in anchors_in_ctx), tuple(i for _, _, i in spans))

    def _category_group(self, ids: list[int], items: Sequence[AspectItem], members: Sequence[int]) -> list[JointGroup]:
        ctx = ids[: self.max_context]
        seq = [CLS_ID, *ctx, SEP_ID]
        first_len = len(seq)
        anchors = []
        for it in items:
            anchors.append(len(seq))
            aspect_ids = self.tokenizer.encode(it.aspect or "general", add_special_tokens=False).ids
            seq.extend([*aspect_ids[:MAX_ASPECT_TOKENS], SEP_ID])
        return [JointGroup(seq, first_len, tuple(anchors), tuple(members))]

    def _crop(self, ids: list[int], anchor: int | None) -> tuple[list[int], int | None]:
        """Keep at most ``max_context`` tokens, centred on the aspect marker."""
        n = self.max_context
        if len(ids) <= n:
            return ids, anchor
        if anchor is None:
            return ids[:n], None
        lo = max(0, min(anchor - n // 2, len(ids) - n))
        return ids[lo : lo + n], anchor - lo


@dataclass(frozen=True)
class JointGroup:
    """Several aspects of one window encoded in one sequence (the ``joint`` encoding).

    ``anchors[j]`` is the position of the j-th aspect's opening marker (span aspects) or of its category segment's
    first token; ``members[j]`` the index of that aspect among the items encoded.
    """

    ids: list[int]
    first_len: int
    anchors: tuple[int, ...]
    members: tuple[int, ...]


def joint_window_key(group_spans: Sequence[tuple[int | None, int | None, str]]) -> str:
    """What, besides the window text, a joint logit depends on: every aspect marked in the same sequence."""
    return "\x1f".join(f"{s}:{e}:{a}" for s, e, a in group_spans)


def pad_batch(encoded: Sequence[tuple[list[int], int, int]]) -> dict[str, np.ndarray]:
    """Right-pad a batch to its longest member and build the four model inputs."""
    width = max(len(seq) for seq, _, _ in encoded)
    n = len(encoded)
    ids = np.zeros((n, width), dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    types = np.zeros((n, width), dtype=np.int64)
    anchor = np.zeros((n,), dtype=np.int64)
    for i, (seq, first_len, a) in enumerate(encoded):
        ids[i, : len(seq)] = seq
        mask[i, : len(seq)] = 1
        types[i, first_len : len(seq)] = 1
        anchor[i] = a
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "anchor_index": anchor}


def pad_joint(groups: Sequence[JointGroup]) -> dict[str, np.ndarray]:
    """Right-pad joint groups and list every aspect's (row, anchor position): the joint model's five inputs."""
    width = max(len(g.ids) for g in groups)
    n = len(groups)
    ids = np.zeros((n, width), dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    types = np.zeros((n, width), dtype=np.int64)
    rows, anchors = [], []
    for r, g in enumerate(groups):
        ids[r, : len(g.ids)] = g.ids
        mask[r, : len(g.ids)] = 1
        types[r, g.first_len : len(g.ids)] = 1
        rows.extend([r] * len(g.anchors))
        anchors.extend(g.anchors)
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "token_type_ids": types,
        "anchor_batch": np.asarray(rows, dtype=np.int64),
        "anchor_index": np.asarray(anchors, dtype=np.int64),
    }


def softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise softmax."""
    z = x - x.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


# Label shares expected for a target named in ordinary review text (``LABELS`` order), the prior the calibrated
# posterior is moved to (module docstring). Derivation, from published counts only: the aspect terms of the
# SemEval-2014 Task 4 training sets (Pontiki et al., 2014; restaurants 2,164 positive / 807 negative / 637 neutral,
# laptops 994 / 870 / 464, "conflict" left out) are 18.6% neutral. Positive and negative get equal halves of the
# rest, so the prior says only how often a named target is left unevaluated, never which side a corpus leans to.
# MAMS, built so that each sentence mixes polarities, is 44% neutral; dividing that out alone (equal priors) left
# 8-10% of gold positive/negative MEMD-ABSA aspects answered "neutral"; with this prior 2-5%
# (benchmarks/bench_aspect_model.py, measured there, never fitted there).
REVIEW_TARGET_PRIOR: tuple[float, float, float] = (0.407, 0.186, 0.407)


def prior_corrected_probabilities(
    logits: np.ndarray,
    temperature: float = 1.0,
    train_prior: Sequence[float] | None = None,
    target_prior: Sequence[float] | None = None,
) -> np.ndarray:
    """Class probabilities with the training data's label prior replaced by ``target_prior`` (equal priors when
    None); see the module docstring.

    ``train_prior`` is the share of each label in the training data (``LABELS`` order); None leaves the softmax as
    trained. Swapping priors is exact for a calibrated classifier under label shift, so only the shares matter.
    """
    z = np.asarray(logits, dtype=np.float64) / temperature
    if train_prior is not None:
        z = z - np.log(np.asarray(train_prior, dtype=np.float64))
        if target_prior is not None:
            z = z + np.log(np.asarray(target_prior, dtype=np.float64))
    return softmax(z)


def review_prior_gate(review: np.ndarray, equal: np.ndarray, sentence: str) -> np.ndarray:
    """Keep the review prior's answer unless it is what moved the call off neutral without the sentence's support.

    ``review`` and ``equal`` are one item's probabilities under ``REVIEW_TARGET_PRIOR`` and under equal priors. The
    smaller neutral prior alone may not turn a statement of fact into an opinion ("the charger comes in a separate
    box"): when equal priors say neutral and the review prior says a polarity, that polarity stands only if VADER
    reads the aspect's sentence as evaluative in the same direction (its documented threshold). Measured on
    MEMD-ABSA (benchmarks/bench_aspect_model.py): without this gate the prior gains 3-6 points of 2-way accuracy
    and calls two of four fixture facts polar; with it about half the gain and the facts stay neutral.
    """
    from oprag_pipeline.enrich.cues import vader_compound, vader_polarity

    k = int(np.argmax(review))
    if k == NEUTRAL or int(np.argmax(equal)) != NEUTRAL:
        return review
    return review if vader_polarity(vader_compound(sentence)) == LABELS[k] else equal


def lexicon_tiebreak(probs: np.ndarray, compound: float) -> np.ndarray:
    """Swap the neutral probability with the lexicon's polarity when the network's top answer is neutral, the
    clause is evaluative by VADER's threshold, and the network prefers that polarity to its opposite.

    A swap, not a blend: the network's own numbers are kept (intensity and pooling read them), only which polarity
    they support changes. Returns ``probs`` unchanged in every other case.
    """
    from oprag_pipeline.enrich.cues import vader_polarity

    lexicon = vader_polarity(compound)
    if int(np.argmax(probs)) != NEUTRAL or lexicon == "neutral":
        return probs
    k = LABELS.index(lexicon)
    opposite = LABELS.index("negative" if lexicon == "positive" else "positive")
    if probs[k] <= probs[opposite]:
        return probs
    swapped = np.array(probs, dtype=np.float64)
    swapped[k], swapped[NEUTRAL] = probs[NEUTRAL], probs[k]
    return swapped


def alone_in_clause(items: Sequence[AspectItem], others: Sequence[tuple[str, int, int]] = ()) -> list[bool]:
    """For each span item: no other aspect (another item of the same text, or one of ``others``) starts inside its
    clause (``cues.local_clause_bounds``). Category items have no clause of their own: False."""
    from oprag_pipeline.enrich.cues import local_clause_bounds

    spans: dict[str, set[tuple[int, int]]] = {}
    for it in items:
        if it.start is not None and it.end is not None and not it.category:
            spans.setdefault(it.text, set()).add((it.start, it.end))
    for text, start, end in others:
        spans.setdefault(text, set()).add((start, end))
    out = []
    for it in items:
        if it.start is None or it.end is None or it.category:
            out.append(False)
            continue
        lo, hi = local_clause_bounds(it.text, it.start, it.end)
        own = (it.start, it.end)
        out.append(not any(lo <= a < hi and (a, b) != own for a, b in spans[it.text]))
    return out


ItemLike = AspectItem | tuple[str, int, int] | tuple[str, str]


def as_item(x: ItemLike) -> AspectItem:
    """Accept ``AspectItem``, ``(text, start, end)`` or ``(text, category)``."""
    if isinstance(x, AspectItem):
        return x
    if len(x) == 3:
        text, start, end = x  # type: ignore[misc]
        return AspectItem(str(text), int(start), int(end))
    text, category = x  # type: ignore[misc]
    return AspectItem(str(text), category=str(category))


FEATURES_OUTPUT = "aspect_features"
# The outputs of a model trained with emotion and strength heads (oprag_training.train_extractor), in row order.
HEAD_OUTPUTS: tuple[str, ...] = ("emotion_logits", "strength")


def strength_level(strength: float, sentiment: str, cuts: tuple[float, float]) -> tuple[str, float]:
    """The intensity level of an opinion from the strength head's rating of its window (-1..+1) and the cuts the
    trainer set on the rated sentences' |rating| (a third of them in each level): the rating toward the opinion's
    own side decides; a window rated on the other side, or a neutral opinion, is "low"."""
    if sentiment == "neutral":
        return "low", 0.0
    toward = strength if sentiment == "positive" else -strength
    medium_from, high_from = cuts
    level = "high" if toward >= high_from else "medium" if toward >= medium_from else "low"
    return level, float(min(1.0, max(0.0, toward)))


def with_features_output(model_bytes: bytes) -> bytes:
    """The graph with the classifier head's input (the [CLS] and marker vectors, 768 values per aspect) as a second
    output, so a domain can learn a residual head on it (``calibration.fit_residual_head``) without torch. The
    logits are computed exactly as before; a graph whose head cannot be found is returned unchanged."""
    import onnx

    model = onnx.load_from_string(model_bytes)
    graph = model.graph
    produced_by = {out: node for node in graph.node for out in node.output}
    head = next((n for n in graph.node if any(i.startswith("head.weight") for i in n.input)), None)
    if head is None:
        return model_bytes
    source = head.input[0]
    feeder = produced_by.get(source)
    if feeder is not None and feeder.op_type == "DynamicQuantizeLinear":  # int8: the head reads quantized features
        source = feeder.input[0]
    graph.node.append(onnx.helper.make_node("Identity", [source], [FEATURES_OUTPUT]))
    graph.output.append(onnx.helper.make_tensor_value_info(FEATURES_OUTPUT, onnx.TensorProto.FLOAT, None))
    return model.SerializeToString()


# Units per thread-pool task in ``AspectSentimentModel._map``: large enough that a task's hand-over is small beside
# 16 model calls (~1.3 ms each), small enough that two workers finish a document batch's few hundred items together.
SCORING_CHUNK = 16


class AspectSentimentModel:
    """Aspect-sentiment inference on the committed ONNX model.

    ``predict`` accepts ``(text, start, end)`` tuples (a target term at character offsets), ``(text, category)``
    tuples, or ``AspectItem`` objects, and returns one ``AspectPrediction`` per item in input order.

    Every item is scored on its own, never in a padded batch. The model's int8 layers quantize activations with one
    scale per input tensor (``DynamicQuantizeLinear``), so in a batch an item's logits moved with its companions and
    its padding (by up to 1.09 in random mixed batches of 2-16, changing 5% of 300 MAMS test labels): the same
    review could be labelled differently in two runs. Alone, a prediction depends on the item only. Throughput is
    kept by scoring items on ``workers`` threads, each running the session single-threaded (measured on TripAdvisor
    reviews: 48-52 docs/s, against 51 for padded batches of 32 on two intra-op threads).

    Batch-invariant graphs of the same weights were measured against this path in one run
    (``benchmarks/bench_aspect_model.py``, precision variants and throughput; 300 TripAdvisor reviews, two rounds,
    sorted padded batches of 8 on the same two worker threads), and none is both as accurate and as fast:

    * int8 with static scales (``quantize_static``, QDQ, per-channel weights, 99.999th-percentile ranges calibrated
      on 300 MAMS *training* aspects): logits identical alone and in any batch (max difference 0), but MAMS ATSA
      test 0.8234 against 0.8316 (MinMax, Entropy, 99.99th percentile, in separate runs: 0.816-0.823), MEMD-ABSA
      2-way Books 0.803 / Clothing 0.842 against 0.813 / 0.864, and 116-119 reviews per 2 CPU-seconds against
      126-130 (0.92x; wall 0.77x).
    * the same with the six feed-forward output projections in fp32: 0.8323 on MAMS, also batch-invariant, but
      0.67x per CPU-second (84-87 reviews per 2 CPU-seconds) and MEMD Hotel macro-F1 0.814 against 0.849.
    * fp32 (dequantised): 0.8353 on MAMS and bit-identical in any batch, at 64 reviews per 2 CPU-seconds (0.50x).

    So the dynamic-int8 graph scored item by item stays the default.
    """

    def __init__(
        self,
        session: Any,
        encoder: AspectEncoder,
        cache_size: int = 20000,
        temperature: float = 1.0,
        workers: int | None = None,
        train_prior: Sequence[float] | None = None,
        target_prior: Sequence[float] | None = REVIEW_TARGET_PRIOR,
        emotion_labels: Sequence[str] = (),
        emotion_untrained: Sequence[str] = (),
        strength_cuts: tuple[float, float] | None = None,
        emotion_thresholds: dict[str, float] | None = None,
        emotion_sources: dict[str, str] | None = None,
    ) -> None:
        self.session = session
        self.encoder = encoder
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool: tuple[int, ThreadPoolExecutor] | None = None  # (owner pid, pool): a forked child makes its own
        self.temperature = temperature
        self._cache: OrderedDict[tuple[str, str, int | None, int | None], np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._input_names = {i.name for i in session.get_inputs()}
        self.use_rules = True
        # the two calibrations of the module docstring; off gives the network as trained (MAMS regression check)
        self.train_prior = tuple(train_prior) if train_prior is not None else None
        self.correct_prior = train_prior is not None
        # the label shares of the text scored (REVIEW_TARGET_PRIOR); None: equal priors
        self.target_prior: tuple[float, ...] | None = tuple(target_prior) if target_prior is not None else None
        self.use_lexicon = True
        # per-class offsets learnt from a labelled sample of one domain (calibration.fit_label_bias); None: not
        # adapted
        self.label_bias: np.ndarray | None = None
        # "joint": the graph reads all aspects of a window in one pass (AspectEncoder.encode_joint)
        self.joint = "anchor_batch" in self._input_names
        output_names = {o.name for o in session.get_outputs()}
        self._has_features = FEATURES_OUTPUT in output_names
        # the emotion and strength heads read the same encoder pass as the polarity head (HEAD_OUTPUTS)
        self.head_outputs = [name for name in HEAD_OUTPUTS if name in output_names]
        self.emotion_labels: tuple[str, ...] = tuple(emotion_labels)
        self.emotion_trained: tuple[str, ...] = tuple(e for e in self.emotion_labels if e not in set(emotion_untrained))
        self.strength_cuts: tuple[float, float] | None = strength_cuts
        # per emotion, the head's probability from which it is called present (0.5 where the model names none)
        self.emotion_thresholds = {e: float((emotion_thresholds or {}).get(e, 0.5)) for e in self.emotion_labels}
        # per emotion, what finds it: "head", "cues" (the lexicon, cues.emotions) or "both" (either); by default
        # the head for the emotions it was trained on, the cues for the rest
        default = {e: "head" if e in self.emotion_trained else "cues" for e in self.emotion_labels}
        self.emotion_sources = {**default, **(emotion_sources or {})}
        # where the intensity level comes from: "strength" (the head, when the model has one) or "cues"
        self.intensity_source = "strength" if "strength" in self.head_outputs and strength_cuts else "cues"
        # a domain's residual head (calibration.fit_residual_head): (W, b) on the head's input features; None: not
        # adapted
        self.residual_head: tuple[np.ndarray, np.ndarray] | None = None
        # an adapted model reads intensity on the unadapted probabilities (see ``predict``); False: on the adapted
        self.intensity_on_base = True

    @classmethod
    def load(
        cls,
        model_dir: Path | str | None = None,
        threads: int | None = None,
        model_file: str = MODEL_FILE,
        max_context: int | None = None,
    ) -> AspectSentimentModel:
        """Open the ONNX model and tokenizer from ``model_dir`` (default: the folder committed with the package).

        ``max_context`` caps the context tokens around the aspect: lower is faster (cost is linear in tokens) at some
        loss of accuracy on long sentences; the default matches training. ``threads`` is the number of items scored
        at once (default: the CPU count), each on one intra-op thread.
        """
        import onnxruntime as ort

        directory = Path(model_dir) if model_dir is not None else MODEL_DIR
        path = directory / model_file
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing; rebuild it with "
                "`python -m oprag_training.train_extractor --data ../shared/data --out DIR`"
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        from oprag_pipeline.accelerators import create_session

        graph = with_features_output(path.read_bytes())
        session, _ = create_session(lambda providers: ort.InferenceSession(graph, options, providers=providers))
        meta_path = directory / "model_meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        temperature = float(meta.get("temperature", 1.0))
        prior = meta.get("train_label_prior")
        train_prior = [float(prior[label]) for label in LABELS] if prior else None
        # the window the model was trained with, unless the caller trades accuracy for speed
        context = max_context or int(meta.get("max_context_tokens", MAX_CONTEXT_TOKENS))
        encoder = AspectEncoder.from_dir(directory, max_context=context)
        heads = meta.get("heads", {})
        cuts = heads.get("strength_cuts")
        model = cls(
            session,
            encoder,
            temperature=temperature,
            workers=threads,
            train_prior=train_prior,
            emotion_labels=heads.get("emotions", ()),
            emotion_untrained=heads.get("emotions_without_training_data", ()),
            strength_cuts=(float(cuts["medium_from"]), float(cuts["high_from"])) if cuts else None,
            emotion_thresholds=heads.get("emotion_thresholds"),
            emotion_sources=heads.get("emotion_sources"),
        )
        # the two calibrations were made for a restaurant-only model; a model trained on several domains says in
        # its metadata whether they still help it (measured per model, see its card)
        calibration = meta.get("calibration", {})
        model.correct_prior = model.correct_prior and bool(calibration.get("review_prior", True))
        model.use_lexicon = bool(calibration.get("lexicon_tiebreak", True))
        # where the level comes from by default: the model's measured choice (its card), else the strength head
        if heads.get("intensity_source") in ("strength", "cues"):
            model.intensity_source = heads["intensity_source"] if model.strength_cuts else "cues"
        return model

    def logits(self, items: Iterable[ItemLike]) -> np.ndarray:
        """Raw logits (n, 3) in ``LABELS`` order; windows are scored once and cached."""
        return self._rows([as_item(x) for x in items], with_features=False)

    @property
    def exposes_features(self) -> bool:
        """Whether ``features`` works (the graph gives the head's input; see ``with_features_output``)."""
        return self._has_features

    def features(self, items: Iterable[ItemLike]) -> np.ndarray:
        """The classifier head's input for each item (n, 768): what a residual head is fitted on."""
        if not self.exposes_features:
            raise ValueError("this graph exposes no head features (see with_features_output)")
        return self._rows([as_item(x) for x in items], with_features=True)[:, self._features_from :]

    @property
    def _features_from(self) -> int:
        """Where the head features start in a scored row: after the logits and the other heads' outputs."""
        return len(LABELS) + (len(self.emotion_labels) + 1 if self.head_outputs else 0)

    def heads(self, items: Iterable[ItemLike]) -> tuple[np.ndarray, np.ndarray]:
        """The emotion probabilities (n, len(emotion_labels)) and the strength (n,) of each item's window, from the
        same cached encoder pass as its polarity."""
        if not self.head_outputs:
            raise ValueError("this model has no emotion or strength head")
        rows = self._rows([as_item(x) for x in items], with_features=False)
        return self._split_heads(rows)

    def _split_heads(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = len(self.emotion_labels)
        emotions = 1.0 / (1.0 + np.exp(-rows[:, len(LABELS) : len(LABELS) + k].astype(np.float64)))
        return emotions, rows[:, len(LABELS) + k].astype(np.float64)

    def _rows(self, its: Sequence[AspectItem], with_features: bool) -> np.ndarray:
        """Per item: the logits, then (``with_features``) the head features; scored once and cached. The features
        are fetched only when asked for (a fit, an adapted model), so an unadapted model's cache holds 3 numbers per
        window, not 771 (the graph with the extra output scored MAMS ATSA test in the same CPU time as without)."""
        outputs = ["logits", *self.head_outputs, *([FEATURES_OUTPUT] if with_features else [])]
        if self.joint:
            return self._joint_logits(its, outputs)
        tag = "\x1dfeatures" if with_features else ""
        keys: list[tuple[str, str, int | None, int | None]] = []
        for it in its:
            text, s, e = self.encoder.window(it)
            keys.append((text, it.aspect + tag, s, e))
        todo: dict[tuple[str, str, int | None, int | None], list[int]] = {}
        hits: dict[int, np.ndarray] = {}
        for i, k in enumerate(keys):
            hit = self._cache.get(k)
            if hit is not None:
                hits[i] = hit
                self._cache.move_to_end(k)
            else:
                todo.setdefault(k, []).append(i)
        if todo:
            uniq = list(todo)
            rows = self._score(self.encoder.encode([its[todo[k][0]] for k in uniq]), outputs)
            for key, row in zip(uniq, rows, strict=True):
                for i in todo[key]:
                    hits[i] = row
                self._remember(key, row)
        return self._stack(hits, len(its))

    @staticmethod
    def _stack(rows: dict[int, np.ndarray], n: int) -> np.ndarray:
        """Rows by item index into one array (logits only, or logits and features)."""
        out = np.zeros((n, len(next(iter(rows.values()))) if rows else len(LABELS)), dtype=np.float32)
        for i, row in rows.items():
            out[i] = row
        return out

    def _map(self, score: Any, units: Sequence[Any]) -> list[np.ndarray]:
        """``score`` over ``units`` on ``workers`` threads (a forked child makes its own pool), in order.

        Each task is a run of ``SCORING_CHUNK`` units, each still scored alone: a thread pool's ``map`` makes one
        future per unit whatever its ``chunksize`` (that argument only chunks process pools), and waking the caller
        once per item cost the extractor CPU its worker threads wanted (see SCORING_CHUNK)."""
        if self.workers > 1 and len(units) > 1:
            if self._pool is None or self._pool[0] != os.getpid():
                self._pool = (os.getpid(), ThreadPoolExecutor(self.workers, thread_name_prefix="aspect-model"))
            runs = [units[i : i + SCORING_CHUNK] for i in range(0, len(units), SCORING_CHUNK)]
            tasks = [self._pool[1].submit(lambda run: [score(u) for u in run], run) for run in runs]
            return [row for task in tasks for row in task.result()]
        return [score(u) for u in units]

    def _joint_logits(self, its: Sequence[AspectItem], outputs: Sequence[str] = ("logits",)) -> np.ndarray:
        """The joint graph's logits: one pass per window group, each group run alone (deterministic as the per-item
        path is). A logit depends on the window and on every aspect marked with it, so that is the cache key."""
        found: dict[int, np.ndarray] = {}
        groups = self.encoder.encode_joint(its)
        todo: list[tuple[JointGroup, list[tuple[Any, ...]]]] = []
        for g in groups:
            window = self.encoder.window(its[g.members[0]])[0]
            marked = joint_window_key([(its[i].start, its[i].end, its[i].aspect) for i in g.members])
            tag = f"joint\x1e{len(outputs)}\x1e{marked}\x1e"
            keys = [(window, tag + its[i].aspect, its[i].start, its[i].end) for i in g.members]
            hits = [self._cache.get(k) for k in keys]
            if all(h is not None for h in hits):
                for i, k, h in zip(g.members, keys, hits, strict=True):
                    found[i] = h  # type: ignore[assignment]
                    self._cache.move_to_end(k)
            else:
                todo.append((g, keys))
        if todo:
            rows = self._score_groups([g for g, _ in todo], outputs)
            for (g, keys), block in zip(todo, rows, strict=True):
                for i, k, row in zip(g.members, keys, block, strict=True):
                    found[i] = row
                    self._remember(k, row)
        return self._stack(found, len(its))

    def _score_groups(self, groups: Sequence[JointGroup], outputs: Sequence[str]) -> list[np.ndarray]:
        def one(group: JointGroup) -> np.ndarray:
            return np.concatenate(self.session.run(list(outputs), pad_joint([group])), axis=1)

        return self._map(one, groups)

    def _score(
        self, encoded: Sequence[tuple[list[int], int, int]], outputs: Sequence[str] = ("logits",)
    ) -> list[np.ndarray]:
        """The ``outputs`` of each encoded item, concatenated, each run alone (see the class docstring), on
        ``workers`` threads."""

        def one(item: tuple[list[int], int, int]) -> np.ndarray:
            feeds = {k: v for k, v in pad_batch([item]).items() if k in self._input_names}
            # a scalar output (the strength head's) is one value of the row
            return np.concatenate([np.atleast_1d(out[0]) for out in self.session.run(list(outputs), feeds)])

        return self._map(one, encoded)

    def _remember(self, key: tuple[str, str, int | None, int | None], row: np.ndarray) -> None:
        self._cache[key] = row
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def probabilities(self, items: Sequence[ItemLike]) -> np.ndarray:
        """Calibrated class probabilities (n, 3): temperature, the training prior swapped for the review prior when
        enabled, and the domain's ``label_bias`` when the model was adapted."""
        return self._probabilities([as_item(x) for x in items])[1]

    def _probabilities(self, its: Sequence[AspectItem]) -> tuple[np.ndarray, np.ndarray]:
        """``probabilities`` before and after the domain's adaptation (the same array when not adapted)."""
        base, probs, _ = self._scored(its)
        return base, probs

    def _scored(self, its: Sequence[AspectItem]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``_probabilities`` and the scored rows they came from (logits, the other heads, features if asked)."""
        if not its:
            empty = np.zeros((0, len(LABELS)))
            return empty, empty, np.zeros((0, self._features_from))
        rows = self._rows(its, with_features=self.residual_head is not None)
        logits = rows[:, : len(LABELS)]
        prior = self.train_prior if self.correct_prior else None
        probs = prior_corrected_probabilities(logits, self.temperature, prior, self.target_prior)
        if prior is not None and self.target_prior is not None:
            equal = prior_corrected_probabilities(logits, self.temperature, prior)
            probs = (
                np.stack(
                    [
                        review_prior_gate(r, e, self.encoder.window(it)[0])
                        for r, e, it in zip(probs, equal, its, strict=True)
                    ]
                )
                if len(its)
                else probs
            )
        base = probs
        if self.residual_head is not None:
            w, b = self.residual_head
            features = rows[:, self._features_from :].astype(np.float64)
            probs = softmax(np.log(np.clip(probs, 1e-12, 1.0)) + features @ w + b)
        if self.label_bias is not None:
            probs = softmax(np.log(np.clip(probs, 1e-12, 1.0)) + self.label_bias)
        return base, probs, rows

    def predict(
        self, items: Sequence[ItemLike], other_aspects: Sequence[tuple[str, int, int]] = ()
    ) -> list[AspectPrediction]:
        """Sentiment, intensity and class probabilities for each item (see ``cues.intensity_from`` for intensity).

        ``other_aspects``: further (text, start, end) mentions that are not scored here but count as other aspects of
        the same text, so an item shares its clause with them (see ``alone_in_clause``). The items themselves always
        count: pass all of a document's mentions in one call.
        """
        from oprag_pipeline.enrich.cues import (
            contrast_polarity,
            implied_polarity,
            intensity_from,
            local_clause,
            predicate_polarity,
            vader_compound,
        )

        its = [as_item(x) for x in items]
        base_probs, probs, rows = self._scored(its)
        if self.head_outputs and len(its):
            emotion_probs, strengths = self._split_heads(rows)
        else:
            emotion_probs, strengths = np.zeros((len(its), 0)), np.full(len(its), np.nan)
        adapted = self.intensity_on_base and base_probs is not probs
        alone = alone_in_clause(its, other_aspects) if self.use_lexicon else [False] * len(its)
        preds = []

        def reading(p: np.ndarray, rule: str | None, single: bool, clause: str) -> np.ndarray:
            if rule is not None and LABELS[int(p.argmax())] != rule:
                # the model follows MAMS, where a long wait for an aspect is "neutral" and "used to be better"
                # reads as praise, and it misreads some adjectives it never saw ("spotless"); an explicit
                # implied-opinion pattern or an evaluative predicate of the aspect outweighs it
                p = RULE_WEIGHT_KEEP * p + (1.0 - RULE_WEIGHT_KEEP) * np.eye(len(LABELS))[LABELS.index(rule)]
            if single and int(p.argmax()) == NEUTRAL:
                p = lexicon_tiebreak(p, vader_compound(clause))
            return p

        for it, p_base, p, single, emotion_p, strength in zip(
            its, base_probs, probs, alone, emotion_probs, strengths, strict=True
        ):
            window, s, e = self.encoder.window(it)
            clause = local_clause(window, s, e)
            rule = None
            if self.use_rules and s is not None:
                rule = implied_polarity(clause) or contrast_polarity(window, s, e) or predicate_polarity(window, e)
            p = reading(p, rule, single, clause)
            k = int(p.argmax())
            sentiment = LABELS[k]
            # the domain's adaptation decides the polarity; how strongly it is held is read on the shipped model's
            # scale, which the intensity cuts were set on (a head sharpens or flattens the probabilities)
            scale = reading(p_base, rule, single, clause) if adapted else p
            level, score = intensity_from(window, sentiment, scale, s, e)
            if self.intensity_source == "strength" and self.strength_cuts and not np.isnan(strength):
                level, score = strength_level(float(strength), sentiment, self.strength_cuts)
            preds.append(
                AspectPrediction(
                    sentiment=sentiment,
                    intensity=level,
                    confidence=float(p[k]),
                    scores={lab: float(v) for lab, v in zip(LABELS, p, strict=True)},
                    intensity_score=score,
                    emotion_scores={
                        emotion: float(v)
                        for emotion, v in zip(self.emotion_labels, emotion_p, strict=False)
                        if emotion in self.emotion_trained
                    },
                    strength=None if np.isnan(strength) else float(strength),
                    emotions=tuple(
                        emotion
                        for emotion, v in zip(self.emotion_labels, emotion_p, strict=False)
                        if self.emotion_sources.get(emotion) in ("head", "both")
                        and emotion in self.emotion_trained
                        and v >= self.emotion_thresholds[emotion]
                    ),
                    emotion_cues=tuple(e for e, source in self.emotion_sources.items() if source in ("cues", "both")),
                )
            )
        return preds
