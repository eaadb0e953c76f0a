"""`oprag`: the command line. Every subcommand runs the same Dagster definitions the UI shows.

Runs go through a persistent Dagster instance (`DAGSTER_HOME`, default `data/dagster_home`), so what the CLI
materializes appears in the UI's asset catalog and lineage, and the other way round.

Errors a user can fix (a bad setting, a wrong name, a busy or unreachable store) print one line each and exit
non-zero; no traceback unless `--debug` (or OPRAG_DEBUG=1) asks for one. Settings are checked once, when a command
starts, before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from oprag_pipeline import config as env_config  # `config` names files and run config here
from oprag_pipeline import settings


class ConfigProblems(click.ClickException):
    """Several user-fixable problems at once: one `Error:` line each, exit code 2 (as for a usage error)."""

    exit_code = 2

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems

    def show(self, file=None) -> None:
        for problem in self.problems:
            click.echo(f"Error: {problem}", err=True)


class OpragGroup(click.Group):
    """Turns any exception that escapes a subcommand into one line (the traceback only with --debug)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except settings.ConfigError as error:
            if _debug(ctx):
                raise
            raise click.ClickException(str(error)) from None
        except Exception as error:
            if _debug(ctx):
                raise
            raise click.ClickException(f"{_one_line(error)} (rerun with --debug for the traceback)") from None


def _debug(ctx: click.Context) -> bool:
    return bool((ctx.obj or {}).get("debug")) or env_config.value("OPRAG_DEBUG")


def _one_line(error: BaseException) -> str:
    """The innermost cause's type and first message line: what went wrong, without the machinery around it."""
    cause = error
    while cause.__cause__ is not None or (cause.__context__ is not None and not cause.__suppress_context__):
        cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
    message = (str(cause).strip().splitlines() or [""])[0][:300]
    return f"{type(cause).__name__}: {message}" if message else type(cause).__name__


def check_configuration(*, pipeline: bool) -> None:
    """Every problem of the environment at once, or nothing."""
    problems = env_config.problems(pipeline=pipeline)
    if problems:
        raise ConfigProblems(problems)


def check_qdrant_reachable() -> None:
    """With QDRANT_URL set, fail now with the reason if the server does not answer (5 s), not mid-run."""
    url = env_config.raw("QDRANT_URL")
    if not url:
        return
    from qdrant_client import QdrantClient

    from oprag_pipeline.index.vector_store import redact_url as _redact_url

    try:
        client = QdrantClient(url=url, api_key=env_config.secret("QDRANT_API_KEY"), timeout=5)
        client.get_collections()
        client.close()
    except Exception as error:
        raise settings.ConfigError(
            f"cannot reach the Qdrant server at QDRANT_URL={_redact_url(url)} ({_one_line(error)}); start it, "
            "or unset QDRANT_URL to use the embedded store"
        ) from None


def check_warehouse_readable() -> None:
    """A warehouse file that is not a DuckDB database is refused by name (a busy one is left to the lock)."""
    import duckdb

    path = settings.warehouse_path()
    if not path.exists():
        return
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.Error as error:
        if "lock" in str(error).lower():
            return
        raise settings.ConfigError(
            f"warehouse {path} is not a readable DuckDB database ({_one_line(error)}); move it aside to start "
            f"afresh, or point {settings.WAREHOUSE_ENV} at another file"
        ) from None


def _domain_arguments(names: tuple[str, ...] | list[str]) -> list[str]:
    """Named domains after checking each name (a `..` or a space never reaches the file system or Dagster)."""
    problems = []
    for name in names:
        try:
            settings.domain_dir(name)
        except settings.ConfigError as error:
            problems.append(str(error))
    if problems:
        raise ConfigProblems(problems)
    return list(names)


def _unknown_domain(names: list[str]) -> click.ClickException:
    """One line naming the unknown domain(s) and the ones that exist (or how to make one)."""
    available = settings.list_domains()
    what = f"unknown domain{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)}"
    if available:
        return click.ClickException(
            f"{what}; existing domains: {', '.join(available)} (folders in {settings.raw_dir()})"
        )
    return click.ClickException(
        f"{what}: there are no domains in {settings.raw_dir()} yet; run `oprag generate-demo` or `oprag import`"
    )


def _existing_domain(name: str) -> str:
    """A domain a reading command (query, ask) acts on: a safe name with a folder under raw/."""
    _domain_arguments([name])
    if name not in settings.list_domains():
        raise _unknown_domain([name])
    return name


def _runnable_domains(domains: tuple[str, ...]) -> list[str]:
    """The domains a run or report acts on: named ones must exist and hold input files; unnamed = all usable."""
    from oprag_pipeline.ingest.input_files import scan_input_files

    named = _domain_arguments(domains)
    available = settings.list_domains()
    if named:
        unknown = sorted(set(named) - set(available))
        if unknown:
            raise _unknown_domain(unknown)
        chosen = named
    else:
        for reason in settings.refused_domain_folders().values():
            click.echo(f"Warning: {reason}", err=True)
        chosen = available
    if not chosen:
        raise click.UsageError(f"no domains under {settings.raw_dir()}: run `oprag generate-demo` or `oprag import`")
    usable = []
    for domain in chosen:
        inputs, skipped = scan_input_files(settings.domain_dir(domain))
        if inputs:
            usable.append(domain)
            continue
        message = f"domain {domain!r} has no input files in {settings.domain_dir(domain)}"
        if skipped:
            message += f" ({len(skipped)} not read, e.g. {skipped[0].file}: {skipped[0].reason})"
        if named:
            raise click.UsageError(message)
        click.echo(f"Warning: {message}; skipped", err=True)
    if not usable:
        raise click.UsageError(f"no domain under {settings.raw_dir()} has input files")
    return usable


@contextmanager
def _writing(wait: bool):
    """The data directory's writer lock around a command that writes, and abandoned runs marked failed."""
    from oprag_pipeline.locks import WriterBusyError, writer_lock

    try:
        with writer_lock(settings.data_dir(), wait=wait, on_wait=lambda m: click.echo(m, err=True)):
            yield
    except WriterBusyError as error:
        raise click.ClickException(str(error)) from None


def _fail_abandoned(instance) -> None:
    from oprag_pipeline.runner import fail_abandoned_runs

    for run_id in fail_abandoned_runs(instance, settings.data_dir()):
        click.echo(f"marked run {run_id} failed: the process running it is gone", err=True)


def _use_data_dir(data_dir: str | None) -> Path:
    if data_dir:
        os.environ[settings.DATA_DIR_ENV] = str(Path(data_dir).expanduser().resolve())
    return settings.data_dir()


def dagster_instance():
    """The persistent instance shared with `dagster dev` (see README), created on first use."""
    from dagster import DagsterInstance

    home = (env_config.value("DAGSTER_HOME") or settings.data_dir() / "dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() or config.read_text().startswith("# Written by oprag"):  # ours: keep it current
        config.write_text(
            "# Written by oprag. One run at a time: the DuckDB warehouse and vector shards admit a single writer.\n"
            "# The `warehouse` pool counts runs (granularity: run), so a killed CLI run cannot strand a step slot.\n"
            "concurrency:\n  runs:\n    max_concurrent_runs: 1\n"
            "  pools:\n    granularity: run\n    default_limit: 1\ntelemetry:\n  enabled: false\n"
            # the daemon marks a run failed when its worker process dies (dagster dev); CLI runs are checked by
            # oprag itself when the next run starts
            "run_monitoring:\n  enabled: true\n"
        )
    os.environ["DAGSTER_HOME"] = str(home)
    return DagsterInstance.get()


@click.group(cls=OpragGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    envvar=settings.DATA_DIR_ENV,
    type=click.Path(file_okay=False),
    help="Data directory (default: data/ in the checkout; env OPRAG_DATA_DIR).",
)
@click.option("--debug", is_flag=True, help="Show the full traceback of an error (also OPRAG_DEBUG=1).")
@click.pass_context
def main(ctx: click.Context, data_dir: str | None, debug: bool) -> None:
    """Opinion-aware RAG: ingest, enrich, index and evaluate opinion corpora with Dagster."""
    ctx.ensure_object(dict)["debug"] = debug
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


IMPORT_FORMATS = {
    "table": "your own CSV, TSV, JSON lines, JSON array or Parquet table (see --text-col)",
    "tripadvisor": "TripAdvisor hotel reviews in the LARA text format (hotel_<id>_parsed.txt)",
    "ukpconvarg": "UKPConvArg1 debate arguments flattened to JSON lines",
    "semeval-absa": "SemEval 2014/2015/2016 aspect-sentiment XML, and MAMS",
    "memd-absa": "MEMD-ABSA JSON arrays of sentences with aspect quadruples",
    "huliu": "Hu & Liu customer-review text files (one product per file)",
    "opiniobank": "OpinioBank JSON (one object per hotel with its user reviews)",
}
"""The formats of `oprag import` (the converters are `importers.IMPORTERS`), each with one line for --help."""


def _import_help() -> str:
    width = max(len(name) for name in IMPORT_FORMATS)
    lines = "\n".join(f"  {name.ljust(width)}  {summary}" for name, summary in IMPORT_FORMATS.items())
    return (
        "Convert a public opinion corpus FORMAT at SOURCE into data/raw/DOMAIN/.\n\n"
        f"\b\nFORMAT is one of:\n{lines}\n\n"
        "\b\nExample, your own CSV:\n"
        "  oprag import table reviews.csv --domain mine --text-col review --scope-col product"
    )


@main.command("import", help=_import_help())
@click.argument("fmt", metavar="FORMAT", type=click.Choice(list(IMPORT_FORMATS)))
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
    from oprag_pipeline.importers import run_import

    options = {k: v for k, v in columns.items() if v}
    if fmt == "table" and "text_col" not in options:
        options["text_col"] = _guess_text_column(Path(source))
    if fmt != "table" and options:
        raise click.UsageError(f"column options apply to the table format only, not {fmt}")
    from oprag_pipeline.importers import output_path

    _domain_arguments([domain])
    target = output_path(fmt, Path(source), domain, settings.data_dir())
    folder_existed, file_existed = target.parent.exists(), target.exists()
    result = run_import(fmt, Path(source), domain, settings.data_dir(), progress=True, **options)
    if result.skipped:
        click.echo(f"{len(result.skipped):,} source records could not be converted:", err=True)
        for file, number, reason in result.skipped[:20]:
            click.echo(f"  {file}:{number}: {reason}", err=True)
    if result.documents == 0:
        # Nothing understood: leave no empty file (or new empty folder) for the pipeline to take for a domain.
        if not file_existed:
            target.unlink(missing_ok=True)
        if not folder_existed and target.parent.exists() and not any(target.parent.iterdir()):
            target.parent.rmdir()
        hint = f" (first problem: {result.skipped[0][2]})" if result.skipped else ""
        raise click.ClickException(f"nothing imported: {source} holds no record of the {fmt} format{hint}")
    for path in result.files_written:
        click.echo(f"wrote {path}")
    click.echo(f"{result.documents:,} documents imported into domain {domain!r}")


def _guess_text_column(source: Path) -> str:
    """The text column of a table when its name says so, else an error listing the columns found."""
    from oprag_pipeline.importers.table import TEXT_COLUMN_GUESSES, columns, guess_text_column

    found = columns(source)
    guess = guess_text_column(found)
    if guess is not None:
        click.echo(f"--text-col not given: using the column {guess!r}", err=True)
        return guess
    if not found:
        raise click.UsageError(f"the table format needs --text-col, and no readable table with columns is at {source}")
    candidates = [name for name in found if name.strip().lower() in TEXT_COLUMN_GUESSES]
    why = f"several could be the text ({', '.join(candidates)})" if candidates else "none is plainly the text"
    raise click.UsageError(f"the table format needs --text-col: {why}; columns found in {source}: {', '.join(found)}")


@main.command("run")
@click.option("--domain", "domains", multiple=True, help="Domain to run (repeatable; default: every domain).")
@click.option(
    "--select",
    "selection",
    default="*",
    show_default=True,
    help="Dagster asset selection, e.g. 'raw_documents', '*opinions' (with everything upstream), 'opinions*'.",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="When another run writes the same data directory: wait for it to finish, or refuse at once.",
)
@click.pass_context
def run_command(ctx: click.Context, domains: tuple[str, ...], selection: str, wait: bool) -> None:
    """Materialize the asset graph (or a selection) for one or all domains, in process."""
    check_configuration(pipeline=True)
    chosen = _runnable_domains(domains)
    check_qdrant_reachable()
    check_warehouse_readable()
    from tqdm import tqdm

    from oprag_pipeline.definitions import build_definitions
    from oprag_pipeline.runner import materialize_domains, resolve_selection

    try:
        resolve_selection(build_definitions(), selection)
    except ValueError as error:
        raise click.UsageError(
            f"{error}. Examples: 'raw_documents', '*opinions' (it and everything upstream), "
            "'key:opinions or key:raw_documents'"
        ) from None
    instance = dagster_instance()
    failures = []
    with _writing(wait):
        _fail_abandoned(instance)
        # A bar on a terminal; where stderr is a file or a pipe a redrawn bar is a line per redraw, so there each
        # finished domain says "[i/n]" on its own line instead.
        interactive = sys.stderr.isatty()
        with tqdm(total=len(chosen), desc="domains", unit="domain", file=sys.stderr, disable=not interactive) as bar:
            outcomes = materialize_domains(chosen, selection=selection, instance=instance, tracebacks=_debug(ctx))
            for done, outcome in enumerate(outcomes, start=1):
                bar.update(1)
                status = "ok" if outcome.success else "FAILED"
                counter = "" if interactive else f"[{done}/{len(chosen)}] "
                lines = [
                    f"{counter}{outcome.domain}: {status} ({outcome.steps} steps, {outcome.seconds:.1f} s, "
                    f"run {outcome.run_id})",
                    *(f"  {outcome.domain}: {failure}" for failure in outcome.failures),
                ]
                for line in lines:
                    bar.write(line)  # above the bar, which is redrawn below it
                if not outcome.success:
                    failures.append(outcome.domain)
    if failures:
        raise click.ClickException(f"run failed for {', '.join(failures)}; see the lines above or the Dagster UI")


@contextmanager
def _built_domain(domain: str) -> Iterator[Any]:
    """A read-only warehouse connection for a command that lists what a built domain holds (entities, scopes); one
    clear line when the domain or its warehouse does not exist yet."""
    import duckdb

    check_configuration(pipeline=False)
    _existing_domain(domain)
    check_warehouse_readable()
    warehouse = settings.warehouse_path()
    if not warehouse.exists():
        raise click.ClickException(f"no warehouse at {warehouse}: run `oprag run --domain {domain}` first")
    with _reading_index(domain), duckdb.connect(str(warehouse), read_only=True) as conn:
        yield conn


@contextmanager
def _reading_index(domain: str) -> Iterator[None]:
    """Turn what reading a domain's index can meet into one clear line each: an index not built yet, bad arguments,
    and a writer holding the warehouse or a vector collection (named, when it is an oprag run, so the user knows
    whom to wait for)."""
    import duckdb

    from oprag_pipeline.index.vector_store import CollectionNotFoundError
    from oprag_pipeline.locks import writer_busy

    def busy(error: BaseException) -> click.ClickException:
        holder = writer_busy(settings.data_dir())
        who = f"an oprag run ({holder})" if holder else "another process (e.g. `dagster dev` running a job)"
        return click.ClickException(
            f"the index of {domain!r} is busy: {who} is writing it ({_one_line(error)}); retry when that run has "
            "finished (`oprag status` shows when the last one did)"
        )

    try:
        yield
    except CollectionNotFoundError as error:
        raise click.ClickException(f"{error}; materialize the index first: oprag run --domain {domain}") from None
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    except duckdb.CatalogException as error:
        missing = re.search(r"Table with name (\w+) does not exist", str(error))
        what = f"table {missing.group(1)}" if missing else "the tables it needs"
        raise click.ClickException(
            f"the warehouse has no {what} yet; materialize the domain first: oprag run --domain {domain}"
        ) from None
    except duckdb.IOException as error:
        if "lock" not in str(error).lower():
            raise
        raise busy(error) from None
    except RuntimeError as error:
        if "another process" not in str(error):
            raise
        raise busy(error) from None


@main.command("query")
@click.argument("text")
@click.option("--domain", required=True, help="Domain to search.")
@click.option("-k", "k", default=20, show_default=True, type=click.IntRange(min=1, max=500), help="Hits to return.")
@click.option(
    "--mode",
    type=click.Choice(["semantic", "hybrid", "balanced", "mmr", "xquad", "pm2", "fair", "groups"]),
    default="hybrid",
    show_default=True,
    help="balanced: hybrid relevance with slots in proportion to the corpus's opinions on the entities the "
    "question names (enriched KB only); mmr, xquad, pm2: the hybrid candidates re-ranked by the literature's "
    "diversification methods (xquad and pm2 over σ-levels, enriched KB only); fair: the hybrid candidates with "
    "no author holding more than floor(k^(1 - W)) hits (see --fair-weight); groups: slots matching both the "
    "entity's σ mix and the author groups that hold opinions on it (enriched KB; see --group-weight).",
)
@click.option(
    "--group-weight",
    type=click.FloatRange(0, 1),
    help="groups: the author-group objective's share of the weight, the σ mix having the rest (0: σ mix only, "
    "1: groups only); default 0.5.",
)
@click.option(
    "--fair-weight",
    type=click.FloatRange(0, 1),
    help="fair: 0 is the plain hybrid list, 1 one hit per author; default 0.5 (about sqrt(k) hits per author).",
)
@click.option(
    "--kb",
    type=click.Choice(["enriched", "entity_split", "raw"]),
    default="enriched",
    show_default=True,
    help="Knowledge base: enriched (O-RAG), entity_split (ablation) or raw (plain RAG chunks).",
)
@click.option("--entity", help="Entity id whose distribution to compare (default: the one most hits are about).")
@click.option(
    "--since",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="balanced: match the opinions dated on or after this day (YYYY-MM-DD) instead of all time.",
)
@click.option(
    "--half-life",
    type=click.FloatRange(min=0, min_open=True),
    help="balanced: weight opinions by age, halving every this many days (counted from the latest date).",
)
@click.option("--window-months", default=3, show_default=True, type=click.IntRange(min=1), help="Timeline window size.")
@click.option(
    "--scope",
    help="Only the documents about this product / hotel (their entity_scope, any case; `oprag scopes` lists them).",
)
def query_command(
    text: str,
    domain: str,
    k: int,
    mode: str,
    kb: str,
    entity: str | None,
    since,
    half_life: float | None,
    window_months: int,
    fair_weight: float | None,
    group_weight: float | None,
    scope: str | None,
) -> None:
    """Search a domain's knowledge base and compare the retrieved opinions with the corpus."""
    if scope is not None and (mode == "groups" or since is not None or half_life is not None):
        raise click.UsageError("--scope does not combine with --mode groups, --since or --half-life")
    if group_weight is not None and mode != "groups":
        raise click.UsageError("--group-weight is the weight of --mode groups; add --mode groups or leave it out")
    if mode == "groups" and kb != "enriched":
        raise click.UsageError("--mode groups needs the enriched KB's opinion and author payload (--kb enriched)")
    check_configuration(pipeline=False)
    _existing_domain(domain)
    check_qdrant_reachable()
    check_warehouse_readable()
    from oprag_pipeline.analysis.query import (
        DEFAULT_GROUP_WEIGHT,
        group_fair_searcher,
        profile_builder,
        timeline_footer,
    )
    from oprag_pipeline.index.query import run_query
    from oprag_pipeline.resources import EmbedderResource, open_configured_store

    warehouse = settings.warehouse_path()
    if not warehouse.exists():
        raise click.ClickException(f"no warehouse at {warehouse}: run `oprag run` first")
    if scope is not None:
        scope = _resolved_scope(warehouse, domain, scope)
    search = None
    if mode == "groups":
        weight = DEFAULT_GROUP_WEIGHT if group_weight is None else group_weight
        search = group_fair_searcher(domain, text, k=k, group_weight=weight)
    with _reading_index(domain):
        store = open_configured_store(settings.data_dir())
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
                profile=profile_builder(domain, since=since.date() if since else None, half_life_days=half_life),
                footer=timeline_footer(domain, window_months),
                fair_weight=fair_weight,
                search=search,
                scope=scope,
            )
        finally:
            store.close()
    click.echo(output)


@main.command("ask")
@click.argument("question")
@click.option("--domain", required=True, help="Domain to ask.")
@click.option(
    "--kb",
    type=click.Choice(["enriched", "entity_split", "raw"]),
    default="enriched",
    show_default=True,
    help="Knowledge base: enriched (opinion-aware answer) or raw (plain RAG: top passages, no statistics).",
)
@click.option(
    "--mode",
    type=click.Choice(["semantic", "hybrid", "balanced", "mmr", "xquad", "pm2", "fair"]),
    default=None,
    help="Retrieval mode (default: pm2 on the enriched KB, the closest to the corpus's opinions where measured; "
    "hybrid elsewhere); balanced, xquad and pm2 follow the corpus's opinions on the entities the question names "
    "(enriched KB only); mmr: semantic diversity; fair: the hybrid list with no author holding more than "
    "floor(k^(1 - W)) passages (see --fair-weight).",
)
@click.option(
    "--fair-weight",
    type=click.FloatRange(0, 1),
    help="fair: 0 is the plain hybrid list, 1 one passage per author; default 0.5.",
)
@click.option("-k", "k", default=20, show_default=True, type=click.IntRange(min=1, max=200), help="Passages retrieved.")
@click.option(
    "--writer",
    type=click.Choice(["offline", "anthropic", "openai-compatible"]),
    default="offline",
    show_default=True,
    help="offline: a template with the corpus's real statistics and verbatim quotes (no network); the LLM writers "
    "read their keys and models from the environment, as the extractors do.",
)
@click.option("--json", "as_json", is_flag=True, help="The answer with its stated shares, quotes and flags as JSON.")
@click.option(
    "--scope",
    help="Only the documents about this product / hotel (their entity_scope, any case; `oprag scopes` lists them). "
    "Default: the scope the question names, if any.",
)
def ask_command(
    question: str,
    domain: str,
    kb: str,
    mode: str | None,
    fair_weight: float | None,
    k: int,
    writer: str,
    as_json: bool,
    scope: str | None,
) -> None:
    """Answer QUESTION from a domain: the spread of views with shares from the corpus, quotes from every side."""
    if fair_weight is not None and mode != "fair":
        raise click.UsageError("--fair-weight applies to --mode fair only")
    from oprag_pipeline.enrich.llm.transport import MissingCredentialsError
    from oprag_pipeline.schema import cost_label

    check_configuration(pipeline=False)
    _existing_domain(domain)
    check_qdrant_reachable()
    check_warehouse_readable()
    from oprag_pipeline.generate.api import ask

    extra = {} if fair_weight is None else {"fair_weight": fair_weight}
    try:
        with _reading_index(domain):
            result = ask(question, domain=domain, kb=kb, mode=mode, k=k, writer=writer, scope=scope, **extra)
    except (FileNotFoundError, LookupError, MissingCredentialsError, RuntimeError) as error:
        raise click.ClickException(str(error)) from error
    answer = result.answer
    if result.scope_match is not None:
        click.echo(f"scope: {result.scope_match.scope!r} (named in the question)", err=True)
    if as_json:
        click.echo(json.dumps(answer.to_dict(), indent=2, ensure_ascii=False))
        return
    from oprag_pipeline.generate.terminal import terminal_text

    click.echo(terminal_text(answer.text, styled=sys.stdout.isatty()))
    for flag in answer.flags:
        click.echo(f"flag: {flag}", err=True)
    if answer.input_tokens or answer.output_tokens:
        click.echo(
            f"{answer.writer}: {answer.input_tokens:,} input + {answer.output_tokens:,} output tokens, "
            f"estimated {cost_label(answer.cost_usd)}",
            err=True,
        )


@main.command("entities")
@click.option("--domain", required=True, help="Domain whose entities to list.")
@click.option("--scope", help="Count only documents whose entity_scope is this (the product, the hotel; any case).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def entities_command(domain: str, scope: str | None, as_json: bool) -> None:
    """The entities one can ask a domain about: tier path, mentions, sentiment mix, aliases; most mentioned first."""
    from oprag_pipeline.generate.scope import resolve_scope
    from oprag_pipeline.registry.listing import list_entities, render_entities

    with _built_domain(domain) as conn:
        if scope is not None:
            try:
                scope = resolve_scope(conn, domain, scope)  # its stored spelling, or an error naming some scopes
            except LookupError as error:
                raise click.ClickException(str(error)) from None
        rows = list_entities(conn, domain, scope)
    if not rows:
        raise click.ClickException(
            f"domain {domain!r} has no entity registry yet: run `oprag run --domain {domain}` first"
            if scope is None
            else f"no opinions in the documents of scope {scope!r}"
        )
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows], indent=2, ensure_ascii=False))
        return
    opinions = sum(r.mentions for r in rows)
    where = f"documents of scope {scope!r}" if scope else "all documents"
    click.echo(f"{domain}: {len(rows)} entities, {opinions:,} opinions ({where})")
    click.echo("\n".join(render_entities(rows)))


def _resolved_scope(warehouse: Path, domain: str, scope: str) -> str:
    """The stored spelling of a scope given on the command line; a ClickException listing some when unknown."""
    import duckdb

    from oprag_pipeline.generate.scope import resolve_scope

    with _reading_index(domain), duckdb.connect(str(warehouse), read_only=True) as conn:
        try:
            return resolve_scope(conn, domain, scope)
        except LookupError as error:
            raise click.ClickException(str(error)) from None


@main.command("scopes")
@click.option("--domain", required=True, help="Domain whose scopes to list.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def scopes_command(domain: str, as_json: bool) -> None:
    """What the domain's documents are about (their entity_scope: products, hotels), with document counts."""
    from oprag_pipeline.generate.scope import domain_scopes

    with _built_domain(domain) as conn:
        rows = domain_scopes(conn, domain)
    if as_json:
        click.echo(json.dumps([vars(r) for r in rows], indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo(f"{domain}: no document names a scope (the input has no entity_scope column)")
        return
    click.echo(f"{domain}: {len(rows)} scopes, {sum(r.documents for r in rows):,} documents")
    table = [[r.scope, f"{r.documents:,}", f"{r.opinions:,}"] for r in rows]
    click.echo(_text_table(["scope", "documents", "opinions"], table))


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (local by default).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port.")
def serve_command(host: str, port: int) -> None:
    """A local web page to ask a domain a question: both answers side by side, distribution chart, quotes by side."""
    check_configuration(pipeline=False)
    check_warehouse_readable()
    from oprag_pipeline.generate.web import serve

    if not settings.warehouse_path().exists():
        raise click.ClickException(f"no warehouse at {settings.warehouse_path()}: run `oprag run` first")
    click.echo(f"serving http://{host}:{port}/ (Ctrl-C stops)", err=True)
    serve(host=host, port=port)


@main.command("report")
@click.option("--domain", "domains", multiple=True, help="Domain to report on (repeatable; default: every domain).")
@click.option(
    "--refresh/--no-refresh",
    default=False,
    help="Re-materialize the evaluation first (default: only when it has never run for the domain).",
)
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for a run writing the data directory.")
@click.option("--wide", is_flag=True, help="The summary with full labels, however wide (default: fit the terminal).")
@click.pass_context
def report_command(ctx: click.Context, domains: tuple[str, ...], refresh: bool, wait: bool, wide: bool) -> None:
    """Write data/reports/<domain>/ (metrics.json, report.md, report.html, PNG plots) and print the summary."""
    check_configuration(pipeline=True)
    chosen = _runnable_domains(domains)
    check_qdrant_reachable()
    check_warehouse_readable()
    with _writing(wait):
        _report(chosen, refresh, tracebacks=_debug(ctx), wide=wide)


def _report(chosen: list[str], refresh: bool, *, tracebacks: bool, wide: bool = False) -> None:
    import duckdb

    from oprag_pipeline.report.build import write_report
    from oprag_pipeline.report.summary import SUMMARY_HEADERS, compact_summary
    from oprag_pipeline.runner import materialize_domains

    warehouse = settings.warehouse_path()
    instance = dagster_instance()
    _fail_abandoned(instance)
    for domain in chosen:
        if refresh or not _evaluated(instance, domain):
            click.echo(f"{domain}: materializing the pipeline up to the report (cached stages are skipped)", err=True)
            outcome = next(
                materialize_domains([domain], selection="*evaluation_report", instance=instance, tracebacks=tracebacks)
            )
            for failure in outcome.failures:
                click.echo(f"  {domain}: {failure}", err=True)
            if not outcome.success:
                raise click.ClickException(f"{domain}: the evaluation run failed (run {outcome.run_id})")
        with duckdb.connect(str(warehouse)) as conn:
            try:
                written = write_report(conn, domain, settings.reports_dir() / domain)
            except LookupError as error:
                raise click.ClickException(str(error)) from error
        click.echo(f"{domain}: report in {written.directory} (report.md, report.html, metrics.json, plots)")
        for line in written.verdict:
            click.echo(line)
        if wide:
            click.echo(_text_table(SUMMARY_HEADERS, written.summary_rows))
        else:
            headers, rows, legend = compact_summary(written.summary_rows)
            click.echo(_fitted_table(headers, rows, shutil.get_terminal_size().columns))
            click.echo(legend)
        click.echo("")


def _evaluated(instance, domain: str) -> bool:
    """Whether Dagster has a materialization of this domain's report (what the UI's catalog shows too)."""
    from dagster import AssetKey

    return domain in instance.get_materialized_partitions(AssetKey("evaluation_report"))


def _text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _fitted_table(headers: list[str], rows: list[list[str]], width: int) -> str:
    """`_text_table` split into blocks of columns (each repeating the first) so that no line is wider than
    `width`: a wrapped table cannot be read."""
    blocks: list[list[int]] = []
    current: list[int] = []
    column_widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    used = column_widths[0]
    for index in range(1, len(headers)):
        if current and used + 2 + column_widths[index] > width:
            blocks.append(current)
            current, used = [], column_widths[0]
        current.append(index)
        used += 2 + column_widths[index]
    blocks.append(current)
    return "\n\n".join(
        _text_table([headers[0], *(headers[i] for i in block)], [[r[0], *(r[i] for i in block)] for r in rows])
        for block in blocks
    )


@main.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status_command(as_json: bool) -> None:
    """What is materialized, with row and quarantine counts per domain."""
    from oprag_pipeline.status import collect_status, render_status

    check_configuration(pipeline=False)
    report = collect_status(instance=dagster_instance())
    click.echo(json.dumps(report, indent=2, default=str) if as_json else render_status(report))


if __name__ == "__main__":
    main()
