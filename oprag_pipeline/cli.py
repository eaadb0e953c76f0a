"""`oprag`: the command line. Every subcommand runs the same Dagster definitions the UI shows.

Runs go through a persistent Dagster instance (`DAGSTER_HOME`, default `data/dagster_home`), so what the CLI
materializes appears in the UI's asset catalog and lineage, and the other way round.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from oprag_pipeline import settings


def _use_data_dir(data_dir: str | None) -> Path:
    if data_dir:
        os.environ[settings.DATA_DIR_ENV] = str(Path(data_dir).expanduser().resolve())
    return settings.data_dir()


def dagster_instance():
    """The persistent instance shared with `dagster dev` (see README), created on first use."""
    from dagster import DagsterInstance

    home = Path(os.environ.get("DAGSTER_HOME") or settings.data_dir() / "dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() or config.read_text().startswith("# Written by oprag"):  # ours: keep it current
        config.write_text(
            "# Written by oprag. One run at a time: the DuckDB warehouse and vector shards admit a single writer.\n"
            "# The `warehouse` pool counts runs (granularity: run), so a killed CLI run cannot strand a step slot.\n"
            "concurrency:\n  runs:\n    max_concurrent_runs: 1\n"
            "  pools:\n    granularity: run\n    default_limit: 1\ntelemetry:\n  enabled: false\n"
        )
    os.environ["DAGSTER_HOME"] = str(home)
    return DagsterInstance.get()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    envvar=settings.DATA_DIR_ENV,
    type=click.Path(file_okay=False),
    help="Data directory (default: data/ in the checkout; env OPRAG_DATA_DIR).",
)
def main(data_dir: str | None) -> None:
    """Opinion-aware RAG: ingest, enrich, index and evaluate opinion corpora with Dagster."""
    _use_data_dir(data_dir)


@main.command("generate-demo")
@click.option("--docs", default=2000, show_default=True, type=click.IntRange(min=2), help="Documents in total.")
@click.option("--seed", default=7, show_default=True, type=int, help="Random seed; the same seed gives the same files.")
def generate_demo_command(docs: int, seed: int) -> None:
    """Write the demo corpus (hotel reviews and seller-forum posts) with planted ground truth."""
    from oprag_pipeline.demo import generate_demo

    started = time.perf_counter()
    result = generate_demo(settings.data_dir(), docs=docs, seed=seed, progress=True)
    elapsed = time.perf_counter() - started
    for domain, count in result.domains.items():
        click.echo(f"{domain}: {count:,} documents in {settings.raw_dir() / domain}")
    click.echo(f"truth (never read by the pipeline): {settings.truth_dir()}")
    click.echo(f"{sum(result.domains.values()):,} documents in {elapsed:.1f} s")


@main.command("import")
@click.argument(
    "fmt",
    metavar="FORMAT",
    type=click.Choice(["tripadvisor", "ukpconvarg", "semeval-absa", "memd-absa", "huliu", "opiniobank", "table"]),
)
@click.argument("source", type=click.Path(exists=True))
@click.option("--domain", required=True, help="Target domain: the files go to data/raw/DOMAIN/.")
@click.option("--text-col", help="table: column holding the text.")
@click.option("--id-col", help="table: column holding the document id (default: a hash of the row).")
@click.option("--title-col", help="table: title column.")
@click.option("--scope-col", help="table: column naming what the text is about (entity_scope).")
@click.option("--author-col", help="table: author id column.")
@click.option("--date-col", help="table: date column.")
@click.option("--rating-col", help="table: rating column.")
def import_command(fmt: str, source: str, domain: str, **columns: str | None) -> None:
    """Convert a public opinion corpus FORMAT at SOURCE into data/raw/DOMAIN/."""
    from oprag_pipeline.importers import run_import

    options = {k: v for k, v in columns.items() if v}
    if fmt == "table" and "text_col" not in options:
        raise click.UsageError("the table format needs --text-col")
    if fmt != "table" and options:
        raise click.UsageError(f"column options apply to the table format only, not {fmt}")
    if not domain.replace("_", "").replace("-", "").isalnum():
        raise click.UsageError(f"domain {domain!r} must be letters, digits, '-' or '_'")
    result = run_import(fmt, Path(source), domain, settings.data_dir(), progress=True, **options)
    for path in result.files_written:
        click.echo(f"wrote {path}")
    click.echo(f"{result.documents:,} documents imported into domain {domain!r}")
    if result.skipped:
        click.echo(f"{len(result.skipped):,} source records could not be converted:", err=True)
        for file, number, reason in result.skipped[:20]:
            click.echo(f"  {file}:{number}: {reason}", err=True)


@main.command("run")
@click.option("--domain", "domains", multiple=True, help="Domain to run (repeatable; default: every domain).")
@click.option(
    "--select",
    "selection",
    default="*",
    show_default=True,
    help="Dagster asset selection, e.g. 'raw_documents', '*opinions' (with everything upstream), 'opinions*'.",
)
def run_command(domains: tuple[str, ...], selection: str) -> None:
    """Materialize the asset graph (or a selection) for one or all domains, in process."""
    from tqdm import tqdm

    from oprag_pipeline.runner import materialize_domains

    available = settings.list_domains()
    chosen = list(domains) or available
    unknown = sorted(set(chosen) - set(available))
    if unknown:
        raise click.UsageError(f"no input folder for domain(s) {', '.join(unknown)} under {settings.raw_dir()}")
    if not chosen:
        raise click.UsageError(f"no domains under {settings.raw_dir()}: run `oprag generate-demo` or `oprag import`")
    from dagster import AssetSelection
    from dagster._core.definitions.asset_selection import DagsterInvalidAssetSelectionError

    if selection.strip() != "*":
        try:
            AssetSelection.from_string(selection)
        except DagsterInvalidAssetSelectionError as error:
            raise click.UsageError(
                f"{error}. Examples: 'raw_documents', '*opinions' (it and everything upstream), "
                "'key:opinions or key:raw_documents'"
            ) from error
    instance = dagster_instance()
    failures = []
    with tqdm(total=len(chosen), desc="domains", unit="domain", file=sys.stderr) as bar:
        for outcome in materialize_domains(chosen, selection=selection, instance=instance):
            bar.update(1)
            status = "ok" if outcome.success else "FAILED"
            bar.write(
                f"{outcome.domain}: {status} ({outcome.steps} steps, {outcome.seconds:.1f} s, run {outcome.run_id})"
            )
            if not outcome.success:
                failures.append(outcome.domain)
    if failures:
        raise click.ClickException(f"run failed for {', '.join(failures)}; see the logs above or the Dagster UI")


@main.command("query")
@click.argument("text")
@click.option("--domain", required=True, help="Domain to search.")
@click.option("-k", "k", default=20, show_default=True, type=click.IntRange(min=1, max=500), help="Hits to return.")
@click.option(
    "--mode",
    type=click.Choice(["semantic", "hybrid", "balanced"]),
    default="hybrid",
    show_default=True,
    help="balanced: hybrid relevance with slots in proportion to the corpus's opinions on the entities the "
    "question names (enriched KB only).",
)
@click.option(
    "--kb",
    type=click.Choice(["enriched", "entity_split", "raw"]),
    default="enriched",
    show_default=True,
    help="Knowledge base: enriched (O-RAG), entity_split (ablation) or raw (plain RAG chunks).",
)
@click.option("--entity", help="Entity id whose distribution to compare (default: the one most hits are about).")
def query_command(text: str, domain: str, k: int, mode: str, kb: str, entity: str | None) -> None:
    """Search a domain's knowledge base and compare the retrieved opinions with the corpus."""
    from oprag_pipeline.index.query import run_query
    from oprag_pipeline.index.vector_store import CollectionNotFoundError, open_vector_store
    from oprag_pipeline.resources import EmbedderResource

    warehouse = settings.warehouse_path()
    if not warehouse.exists():
        raise click.ClickException(f"no warehouse at {warehouse}: run `oprag run` first")
    store = open_vector_store(settings.data_dir())
    try:
        output = run_query(
            warehouse=warehouse,
            store=store,
            embedder=EmbedderResource().embedder(),
            domain=domain,
            query=text,
            k=k,
            mode=mode,
            kb=kb,
            entity=entity,
        )
    except CollectionNotFoundError as error:
        raise click.ClickException(f"{error}; materialize the index first: oprag run --domain {domain}") from error
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    finally:
        store.close()
    click.echo(output)


@main.command("report")
@click.option("--domain", "domains", multiple=True, help="Domain to report on (repeatable; default: every domain).")
@click.option(
    "--refresh/--no-refresh",
    default=False,
    help="Re-materialize the evaluation first (default: only when it has never run for the domain).",
)
def report_command(domains: tuple[str, ...], refresh: bool) -> None:
    """Write data/reports/<domain>/ (metrics.json, report.md, report.html, PNG plots) and print the summary."""
    import duckdb

    from oprag_pipeline.evaluate.report import SUMMARY_HEADERS, write_report
    from oprag_pipeline.runner import materialize_domains

    chosen = list(domains) or settings.list_domains()
    if not chosen:
        raise click.UsageError(f"no domains under {settings.raw_dir()}: run `oprag generate-demo` or `oprag import`")
    warehouse = settings.warehouse_path()
    instance = dagster_instance()
    for domain in chosen:
        if refresh or not _evaluated(instance, domain):
            click.echo(f"{domain}: materializing the pipeline up to the report (cached stages are skipped)", err=True)
            outcome = next(materialize_domains([domain], selection="*evaluation_report", instance=instance))
            if not outcome.success:
                raise click.ClickException(f"{domain}: the evaluation run failed (run {outcome.run_id})")
        with duckdb.connect(str(warehouse)) as conn:
            try:
                written = write_report(conn, domain, settings.reports_dir() / domain)
            except LookupError as error:
                raise click.ClickException(str(error)) from error
        click.echo(f"{domain}: report in {written.directory} (report.md, report.html, metrics.json, plots)")
        click.echo(_text_table(SUMMARY_HEADERS, written.summary_rows))
        click.echo("")


def _evaluated(instance, domain: str) -> bool:
    """Whether Dagster has a materialization of this domain's report (what the UI's catalog shows too)."""
    from dagster import AssetKey

    return domain in instance.get_materialized_partitions(AssetKey("evaluation_report"))


def _text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


@main.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status_command(as_json: bool) -> None:
    """What is materialized, with row and quarantine counts per domain."""
    from oprag_pipeline.status import collect_status, render_status

    report = collect_status(instance=dagster_instance())
    click.echo(json.dumps(report, indent=2, default=str) if as_json else render_status(report))


if __name__ == "__main__":
    main()
