"""The retrieval grid: every question × knowledge base × mode × k, each a real query against the vector store.

Each k is its own query rather than a prefix of the k = 60 list: in hybrid mode the prefetch depth grows with k,
so the top 10 of a k = 60 query is not always what a k = 10 query returns, and the evaluation should measure what
a user asking for k hits gets. Query embeddings are computed once per question and reused for all 40 queries
(3 KBs × 2 modes, plus balanced, MMR, xQuAD and PM-2 on the enriched KB, × 4 depths).

Every ranking is cut deterministically (score, then point id; `retrieval.deterministic_order`), so running the
grid twice on the same index gives the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from oprag_pipeline.index.retrieval import BALANCED, DIVERSIFIED, MODES, Retriever

KNOWLEDGE_BASES = ("raw", "entity_split", "enriched")
DEPTHS = (10, 20, 40, 60)


def grid_cells(kbs: Sequence[str] = KNOWLEDGE_BASES, modes: Sequence[str] = MODES) -> list[tuple[str, str]]:
    """(kb, mode) pairs of the grid: every KB in every mode, plus opinion-balanced retrieval and the literature's
    diversification baselines (MMR, xQuAD, PM-2) on the enriched KB — the only KB whose points carry the σ-score
    they balance on, and the KB balanced retrieval must be compared on."""
    cells = [(kb, mode) for kb in kbs for mode in modes]
    if "enriched" in kbs:
        cells += [("enriched", mode) for mode in (BALANCED, *DIVERSIFIED)]
    return cells


@dataclass(frozen=True)
class HitRow:
    question_id: str
    kb: str
    mode: str
    k: int
    rank: int
    score: float
    point_id: str
    doc_id: str
    hit_entity_id: str | None  # the point's own entity (per-entity KBs); None for raw chunks
    char_start: int | None
    char_end: int | None


def run_grid(
    retriever: Retriever,
    domain: str,
    questions: Sequence[tuple[str, str]],
    *,
    kbs: Sequence[str] = KNOWLEDGE_BASES,
    modes: Sequence[str] = MODES,
    depths: Sequence[int] = DEPTHS,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[list[HitRow]]:
    """Yields the hit rows of one question at a time (all its KB × mode × k queries), so callers can commit and
    report progress as they go."""
    for done, (question_id, text) in enumerate(questions, start=1):
        rows: list[HitRow] = []
        for kb, mode in grid_cells(kbs, modes):
            for k in depths:
                for rank, hit in enumerate(retriever.search(domain, text, k=k, mode=mode, kb=kb), start=1):
                    p = hit.payload
                    rows.append(
                        HitRow(
                            question_id,
                            kb,
                            mode,
                            k,
                            rank,
                            float(hit.score),
                            str(hit.point_id),
                            str(p["doc_id"]),
                            p.get("entity_id") if kb != "raw" else None,
                            p.get("char_start"),
                            p.get("char_end"),
                        )
                    )
        if progress:
            progress(done, len(questions))
        yield rows
