"""The SQL models in `dbt_like_sql/` as Dagster assets, executed by Dagster's `TemplatedSqlComponent`.

Layout, borrowed from dbt because people know it: `models/<layer>/<name>.sql` holds one SELECT; `{{ ref('m') }}`
names another model and `{{ source('t') }}` a table written by a Python asset — both become asset dependencies,
so lineage in the UI is read from the SQL itself. `{{ domain }}` is the partition key as a quoted literal. Every
model's rows carry a `domain` column, and `materialization.sql` replaces one domain's rows in one transaction,
so partitions are independent. `schema.yaml` describes the models and their data tests (`not_null`, `unique`,
`accepted_values`, `relationships`, `equal_row_count`, `expression`); each test is an asset check that counts the
offending rows of the partition.

What is ours and why: Dagster's component renders a template with static variables and runs it through a SQL
client; a partitioned model needs the partition key in the template, and data tests need results per check. The
subclass adds exactly that — rendering with the partition, checks after the model — and runs everything through
the `warehouse` resource (Dagster's DuckDBResource, which is also the component's SQL client).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    MaterializeResult,
    MetadataValue,
    PreviewWarning,
    TemplatedSqlComponent,
)
from dagster.components.resolved.core_models import OpSpec
from jinja2 import Environment, StrictUndefined
from pydantic import Field

from oprag_pipeline.concurrency import WAREHOUSE_POOL, WAREHOUSE_TAG
from oprag_pipeline.partitions import domain_partitions
from oprag_pipeline.rendering import markdown_table

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_JINJA = Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def sql_literal(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _identifier(name: str, what: str) -> str:
    if not _IDENTIFIER.match(name):
        raise ValueError(f"{what} {name!r} is not a plain SQL identifier")
    return name


@dataclass(frozen=True)
class DataTest:
    name: str
    description: str
    sql: str  # a query returning one number: the offending rows of the partition (0 = pass); {{ domain }} inside


@dataclass
class ModelFile:
    name: str
    layer: str
    path: Path
    select: str
    refs: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    description: str = ""
    tests: list[DataTest] = field(default_factory=list)


def _render(template: str, domain: str) -> str:
    return _JINJA.from_string(template).render(
        domain=sql_literal(domain), ref=lambda name: _identifier(name, "ref"), source=lambda t: _identifier(t, "source")
    )


def _discover_refs(select: str) -> tuple[list[str], list[str]]:
    refs: list[str] = []
    sources: list[str] = []

    def ref(name: str) -> str:
        refs.append(_identifier(name, "ref"))
        return name

    def source(name: str) -> str:
        sources.append(_identifier(name, "source"))
        return name

    _JINJA.from_string(select).render(domain="''", ref=ref, source=source)
    return list(dict.fromkeys(refs)), list(dict.fromkeys(sources))


def compile_test(model: str, spec: Any, column: str | None = None) -> DataTest:
    """One schema.yaml test entry -> a counting query (dbt's generic tests, in DuckDB SQL)."""
    name, args = (spec, {}) if isinstance(spec, str) else next(iter(spec.items()))
    args = args or {}
    scope = f"FROM {model} WHERE domain = {{{{ domain }}}}"
    if name == "not_null":
        col = _identifier(column or args["column"], "column")
        return DataTest(f"{col}_not_null", f"`{col}` is never null.", f"SELECT count(*) {scope} AND {col} IS NULL")
    if name == "unique":
        cols = [column] if column else list(args["columns"])
        key = ", ".join(_identifier(c, "column") for c in cols)
        return DataTest(
            f"unique_{'_'.join(cols)}",
            f"({key}) identifies a row.",
            f"SELECT count(*) FROM (SELECT {key} {scope} GROUP BY ALL HAVING count(*) > 1)",
        )
    if name == "accepted_values":
        col = _identifier(column or args["column"], "column")
        values = ", ".join(sql_literal(v) if isinstance(v, str) else str(v) for v in args["values"])
        return DataTest(
            f"{col}_accepted_values",
            f"`{col}` is one of {values}.",
            f"SELECT count(*) {scope} AND {col} IS NOT NULL AND {col} NOT IN ({values})",
        )
    if name == "relationships":
        col = _identifier(column or args["column"], "column")
        to, field_ = _identifier(args["to"], "table"), _identifier(args["field"], "column")
        return DataTest(
            f"{col}_in_{to}",
            f"every `{col}` exists in `{to}.{field_}`.",
            f"SELECT count(*) {scope} AND {col} IS NOT NULL AND {col} NOT IN "
            f"(SELECT {field_} FROM {to} WHERE domain = {{{{ domain }}}})",
        )
    if name == "equal_row_count":
        expected = args["expected"]  # a query that returns the row count the model must have
        return DataTest(
            args.get("name", "row_count_reconciles"),
            args.get("description", "the row count reconciles with its inputs."),
            f"SELECT abs((SELECT count(*) {scope}) - ({expected}))",
        )
    if name == "expression":
        return DataTest(args["name"], args.get("description", ""), args["failing_rows"])
    raise ValueError(f"{model}: unknown data test {name!r}")


def load_models(root: Path) -> list[ModelFile]:
    """Every model under `root/models`, with descriptions and tests from `root/models/schema.yaml`."""
    schema_path = root / "models" / "schema.yaml"
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8")) if schema_path.exists() else {}
    described = {m["name"]: m for m in (schema or {}).get("models", [])}
    models = []
    for path in sorted((root / "models").rglob("*.sql")):
        name = _identifier(path.stem, "model file name")
        select = path.read_text(encoding="utf-8").strip().rstrip(";")
        refs, sources = _discover_refs(select)
        info = described.get(name, {})
        tests = [compile_test(name, t) for t in info.get("tests", [])]
        for column in info.get("columns", []):
            tests += [compile_test(name, t, column["name"]) for t in column.get("tests", [])]
        names = [t.name for t in tests]
        if len(names) != len(set(names)):
            raise ValueError(f"{schema_path}: model {name} has two data tests with the same name")
        models.append(
            ModelFile(name, path.parent.name, path, select, refs, sources, info.get("description", ""), tests)
        )
    unknown = set(described) - {m.name for m in models}
    if unknown:
        raise ValueError(f"{schema_path}: describes models with no SQL file: {', '.join(sorted(unknown))}")
    known = {m.name for m in models}
    for model in models:
        missing = [r for r in model.refs if r not in known]
        if missing:
            raise ValueError(f"{model.path}: ref() to unknown model(s) {', '.join(missing)}")
    return models


class DuckDBSqlModel(TemplatedSqlComponent):
    """A TemplatedSqlComponent whose template is rendered per domain partition and followed by its data tests."""

    model_name: str
    model_select: str
    data_tests: list[Any] = Field(default_factory=list)

    @property
    def resource_keys(self) -> set[str]:
        return {"warehouse"}

    def _client(self, context: AssetExecutionContext) -> Any:
        """The run's `warehouse` resource (so the launchpad, CLI and tests choose the database); the component's
        own connection only when a run binds none."""
        return getattr(context.resources, "warehouse", None) or self.connection

    def get_sql_content(self, context: AssetExecutionContext, component_load_context: Any) -> str:
        domain = context.partition_key
        select = _render(self.model_select, domain)
        return _JINJA.from_string(str(self.sql_template)).render(
            this=self.model_name, select=select, domain=sql_literal(domain), **(self.sql_template_vars or {})
        )

    def execute(self, context: AssetExecutionContext, component_load_context: Any) -> None:
        # Derived tables are rebuilt rather than migrated: if the model's columns changed, the old table goes.
        client = self._client(context)
        with client.get_connection() as conn:
            select = _render(self.model_select, context.partition_key)
            wanted = [(r[0], r[1]) for r in conn.execute(f"DESCRIBE SELECT * FROM ({select})").fetchall()]
            exists = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [self.model_name]
            ).fetchone()[0]
            if exists:
                have = [(r[0], r[1]) for r in conn.execute(f"DESCRIBE {self.model_name}").fetchall()]
                if have != wanted:
                    context.log.warning(f"{self.model_name}: columns changed, rebuilding the table for all domains")
                    conn.execute(f"DROP TABLE {self.model_name}")
        client.connect_and_execute(self.get_sql_content(context, component_load_context))

    def invoke_execute_fn(
        self, context: AssetExecutionContext | AssetCheckExecutionContext, component_load_context: Any
    ) -> Iterable[MaterializeResult | AssetCheckResult]:
        assert isinstance(context, AssetExecutionContext)
        self.execute(context, component_load_context)
        domain = context.partition_key
        key = AssetKey(self.model_name)
        with self._client(context).get_connection() as conn:
            rows = conn.execute(f"SELECT count(*) FROM {self.model_name} WHERE domain = ?", [domain]).fetchone()[0]
            columns = [r[0] for r in conn.execute(f"DESCRIBE {self.model_name}").fetchall()]
            preview = conn.execute(f"SELECT * FROM {self.model_name} WHERE domain = ? LIMIT 20", [domain]).fetchall()
            context.log.info(f"{self.model_name}[{domain}]: {rows:,} rows")
            yield MaterializeResult(
                asset_key=key, metadata={"rows": rows, "preview": MetadataValue.md(markdown_table(columns, preview))}
            )
            for test in self.data_tests:
                failing = conn.execute(_render(test.sql, domain)).fetchone()[0] or 0
                yield AssetCheckResult(
                    asset_key=key,
                    check_name=test.name,
                    passed=failing == 0,
                    severity=AssetCheckSeverity.ERROR,
                    # text: the check page plots numbers over time, and this one is 0 unless the test fails
                    metadata={"failing_rows": MetadataValue.text(str(int(failing)))},
                    description=test.description,
                )


def build_sql_assets(root: Path, warehouse: Any, *, group_name: str = "evaluation") -> list[Any]:
    """One partitioned asset per model, with its data tests as asset checks."""
    template = (root / "materialization.sql").read_text(encoding="utf-8")
    assets = []
    for model in load_models(root):
        spec = AssetSpec(
            key=model.name,
            deps=[AssetKey(d) for d in [*model.sources, *model.refs]],
            description=model.description or None,
            group_name=group_name,
            kinds={"duckdb", "sql"},
            partitions_def=domain_partitions,
            metadata={"sql_file": str(model.path.relative_to(root.parent)), "layer": model.layer},
            tags={"layer": model.layer},
        )
        checks = [AssetCheckSpec(t.name, asset=model.name, description=t.description) for t in model.tests]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PreviewWarning)  # the SQL component is marked preview; we pin dagster
            component = DuckDBSqlModel(
                connection=warehouse,
                sql_template=template,
                model_name=model.name,
                model_select=model.select,
                data_tests=model.tests,
                assets=[spec],
                checks=checks or None,
                execution=OpSpec(
                    name=model.name,
                    description=model.description or None,
                    pool=WAREHOUSE_POOL,
                    tags={WAREHOUSE_TAG: "1"},
                ),
            )
        # The component reads its template itself, so no component tree (defs folder) is needed to build it.
        assets.append(component.build_underlying_assets_def(component_load_context=None))  # type: ignore[arg-type]
    return assets
