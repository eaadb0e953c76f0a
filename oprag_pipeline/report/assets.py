"""The report asset: the domain's evaluation report, after every stage it reads (the evaluation's marts and tests,
the analyses' sections, the generated answers)."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue
from dagster_duckdb import DuckDBResource

from oprag_pipeline import report as report_writer
from oprag_pipeline import settings
from oprag_pipeline.asset_decorators import domain_asset
from oprag_pipeline.resources import DataDirResource

GROUP = "evaluation"  # the report is shown with the evaluation it concludes, as before it had a stage of its own


@domain_asset(
    group_name=GROUP,
    kinds={"duckdb"},
    deps=[
        "mart_coverage_k20",
        "mart_w1_by_entity",
        "mart_depth_curve",
        "mart_mode_comparison",
        "mart_question_type",
        "mart_fairness",
        "mart_extraction_vs_gold",
        "metric_significance",
        *("fairness_tradeoff", "opinion_timelines", "source_concentration"),  # their sections (analysis/)
        "generation_fidelity",  # the report's generation section
        "answer_preference",
    ],
    description="The domain's evaluation report: a verdict (which retrieval came closest to the corpus's opinions "
    "against gold, with its entity-level CI and relevance cost), the declared comparisons with Holm-corrected p, "
    "per-entity W1 and the plots. Written to `reports/<domain>/` (report.html, report.md, metrics.json, PNGs); the "
    "`summary` and `plot_*` entries below show them here.",
)
def evaluation_report(
    context: AssetExecutionContext, warehouse: DuckDBResource, paths: DataDirResource
) -> MaterializeResult:
    domain = context.partition_key
    out_dir = settings.reports_dir(paths.root) / domain
    with warehouse.get_connection() as conn:
        written = report_writer.write_report(conn, domain, out_dir)
    metadata = {
        "report": MetadataValue.path(str(written.markdown)),
        "html": MetadataValue.path(str(written.html)),
        "summary": MetadataValue.md(written.summary_markdown),
    }
    for plot in written.plots:
        metadata[f"plot_{plot.stem}"] = MetadataValue.md(report_writer.embedded_png(plot))
    context.log.info(f"{domain}: report written to {out_dir}")
    return MaterializeResult(metadata=metadata)
