"""The verdict in words: `plain_verdict`, the one plain sentence a reader sees first (did answers built with
opinion-aware retrieval match the corpus's mix of opinions more closely than plain RAG, and by how much), and
`verdict`, the same in figures (which retrieval came closest, by how much, with its entity-level CI, and what it
cost in relevance)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oprag_pipeline.report.data import closest_against_plain_rag, coverage_means, family_rows
from oprag_pipeline.report.labels import (
    ALPHA,
    METRIC_LABELS,
    PLAIN_RAG,
    VARIANT_LABELS,
    change_text,
    count_phrase,
    effect_text,
    fmt,
    variant,
)


def _too_few_entities(row: Mapping[str, Any]) -> str:
    """A sentence when the entity count cannot give p < α at all: the exact two-sided Wilcoxon signed-rank test
    over n entities has 2^(1−n) as its smallest p, so below 6 entities no difference can be significant."""
    n = row.get("n_entities") or 0
    smallest = 2.0 ** (1 - n) if n else 1.0
    if smallest < ALPHA:
        return ""
    return (
        f" With {count_phrase(n, 'entity', 'entities')} no test over entities can reach p < {ALPHA:g} (the smallest "
        f"possible p is {smallest:.3g}): the figures are to read, not findings."
    )


def _significant(row: Mapping[str, Any]) -> bool:
    return row.get("p_holm") is not None and row["p_holm"] < ALPHA


def verdict(data: Mapping[str, Any]) -> list[str]:
    """The report's first lines: which retrieval came closest to the corpus's opinions on the primary metric (W1 to
    gold where the domain has gold), by how much against plain RAG with its entity-level CI and Holm-corrected p,
    and what it cost in entity match, miss rate and relevance; then balanced retrieval against PM-2."""
    family = family_rows(data)
    metric = data.get("primary_metric")
    if not family or metric is None:
        return [f"{data['domain']}: no headline comparison could be made (no questions with opinions to compare)."]
    coverage = coverage_means(data)
    what = "W1 to the gold distribution" if metric == "w1_gold" else "W1 to the extracted corpus distribution"
    lines = []
    best = closest_against_plain_rag(data)
    if best is not None:
        v = variant(best["treatment"], best["mode"])
        cost = (
            f"entity match {fmt(coverage.get(('entity_match_rate', v)), 'share')} vs "
            f"{fmt(coverage.get(('entity_match_rate', PLAIN_RAG)), 'share')}, miss rate "
            f"{fmt(coverage.get((metric + '_miss', v)), 'share')} vs "
            f"{fmt(coverage.get((metric + '_miss', PLAIN_RAG)), 'share')}, mean rank in its KB's plain hybrid list "
            f"{fmt(coverage.get(('relevance_hybrid_rank', v)))} vs "
            f"{fmt(coverage.get(('relevance_hybrid_rank', PLAIN_RAG)))}"
        )
        n = f"{count_phrase(best['n_entities'], 'entity', 'entities')}, {count_phrase(best['n_questions'], 'question')}"
        # the tests average each entity's questions first; the summary table averages all questions, so the two
        # figures differ where entities have different question counts: say both, so neither reads as a mistake
        raw_mean = coverage.get((metric, PLAIN_RAG))
        best_mean = coverage.get((metric, v))
        question_means = (
            f"; over questions, as in the summary table: {best_mean:.2f} vs {raw_mean:.2f}"
            if raw_mean is not None and best_mean is not None
            else ""
        )
        if best["mean_difference"] < 0:
            strength = (
                "significant after Holm's correction"
                if _significant(best)
                else "not significant after Holm's correction"
            )
            lines.append(
                f"{data['domain']}: closest to the corpus's opinions ({what}, k = 20) was {VARIANT_LABELS[v]}: "
                f"{best['treatment_mean']:.2f} against {best['baseline_mean']:.2f} for plain RAG "
                f"({change_text(best)}; means over entities{question_means}), {effect_text(best)} over {n}; "
                "Wilcoxon over entities "
                f"p = {fmt(best['p_value'], 'p')}, Holm p = {fmt(best['p_holm'], 'p')} ({strength})."
                + _too_few_entities(best)
            )
        else:
            lines.append(
                f"{data['domain']}: no method came closer than plain RAG ({what}, k = 20, "
                f"{best['baseline_mean']:.2f}); the best, {VARIANT_LABELS[v]}, had {best['treatment_mean']:.2f} "
                f"(means over entities{question_means}), {effect_text(best)} over {n}, "
                f"Holm p = {fmt(best['p_holm'], 'p')}." + _too_few_entities(best)
            )
        lines.append(f"Relevance cost of {VARIANT_LABELS[v]} against plain RAG: {cost}.")
    duel = next((r for r in family if (r["baseline"], r["baseline_mode"]) == ("enriched", "pm2")), None)
    if duel is not None:
        closer = "closer than" if duel["mean_difference"] < 0 else "not closer than"
        lines.append(
            f"Balanced retrieval was {closer} PM-2 ({duel['treatment_mean']:.2f} vs {duel['baseline_mean']:.2f}, "
            f"{effect_text(duel)}, {count_phrase(duel['n_entities'], 'entity', 'entities')}, "
            f"Holm p = {fmt(duel['p_holm'], 'p')})."
        )
    return lines


MIX = "the corpus's real mix of opinions"
_MEASURED = {
    "w1_gold": "measured against the corpus's gold labels",
    "w1": "measured against the opinions the pipeline extracted",
}


def _closeness(subject: str, metric: str, treatment: float, baseline: float) -> str:
    """One sentence: did `subject` come closer to the mix than plain RAG, and by what share of plain RAG's distance
    (W1 is a distance, not a rate: its relative change is the plain reading of "how much closer")."""
    change = (baseline - treatment) / baseline * 100 if baseline > 0 else 0.0
    measured = _MEASURED.get(metric, f"measured by {METRIC_LABELS.get(metric, metric)}")
    if treatment < baseline:
        amount = f"{change:.0f}%" if round(change) >= 1 else "slightly (under 1%)"
        return f"{subject} matched {MIX} {amount} more closely than plain RAG on this data ({measured})."
    further = f"they were {-change:.0f}% further from it; " if treatment > baseline and baseline > 0 else ""
    return f"{subject} did not match {MIX} more closely than plain RAG on this data ({further}{measured})."


def _certainty(p: float | None, entities: int | None) -> str:
    """The test behind the sentence, in words: whether the difference held up over the entities asked about."""
    n = entities or 0
    topics = count_phrase(n, "topic")
    if p is not None and p < ALPHA:
        return f"The difference held up in a statistical test over {topics} (p = {fmt(p, 'p')})."
    if n == 0 or 2.0 ** (1 - n) >= ALPHA:
        return f"With {topics} tested, no statistical test can tell this from chance."
    return f"Over {topics} the difference could still be chance (p = {fmt(p, 'p')})."


def plain_verdict(data: Mapping[str, Any]) -> str:
    """The report's first sentence, for a reader who reads nothing else, then one on how sure it is. From the answers
    (generation) when they were measured: W1 between what the answers convey and the corpus (to gold where the
    domain has it), opinion-aware against plain RAG; else from retrieval: the closest opinion-aware retrieval of the
    declared family against plain RAG. The figures are the ones the sections below print (means over entities)."""
    tests = (data.get("generation") or {}).get("tests") or {}
    metric = next((m for m in ("w1_gold", "w1") if m in tests), None)
    if metric is not None:
        t = tests[metric]
        if t.get("treatment_mean") is not None and t.get("baseline_mean") is not None:
            subject = "Answers built with opinion-aware retrieval"
            return (
                _closeness(subject, metric, t["treatment_mean"], t["baseline_mean"])
                + " "
                + _certainty(t.get("p_value"), t.get("n_entities"))
            )
    metric = data.get("primary_metric")
    best = closest_against_plain_rag(data)
    if metric is None or best is None:
        return (
            f"No comparison with plain RAG could be made on {data['domain']}: no evaluation question found opinions "
            "to compare."
        )
    label = VARIANT_LABELS.get(variant(best["treatment"], best["mode"]), best["treatment"])
    subject = f"Passages found by opinion-aware retrieval ({label})"
    return (
        _closeness(subject, metric, best["treatment_mean"], best["baseline_mean"])
        + " "
        + _certainty(best.get("p_holm"), best.get("n_entities"))
        + " The answers were not measured on this domain."
    )
