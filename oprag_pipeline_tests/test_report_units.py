"""The report's verdict and section list on invented figures (no pipeline run)."""

from __future__ import annotations

from oprag_pipeline.evaluate.report import SECTIONS, Section, _sections, per_entity_section, verdict


def _row(treatment, mode, baseline, baseline_mode, t, b, low, high, p, p_holm, n=8):
    return {
        "metric": "w1_gold", "k": 20, "family": "headline", "treatment": treatment, "mode": mode,
        "baseline": baseline, "baseline_mode": baseline_mode, "n_entities": n, "n_questions": 10 * n,
        "treatment_mean": t, "baseline_mean": b, "mean_difference": t - b, "ci_low": low, "ci_high": high,
        "relative_change_label": f"{(t - b) / b * 100:+.1f}%", "p_value": p, "p_holm": p_holm,
    }  # fmt: skip


def _data(family):
    coverage = [
        {"metric": m, "variant": v, "n_questions": 80, "mean": x}
        for m, v, x in [
            ("entity_match_rate", "raw", 0.6), ("entity_match_rate", "enriched_pm2", 0.8),
            ("w1_gold_miss", "raw", 0.1), ("w1_gold_miss", "enriched_pm2", 0.0),
            ("relevance_hybrid_rank", "raw", 10.5), ("relevance_hybrid_rank", "enriched_pm2", 25.0),
            ("w1_gold", "raw", 8.4), ("w1_gold", "enriched_pm2", 6.2),
        ]
    ]  # fmt: skip
    return {"domain": "shop", "primary_metric": "w1_gold", "significance": family, "coverage_k20": coverage,
            "questions": 80, "entities": [{}] * 8, "w1_by_entity": []}  # fmt: skip


def test_verdict_names_the_closest_retrieval_with_its_ci_entities_and_relevance_cost() -> None:
    family = [
        _row("enriched", "hybrid", "raw", "hybrid", 9.0, 8.0, 0.2, 1.8, 0.04, 0.08),
        _row("enriched", "pm2", "raw", "hybrid", 6.0, 8.0, -3.1, -0.9, 0.008, 0.04),
        _row("enriched", "balanced", "enriched", "pm2", 6.5, 6.0, -0.4, 1.5, 0.5, 0.5),
    ]
    lines = verdict(_data(family))
    assert lines[0].startswith("shop: closest to the corpus's opinions (W1 to the gold distribution, k = 20) was")
    # entity means are the tested figures; the question means of the summary table are named beside them
    assert "enriched, PM-2: 6.00 against 8.00 for plain RAG (-25.0%; means over entities" in lines[0]
    assert "over questions, as in the summary table: 6.20 vs 8.40" in lines[0]
    assert "Δ -2.00 (95% CI [-3.10, -0.90]) over 8 entities, 80 questions" in lines[0]
    assert "Holm p = 0.04 (significant after Holm's correction)" in lines[0]
    assert "entity match 80.0% vs 60.0%" in lines[1] and "25.00 vs 10.50" in lines[1]
    assert lines[2].startswith("Balanced retrieval was not closer than PM-2")


def test_verdict_counts_a_single_entity_in_the_singular() -> None:
    """A small demo corpus can leave one entity in a comparison; the verdict still reads as prose."""
    family = [
        _row("enriched", "pm2", "raw", "hybrid", 6.0, 8.0, -2.0, -2.0, 1.0, 1.0, n=1),
        _row("enriched", "balanced", "enriched", "pm2", 5.0, 6.0, -1.0, -1.0, 1.0, 1.0, n=1),
    ]
    lines = verdict(_data(family))
    assert "over 1 entity, 10 questions;" in lines[0]
    assert ", 1 entity, Holm p" in lines[2]
    assert not any("1 entities" in line for line in lines)


def test_verdict_says_when_nothing_beats_plain_rag() -> None:
    family = [_row("enriched", "pm2", "raw", "hybrid", 9.0, 8.0, 0.2, 1.8, 0.04, 0.04)]
    assert verdict(_data(family))[0].startswith("shop: no method came closer than plain RAG")
    assert "no headline comparison" in verdict(_data([]))[0]


def test_sections_are_a_list_to_extend() -> None:
    def extra(data, plots):
        return [Section("Drift", "later")]

    titles = [s.title for s in _sections(_data([]), [], [SECTIONS[0], extra])]
    assert titles == ["Verdict", "Drift"]
    assert per_entity_section(_data([]), {}) == []  # no per-entity figures: no empty table


def test_the_terminal_summary_fits_its_width_and_keeps_every_figure() -> None:
    from oprag_pipeline.cli import _fitted_table
    from oprag_pipeline.evaluate.report import SUMMARY_HEADERS, VARIANTS, compact_summary

    rows = [
        ["W1 to gold distribution (lower is better)", *(f"{i + 0.25:.2f}" for i in range(len(VARIANTS)))],
        ["entity match rate (higher is better)", *(f"{50 + i}.0%" for i in range(len(VARIANTS)))],
    ]
    headers, compact, legend = compact_summary(rows)
    assert len(headers) == len(SUMMARY_HEADERS) and compact[0][0] == "W1 to gold distribution ↓"
    assert compact[1][0] == "entity match rate ↑" and compact[0][1:] == rows[0][1:]
    assert "raw = raw KB (plain RAG)" in legend and "↓ lower is better" in legend
    for width in (60, 80, 200):
        table = _fitted_table(headers, compact, width)
        assert max(len(line.rstrip()) for line in table.splitlines()) <= max(width, 60)
        for row in rows:  # every figure is printed exactly once, whatever the width
            for cell in row[1:]:
                assert table.count(cell) == 1, (width, cell)
    assert len(_fitted_table(headers, compact, 200).split("\n\n")) == 1
    assert len(_fitted_table(headers, compact, 60).split("\n\n")) > 1


def test_each_figure_is_drawn_when_its_data_is_there_and_only_then(tmp_path) -> None:
    from oprag_pipeline.evaluate.report import _plots

    family = [_row("enriched", "pm2", "raw", "hybrid", 6.0, 8.0, -3.1, -0.9, 0.008, 0.04)]
    data = {**_data(family), "depth_curve": [], "fairness": []}
    assert [p.name for p in _plots(data, tmp_path)] == ["headline_effects.png", "kb_comparison.png"]
    data["depth_curve"] = [
        {"metric": "w1_gold", "k": k, "kb": kb, "mode": "hybrid", "mean": m}
        for k in (5, 10, 20)
        for kb, m in (("raw", 9.0 - k / 10), ("enriched", 7.0 - k / 10))
    ]
    data["fairness"] = [{"attribute": "age", "variant": "raw", "overall": 0.5, "matched": None}]
    drawn = _plots(data, tmp_path)
    assert [p.name for p in drawn] == ["headline_effects.png", "kb_comparison.png", "depth_curves.png", "fairness.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in drawn)
    no_headline = _plots({**data, "significance": [], "coverage_k20": []}, tmp_path)
    assert [p.name for p in no_headline] == ["depth_curves.png", "fairness.png"]


def test_one_entity_claims_no_interval_and_few_entities_say_no_test_can_succeed() -> None:
    one = [_row("enriched", "balanced", "raw", "hybrid", 0.9, 1.6, -0.7, -0.7, 1.0, 1.0, n=1)]
    line = verdict(_data(one))[0]
    assert "no CI (1 entity)" in line and "[-0.70, -0.70]" not in line
    assert "smallest possible p is 1" in line
    five = [_row("enriched", "balanced", "raw", "hybrid", 0.9, 1.6, -0.9, -0.5, 0.0625, 0.0625, n=5)]
    assert "smallest possible p is 0.0625" in verdict(_data(five))[0]  # 2 / 2^5
    six = [_row("enriched", "balanced", "raw", "hybrid", 0.9, 1.6, -0.9, -0.5, 0.03125, 0.03125, n=6)]
    assert "smallest possible p" not in verdict(_data(six))[0] and "[-0.90, -0.50]" in verdict(_data(six))[0]
