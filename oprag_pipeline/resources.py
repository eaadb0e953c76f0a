"""Resources shared by every stage: the data directory, the DuckDB warehouse, the embedder, the extractor and the
vector store (defined with its adapters in `index/vector_store.py`).

They are built from the environment when the definitions load (`OPRAG_DATA_DIR`, `OPRAG_WAREHOUSE`) and can be
overridden per run in the Dagster launchpad, so the UI, the CLI and the tests can point at different folders.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dagster import ConfigurableResource, InitResourceContext
from dagster.components.lib.sql_component.sql_client import SQLClient
from dagster_duckdb import DuckDBResource
from pydantic import Field, PrivateAttr

from oprag_pipeline import settings
from oprag_pipeline.enrich import ratings
from oprag_pipeline.index.vector_store import VectorStoreResource  # the Qdrant resource, next to its adapters


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


class WarehouseResource(DuckDBResource, SQLClient):
    """Dagster's own DuckDB resource (it retries while another process holds the file lock), also usable as the
    SQL client of Dagster's templated-SQL components, so the SQL models in `dbt_like_sql/` run through it."""

    _writer: Any = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Every run that touches the warehouse (nearly every asset) holds the writer lock of the folder holding it
        (the data directory, by default; see `runner.writer_lock`), so a run launched by `dagster dev` and one from
        the CLI wait for each other instead of colliding on the warehouse and the vector shards."""
        from oprag_pipeline.runner import writer_lock

        log = context.log.info if context.log is not None else None
        self._writer = writer_lock(Path(self.database).parent, wait=True, on_wait=log)
        self._writer.__enter__()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._writer is not None:
            self._writer.__exit__(None, None, None)
            self._writer = None

    def connect_and_execute(self, sql: str) -> None:
        with self.get_connection() as conn:
            conn.execute(sql)


def warehouse_resource(path: Path | None = None) -> WarehouseResource:
    database = path or settings.warehouse_path()
    database.parent.mkdir(parents=True, exist_ok=True)
    return WarehouseResource(database=str(database))


class EmbedderResource(ConfigurableResource):
    """Dense (MiniLM) and sparse (BM25, negations kept) embeddings, offline by default."""

    model: str = Field(
        default="sentence-transformers/all-MiniLM-L6-v2",
        description="fastembed model name; the default is assembled offline, others need a reachable model hub.",
    )

    def embedder(self):
        from oprag_pipeline.embeddings import OfflineEmbedder

        return _cached_embedder(self.model, OfflineEmbedder)

    def embed_dense(self, texts):
        return self.embedder().embed_dense(list(texts))


_EMBEDDERS: dict[str, object] = {}


def _cached_embedder(model: str, factory):
    """One embedder per process: loading the ONNX session costs seconds, embedding a batch milliseconds."""
    if model not in _EMBEDDERS:
        _EMBEDDERS[model] = factory(model_name=model)
    return _EMBEDDERS[model]


class ExtractorResource(ConfigurableResource):
    """Which opinion extractor runs: `offline` (default), `anthropic` or `openai-compatible` (env OPRAG_EXTRACTOR)."""

    kind: str = Field(default="offline", description="offline | anthropic | openai-compatible")
    batch_size: int = Field(default=500, description="Documents per committed batch (the unit of resume).")
    max_concurrency: int = Field(default=4, description="Parallel requests for the LLM extractors.")
    model: str | None = Field(default=None, description="LLM model id (LLM extractors only).")
    base_url: str | None = Field(default=None, description="Endpoint for openai-compatible servers.")
    adapt: str = Field(
        default="none",
        description="none | ratings | llm (env OPRAG_ADAPT): fit the offline model's per-class offsets before "
        "extracting, on weak labels from the domain's own star ratings (enrich/ratings.py) or on an LLM extractor's "
        "labels of a sample of the domain, the offline model then extracting the corpus (enrich/teacher.py); the "
        "adapted model stays local.",
    )
    adapt_sample: int = Field(
        default=ratings.SAMPLE_MENTIONS, description="Rated mentions fitted (a deterministic sample)."
    )
    adapt_min_mentions: int = Field(
        default=ratings.MIN_RATED_MENTIONS, description="Fewer rated mentions than this: adaptation is skipped."
    )

    def build(self):
        from oprag_pipeline.enrich.factory import build_extractor

        return build_extractor(
            self.kind, model=self.model, base_url=self.base_url, max_concurrency=self.max_concurrency
        )


def build_resources(data_dir: Path | None = None, warehouse: Path | None = None) -> dict[str, object]:
    """Every resource the assets need, resolved from arguments or the environment."""
    root = data_dir or settings.data_dir()
    extractor_kind = os.environ.get("OPRAG_EXTRACTOR", "offline")
    return {
        "paths": DataDirResource(data_dir=str(root)),
        "warehouse": warehouse_resource(warehouse or (settings.warehouse_path(root) if data_dir else None)),
        "embedder": EmbedderResource(),
        "vector_store": VectorStoreResource(data_dir=str(root)),
        "extractor": ExtractorResource(
            kind=extractor_kind,
            batch_size=int(os.environ.get("OPRAG_EXTRACT_BATCH_SIZE", 500 if extractor_kind == "offline" else 20)),
            adapt=os.environ.get("OPRAG_ADAPT", "none"),
        ),
    }
