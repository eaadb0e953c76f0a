"""Dagster's standard asset metadata, applied in one place: owners, code versions, code references, table facts.

Asset files stay free of this bookkeeping: `standard_assets` stamps every definition when `definitions.py`
assembles them, and `table_metadata` is what an asset adds to its materialization for the table it wrote.
"""

from __future__ import annotations

import hashlib
import inspect
import warnings
from collections.abc import Sequence
from typing import Any

from dagster import (
    AssetsDefinition,
    BetaWarning,
    TableColumn,
    TableColumnConstraints,
    TableSchema,
    with_source_code_references,
)

from oprag_pipeline import settings

# Who answers for the assets in the UI's Owners field; Dagster accepts an e-mail address or `team:<name>`.
OWNERS = ["team:oprag"]


def _code_version(assets_def: AssetsDefinition) -> str:
    """A digest of what computes the asset: its SQL model file if it has one, else its Python function's source.

    Dagster compares code versions to tell a materialization made by older code ("code version changed") from one
    that is current, so the digest must move when, and only when, the computation's own text does.
    """
    sql_files = {spec.metadata.get("sql_file") for spec in assets_def.specs} - {None}
    if sql_files:
        root = settings.sql_models_dir().parent
        text = "".join((root / str(name)).read_text(encoding="utf-8") for name in sorted(sql_files))
    else:
        # a graph-backed asset (the sharded `opinions`) is computed by all of its ops
        ops = sorted(assets_def.node_def.iterate_op_defs(), key=lambda o: o.name)
        text = "".join(inspect.getsource(o.compute_fn.decorated_fn) for o in ops)  # type: ignore[union-attr]
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def standard_assets(assets: Sequence[AssetsDefinition]) -> list[Any]:
    """Every asset with owners, a code version and a link to the code that defines it."""
    stamped = []
    for assets_def in assets:
        version = _code_version(assets_def)
        stamped.append(
            assets_def.map_asset_specs(
                lambda spec, version=version: spec.replace_attributes(code_version=version, owners=OWNERS)
            )
        )
    # Code references are a beta API of the Dagster we pin; the warning says nothing a reader of the UI can act on,
    # so it is silenced here, around this one call, and nowhere else.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        return list(with_source_code_references(stamped))


def table_metadata(conn, table: str, domain: str) -> dict[str, Any]:
    """`dagster/row_count` (this domain's rows) and `dagster/column_schema` of a warehouse table, read from DuckDB.

    Read from the table itself rather than restated, so the Columns tab cannot drift from the DDL.
    """
    columns = conn.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    names = {name for name, _type, _nullable in columns}
    where = " WHERE domain = ?" if "domain" in names else ""
    rows = conn.execute(f'SELECT count(*) FROM "{table}"{where}', [domain] if where else []).fetchone()[0]
    schema = TableSchema(
        columns=[
            TableColumn(name, data_type, constraints=TableColumnConstraints(nullable=nullable == "YES"))
            for name, data_type, nullable in columns
        ]
    )
    return {"dagster/row_count": int(rows), "dagster/column_schema": schema, "dagster/table_name": table}
