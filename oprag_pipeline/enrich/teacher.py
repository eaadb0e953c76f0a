"""Adaptation of the offline aspect model from an LLM-labelled sample of the domain: the reference study's sampled
extraction, made cheap at scale.

With an LLM extractor configured and ``adapt=llm``, the LLM (the teacher) labels a deterministic sample of the
domain's documents, the offline model (the student) learns the three per-class offsets of
`calibration.fit_label_bias` from those labels, and the student extracts the whole corpus. The cost is one LLM
call per sampled document (``LLM_SAMPLE_DOCUMENTS``, a few hundred) instead of one per document of the corpus.

Which label belongs to which mention, by the same rule as the ratings (`enrich/ratings.py`): each (document, entity)
opinion of the teacher labels the student's *first* mention of that entity in the document, the span the student
scores first. A teacher opinion on an entity the matcher cannot find in the text (ungrounded, or an entity the
teacher proposed) labels nothing and is counted. The sample is the first documents by the MD5 of their id, so the
same corpus gives the same sample, the same offsets and the same extractor version.

Measured without an LLM by gold as an oracle teacher (benchmarks/bench_aspect_model.py, MEMD-ABSA train labels
labelling the sample): 100 labelled aspects moved 2-way test accuracy from 0.813 to 0.865 (books), 0.864 to 0.886
(clothing) and 0.923 to 0.971 (hotels); 300 and 1,000 gave little more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from oprag_pipeline.enrich.aspect_model import LABELS
from oprag_pipeline.registry.matching import AliasMatcher
from oprag_pipeline.schema import DocumentInput
from oprag_pipeline.warehouse import records

# Documents the teacher labels at most: the oracle curve had its gain by 100 labelled mentions, and review
# documents name 1-4 registry entities each, so 300 documents give that with room for short or off-topic ones.
LLM_SAMPLE_DOCUMENTS = 300
# Documents sent to the teacher per call of its `extract` (its own concurrency and retries work within a batch).
TEACHER_BATCH = 20


@dataclass(frozen=True)
class TeacherMention:
    """One (document, entity) mention of the student, labelled by the teacher's opinion on that entity."""

    doc_id: str
    entity_id: str
    text: str
    start: int
    end: int
    label: int  # index into LABELS


@dataclass
class TeacherSample:
    """The labelled mentions, what the teacher was asked and what it cost."""

    mentions: list[TeacherMention] = field(default_factory=list)
    documents: int = 0
    failed_documents: int = 0
    unanchored_opinions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None: the teacher model's price is unknown

    def source_counts(self) -> dict[str, int]:
        return {
            "teacher_documents": self.documents,
            "teacher_failed_documents": self.failed_documents,
            "teacher_unanchored_opinions": self.unanchored_opinions,
        }


def teacher_labelled_mentions(
    conn: duckdb.DuckDBPyConnection,
    domain: str,
    entities: Sequence[Any],
    teacher: Any,
    max_documents: int = LLM_SAMPLE_DOCUMENTS,
    max_mentions: int = 1000,
) -> TeacherSample:
    """Label the domain's sample with ``teacher`` (an extractor: ``extract(documents, entities)``); see the module
    docstring for the sample and the rule. Stops at ``max_documents`` documents or ``max_mentions`` mentions."""
    matcher = AliasMatcher(entities)
    documents = [
        DocumentInput(**r)
        for r in records(
            conn.execute(
                """SELECT doc_id, text, content_hash, title, entity_scope FROM raw_documents
                   WHERE domain = ? ORDER BY md5(doc_id), doc_id LIMIT ?""",
                [domain, int(max_documents)],
            )
        )
    ]
    sample = TeacherSample()
    for start in range(0, len(documents), TEACHER_BATCH):
        if len(sample.mentions) >= max_mentions:
            break
        batch = documents[start : start + TEACHER_BATCH]
        outcomes = teacher.extract(batch, entities)
        sample.documents += len(batch)
        for document, outcome in zip(batch, outcomes, strict=True):
            sample.input_tokens += outcome.input_tokens
            sample.output_tokens += outcome.output_tokens
            if outcome.failed:
                sample.failed_documents += 1
                continue
            first: dict[str, tuple[int, int]] = {}
            for entity_id, s, e in matcher.mentions(document.text):
                first.setdefault(entity_id, (s, e))
            for opinion in outcome.opinions:
                span = first.get(opinion.entity_id or "")
                if span is None or opinion.sentiment not in LABELS:
                    sample.unanchored_opinions += 1
                    continue
                label = LABELS.index(opinion.sentiment)
                sample.mentions.append(TeacherMention(document.doc_id, opinion.entity_id, document.text, *span, label))
    sample.mentions = sample.mentions[:max_mentions]
    sample.cost_usd = teacher.estimated_cost_usd(sample.input_tokens, sample.output_tokens)
    return sample


def label_counts(mentions: Sequence[TeacherMention]) -> dict[str, int]:
    return {LABELS[k]: n for k, n in sorted(Counter(m.label for m in mentions).items())}
