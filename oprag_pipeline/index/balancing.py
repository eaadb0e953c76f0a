"""Opinion-balanced retrieval: what makes the enriched KB *opinion-aware* rather than only opinion-annotated.

Similarity search returns the k points closest to the question, and the question's wording decides which side of a
dispute wins ("does the wifi frustrate people?" pulls frustrated reviews). Because every enriched point carries its
entity and σ-score as payload, the retriever can do better: find the entities the question names, look up the
corpus distribution of their σ-scores, and fill the k slots in proportion — each slot still chosen by relevance,
within its σ-level. The retrieved set then mirrors the corpus's spread of views by construction, up to rounding.

Caveat worth stating wherever results are reported: the proportions come from the extractor's labels, so W1
measured against the *extracted* corpus distribution is small by design; W1 against gold labels is the honest
test of this mode.

Pure functions here; `retrieval.Retriever` does the querying, and finds the question's entities with the same
matcher the extractor uses (`registry.matching.AliasMatcher.entities_in`).
"""

from __future__ import annotations

from collections.abc import Mapping


def proportional_quotas(counts: Mapping[int, int], k: int) -> dict[int, int]:
    """Split k slots over levels in proportion to their counts (largest-remainder method).

    Ties in the remainder go to the more frequent level, then to the lower level value, so the result is
    deterministic. Levels with no count get nothing; the quotas always sum to min(k, total count).
    """
    total = sum(c for c in counts.values() if c > 0)
    if k <= 0 or total == 0:
        return {}
    k = min(k, total)
    exact = {level: k * c / total for level, c in counts.items() if c > 0}
    quotas = {level: int(share) for level, share in exact.items()}
    left = k - sum(quotas.values())
    order = sorted(exact, key=lambda level: (-(exact[level] - quotas[level]), -counts[level], level))
    for level in order[:left]:
        quotas[level] += 1
    return {level: q for level, q in quotas.items() if q > 0}


def split_slots(k: int, parts: int) -> list[int]:
    """k slots over `parts` entities named in a question, the first named getting the remainder."""
    if parts <= 0:
        return []
    base, extra = divmod(k, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]
