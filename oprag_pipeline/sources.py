"""Sources: who an opinion (or a retrieved hit) comes from, shared by source-fair retrieval (`index/fairness.py`) and
the flood analysis (`analysis/flooding.py`).

A document's source is its author, or the document itself when the author is unknown (`source_key`). Opinions are
further grouped into connected sources linked by the same author or by near-identical text (`sources`): a
complaint pasted from five accounts is one voice. Near duplicates are found on the text with word 3-shingles and
MinHash LSH (datasketch), every candidate pair then checked by its exact Jaccard similarity
(`near_duplicate_clusters`). Concentration figures over source counts: the top authors' share and the effective
number of sources (inverse Herfindahl).

Pure functions; imports no other module of the pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_TOP_AUTHORS = 5

_WORD = re.compile(r"[a-z0-9']+")
# Why 3-word shingles: single words are shared by any two texts on a topic; 3-grams are shared mostly by copied
# phrasing, and a text of 20 words still has 18 of them.
SHINGLE_WORDS = 3
# Why 0.6: a reposted text with a few words changed ("the front desk" → "reception", an added sentence) keeps
# well over 60% of its 3-shingles; two independently written texts rarely share 20%.
DEFAULT_JACCARD = 0.6
# Why 128 permutations: the MinHash estimate's standard error is about 1/sqrt(128) ≈ 0.09, enough to propose
# candidate pairs around 0.6; every proposed pair is verified exactly, so the estimate never decides alone.
NUM_PERM = 128


def source_key(doc_id: str, author_id: str | None) -> str:
    """The source of a document: its author, or the document itself when the author is unknown."""
    return author_id or f"doc:{doc_id}"


def top_author_share(author_counts: Mapping[str, int], top: int = DEFAULT_TOP_AUTHORS) -> float:
    """Share of the opinions (or hits) written by the `top` most prolific authors (0 when there are none)."""
    total = sum(author_counts.values())
    if total == 0:
        return 0.0
    return sum(sorted(author_counts.values(), reverse=True)[:top]) / total


def effective_sources(counts: Sequence[int]) -> float:
    """Inverse Herfindahl index 1 / Σ s²: how many equal sources the mix is worth (n for n equal sources)."""
    total = sum(counts)
    if total == 0:
        return 0.0
    return 1.0 / sum((c / total) ** 2 for c in counts)


def shingles(text: str, size: int = SHINGLE_WORDS) -> set[str]:
    """Word n-grams of the lower-cased text; a text shorter than n words is one shingle (itself)."""
    words = _WORD.findall(text.lower())
    if len(words) < size:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)  # the smaller key names the group: deterministic


def near_duplicate_clusters(
    texts: Mapping[str, str], *, threshold: float = DEFAULT_JACCARD, seed: int = 1
) -> list[list[str]]:
    """Groups (of ≥ 2 keys) whose texts are near-identical: single-linkage over pairs with Jaccard ≥ threshold.

    Sorted by size then first key, each group's keys sorted, so the output does not depend on dict order.
    """
    from datasketch import MinHash, MinHashLSH

    sets = {key: shingles(text) for key, text in texts.items()}
    sets = {key: s for key, s in sets.items() if s}
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    hashes = {}
    for key in sorted(sets):
        m = MinHash(num_perm=NUM_PERM, seed=seed)
        m.update_batch([s.encode("utf-8") for s in sets[key]])
        hashes[key] = m
        lsh.insert(key, m)
    groups = _UnionFind()
    for key in sorted(sets):
        for other in lsh.query(hashes[key]):
            if other > key and jaccard(sets[key], sets[other]) >= threshold:
                groups.union(key, other)
    members: dict[str, list[str]] = {}
    for key in sorted(sets):
        members.setdefault(groups.find(key), []).append(key)
    return sorted((m for m in members.values() if len(m) > 1), key=lambda m: (-len(m), m[0]))


@dataclass(frozen=True)
class SourcedOpinion:
    """One opinion on the entity: its key (the document), its author (None if unknown) and its σ-score."""

    key: str
    author_id: str | None
    sentiment_intensity: int


def sources(opinions: Sequence[SourcedOpinion], clusters: Sequence[Sequence[str]]) -> dict[str, str]:
    """Source id of each opinion: connected groups linked by a shared author or by a near-duplicate cluster.

    An opinion with no author and no near duplicate is its own source (nothing says it came from anyone else).
    """
    groups = _UnionFind()
    by_author: dict[str, str] = {}
    for o in opinions:
        groups.find(o.key)
        if o.author_id:
            if o.author_id in by_author:
                groups.union(by_author[o.author_id], o.key)
            else:
                by_author[o.author_id] = o.key
    keys = {o.key for o in opinions}
    for cluster in clusters:
        inside = [k for k in cluster if k in keys]
        for k in inside[1:]:
            groups.union(inside[0], k)
    return {o.key: groups.find(o.key) for o in opinions}
