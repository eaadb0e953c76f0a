"""Resources shared by every stage: where the data lives and the DuckDB warehouse.

Both are built from the environment when the definitions load (`OPRAG_DATA_DIR`, `OPRAG_WAREHOUSE`) and can be
overridden per run in the Dagster launchpad, so the UI, the CLI and the tests can point at different folders.
"""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from dagster_duckdb import DuckDBResource
from pydantic import Field

from oprag_pipeline import settings


class DataDirResource(ConfigurableResource):
    """The data directory: inputs under `raw/`, planted truth under `truth/`, reports, vector shards."""

    data_dir: str = Field(description="Root folder of the pipeline's data (inputs, warehouse, reports).")

    @property
    def root(self) -> Path:
        return Path(self.data_dir)

    def raw_dir(self) -> Path:
        return settings.raw_dir(self.root)

    def domain_dir(self, domain: str) -> Path:
        return self.raw_dir() / domain

    def domains(self) -> list[str]:
        return settings.list_domains(self.root)


def warehouse_resource(path: Path | None = None) -> DuckDBResource:
    """Dagster's own DuckDB resource (it retries while another process holds the file lock)."""
    database = path or settings.warehouse_path()
    database.parent.mkdir(parents=True, exist_ok=True)
    return DuckDBResource(database=str(database))


def build_resources(data_dir: Path | None = None, warehouse: Path | None = None) -> dict[str, object]:
    """Every resource the assets need, resolved from arguments or the environment."""
    root = data_dir or settings.data_dir()
    return {
        "paths": DataDirResource(data_dir=str(root)),
        "warehouse": warehouse_resource(warehouse or (settings.warehouse_path(root) if data_dir else None)),
    }
