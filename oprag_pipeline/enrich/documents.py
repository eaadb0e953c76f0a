"""Rendering per-entity documents: the relevant text plus, for the enriched variant, its opinion metadata.

The enriched text puts the metadata in words, as the reference study did, so the embedding itself carries the
opinion (a query about frustration with check-in lands near documents that say so), while the same fields stay
available as columns and payload for filtering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SIGMA_LABEL = {30: "+30", 20: "+20", 10: "+10", 0: "0", -10: "−10", -20: "−20", -30: "−30"}
TEXT_MARKER = "Text: "
"""Where the rendered metadata of an enriched text ends and the document's own words begin."""


def own_words(rendered: str) -> str:
    """The document's own words of a rendered enriched text (what follows the marker)."""
    return rendered.split(TEXT_MARKER, 1)[-1]


def render_enriched(
    *,
    entity_name: str,
    tier1: str | None,
    tier2: str | None,
    relevant_text: str,
    sentiment: str,
    intensity: str,
    impact: str,
    emotions: Sequence[str],
    evidence_type: str,
    sentiment_intensity: int,
    author: Mapping[str, str],
) -> str:
    path = " > ".join(p for p in (tier1, tier2, entity_name) if p)
    score = SIGMA_LABEL.get(sentiment_intensity, str(sentiment_intensity))
    lines = [
        f"Entity: {path}",
        f"Opinion: {sentiment} ({intensity} intensity, score {score}), {impact} impact",
        f"Emotions: {', '.join(emotions) if emotions else 'none stated'}",
        f"Evidence: {evidence_type.replace('_', ' ')}",
    ]
    if author:
        lines.append("Author: " + "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(author.items())))
    lines.append(f"{TEXT_MARKER}{relevant_text}")
    return "\n".join(lines)
