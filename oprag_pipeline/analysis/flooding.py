"""Resistance to opinion flooding: concentrated sources, near-duplicate texts, and P_pop with bounded source weight.

Why: P_pop, the corpus distribution that balanced retrieval and the generation fidelity both aim at, counts
opinions. Five accounts posting 200 copies of one complaint then outvote hundreds of independent reviewers. Two
signals expose that: the share of an entity's opinions that its top authors wrote, and clusters of near-identical
texts (copy-paste campaigns survive a change of account). A *source* is a connected group of opinions linked by
the same author or by near-duplicate text; each source's weight is then bounded (one vote per source, or a cap of
c opinions' worth), and the bounded estimate is reported *beside* the unweighted one, never instead of it.

Near duplicates are found on the documents' text with word 3-shingles and MinHash LSH (datasketch), every
candidate pair then checked by its exact Jaccard similarity (`oprag_pipeline/sources.py`, shared with source-fair
retrieval). Text rather than the dense vectors in Qdrant: the vector store's interface returns payloads, not
vectors, and dense similarity of short reviews is high for any two texts about the same thing ("breakfast was
great" vs "breakfast was awful" share most of their embedding), while shingle overlap is high only for copies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from oprag_pipeline.analysis.drift import level_counts, rescaled_counts, w1_counts
from oprag_pipeline.sources import (
    DEFAULT_JACCARD,
    DEFAULT_TOP_AUTHORS,
    SourcedOpinion,
    effective_sources,
    source_key,
    sources,
    top_author_share,
)

POLICIES = ("one_vote", "cap")


def bounded_weights(source_of: Mapping[str, str], *, policy: str = "one_vote", cap: int = 3) -> dict[str, float]:
    """Weight of each opinion so that no source weighs more than one vote (`one_vote`) or `cap` opinions (`cap`).

    Within a source the weight is shared equally, so the source's own mix of views is kept.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown weighting policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if policy == "cap" and cap < 1:
        raise ValueError("the cap is at least one opinion per source")
    size = Counter(source_of.values())
    bound = 1 if policy == "one_vote" else cap
    return {key: min(1.0, bound / size[source]) for key, source in source_of.items()}


@dataclass(frozen=True)
class PopEstimate:
    """P_pop of one entity, unweighted and with bounded source weight, and how far apart they are."""

    n_opinions: int
    votes: float  # sum of the bounded weights: the number of sources under one vote per source
    unweighted: np.ndarray  # shares over the seven σ-levels
    bounded: np.ndarray
    w1: float  # between the two estimates, in σ-points

    def bounded_counts(self) -> dict[int, int]:
        """The bounded shares as integer counts summing to the real number of opinions, for balanced retrieval's
        quotas (see `drift.rescaled_counts`)."""
        levels = range(-30, 31, 10)
        return rescaled_counts(dict(zip(levels, self.bounded.tolist(), strict=True)), self.n_opinions)


def estimate_pop(opinions: Sequence[SourcedOpinion], weights: Mapping[str, float]) -> PopEstimate:
    """Both estimates of P_pop from the same opinions (an opinion missing from `weights` weighs 1)."""
    if not opinions:
        raise ValueError("P_pop needs at least one opinion")
    plain = level_counts(o.sentiment_intensity for o in opinions).astype(np.float64)
    bounded = np.zeros_like(plain)
    for o in opinions:
        bounded[(o.sentiment_intensity + 30) // 10] += weights.get(o.key, 1.0)
    unweighted_shares = plain / plain.sum()
    bounded_shares = bounded / bounded.sum()
    return PopEstimate(
        len(opinions),
        float(bounded.sum()),
        unweighted_shares,
        bounded_shares,
        w1_counts(unweighted_shares, bounded_shares),
    )


@dataclass(frozen=True)
class EntitySources:
    """Source concentration of one entity's opinions, and its two P_pop estimates."""

    entity_id: str
    entity_name: str
    n_authors: int
    top_author_share: float
    effective_authors: float
    duplicate_clusters: int
    duplicated_opinions: int
    estimate: PopEstimate

    def means(self) -> tuple[float, float]:
        """Mean σ of the unweighted and of the bounded estimate."""
        levels = np.arange(-30, 31, 10)
        return float(levels @ self.estimate.unweighted), float(levels @ self.estimate.bounded)


def analyse_sources(
    entity_id: str,
    entity_name: str,
    opinions: Sequence[SourcedOpinion],
    clusters: Sequence[Sequence[str]],
    *,
    policy: str = "one_vote",
    cap: int = 3,
    top: int = DEFAULT_TOP_AUTHORS,
) -> EntitySources:
    """One entity: author concentration, the near-duplicate clusters among its opinions, both P_pop estimates.
    An opinion without an author counts as its own author in the concentration figures."""
    keys = {o.key for o in opinions}
    touching = [[k for k in c if k in keys] for c in clusters]
    touching = [c for c in touching if len(c) > 1]
    author_counts = Counter(source_key(o.key, o.author_id) for o in opinions)
    weights = bounded_weights(sources(opinions, touching), policy=policy, cap=cap)
    return EntitySources(
        entity_id,
        entity_name,
        len(author_counts),
        top_author_share(author_counts, top),
        effective_sources(list(author_counts.values())),
        len(touching),
        sum(len(c) for c in touching),
        estimate_pop(opinions, weights),
    )


def flooding_section(results: Sequence[EntitySources], *, policy: str, cap: int, top: int, image: str | None) -> str:
    """Markdown for the report: the most concentrated entities and how far the bounded P_pop moved."""
    if not results:
        return ""
    bound = "one vote per source" if policy == "one_vote" else f"at most {cap} opinions' weight per source"
    shown = sorted(results, key=lambda r: (-r.estimate.w1, -r.top_author_share, r.entity_id))[:12]
    lines = [
        "## Source concentration and flood-resistant P_pop",
        "",
        f"A source is a group of opinions linked by the same author or by near-identical text (word 3-shingle "
        f"Jaccard ≥ {DEFAULT_JACCARD}); the bounded estimate gives each source {bound}. Both estimates are kept; "
        f"W1 is the distance between them in σ-points. Largest W1 first, {len(shown)} of {len(results)} entities.",
        "",
        f"| entity | opinions | authors | top-{top} share | effective authors | near-dup opinions | mean σ | "
        "mean σ bounded | W1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in shown:
        plain, bounded = r.means()
        lines.append(
            f"| {r.entity_name} | {r.estimate.n_opinions} | {r.n_authors} | {r.top_author_share:.1%} | "
            f"{r.effective_authors:.1f} | {r.duplicated_opinions} | {plain:+.1f} | {bounded:+.1f} | "
            f"{r.estimate.w1:.2f} |"
        )
    if image:
        lines += ["", f"![source concentration]({image})"]
    return "\n".join(lines) + "\n"
