"""The report's verdict and section list on invented figures (no pipeline run)."""

from __future__ import annotations

from oprag_pipeline.report.sections import SECTIONS, Section, build_sections, per_entity_section
from oprag_pipeline.report.verdict import verdict


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

    titles = [s.title for s in build_sections(_data([]), [], [SECTIONS[0], extra])]
    assert titles == ["Verdict", "Drift"]
    assert per_entity_section(_data([]), {}) == []  # no per-entity figures: no empty table


def test_the_terminal_summary_fits_its_width_and_keeps_every_figure() -> None:
    from oprag_pipeline.cli import _fitted_table
    from oprag_pipeline.report.labels import VARIANTS
    from oprag_pipeline.report.summary import SUMMARY_HEADERS, compact_summary

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
    from oprag_pipeline.report.figures import write_plots

    family = [_row("enriched", "pm2", "raw", "hybrid", 6.0, 8.0, -3.1, -0.9, 0.008, 0.04)]
    data = {**_data(family), "depth_curve": [], "fairness": []}
    assert [p.name for p in write_plots(data, tmp_path)] == ["headline_effects.png", "kb_comparison.png"]
    data["depth_curve"] = [
        {"metric": "w1_gold", "k": k, "kb": kb, "mode": "hybrid", "mean": m}
        for k in (5, 10, 20)
        for kb, m in (("raw", 9.0 - k / 10), ("enriched", 7.0 - k / 10))
    ]
    data["fairness"] = [{"attribute": "age", "variant": "raw", "overall": 0.5, "matched": None}]
    drawn = write_plots(data, tmp_path)
    assert [p.name for p in drawn] == ["headline_effects.png", "kb_comparison.png", "depth_curves.png", "fairness.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in drawn)
    no_headline = write_plots({**data, "significance": [], "coverage_k20": []}, tmp_path)
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


# ---- the report as a reader meets it: a plain verdict, contents, the answers near the top -------------------------


def _generation(metric, treatment, baseline, p=0.01, n=8, **more):
    def test(m, t, b):
        return {"metric": m, "n_questions": 10 * n, "treatment_mean": t, "baseline_mean": b,
                "relative_change_label": f"{(t - b) / b * 100:+.1f}%", "ci_low": -0.3, "ci_high": -0.1,
                "p_value": p, "n_entities": n}  # fmt: skip

    tests = {metric: test(metric, treatment, baseline), **{m: test(m, *tb) for m, tb in more.items()}}
    return {"tests": tests, "preference": None, "writer": "offline"}


def _full(family, generation=None):
    entity = {
        "entity_name": "battery",
        "tier1_name": "phone",
        "mentions": 40,
        "entropy_bits": 1.2,
        "comparison_name": None,
    }
    data = {**_data(family), "depth_curve": [], "fairness": [], "mode_comparison": [], "question_type": [],
            "extraction_vs_gold": [], "entities": [entity] * 8}  # fmt: skip
    if generation is not None:
        data["generation"] = generation
    return data


FAMILY = [
    _row("enriched", "pm2", "raw", "hybrid", 6.0, 8.0, -3.1, -0.9, 0.008, 0.04),
    _row("enriched", "balanced", "enriched", "pm2", 6.5, 6.0, -0.4, 1.5, 0.5, 0.5),
]


def _lead_of(report) -> tuple[str, str]:
    """The first paragraph after the title, in report.md and in report.html."""
    import html
    import re

    md = report.markdown.split("\n\n")[1].strip("*")
    page = html.unescape(re.search(r"</h1>\s*<p[^>]*>(.*?)</p>", report.html, re.S).group(1))
    return md, page


def test_the_plain_verdict_comes_first_and_says_which_way_the_answers_went() -> None:
    from oprag_pipeline.report.build import render

    closer = render(_full(FAMILY, _generation("w1_gold", 2.4, 5.0)))
    md, page = _lead_of(closer)
    assert md == page == closer.lead
    first = closer.lead.split(". ")[0]
    assert first.startswith("Answers built with opinion-aware retrieval matched the corpus's real mix of opinions")
    assert "52% more closely than plain RAG on this data" in first and "not" not in first
    assert "held up in a statistical test over 8 topics" in closer.lead

    further = render(_full(FAMILY, _generation("w1_gold", 6.0, 5.0, p=0.3)))
    first = further.lead.split(". ")[0]
    assert _lead_of(further)[0] == further.lead
    assert "did not match the corpus's real mix of opinions more closely than plain RAG" in first
    assert "20% further" in first and "could still be chance" in further.lead

    # no answers measured: the closest retrieval against plain RAG, both ways
    retrieval = render(_full(FAMILY)).lead
    assert retrieval.startswith("Passages found by opinion-aware retrieval (enriched, PM-2) matched")
    assert "25% more closely" in retrieval and "answers were not measured" in retrieval
    worse = [_row("enriched", "pm2", "raw", "hybrid", 9.0, 8.0, 0.2, 1.8, 0.04, 0.04)]
    assert "did not match" in render(_full(worse)).lead and "more closely" in render(_full(worse)).lead
    assert render(_full([])).lead.startswith("No comparison with plain RAG")
    one = render(_full(FAMILY, _generation("w1", 2.0, 4.0, p=1.0, n=1))).lead
    assert "50% more closely" in one and "extracted" in one and "1 topic tested, no statistical test" in one


def test_contents_link_to_every_section_and_the_answers_come_before_the_statistics() -> None:
    import re

    from oprag_pipeline.report.build import render
    from oprag_pipeline.report.contents import anchor

    report = render(
        _full(FAMILY, _generation("w1_gold", 2.4, 5.0)),
        analyses_markdown="\n## Opinion drift (σ)\n\ntext\n",
        analyses_html="<h2>Opinion drift (σ)</h2>\n<p>text</p>",
    )
    links = re.findall(r"<a href='#([^']+)'>", report.html)
    ids = re.findall(r"\bid='([^']+)'", report.html)
    assert links and links == ids and len(set(ids)) == len(ids)  # every link resolves, in page order, once
    headings = re.findall(r"^## (.+)$", report.markdown, re.M)
    md_links = re.findall(r"^\d+\. \[(.+)\]\(#(.+)\)$", report.markdown, re.M)
    assert [title for title, _ in md_links] == headings
    assert [slug for _, slug in md_links] == [anchor(h) for h in headings] == links
    assert anchor("Fidelity, relevance and coverage at k = 20") == "fidelity-relevance-and-coverage-at-k--20"
    assert headings[-1] == "Opinion drift (σ)" and links[-1] == "opinion-drift-σ"
    # the lead, then the contents, then the verdict in figures and the answers; the statistics below
    assert report.markdown.index(report.lead) < report.markdown.index("**Contents**") < report.markdown.index("## ")
    assert headings[0] == "Verdict" and headings[1].startswith("Generation")
    assert headings.index("Headline comparisons (declared family, Holm-corrected)") > 1


def test_a_change_of_a_rate_or_a_share_is_printed_in_points() -> None:
    from oprag_pipeline.report.build import render
    from oprag_pipeline.report.labels import change_text

    generation = _generation("w1_gold", 2.4, 5.0, minority_erased=(0.25, 0.01), grounded_quote_rate=(1.0, 0.98))
    report = render(_full(FAMILY, generation))
    for text in (report.markdown, report.html):
        assert "2400" not in text and "+24.0 points" in text and "+2.0 points" in text
        assert "| 1.0% | 25.0% | +24.0 points |" in report.markdown
        assert "-52.0%" in text  # W1 is a distance, not a rate: its relative change stays
    miss = {**_row("enriched", "pm2", "raw", "hybrid", 0.25, 0.01, 0.1, 0.3, 0.01, 0.01), "metric": "w1_gold_miss"}
    assert change_text(miss) == "+24.0 points"
    assert change_text(FAMILY[0]) == "-25.0%"
    from oprag_pipeline.rendering import change_label

    assert change_label(0.02, 0.5, "-96.0%", rate=True) == "-48.0 points"
    assert change_label(None, 0.5, "n/a", rate=True) == "n/a"
