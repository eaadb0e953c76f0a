"""Adaptation of the offline aspect model to a domain: from its own text (self-training, the default), from the
corpus's own ratings, or, through `enrich/teacher.py`, from an LLM-labelled sample; ``adapt_extractor`` runs all
three and stores their fits alike.

Self-training (``fit_self_offsets``) needs no label at all: the unadapted model labels a deterministic sample of
the domain's mentions, the answers VADER agrees with are kept (``calibration.lexicon_agreement_label``), and the
residual head is fitted to them with its bias held at zero. It teaches the head what the domain's words mean where
two independent readings concur, not how often each class occurs (the kept sample's shares say how often the two
readings agree).

What is learnt, in every mode: a residual head on the network's head features (`calibration.fit_residual_head`:
three per-class offsets plus 768 x 3 weights; the offsets alone, `fit_label_bias`, for a graph that exposes no
features), fitted on labels of a deterministic sample of (document, entity) mentions; from ratings, on weak labels
(`calibration.rating_weak_label`: 4-5 stars positive, 3 neutral, 1-2 negative). The encoder is not touched. The
adapted model is built locally from the user's data, stored in the warehouse (`extractor_adaptations`), never
shipped.

Which rating labels which mention (the simplest rule that keeps the label about the entity it is attached to):

* A per-aspect rating (`rating_<aspect>` in `extra`, TripAdvisor-style) labels the registry entities the domain's
  `_rated_aspects.json` maps that aspect to, by entity *name* (`rated_aspect_entities`, the same mapping the gold
  evaluation uses), in documents that mention such an entity.
* The overall `rating` labels a mention only when it is the document's *only* registry entity and no per-aspect
  rating labelled the document: then the author's verdict can only be about that entity. With two entities named,
  a four-star review may still pan one of them, so the overall rating says nothing about either.

Each (document, entity) pair gives one mention (its first, the span the extractor scores first), so a long review
cannot outweigh short ones. The sample is the first pairs of documents ordered by the MD5 of their id: the same
documents give the same sample, hence the same offsets and the same extractor version, in every run.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import duckdb
import numpy as np

from oprag_pipeline import config
from oprag_pipeline.config import INTENSITY_SAMPLE_MENTIONS, MIN_RATED_MENTIONS, SAMPLE_MENTIONS
from oprag_pipeline.enrich.aspect_model import LABELS, AspectItem
from oprag_pipeline.enrich.calibration import (
    fit_label_bias,
    fit_residual_head,
    lexicon_agreement_label,
    rating_weak_label,
)
from oprag_pipeline.enrich.store import fetch_documents
from oprag_pipeline.registry.matching import AliasMatcher, phrase_key
from oprag_pipeline.schema import rounded_cost
from oprag_pipeline.settings import RATED_ASPECTS_FILE
from oprag_pipeline.warehouse import ensure_tables, insert_rows, records

ADAPT_MODES: tuple[str, ...] = get_args(config.AdaptMode)
# OPRAG_INTENSITY: levels learnt from the domain's ratings, or the cue rule
INTENSITY_SOURCES: tuple[str, ...] = get_args(config.IntensitySource)
# Star scale of `rating` and `rating_<aspect>`: the 1-5 stars of review sites. A value outside it is not counted
# (it belongs to another scale, which the weak-label rule would misread), and the skipped count is reported.
RATING_SCALE = (1.0, 5.0)
# The fit's sample size and minimum are defaults of the extractor resource's fields, so they live in `config.py` (the
# resources read them there without importing this stage module); why these values is said there.
# Offsets are stored and versioned at 0.01 logit (it moves a probability by at most 0.25 percentage points), so a
# refit on a near-identical sample keeps the extractor version and the cache.
OFFSET_DECIMALS = 2
# The residual head's weights are about 0.04 apart from zero (their prior's scale, 1/sqrt(768)): four decimals keep
# them to a fraction of a percent, and a refit on a near-identical sample keeps the version as the offsets do.
HEAD_DECIMALS = 4

Features = Callable[[list[tuple[str, int, int]]], np.ndarray]

ADAPTATION_TABLE = "extractor_adaptations"
"""Fitted offsets per (domain, registry version, extractor), declared in `oprag_pipeline/warehouse.py`."""


def load_rated_aspects(domain_dir: Path) -> dict[str, tuple[str, ...]]:
    """The domain's rated-aspect terms (`RATED_ASPECTS_FILE`), or none; a malformed file is an error naming it."""
    path = Path(domain_dir) / RATED_ASPECTS_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not readable as JSON: {error}") from error
    if not isinstance(data, dict) or not all(
        isinstance(terms, list) and all(isinstance(t, str) for t in terms) for terms in data.values()
    ):
        raise ValueError(f"{path}: expected an object of aspect -> list of entity names")
    return {str(aspect): tuple(terms) for aspect, terms in data.items()}


def rated_aspect_entities(entities: Iterable[Any], aspect_terms: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Rated aspect -> ids of the entities (anything with ``entity_id`` and ``name``) whose *name* is one of the
    aspect's terms, compared as the matcher compares; an entity named by two aspects' terms belongs to neither.

    By name only, because aliases are clustered by embedding and an entity "hotel" may carry the alias "hotel room",
    which would drag every opinion about the hotel into Rooms."""
    terms = {aspect: {phrase_key(t) for t in words} for aspect, words in aspect_terms.items()}
    out: dict[str, list[str]] = {}
    for entry in entities:
        key = phrase_key(entry.name)
        matches = [aspect for aspect, words in terms.items() if key in words]
        if len(matches) == 1:
            out.setdefault(matches[0], []).append(entry.entity_id)
    return out


@dataclass(frozen=True)
class RatedMention:
    """One (document, entity) mention with the rating that labels it and where the rating came from."""

    doc_id: str
    entity_id: str
    text: str
    start: int
    end: int
    rating: float
    source: str  # "rating_<aspect>" or "rating"


def _in_scale(value: Any) -> bool:
    return isinstance(value, int | float) and RATING_SCALE[0] <= float(value) <= RATING_SCALE[1]


def document_rated_mentions(
    doc_id: str,
    text: str,
    rating: float | None,
    extra: Mapping[str, Any],
    matcher: AliasMatcher,
    aspect_entities: Mapping[str, Sequence[str]],
) -> tuple[list[RatedMention], int]:
    """The rated mentions of one document by the module's rule, and how many ratings fell outside `RATING_SCALE`."""
    first: dict[str, tuple[int, int]] = {}
    for entity_id, start, end in matcher.mentions(text):
        first.setdefault(entity_id, (start, end))
    out: list[RatedMention] = []
    off_scale = 0
    for aspect, entity_ids in aspect_entities.items():
        stars = extra.get(f"rating_{aspect}")
        if stars is None:
            continue
        if not _in_scale(stars):
            off_scale += 1
            continue
        for entity_id in entity_ids:
            if entity_id in first:
                out.append(RatedMention(doc_id, entity_id, text, *first[entity_id], float(stars), f"rating_{aspect}"))
    if not out and rating is not None and len(first) == 1:
        if _in_scale(rating):
            (entity_id, (start, end)) = next(iter(first.items()))
            out.append(RatedMention(doc_id, entity_id, text, start, end, float(rating), "rating"))
        else:
            off_scale += 1
    return out, off_scale


def sample_rated_mentions(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    entities: Sequence[Any],
    aspect_terms: Mapping[str, Sequence[str]],
    sample_size: int = SAMPLE_MENTIONS,
) -> tuple[list[RatedMention], int]:
    """The deterministic sample (documents by MD5 of their id, see the module docstring) of up to ``sample_size``
    rated mentions of the domain, and the count of ratings outside the scale. Reads documents in batches and stops
    once the sample is full, so a large corpus is not scanned to the end."""
    matcher = AliasMatcher(entities)
    aspect_entities = rated_aspect_entities(entities, aspect_terms)
    cursor = conn.cursor()
    cursor.execute(
        """SELECT doc_id, text, rating, extra FROM raw_documents
           WHERE domain = ? AND (rating IS NOT NULL OR extra IS NOT NULL) ORDER BY md5(doc_id), doc_id""",
        [domain],
    )
    sample: list[RatedMention] = []
    off_scale = 0
    try:
        while len(sample) < sample_size and (rows := cursor.fetchmany(2000)):
            for doc_id, text, rating, extra in rows:
                parsed = json.loads(extra) if isinstance(extra, str) else (extra or {})
                found, skipped = document_rated_mentions(doc_id, text, rating, parsed, matcher, aspect_entities)
                sample.extend(found)
                off_scale += skipped
                if len(sample) >= sample_size:
                    break
    finally:
        cursor.close()
    return sample[:sample_size], off_scale


@dataclass
class Adaptation:
    """What an adaptation attempt did: the fitted offsets (None when skipped) and why it was skipped."""

    method: str
    offsets: tuple[float, ...] | None = None
    sample_size: int = 0
    label_counts: dict[str, int] = field(default_factory=dict)
    source_counts: dict[str, int] = field(default_factory=dict)
    skipped_reason: str | None = None
    # the residual head's weights (features x classes; calibration.fit_residual_head), None: offsets alone
    head: tuple[tuple[float, ...], ...] | None = None
    reused: bool = False  # offsets read back from `extractor_adaptations` rather than fitted in this run
    # what labelling the sample cost (the LLM teacher's tokens; zero for ratings)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    # intensity levels learnt from the domain's ratings (`intensity.IntensityCalibration.to_json`), None: the cue
    # rule; how many rated opinions it was fitted on, or why it was not
    intensity: str | None = None
    intensity_opinions: int = 0
    intensity_skipped: str | None = None

    @property
    def fitted(self) -> bool:
        """Whether anything was learnt (offsets, a residual head or intensity levels)."""
        return self.offsets is not None or self.intensity is not None

    def metadata(self) -> dict[str, Any]:
        """Flat values for the asset's metadata: enough to reproduce the adapted scorer."""
        out: dict[str, Any] = {"adapt": self.method, "adapt_sample_size": self.sample_size}
        if self.intensity is not None:
            out["adapt_intensity"] = f"learnt from {self.intensity_opinions} rated opinions"
        elif self.intensity_skipped:
            out["adapt_intensity"] = f"cue rule ({self.intensity_skipped})"
        if self.offsets is not None:
            out["adapt_offsets"] = dict(zip(LABELS, self.offsets, strict=True))
            out["adapt_residual_head_weights"] = 0 if self.head is None else len(self.head) * len(LABELS)
            out["adapt_weak_labels"] = self.label_counts
            out["adapt_sources"] = self.source_counts
            out["adapt_reused"] = self.reused
        if self.method == "llm":
            out["adapt_teacher_input_tokens"] = self.input_tokens
            out["adapt_teacher_output_tokens"] = self.output_tokens
            out["adapt_teacher_cost_usd"] = rounded_cost(self.cost_usd)
        if self.skipped_reason:
            out["adapt_skipped"] = self.skipped_reason
        return out


def fit_domain_head(
    probabilities: Callable[[list[tuple[str, int, int]]], np.ndarray],
    features: Features | None,
    items: list[tuple[str, int, int]],
    labels: Sequence[int],
    learn_bias: bool = True,
) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...] | None]:
    """Offsets and, when the model exposes its head features, a residual head fitted to a labelled sample, rounded
    as they are stored and versioned. The residual head learns which of the encoder's feature directions mean what
    in the domain; measured with gold of MEMD-ABSA train as an oracle teacher (`bench_aspect_model.py`), 300 aspects
    gave 2-way accuracy / macro-F1 of 0.879 / 0.826 (books), 0.922 / 0.889 (clothing), 0.978 / 0.880 (hotels),
    against 0.871 / 0.816, 0.881 / 0.828 and 0.968 / 0.820 for the offsets alone."""
    probs = probabilities(items)
    if features is None:
        return tuple(round(float(b), OFFSET_DECIMALS) + 0.0 for b in fit_label_bias(probs, labels)), None
    w, b = fit_residual_head(features(items), probs, labels, learn_bias)
    head = tuple(tuple(round(float(v), HEAD_DECIMALS) + 0.0 for v in row) for row in w)
    return tuple(round(float(v), OFFSET_DECIMALS) + 0.0 for v in b), head


def fit_rating_offsets(
    probabilities: Callable[[list[tuple[str, int, int]]], np.ndarray],
    mentions: Sequence[RatedMention],
    min_mentions: int = MIN_RATED_MENTIONS,
    features: Features | None = None,
) -> Adaptation:
    """Offsets fitted to the weak labels of ``mentions``, scored by ``probabilities`` (the *unadapted* model's
    `AspectSentimentModel.probabilities`); skipped, with the reason, when fewer than ``min_mentions`` exist."""
    if len(mentions) < min_mentions:
        return Adaptation(
            "ratings",
            sample_size=len(mentions),
            skipped_reason=f"{len(mentions)} rated mentions, fewer than the {min_mentions} needed to fit offsets",
        )
    labels = [rating_weak_label(m.rating, RATING_SCALE[1], RATING_SCALE[0]) for m in mentions]
    offsets, head = fit_domain_head(probabilities, features, [(m.text, m.start, m.end) for m in mentions], labels)
    return Adaptation(
        "ratings",
        offsets=offsets,
        head=head,
        sample_size=len(mentions),
        label_counts={LABELS[k]: n for k, n in sorted(Counter(labels).items())},
        source_counts=dict(sorted(Counter(m.source for m in mentions).items())),
    )


@dataclass
class IntensityFit:
    """What `fit_intensity_from_ratings` learnt, from how many rated opinions, or why it did not; and the
    documents it extracted, with their strength features (`offline.relevel` turns them into the calibrated
    extractor's answers, so they need not be extracted again)."""

    calibration: Any = None  # intensity.IntensityCalibration
    opinions: int = 0
    skipped_reason: str | None = None
    extracted: list = field(default_factory=list)


def fit_intensity_from_ratings(
    extractor: Any,
    mentions: Sequence[RatedMention],
    documents: Sequence[Any],
    entities: Sequence[Any],
    min_mentions: int = MIN_RATED_MENTIONS,
) -> IntensityFit:
    """Intensity levels learnt from rated mentions (`intensity.fit_intensity_calibration`): their ``documents``
    (`DocumentInput`s, one per document a mention is in) are extracted by ``extractor`` (the domain's adapted
    extractor, without a calibration) as the corpus will be, and each rated (document, entity) opinion the extractor
    states is paired with its rating; skipped, with the reason, below ``min_mentions`` such opinions.

    The same sample rule as the rating offsets (`sample_rated_mentions`), so one rule decides which rating is about
    which entity; neutral answers and stances inferred from the document's tone are left out (they keep "low")."""
    from oprag_pipeline.enrich.intensity import fit_intensity_calibration

    by_doc: dict[str, list[RatedMention]] = {}
    for mention in mentions:
        by_doc.setdefault(mention.doc_id, []).append(mention)
    extracted = extractor.extract_with_strength([d for d in documents if d.doc_id in by_doc], entities)
    features, sentiments, ratings = [], [], []
    for outcome, strengths in extracted:
        answered = {o.entity_id: o.sentiment for o in outcome.opinions}
        for mention in by_doc[outcome.doc_id]:
            if mention.entity_id in strengths:
                features.append(strengths[mention.entity_id])
                sentiments.append(answered[mention.entity_id])
                ratings.append(mention.rating)
    fit = IntensityFit(opinions=len(features), extracted=extracted)
    if len(features) < min_mentions:
        fit.skipped_reason = f"{len(features)} rated opinions stated, fewer than the {min_mentions} needed"
        return fit
    fit.calibration = fit_intensity_calibration(features, sentiments, ratings, RATING_SCALE)
    if fit.calibration is None:
        fit.skipped_reason = (
            "neither polarity has enough rated opinions whose learnt levels order held-out ratings better than the "
            "cue rule"
        )
    return fit


def self_labels(
    scorer: Any, documents: Iterable[Sequence[tuple[str, int, int]]], sample_size: int = SAMPLE_MENTIONS
) -> tuple[list[tuple[str, int, int]], list[int], int]:
    """Self-training labels: each document's mentions scored by the *unadapted* ``scorer`` in one call (as the
    extractor scores them), kept where ``calibration.lexicon_agreement_label`` finds VADER agreeing, until
    ``sample_size`` mentions were examined. Returns the kept items, their labels and the number examined."""
    from oprag_pipeline.enrich.cues import local_clause, vader_compound

    items: list[tuple[str, int, int]] = []
    labels: list[int] = []
    examined = 0
    for mentions in documents:
        mentions = list(mentions)[: sample_size - examined]
        if not mentions:
            continue
        examined += len(mentions)
        for item, prediction in zip(mentions, scorer.predict(mentions), strict=True):
            window, s, e = scorer.encoder.window(AspectItem(*item))
            label = lexicon_agreement_label(
                prediction.sentiment, vader_compound(local_clause(window, s, e)), vader_compound(window)
            )
            if label is not None:
                items.append(item)
                labels.append(label)
        if examined >= sample_size:
            break
    return items, labels, examined


def sample_self_labelled(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    entities: Sequence[Any],
    scorer: Any,
    sample_size: int = SAMPLE_MENTIONS,
) -> tuple[list[tuple[str, int, int]], list[int], int]:
    """``self_labels`` of the domain's deterministic sample: the first mention of each (document, entity) in
    documents ordered by MD5 of their id, read in batches until ``sample_size`` mentions were examined."""
    matcher = AliasMatcher(entities)

    def documents() -> Iterator[list[tuple[str, int, int]]]:
        cursor = conn.cursor()
        cursor.execute("SELECT doc_id, text FROM raw_documents WHERE domain = ? ORDER BY md5(doc_id), doc_id", [domain])
        try:
            while rows := cursor.fetchmany(500):
                for _, text in rows:
                    first: dict[str, tuple[int, int]] = {}
                    for entity_id, start, end in matcher.mentions(text):
                        first.setdefault(entity_id, (start, end))
                    yield [(text, start, end) for start, end in first.values()]
        finally:
            cursor.close()

    batches = documents()
    try:
        return self_labels(scorer, batches, sample_size)
    finally:
        batches.close()  # closes the cursor of a sample that filled before the last document


def fit_self_offsets(
    scorer: Any,
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    entities: Sequence[Any],
    sample_size: int = SAMPLE_MENTIONS,
    min_mentions: int = MIN_RATED_MENTIONS,
    features: Features | None = None,
) -> Adaptation:
    """A residual head fitted to the unadapted model's own answers on the domain's text where VADER agrees
    (``sample_self_labelled``), its bias held at zero (``fit_residual_head(learn_bias=False)``: the head learns what
    the domain's feature directions mean, not how often each class occurs); skipped, with the reason, when fewer
    than ``min_mentions`` agreeing mentions exist or the graph exposes no head features.

    Measured (``benchmarks/bench_aspect_model.py``, the ``self`` section; MEMD-ABSA train sentences and 20 other
    TripAdvisor hotels as the unlabelled text, nothing of their labels read), 1,000 mentions examined: 2-way accuracy
    / macro-F1 books 0.813 / 0.808 -> 0.849 / 0.823, clothing 0.864 / 0.853 -> 0.873 / 0.851, hotels 0.923 / 0.849
    -> 0.955 / 0.843, TripAdvisor agreement 0.755 -> 0.780, precision where it commits within a point. With the bias
    learnt, TripAdvisor reached 0.807 but hotel macro-F1 fell to 0.818: the agreeing answers lean to the majority."""
    if features is None:
        return Adaptation("self", skipped_reason="the model exposes no head features to fit a residual head on")
    items, labels, examined = sample_self_labelled(conn, domain, entities, scorer, sample_size)
    adaptation = Adaptation(
        "self",
        sample_size=len(items),
        label_counts={LABELS[k]: n for k, n in sorted(Counter(labels).items())},
        source_counts={"lexicon_agrees": len(items), "lexicon_disagrees": examined - len(items)},
    )
    if len(items) < min_mentions:
        adaptation.skipped_reason = (
            f"{len(items)} of {examined} mentions with the lexicon agreeing, fewer than the {min_mentions} needed "
            "to fit"
        )
        return adaptation
    adaptation.offsets, adaptation.head = fit_domain_head(scorer.probabilities, features, items, labels, False)
    return adaptation


def fit_teacher_offsets(
    probabilities: Callable[[list[tuple[str, int, int]]], np.ndarray],
    teacher: Any,
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    entities: Sequence[Any],
    sample_size: int = SAMPLE_MENTIONS,
    min_mentions: int = MIN_RATED_MENTIONS,
    features: Features | None = None,
) -> Adaptation:
    """Offsets fitted to ``teacher``'s labels of the domain's sample (`enrich/teacher.py`), scored by the unadapted
    student's ``probabilities``; skipped, with the reason and what the teacher cost, when too few mentions got one."""
    from oprag_pipeline.enrich.teacher import label_counts, teacher_labelled_mentions

    sample = teacher_labelled_mentions(conn, domain, entities, teacher, max_mentions=sample_size)
    adaptation = Adaptation(
        "llm",
        sample_size=len(sample.mentions),
        label_counts=label_counts(sample.mentions),
        source_counts=sample.source_counts(),
        input_tokens=sample.input_tokens,
        output_tokens=sample.output_tokens,
        cost_usd=sample.cost_usd,
    )
    if len(sample.mentions) < min_mentions:
        adaptation.skipped_reason = (
            f"{len(sample.mentions)} teacher-labelled mentions in {sample.documents} documents, fewer than the "
            f"{min_mentions} needed to fit offsets"
        )
        return adaptation
    items = [(m.text, m.start, m.end) for m in sample.mentions]
    adaptation.offsets, adaptation.head = fit_domain_head(
        probabilities, features, items, [m.label for m in sample.mentions]
    )
    return adaptation


def adapt_extractor(
    engine: Any,
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    entities: Sequence[Any],
    aspect_terms: Mapping[str, Sequence[str]],
    *,
    mode: str,
    registry_version: int = 0,
    sample_size: int = SAMPLE_MENTIONS,
    min_mentions: int = MIN_RATED_MENTIONS,
    run_id: str | None = None,
    intensity: str = "ratings",
    intensity_sample: int = INTENSITY_SAMPLE_MENTIONS,
    on_extracted: Callable[[Any, list], None] | None = None,
) -> tuple[Any, Adaptation]:
    """The extractor to run on the domain: ``engine`` itself, or an offline extractor whose model carries offsets
    fitted on the domain's ratings (its version says so, so the cache re-extracts). The fit is recorded in
    ``extractor_adaptations`` and reused while the registry version and the base extractor stay the same: documents
    added later are extracted by the same adapted model, so an incremental run stays incremental (a refit on a
    grown sample could move the offsets and re-extract the whole domain). The shared model is copied, never
    mutated: another domain in the same process keeps its own scorer (the copy shares the ONNX session and its
    logit cache, which no offset changes).

    With ``intensity="ratings"`` (`OPRAG_INTENSITY`) the adapted extractor's intensity levels are also learnt from the
    domain's ratings when it has ``min_mentions`` rated opinions (`fit_intensity_from_ratings`), whatever ``mode``
    fitted the polarity; ``"cues"`` keeps the cue rule. The documents that fit extracted are handed, as the
    calibrated extractor answers them, to ``on_extracted(extractor, outcomes)`` (the caller caches them, so they
    are not extracted twice)."""
    from oprag_pipeline.enrich.offline import OfflineExtractor

    config.choice("OPRAG_ADAPT", mode)
    config.choice("OPRAG_INTENSITY", intensity)
    if mode == "none":
        return engine, Adaptation("none")
    if mode == "llm" and isinstance(engine, OfflineExtractor):
        reason = "adapt=llm needs an LLM extractor as the teacher (OPRAG_EXTRACTOR=anthropic or openai-compatible)"
        return engine, Adaptation(mode, skipped_reason=reason)
    student = _student(engine, mode)
    scorer = getattr(student, "scorer", None) if isinstance(student, OfflineExtractor) else None
    if scorer is None or not hasattr(scorer, "probabilities"):
        return engine, Adaptation(mode, skipped_reason=f"the {engine.name} extractor has no model to adapt")
    base = _unadapted(scorer)
    features = base.features if getattr(base, "exposes_features", False) else None
    ensure_tables(conn, ADAPTATION_TABLE)
    found = records(
        conn.execute(
            """SELECT offsets, sample_size, label_counts, source_counts, residual_head, intensity_calibration,
                      intensity_opinions
               FROM extractor_adaptations
               WHERE domain = ? AND registry_version = ? AND extractor = ? AND base_version = ? AND method = ?
                 AND coalesce(intensity_source, 'cues') = ?
               ORDER BY fitted_at DESC LIMIT 1""",
            [domain, registry_version, engine.name, engine.version, mode, intensity],
        )
    )
    if found:
        stored = found[0]
        offsets = json.loads(stored["offsets"]) if stored.get("offsets") else None
        head = json.loads(stored["residual_head"]) if stored.get("residual_head") else None
        reused = Adaptation(
            mode,
            offsets=None if offsets is None else tuple(float(offsets[label]) for label in LABELS),
            head=None if head is None else tuple(tuple(float(v) for v in row) for row in head),
            sample_size=int(stored["sample_size"]),
            label_counts=json.loads(stored["label_counts"]),
            source_counts=json.loads(stored["source_counts"]),
            reused=True,
            intensity=stored.get("intensity_calibration"),
            intensity_opinions=int(stored.get("intensity_opinions") or 0),
        )
        return (_adapted(scorer, reused, student) if reused.fitted else student), reused
    if mode == "self":
        adaptation = fit_self_offsets(base, conn, domain, entities, sample_size, min_mentions, features)
    elif mode == "llm":
        adaptation = fit_teacher_offsets(
            base.probabilities, engine, conn, domain, entities, sample_size, min_mentions, features
        )
    else:
        mentions, off_scale = sample_rated_mentions(conn, domain, entities, aspect_terms, sample_size)
        adaptation = fit_rating_offsets(base.probabilities, mentions, min_mentions, features)
        if off_scale:
            # ratings on another scale are left out, not rescaled: which scale they use is not recorded anywhere
            adaptation.source_counts["ignored_off_scale"] = off_scale
    adapted = _adapted(scorer, adaptation, student) if adaptation.offsets is not None else student
    if intensity == "ratings" and isinstance(adapted, OfflineExtractor):
        from oprag_pipeline.enrich.offline import relevel

        rated, _ = sample_rated_mentions(conn, domain, entities, aspect_terms, intensity_sample)
        documents = fetch_documents(conn, domain, sorted({m.doc_id for m in rated}))
        fit = fit_intensity_from_ratings(adapted, rated, documents, entities, min_mentions)
        adaptation.intensity_opinions, adaptation.intensity_skipped = fit.opinions, fit.skipped_reason
        if fit.calibration is not None:
            adaptation.intensity = fit.calibration.to_json()
            adapted = _adapted(scorer, adaptation, student)
            if on_extracted is not None:
                on_extracted(adapted, relevel(fit.extracted, fit.calibration))
    if not adaptation.fitted:
        return student, adaptation
    insert_rows(
        conn,
        ADAPTATION_TABLE,
        [
            {
                "domain": domain,
                "registry_version": registry_version,
                "extractor": engine.name,
                "base_version": engine.version,
                "adapted_version": adapted.version,
                "method": adaptation.method,
                "offsets": None
                if adaptation.offsets is None
                else json.dumps(dict(zip(LABELS, adaptation.offsets, strict=True))),
                "sample_size": adaptation.sample_size,
                "label_counts": json.dumps(adaptation.label_counts),
                "source_counts": json.dumps(adaptation.source_counts),
                "run_id": run_id,
                "fitted_at": datetime.now(UTC).replace(tzinfo=None),
                "residual_head": None if adaptation.head is None else json.dumps(adaptation.head),
                "intensity_source": intensity,
                "intensity_calibration": adaptation.intensity,
                "intensity_opinions": adaptation.intensity_opinions,
            }
        ],
    )
    return adapted, adaptation


def adapted_extractor(engine: Any, adaptation: Adaptation, name: str, version: str) -> Any:
    """The extractor `adapt_extractor` returned (called ``name``, at ``version``), rebuilt from the extractor as
    configured and the adaptation: a shard step in another process, or on another machine, is handed those, not the
    model. Raises when the rebuilt extractor is not that version (the shard would mix two models' answers)."""
    if adaptation.fitted:
        student = _student(engine, adaptation.method)
        rebuilt = _adapted(student.scorer, adaptation, student)
    else:
        rebuilt = engine if engine.name == name else _student(engine, adaptation.method)
    if (rebuilt.name, rebuilt.version) != (name, version):
        raise RuntimeError(
            f"the shard rebuilt {rebuilt.name} {rebuilt.version}, but the plan extracts with {name} {version}: "
            "the shard's process has another model or configuration than the plan's"
        )
    return rebuilt


def _student(engine: Any, mode: str) -> Any:
    """The extractor that extracts the corpus: an LLM teacher's offline student, else the engine itself."""
    from oprag_pipeline.enrich.offline import OfflineExtractor

    if mode == "llm" and not isinstance(engine, OfflineExtractor):
        # the LLM labels the sample, the offline model extracts the corpus
        tone = getattr(engine, "student_review_tone", None)  # set by `factory.build_extractor`
        return OfflineExtractor(
            review_tone=config.declared("OPRAG_DOCUMENT_TONE").default == "read" if tone is None else tone
        )
    return engine


def _unadapted(scorer: Any) -> Any:
    """A copy of the shared model without any domain's adaptation (the copy shares the ONNX session and its logit
    cache, which no adaptation changes; another domain in the same process keeps its own scorer)."""
    base = copy.copy(scorer)
    base.label_bias = None
    base.residual_head = None
    return base


def _adapted(scorer: Any, adaptation: Adaptation, student: Any) -> Any:
    """An offline extractor like ``student`` (its other settings kept) whose model carries ``adaptation``'s offsets
    and head, and which reads intensity levels from its calibration when it has one."""
    from oprag_pipeline.enrich.intensity import IntensityCalibration
    from oprag_pipeline.enrich.offline import OfflineExtractor

    base = _unadapted(scorer)
    if adaptation.offsets is not None:
        apply_adaptation(base, adaptation)
    calibration = IntensityCalibration.from_json(adaptation.intensity) if adaptation.intensity else None
    return OfflineExtractor(
        scorer=base, review_tone=getattr(student, "review_tone", True), intensity_calibration=calibration
    )


def apply_adaptation(model: Any, adaptation: Adaptation) -> None:
    """Put a fitted (or stored) adaptation on a copy of the model: with a residual head its bias is the offsets
    (``fit_residual_head`` returns both), without one the offsets are the model's ``label_bias``."""
    assert adaptation.offsets is not None
    bias = np.asarray(adaptation.offsets, dtype=np.float64)
    if adaptation.head is None:
        model.label_bias = bias
        model.residual_head = None
    else:
        model.label_bias = None
        model.residual_head = (np.asarray(adaptation.head, dtype=np.float64), bias)
