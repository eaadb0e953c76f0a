"""One declaration of the environment (`oprag_pipeline/config.py`): the docs agree with it, the code reads nothing
else, each variable lands in the Dagster field it names, and a field set for a run beats the environment."""

import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
from dagster import AssetKey, EnvVar, asset, materialize

from oprag_pipeline import accelerators, config, embedding_models
from oprag_pipeline.enrich import factory, llm, ratings
from oprag_pipeline.index import assets as index_assets
from oprag_pipeline.index.vector_store import EdgeVectorStore
from oprag_pipeline.resources import ExtractorResource, VectorStoreResource, build_resources

CHECKOUT = Path(__file__).resolve().parents[2]
SCANNED = ("oprag_pipeline", "benchmarks", "scripts")
PREFIXES = ("OPRAG_", "QDRANT_", "ANTHROPIC_", "OPENAI_")

# Reads of a variable by name: os.environ / getenv, the config accessors, a `*_ENV = "NAME"` constant, `${NAME` in
# a shell script. Writes (`os.environ[NAME] = ...`, env dicts handed to subprocesses) are not reads.
_NAME = r"([A-Z][A-Z0-9_]*[A-Z0-9])"
_READS = [
    re.compile(r"environ\.get\(\s*[\"']" + _NAME + r"[\"']"),
    re.compile(r"environ\[\s*[\"']" + _NAME + r"[\"']\s*\](?!\s*=[^=])"),
    re.compile(r"getenv\(\s*[\"']" + _NAME + r"[\"']"),
    re.compile(r"\b(?:config|env_config)\.\w+\(\s*[\"']" + _NAME + r"[\"']"),
    re.compile(r"_ENV(?::\s*str)?\s*=\s*[\"']" + _NAME + r"[\"']"),
    re.compile(r"\$\{?" + _NAME),
]
# Any mention of one of our own prefixes names a variable, in code, messages and docstrings alike.
_MENTION = re.compile(r"(?<![A-Za-z0-9_])((?:OPRAG|QDRANT)_[A-Z0-9_]*[A-Z0-9])(?![A-Za-z0-9_])")
# Direct reads of the environment, allowed in config.py alone.
_DIRECT = re.compile(r"os\.getenv\(|os\.environ\.get\(|os\.environ\[[^\]]+\](?!\s*=[^=])")


def names_read(text: str) -> set[str]:
    """Environment variable names `text` reads or (for our prefixes) mentions."""
    found = {m.group(1) for pattern in _READS for m in pattern.finditer(text)}
    found = {n for n in found if n.startswith(PREFIXES) or n == "DAGSTER_HOME"}
    return found | {m.group(1) for m in _MENTION.finditer(text)}


def source_files() -> list[Path]:
    files = [p for top in SCANNED for p in (CHECKOUT / top).rglob("*") if p.suffix in (".py", ".sh")]
    return sorted(p for p in files if "__pycache__" not in p.parts)


def test_the_scanner_sees_every_way_of_reading() -> None:
    """The scan below is only as good as its patterns: each kind of read is recognised, a write is not."""
    text = (
        'os.environ.get("OPRAG_A")\nos.environ["OPRAG_B"]\nos.getenv("OPRAG_C")\nconfig.value("OPRAG_D")\n'
        'X_ENV = "OPRAG_E"\nos.environ["NOT_READ"] = "1"\nenv_config.raw("ANTHROPIC_F")\n'
    )
    assert names_read(text) == {"OPRAG_A", "OPRAG_B", "OPRAG_C", "OPRAG_D", "OPRAG_E", "ANTHROPIC_F"}
    assert names_read('echo "${OPRAG_G:-1}"') == {"OPRAG_G"}
    assert _DIRECT.search('os.environ.get("X")') and not _DIRECT.search('os.environ["X"] = "1"')


def test_code_reads_no_variable_that_config_does_not_declare() -> None:
    undeclared: dict[str, list[str]] = {}
    for path in source_files():
        if path.name == "config.py" and path.parent.name == "oprag_pipeline":
            continue
        for name in names_read(path.read_text(encoding="utf-8")):
            if name not in config.BY_NAME:
                undeclared.setdefault(name, []).append(str(path.relative_to(CHECKOUT)))
    assert not undeclared, f"declare these in oprag_pipeline/config.py: {undeclared}"


def test_the_pipeline_reads_the_environment_only_through_config() -> None:
    direct = [
        f"{path.relative_to(CHECKOUT)}:{text[: m.start()].count(chr(10)) + 1}"
        for path in (CHECKOUT / "oprag_pipeline").rglob("*.py")
        if path != CHECKOUT / "oprag_pipeline" / "config.py"
        for text in [path.read_text(encoding="utf-8")]
        for m in _DIRECT.finditer(text)
    ]
    assert not direct, f"read these through oprag_pipeline.config: {direct}"


def test_every_declared_variable_is_read_somewhere() -> None:
    """A declaration nobody reads is documentation of a setting that does nothing."""
    read = set().union(*(names_read(p.read_text(encoding="utf-8")) for p in source_files() if p.name != "config.py"))
    unread = [v.name for v in config.VARIABLES if v.read_by != "sdk" and v.name not in read]
    assert not unread, unread


def test_configuration_doc_is_generated_from_config() -> None:
    """docs/configuration.md's table is current: regenerating it from `config.VARIABLES` changes nothing."""
    text = config.CONFIGURATION_DOC.read_text(encoding="utf-8")
    assert config.TABLE_START in text and config.TABLE_END in text
    assert config.render_document(text) == text, "run: python -m oprag_pipeline.config --update-docs"
    for variable in config.VARIABLES:
        assert f"| `{variable.name}` |" in text


def test_the_generator_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert config.main(["--markdown"]) == 0
    assert capsys.readouterr().out.strip() == config.markdown_table()


def test_render_document_refuses_a_document_without_markers() -> None:
    with pytest.raises(ValueError, match="config-table"):
        config.render_document("## Configuration\n\n| variable | default |\n")
    stale = f"before\n{config.TABLE_START}\n| old |\n{config.TABLE_END}\nafter\n"
    rendered = config.render_document(stale)
    assert "| old |" not in rendered and rendered.startswith("before\n") and rendered.endswith("after\n")
    assert config.render_document(rendered) == rendered


def test_declared_choices_and_defaults_match_the_code_that_uses_them() -> None:
    """The declarations repeat nothing by hand that the code decides elsewhere."""
    assert set(config.declared("OPRAG_EMBED_PRECISION").choices) == set(embedding_models.DENSE_VARIANTS)
    assert config.declared("OPRAG_ANTHROPIC_MODEL").default == llm.DEFAULT_ANTHROPIC_MODEL
    assert llm.DEFAULT_OPENAI_BASE_URL in config.declared("OPRAG_OPENAI_BASE_URL").default_text()
    assert config.declared("OPRAG_ADAPT").choices == ratings.ADAPT_MODES
    assert config.declared("OPRAG_INTENSITY").choices == ratings.INTENSITY_SOURCES
    assert config.declared("OPRAG_ENRICHED_DENSE").choices == get_args(index_assets.DenseMode)
    assert config.declared("OPRAG_DEVICE").choices == accelerators.DEVICES
    assert config.declared("OPRAG_EXTRACTOR").choices == factory.EXTRACTORS


def test_each_declared_field_exists() -> None:
    """`field` names a resource field (a key of build_resources) or an asset's run-config field."""
    from oprag_pipeline.definitions import build_definitions

    resources = build_resources()
    assert tuple(resources) == config.RESOURCE_KEYS
    defs = build_definitions()
    for variable in config.VARIABLES:
        if not variable.field:
            continue
        owner, field = variable.field.split(".")
        if owner in resources:
            assert field in type(resources[owner]).model_fields, variable.field
        else:
            schema = defs.resolve_assets_def(AssetKey(owner)).op.config_schema
            assert field in schema.config_type.fields, variable.field


SAMPLES = {"int": "7", "float": "12.5", "flag": "1", "url": "http://127.0.0.1:1", "price": "1.5,2"}


@pytest.mark.parametrize(
    "variable",
    [v for v in config.VARIABLES if v.field and v.field.split(".")[0] in ("extractor", "embedder", "vector_store")],
    ids=lambda v: v.name,
)
def test_the_environment_fills_the_field_it_names(
    variable: config.Variable, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = SAMPLES.get(variable.kind) or next((c for c in variable.choices if c != variable.default), "x-model")
    monkeypatch.setenv(variable.name, sample)
    if variable.check in ("anthropic", "openai-compatible"):  # fields whose variable depends on the kind
        monkeypatch.setenv("OPRAG_EXTRACTOR", variable.check)
    owner, field = variable.field.split(".")
    got = getattr(build_resources(data_dir)[owner], field)
    if variable.secret:
        assert isinstance(got, EnvVar) and got.env_var_name == variable.name
    elif variable.kind == "price":
        assert got == "1.5,2"
    else:
        expected = config.value(variable.name)
        assert got == (str(expected) if variable.kind == "path" else expected), (got, sample)
        assert got != variable.default


def test_a_malformed_value_leaves_its_field_to_fail_the_run_by_name(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The definitions still load (the UI must show them); the run that uses the value names the variable."""
    monkeypatch.setenv("OPRAG_QDRANT_SEGMENT_KB", "lots")
    monkeypatch.setenv("OPRAG_EXTRACTOR", "antropic")
    resources = build_resources(data_dir)
    assert resources["vector_store"].max_segment_kb is None
    with pytest.raises(ValueError, match="OPRAG_QDRANT_SEGMENT_KB"):
        resources["vector_store"].open_store()
    assert resources["extractor"].kind == "antropic"  # not silently the offline default
    with pytest.raises(ValueError, match="OPRAG_EXTRACTOR"):
        resources["extractor"].build()
    problems = config.problems()
    assert any("OPRAG_QDRANT_SEGMENT_KB='lots'" in p for p in problems)
    assert any("OPRAG_EXTRACTOR='antropic'" in p for p in problems)


def test_problems_never_show_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPRAG_EXTRACTOR", "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key,1")
    monkeypatch.setenv("OPRAG_ANTHROPIC_PRICE_PER_MTOK", "cheap")
    problems = config.problems()
    assert any("OPRAG_ANTHROPIC_PRICE_PER_MTOK" in p for p in problems)
    assert not any("sk-ant" in p for p in problems)
    assert config.secret("ANTHROPIC_API_KEY") == "sk-ant-not-a-real-key,1"
    with pytest.raises(KeyError, match="not declared secret"):
        config.secret("OPRAG_EXTRACTOR")
    with pytest.raises(KeyError, match="not declared"):
        config.value("OPRAG_NO_SUCH_SETTING")


@asset
def settings_seen(extractor: ExtractorResource, vector_store: VectorStoreResource) -> dict:
    """What a step sees of the resources: their fields, and what the vector store built from them."""
    store = vector_store.open_store()
    assert isinstance(store, EdgeVectorStore)
    seen = {
        "batch_size": extractor.batch_size,
        "offline_scorer": extractor.offline_scorer,
        "max_segment_kb": store.max_segment_kb,
        "on_disk": store.on_disk,
        "api_key": vector_store.api_key,
    }
    return seen


def launchpad_default(resource) -> dict:
    """The config Dagster offers for `resource` when a run gives none (what the launchpad scaffolds)."""
    return resource.get_resource_definition().config_schema.as_field().default_value


def test_a_field_set_for_the_run_overrides_the_environment(
    data_dir: Path, dagster_instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPRAG_EXTRACT_BATCH_SIZE", "9")
    monkeypatch.setenv("OPRAG_OFFLINE_SCORER", "vader")
    monkeypatch.setenv("OPRAG_QDRANT_SEGMENT_KB", "1234")
    monkeypatch.setenv("QDRANT_API_KEY", "qdrant-test-secret")
    resources = build_resources(data_dir)

    from_env = materialize([settings_seen], resources=resources, instance=dagster_instance)
    assert from_env.output_for_node("settings_seen") == {
        "batch_size": 9,
        "offline_scorer": "vader",
        "max_segment_kb": 1234,
        "on_disk": False,
        "api_key": "qdrant-test-secret",  # the EnvVar, resolved inside the run
    }

    # What the launchpad offers for a resource is the environment's values (a secret by name only); a run changes
    # some of them and sends the whole config, as the launchpad's scaffolded config does.
    shown = {key: launchpad_default(resources[key]) for key in ("extractor", "vector_store")}
    assert shown["extractor"]["batch_size"] == 9 and shown["vector_store"]["max_segment_kb"] == 1234
    assert shown["vector_store"]["api_key"] == {"env": "QDRANT_API_KEY"}
    assert "qdrant-test-secret" not in str(shown)
    overrides = {
        "extractor": {"config": {**shown["extractor"], "batch_size": 3, "offline_scorer": "model"}},
        "vector_store": {"config": {**shown["vector_store"], "max_segment_kb": 99, "on_disk": True}},
    }
    run = materialize(
        [settings_seen], resources=resources, instance=dagster_instance, run_config={"resources": overrides}
    )
    seen = run.output_for_node("settings_seen")
    assert seen["batch_size"] == 3 and seen["offline_scorer"] == "model"
    assert seen["max_segment_kb"] == 99 and seen["on_disk"] is True
    stored = dagster_instance.get_run_by_id(run.run_id).run_config
    assert "qdrant-test-secret" not in str(stored)


def test_loading_the_definitions_creates_nothing(tmp_path: Path) -> None:
    """Importing the definitions (what `dagster dev`, `dg check defs` and every CLI command do) leaves the disk
    alone: the warehouse folder is made by the first run that opens it."""
    data, home = tmp_path / "not-yet" / "data", tmp_path / "not-yet" / "home"
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(CHECKOUT),
        "OPRAG_DATA_DIR": str(data),
        "DAGSTER_HOME": str(home),
        "OPRAG_MODEL_DIR": config.raw("OPRAG_MODEL_DIR") or str(CHECKOUT / "data" / "models"),
    }
    script = "from oprag_pipeline.definitions import defs\nprint(defs.resources['warehouse'].database)\n"
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(data / "warehouse.duckdb")
    assert not (tmp_path / "not-yet").exists()


# Who reads the environment. `config.py` declares and parses it; `settings.py` reads the process's paths and device;
# `resources.py` builds the resources from it (`build_resources`, and the unset fields of a resource made without
# it); `definitions.py` and `celery_app.py` choose the executor and broker when the definitions or a worker load;
# `cli.py` sets OPRAG_DATA_DIR / DAGSTER_HOME and checks the environment before a command. Every other module takes
# its settings as arguments.
ENVIRONMENT_READERS = {
    "oprag_pipeline/config.py",
    "oprag_pipeline/settings.py",
    "oprag_pipeline/resources.py",
    "oprag_pipeline/definitions.py",
    "oprag_pipeline/celery_app.py",
    "oprag_pipeline/cli.py",
}
# Still reading, to move: the LLM adapters fall back to their API key's variable when the factory passes none (the
# extractor resource passes its `EnvVar`, resolved in the run; the tests build adapters with the key in the
# environment).
NOT_YET_MOVED = {
    "oprag_pipeline/enrich/llm/anthropic_api.py",
    "oprag_pipeline/enrich/llm/openai_compatible.py",
}
_READING_FUNCTIONS = "value|raw|is_set|secret|value_or_none|value_or_default|problems"
_ENVIRONMENT_READ = re.compile(
    rf"\b\w*config\.(?:{_READING_FUNCTIONS})\("
    rf"|from oprag_pipeline\.config import [^\n]*\b(?:{_READING_FUNCTIONS})\b"
    r"|\bos\.environ\b|\bgetenv\("
)


def environment_reads(text: str) -> list[int]:
    """Line numbers of `text` that read the environment (a config reading function, os.environ, getenv)."""
    return [text[: m.start()].count("\n") + 1 for m in _ENVIRONMENT_READ.finditer(text)]


def test_the_reading_scan_sees_each_kind_of_read() -> None:
    text = (
        'config.value("A")\nenv_config.raw("B")\nconfig.value_or_default("C")\nos.environ["D"] = "1"\n'
        'os.getenv("E")\nfrom oprag_pipeline.config import secret\nconfig.declared("F").default\n'
        'config.choice("G", x)\nconfig.judge or x\n'
    )
    assert environment_reads(text) == [1, 2, 3, 4, 5, 6]


def test_only_the_build_step_reads_the_environment() -> None:
    """Library modules and assets take their settings as arguments or from resources; reading a declaration
    (`config.declared(...).default`, the Literal types, `config.choice`) is not reading the environment."""
    package = CHECKOUT / "oprag_pipeline"
    reading = {
        str(path.relative_to(CHECKOUT)): lines
        for path in sorted(package.rglob("*.py"))
        if "__pycache__" not in path.parts
        for lines in [environment_reads(path.read_text(encoding="utf-8"))]
        if lines
    }
    unexpected = {path: lines for path, lines in reading.items() if path not in ENVIRONMENT_READERS | NOT_YET_MOVED}
    assert not unexpected, f"take these settings as arguments, resolved by resources.py: {unexpected}"
    moved = NOT_YET_MOVED - set(reading)
    assert not moved, f"these no longer read the environment: drop them from NOT_YET_MOVED: {moved}"
