"""Resources shared by every stage: the data directory, the DuckDB warehouse, the embedder, the extractor and the
vector store (whose adapters, and the Qdrant libraries, load only when a store is opened).

`build_resources` fills their fields from the environment when the definitions load (every variable and the field
it feeds are declared in `config.py`), so the launchpad shows what the environment chose and can override any field
for one run, and the UI, the CLI and the tests can point at different folders. Secrets are `EnvVar`s. Building a
resource has no side effect (no folder is made until a run uses it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import ConfigurableResource, EnvVar, InitResourceContext
from dagster.components.lib.sql_component.sql_client import SQLClient
from dagster_duckdb import DuckDBResource
from pydantic import Field, PrivateAttr

from oprag_pipeline import config, settings
from oprag_pipeline.locks import writer_lock

if TYPE_CHECKING:
    from oprag_pipeline.index.vector_store import CollectionOptions, VectorStore


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

    def shards_uri(self) -> str | Path:
        """Where extraction and embedding shards write their inputs and parts: `OPRAG_SHARD_URI` (a folder or a URI
        pyarrow opens), else `shards/` in the data directory (the extractor's `shard_uri` field overrides it for the
        extraction)."""
        return config.value_or_none("OPRAG_SHARD_URI") or self.root / "shards"


class WarehouseResource(DuckDBResource, SQLClient):
    """Dagster's own DuckDB resource (it retries while another process holds the file lock), also usable as the
    SQL client of Dagster's templated-SQL components, so the SQL models in `dbt_like_sql/` run through it."""

    _writer: Any = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Every run that touches the warehouse (nearly every asset) holds the writer lock of the folder holding it
        (the data directory, by default; see `locks.writer_lock`), so a run launched by `dagster dev` and one from
        the CLI wait for each other instead of colliding on the warehouse and the vector shards."""
        log = context.log.info if context.log is not None else None
        run = context.dagster_run
        tags = dict(run.tags) if run is not None else {}
        self._writer = writer_lock(Path(self.database).parent, wait=True, on_wait=log, run_tags=tags)
        self._writer.__enter__()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._writer is not None:
            self._writer.__exit__(None, None, None)
            self._writer = None

    @contextmanager
    def get_connection(self) -> Iterator[Any]:
        """Dagster's connection, the warehouse's folder made first: building the resource makes nothing, so
        loading the definitions (the UI, `dg check defs`) leaves the disk alone."""
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        with super().get_connection() as conn:
            yield conn

    def connect_and_execute(self, sql: str) -> None:
        with self.get_connection() as conn:
            conn.execute(sql)


def warehouse_resource(path: Path | None = None) -> WarehouseResource:
    """The warehouse at `path`, else `OPRAG_WAREHOUSE`, else in the data directory; nothing is created yet."""
    return WarehouseResource(database=str(path or settings.warehouse_path()))


class EmbedderResource(ConfigurableResource):
    """Dense (MiniLM) and sparse (BM25, negations kept) embeddings, offline by default."""

    model: str | None = Field(
        default=None,
        description="fastembed model name (unset: env OPRAG_EMBED_MODEL, else "
        f"{config.declared('OPRAG_EMBED_MODEL').default}); the default is assembled offline, others need a "
        "reachable model hub.",
    )
    model_path: str | None = Field(
        default=None,
        description="Local folder holding the fastembed model `model` names (its ONNX file and tokenizer files), "
        "loaded from there instead of downloaded; ignored for the offline default.",
    )
    precision: str | None = Field(
        default=None,
        description="MiniLM's document encoder: 'w8' (8-bit weights, faster) or 'fp32' (unset: env "
        "OPRAG_EMBED_PRECISION, else w8).",
    )

    vector_cache_dir: str | None = Field(
        default=None,
        description="Embedded vectors by text hash, reused by every KB and run (unset: env OPRAG_VECTOR_CACHE_DIR, "
        "else vector_cache/ in the data directory).",
    )

    shards: int = Field(
        default=2,
        ge=1,
        description="Shards per domain for embedding the per-entity KBs' texts: each is its own step writing into the "
        "vector cache, before the KB steps write points (env OPRAG_EMBED_SHARDS).",
    )

    def embedder(self):
        from oprag_pipeline.embeddings import OfflineEmbedder

        model = self.model or config.value("OPRAG_EMBED_MODEL")
        precision = self.precision or config.value("OPRAG_EMBED_PRECISION")
        key = (model, precision, self.model_path)
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = OfflineEmbedder(model_name=model, precision=precision, model_path=self.model_path)
        return _EMBEDDERS[key]

    def embed_dense(self, texts):
        return self.embedder().embed_dense(list(texts))

    def vector_cache_root(self, data_dir: str | Path) -> Path:
        """Where embedded vectors are kept for reuse: the `vector_cache_dir` field, else `OPRAG_VECTOR_CACHE_DIR`,
        else `vector_cache/` in `data_dir`."""
        if self.vector_cache_dir:
            return Path(self.vector_cache_dir).expanduser()
        return config.value("OPRAG_VECTOR_CACHE_DIR") or Path(data_dir) / "vector_cache"


_EMBEDDERS: dict[tuple[str, str, str | None], Any] = {}
"""One embedder per model, precision and model folder per process: loading the ONNX session costs seconds, a batch
milliseconds."""


DEFAULT_BATCH_SIZE = 500
DEFAULT_LLM_BATCH_SIZE = 20
"""Documents per committed extraction batch unless OPRAG_EXTRACT_BATCH_SIZE says: a batch is the unit of resume, and
an LLM batch costs money and minutes."""


class ExtractorResource(ConfigurableResource):
    """Which opinion extractor runs: `offline` (default), `anthropic` or `openai-compatible` (env OPRAG_EXTRACTOR)."""

    kind: str = Field(default="offline", description="offline | anthropic | openai-compatible (env OPRAG_EXTRACTOR)")
    batch_size: int = Field(
        default=DEFAULT_BATCH_SIZE,
        ge=1,
        description="Documents per committed batch (the unit of resume; env OPRAG_EXTRACT_BATCH_SIZE).",
    )
    shards: int = Field(
        default=2,
        ge=1,
        description="Shards per domain: each is its own step, writing Parquet parts one step merges into the "
        "warehouse (env OPRAG_EXTRACT_SHARDS).",
    )
    shard_uri: str | None = Field(
        default=None,
        description="Where shards write their inputs and parts: a folder or a URI pyarrow opens, e.g. s3://... "
        "(unset: env OPRAG_SHARD_URI, else shards/ in the data directory).",
    )
    max_concurrency: int = Field(default=4, description="Parallel requests for the LLM extractors.")
    model: str | None = Field(
        default=None,
        description="LLM model id (LLM extractors only; unset: env OPRAG_ANTHROPIC_MODEL or OPRAG_OPENAI_MODEL).",
    )
    base_url: str | None = Field(
        default=None, description="Endpoint for openai-compatible servers (unset: env OPRAG_OPENAI_BASE_URL)."
    )
    offline_scorer: str | None = Field(
        default=None,
        description="model | vader: the offline extractor's clause scorer (unset: env OPRAG_OFFLINE_SCORER, else "
        "model).",
    )
    document_tone: str | None = Field(
        default=None,
        description="read | ignore: whether the offline extractor reads the tone of the rest of a document around an "
        "entity's sentences (an entity named without an opinion takes it at low intensity, an opinion against it is "
        "held one level lower), or reads each opinion from its own sentences alone (unset: env "
        "OPRAG_DOCUMENT_TONE, else read).",
    )
    intensity: str | None = Field(
        default=None,
        description="ratings | cues: learn the offline extractor's intensity levels from the domain's own star "
        "ratings when it has enough rated opinions (during adaptation; the cue rule otherwise), or always use the "
        "cue rule (unset: env OPRAG_INTENSITY, else ratings).",
    )
    timeout: float | None = Field(
        default=None, gt=0, description="Seconds per LLM request (unset: env OPRAG_LLM_TIMEOUT, else 60)."
    )
    openai_mode: str | None = Field(
        default=None,
        description="tools | json | json_schema: how an openai-compatible server is held to the schema (unset: env "
        "OPRAG_OPENAI_MODE, else tools).",
    )
    price_per_mtok: str | None = Field(
        default=None,
        description="'input,output' USD per million tokens for cost estimates (unset: env "
        "OPRAG_ANTHROPIC_PRICE_PER_MTOK / OPRAG_OPENAI_PRICE_PER_MTOK, else the model's list price).",
    )
    api_key: str | None = Field(
        default=None,
        description="The LLM extractor's API key: an EnvVar (env ANTHROPIC_API_KEY for anthropic and "
        "anthropic-batch, OPENAI_API_KEY for openai-compatible), never a value, since config is shown in the UI and "
        "stored with runs; unset reads that variable when the extractor is built.",
    )
    adapt: str = Field(
        default="self",
        description="self | ratings | llm | none (env OPRAG_ADAPT): fit a residual head on the offline model before "
        "extracting, on its own answers on the domain's text that the VADER lexicon agrees with (self), on weak "
        "labels from the domain's own star ratings (ratings), or on an LLM extractor's labels of a sample of the "
        "domain, the offline model then extracting the corpus (llm; enrich/ratings.py, enrich/teacher.py); the "
        "adapted model stays local.",
    )
    adapt_sample: int = Field(
        default=config.SAMPLE_MENTIONS,
        description="Mentions sampled for the fit (deterministic: documents by MD5 of their id).",
    )
    adapt_min_mentions: int = Field(
        default=config.MIN_RATED_MENTIONS, description="Fewer labelled mentions than this: adaptation is skipped."
    )

    def intensity_source(self) -> str:
        """Where intensity levels come from (`enrich/ratings.py` `INTENSITY_SOURCES`): the field, else the env."""
        return config.choice("OPRAG_INTENSITY", self.intensity or config.value("OPRAG_INTENSITY"))

    def build(self):
        from oprag_pipeline.enrich.factory import build_extractor

        price = config.parse_price(self.price_per_mtok, "extractor.price_per_mtok") if self.price_per_mtok else None
        # unset fields take the environment's values, each read only by the kinds that use it
        variables = _KIND_VARIABLES.get(self.kind, {})
        model = self.model or (config.value(variables["model"]) if "model" in variables else None)
        if price is None and "price_per_mtok" in variables:
            price = config.value(variables["price_per_mtok"])
        base_url, openai_mode = self.base_url, self.openai_mode
        if "base_url" in variables:
            base_url = base_url or config.value(variables["base_url"]) or config.value("OPENAI_BASE_URL")
        if "openai_mode" in variables:
            openai_mode = openai_mode or config.value(variables["openai_mode"])
        chosen: dict[str, Any] = {"document_tone": self.document_tone or config.value("OPRAG_DOCUMENT_TONE")}
        if self.kind == "offline":
            chosen["offline_scorer"] = self.offline_scorer or config.value("OPRAG_OFFLINE_SCORER")
        else:
            chosen["timeout"] = _field_or_env(self.timeout, "OPRAG_LLM_TIMEOUT")
        if self.kind == "anthropic-batch":
            chosen["batch_wait"] = config.value("OPRAG_LLM_BATCH_WAIT")
        return build_extractor(
            self.kind,
            model=model,
            base_url=base_url,
            max_concurrency=self.max_concurrency,
            openai_mode=openai_mode,
            price_per_mtok=price,
            api_key=self.api_key,
            **chosen,
        )


_KIND_VARIABLES = {
    "anthropic": {"model": "OPRAG_ANTHROPIC_MODEL", "price_per_mtok": "OPRAG_ANTHROPIC_PRICE_PER_MTOK"},
    "anthropic-batch": {"model": "OPRAG_ANTHROPIC_MODEL", "price_per_mtok": "OPRAG_ANTHROPIC_PRICE_PER_MTOK"},
    "openai-compatible": {
        "model": "OPRAG_OPENAI_MODEL",
        "price_per_mtok": "OPRAG_OPENAI_PRICE_PER_MTOK",
        "base_url": "OPRAG_OPENAI_BASE_URL",
        "openai_mode": "OPRAG_OPENAI_MODE",
    },
}
"""The extractor fields whose variable depends on the kind: set from the chosen kind's variables only."""

_KIND_SECRETS = {"anthropic": "ANTHROPIC_API_KEY", "anthropic-batch": "ANTHROPIC_API_KEY",
                 "openai-compatible": "OPENAI_API_KEY"}  # fmt: skip
"""The variable holding the chosen LLM extractor's key, which its `api_key` field takes as an `EnvVar`."""


def _choice(name: str) -> str:
    """The value, the default when unset, and the text as given when malformed: a field that always holds a choice
    (the extractor's kind) then fails the run that uses it, by name, instead of silently running the default."""
    return config.value_or_none(name) or config.raw(name)


def _field_or_env(field: Any, name: str) -> Any:
    """A field's value, or when it is None (the resource was made without `build_resources`, or the variable was
    malformed when it ran) the variable's value now: a malformed one then fails the run that uses it, by name."""
    return field if field is not None else config.value(name)


def run_config_default(name: str) -> Any:
    """The environment's value for the asset run-config field `name` feeds (`config.py` names it), read when the
    definitions load, or the declared default when it is malformed: the definitions must still load for the UI,
    and the CLI refuses the bad value before any run with a one-line message."""
    return config.value_or_default(name)


def run_config_fallback(name: str) -> str:
    """The environment's text for a run-config field left empty (the preference judge), read when the run uses
    it; "" when unset."""
    return config.raw(name)


def llm_client(kind: str):
    """An LLM extractor the environment configures (its key, model, timeout), for work beside the extraction: the
    answer writer and the preference judge."""
    return ExtractorResource(kind=kind).build()


def open_configured_store(data_dir: Path) -> VectorStore:
    """The vector store the environment configures (`QDRANT_URL`, else the embedded store under `data_dir`), for
    code outside a run (the CLI's query, the `ask` API, benchmarks); the caller closes it."""
    return VectorStoreResource(data_dir=str(data_dir)).open_store()


def _text(path: Path | None) -> str | None:
    return str(path) if path is not None else None


def _secret(name: str) -> EnvVar | None:
    """An `EnvVar` for a secret that is set (resolved in the run's process, shown in the UI by name only); None
    for one that is not, since an `EnvVar` of an unset variable fails the run."""
    return EnvVar(name) if config.is_set(name) else None


def build_resources(data_dir: Path | None = None, warehouse: Path | None = None) -> dict[str, object]:
    """Every resource the assets need, from the arguments or else the environment (the fields each variable feeds
    are declared in `config.py`). A malformed value leaves its field unset (the environment is then read when the
    field is used, and the run fails naming the variable), so the definitions still load for the UI; the CLI
    refuses malformed values before any run."""
    root = data_dir or settings.data_dir()
    kind = _choice("OPRAG_EXTRACTOR")
    by_kind = {field: config.value_or_none(name) for field, name in _KIND_VARIABLES.get(kind, {}).items()}
    if by_kind.get("price_per_mtok"):
        by_kind["price_per_mtok"] = ",".join(f"{p:g}" for p in by_kind["price_per_mtok"])
    batch_size = config.value_or_none("OPRAG_EXTRACT_BATCH_SIZE") or (
        DEFAULT_BATCH_SIZE if kind == "offline" else 10_000 if kind == "anthropic-batch" else DEFAULT_LLM_BATCH_SIZE
    )  # anthropic-batch: each committed batch is one Message Batch, so few large ones
    return {
        "paths": DataDirResource(data_dir=str(root)),
        "warehouse": warehouse_resource(warehouse or (settings.warehouse_path(root) if data_dir else None)),
        "embedder": EmbedderResource(
            model=config.value_or_none("OPRAG_EMBED_MODEL"),
            precision=config.value_or_none("OPRAG_EMBED_PRECISION"),
            vector_cache_dir=_text(config.value_or_none("OPRAG_VECTOR_CACHE_DIR")),
            shards=config.value_or_none("OPRAG_EMBED_SHARDS") or 2,
        ),
        "vector_store": VectorStoreResource(
            data_dir=str(root),
            url=config.value_or_none("QDRANT_URL"),
            api_key=_secret("QDRANT_API_KEY"),
            on_disk=config.value_or_none("OPRAG_QDRANT_ON_DISK"),
            max_segment_kb=config.value_or_none("OPRAG_QDRANT_SEGMENT_KB"),
            shard_number=config.value_or_none("OPRAG_QDRANT_SHARD_NUMBER"),
            replication_factor=config.value_or_none("OPRAG_QDRANT_REPLICATION_FACTOR"),
            quantization=config.value_or_none("OPRAG_QDRANT_QUANTIZATION"),
        ),
        "extractor": ExtractorResource(
            kind=kind,
            batch_size=batch_size,
            adapt=_choice("OPRAG_ADAPT"),
            shards=config.value_or_none("OPRAG_EXTRACT_SHARDS") or 2,
            shard_uri=config.value_or_none("OPRAG_SHARD_URI"),
            offline_scorer=config.value_or_none("OPRAG_OFFLINE_SCORER"),
            document_tone=config.value_or_none("OPRAG_DOCUMENT_TONE"),
            intensity=config.value_or_none("OPRAG_INTENSITY"),
            timeout=config.value_or_none("OPRAG_LLM_TIMEOUT"),
            api_key=_secret(_KIND_SECRETS[kind]) if kind in _KIND_SECRETS else None,
            **by_kind,
        ),
    }


class VectorStoreResource(ConfigurableResource):
    """Dagster resource for the vector store (its adapters are in `index/vector_store/`).

    It imports the adapters only when a store is opened, so stages that never touch vectors (ingest, registry)
    do not load the vector-store module or the Qdrant libraries.

    `resources.build_resources` fills the fields from the environment (see `config.py`), so the launchpad shows
    and overrides them per run. The API key is an `EnvVar("QDRANT_API_KEY")`, never a plain value: config is shown
    in the Dagster UI and stored with runs, an `EnvVar` only by name. Stores handed out by `open_store` are closed
    when the step ends (Edge then builds its indexes and flushes), so assets need not close them, though they may.
    """

    data_dir: str = Field(description="Data directory; the embedded store lives in its `qdrant/` folder.")
    url: str | None = Field(
        default=None, description="Qdrant server URL; unset uses QDRANT_URL, and if that is unset the embedded store."
    )
    api_key: str | None = Field(
        default=None,
        description="The server's API key: set it as an EnvVar (env QDRANT_API_KEY), never as a value; unset uses "
        "QDRANT_API_KEY.",
    )
    on_disk: bool | None = Field(
        default=None,
        description="New embedded collections keep vectors, HNSW graph and payload memory-mapped on disk "
        "(unset: env OPRAG_QDRANT_ON_DISK=1, else off).",
    )
    max_segment_kb: int | None = Field(
        default=None,
        ge=1,
        description="Largest segment (KB of vectors) of new embedded collections (unset: env "
        "OPRAG_QDRANT_SEGMENT_KB, else the embedded store's default).",
    )
    shard_number: int | None = Field(
        default=None,
        description="Shards per new collection on a Qdrant server/cluster "
        "(unset: OPRAG_QDRANT_SHARD_NUMBER, else the server's default).",
    )
    replication_factor: int | None = Field(
        default=None,
        description="Replicas per shard on a Qdrant cluster "
        "(unset: OPRAG_QDRANT_REPLICATION_FACTOR, else the server's default).",
    )
    quantization: str | None = Field(
        default=None,
        description="'int8': an 8-bit copy of the dense vectors in RAM (unset: OPRAG_QDRANT_QUANTIZATION).",
    )

    _opened: list[VectorStore] = PrivateAttr(default_factory=list)

    def collection_options(self) -> CollectionOptions:
        """The resource's fields, where set, over the environment's settings."""
        from oprag_pipeline.index.vector_store import CollectionOptions

        return CollectionOptions(
            shard_number=_field_or_env(self.shard_number, "OPRAG_QDRANT_SHARD_NUMBER"),
            replication_factor=_field_or_env(self.replication_factor, "OPRAG_QDRANT_REPLICATION_FACTOR"),
            quantization=_field_or_env(self.quantization, "OPRAG_QDRANT_QUANTIZATION"),
        )

    def open_store(self) -> VectorStore:
        """Open the configured store (caller may close it; it is closed at teardown anyway)."""
        from oprag_pipeline.index.vector_store import open_vector_store

        url = self.url or config.value("QDRANT_URL")
        store = open_vector_store(
            Path(self.data_dir),
            url=url,
            options=self.collection_options(),
            api_key=(self.api_key or config.secret("QDRANT_API_KEY")) if url else None,
            on_disk=_field_or_env(self.on_disk, "OPRAG_QDRANT_ON_DISK"),
            max_segment_kb=self.max_segment_kb or config.value("OPRAG_QDRANT_SEGMENT_KB"),
        )
        self._opened.append(store)
        return store

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        while self._opened:
            self._opened.pop().close()
