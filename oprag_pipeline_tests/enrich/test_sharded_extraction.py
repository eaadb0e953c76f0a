"""Extraction in shards: the shard of a document, the Parquet parts shards commit, the extractor a shard rebuilds,
and the same tables whether the shards run one after another in one process or side by side in several."""

from __future__ import annotations

import copy
import hashlib
import itertools
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from dagster import AssetSelection, DagsterEventType, DagsterInstance, materialize

from oprag_pipeline.definitions import ALL_ASSETS
from oprag_pipeline.demo import generate_demo
from oprag_pipeline.enrich import ratings, shards, store
from oprag_pipeline.enrich.offline import OfflineExtractor
from oprag_pipeline.partitions import DOMAIN_PARTITIONS_NAME
from oprag_pipeline.resources import ExtractorResource, build_resources
from oprag_pipeline.schema import DocumentInput, ExtractedOpinion, ExtractionOutcome
from oprag_pipeline_tests.enrich.test_rating_adaptation import write_domain
from oprag_pipeline_tests.fake_llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]


def test_a_document_keeps_its_shard_and_every_document_has_one() -> None:
    ids = [f"doc-{i}" for i in range(3000)]
    groups = shards.split_into_shards(ids, 4)
    assert sorted(i for g in groups for i in g) == sorted(ids)
    assert all(shards.shard_of(i, 4) == k for k, g in enumerate(groups) for i in g)
    # MD5 of the id, so the same on any machine and in any process (Python's hash() is salted per process)
    assert shards.shard_of("doc-7", 4) == int(hashlib.md5(b"doc-7").hexdigest()[:16], 16) % 4
    sizes = [len(g) for g in groups]
    assert min(sizes) > 0.8 * len(ids) / 4, sizes  # balanced within 20% on 3,000 ids
    assert shards.split_into_shards(ids, 1) == [ids]


def _outcomes(n: int, start: int = 0) -> list[ExtractionOutcome]:
    out = []
    for i in range(start, start + n):
        opinion = ExtractedOpinion(
            entity_id="e1", entity_name="battery", sentiment="positive", intensity="high", impact="low"
        )
        out.append(ExtractionOutcome(doc_id=f"d{i}", content_hash=f"h{i}", opinions=[opinion]))
    out[-1] = ExtractionOutcome(doc_id=f"d{start + n - 1}", content_hash="hx", failed=True, failure_reason="timeout")
    return out


def test_parts_round_trip_and_only_complete_parts_are_merged(tmp_path: Path) -> None:
    shard_store = shards.ShardStore(tmp_path / "shards")
    folder = shard_store.shard_folder("laptops", 0, 2)
    documents = [DocumentInput(doc_id=f"d{i}", text=f"text {i}", content_hash=f"h{i}") for i in range(5)]
    assert shard_store.write_input(folder, iter([documents[:3], documents[3:]])) == 5
    assert [d for batch in shard_store.read_input(folder, 2) for d in batch] == documents

    key = store.CacheKey(3, "offline", "v")
    shard_store.write_part(folder, 0, *store.batch_tables("laptops", key, _outcomes(4), "run-1"))
    shard_store.write_part(folder, 1, *store.batch_tables("laptops", key, _outcomes(3, start=4), "run-1"))
    # a part whose writer died before its header: its detail is there, the part is not complete
    header, detail = store.batch_tables("laptops", key, _outcomes(2, start=7), "run-1")
    shard_store._write(folder + "/part-000002.detail.parquet", detail)
    assert [Path(h).name for h, _ in shard_store.complete_parts("laptops")] == [
        "part-000000.header.parquet",
        "part-000001.header.parquet",
    ]
    header, detail = shard_store.read_part(*shard_store.complete_parts("laptops")[1])
    assert header.column("doc_id").to_pylist() == ["d4", "d5", "d6"]
    assert header.column("status").to_pylist() == ["ok", "ok", "failed"]
    assert detail.num_rows == 2  # the failed document has no opinion rows
    assert not list(Path(folder).glob(".*.tmp"))  # every file was moved into place

    with duckdb.connect(str(tmp_path / "w.duckdb")) as conn:
        store.ensure_tables(conn)
        for h, d in shard_store.complete_parts("laptops"):
            store.commit_tables(conn, *shard_store.read_part(h, d))
        statuses = Counter(s for (s,) in conn.execute("SELECT status FROM extraction_cache").fetchall())
    assert statuses == {"ok": 5, "failed": 2}
    shard_store.clear("laptops")
    assert shard_store.complete_parts("laptops") == []
    shard_store.clear("laptops")  # clearing nothing is fine


def test_a_shard_rebuilds_the_adapted_extractor_or_refuses() -> None:
    engine = OfflineExtractor()
    if not getattr(engine.scorer, "exposes_features", False):
        pytest.skip("the aspect model is not built in this checkout (the VADER scorer has nothing to adapt)")
    width = engine.scorer.features([("The battery lasts all day.", 4, 11)]).shape[1]
    adaptation = ratings.Adaptation(
        "self", offsets=(0.1, 0.0, -0.1), head=tuple((0.01, 0.0, -0.01) for _ in range(width))
    )
    scorer = copy.copy(engine.scorer)
    ratings.apply_adaptation(scorer, adaptation)
    expected = OfflineExtractor(scorer=scorer).version
    adapted = ratings.adapted_extractor(engine, adaptation, engine.name, expected)
    # the version names the adaptation, so the rebuilt shard extractor is told apart from the shipped one ...
    assert adapted.version != engine.version
    again = ratings.adapted_extractor(OfflineExtractor(), adaptation, engine.name, adapted.version)
    assert again.version == adapted.version  # ... and every shard rebuilds the same one
    assert engine.scorer.residual_head is None  # the shared model is not changed
    with pytest.raises(RuntimeError, match="the plan extracts with"):
        ratings.adapted_extractor(engine, adaptation, engine.name, engine.version)
    assert ratings.adapted_extractor(engine, ratings.Adaptation("none"), engine.name, engine.version) is engine


def _opinion_rows(warehouse: Path, domain: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        return conn.execute(
            """SELECT doc_id, entity_id, sentiment, intensity, impact, evidence_type, emotions, confidence
               FROM opinions WHERE domain = ? ORDER BY doc_id, entity_id""",
            [domain],
        ).fetchall()


def test_the_number_of_shards_changes_no_opinion(tmp_path: Path) -> None:
    tables = {}
    for count in (1, 3):
        data_dir = tmp_path / f"shards{count}"
        generate_demo(data_dir, docs=120, seed=11, domains=("hotels",))
        resources = build_resources(data_dir)
        resources["extractor"] = ExtractorResource(kind="offline", adapt="none", shards=count, batch_size=16)
        with DagsterInstance.ephemeral() as instance:
            instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["hotels"])
            result = materialize(
                ALL_ASSETS,
                partition_key="hotels",
                instance=instance,
                resources=resources,
                selection=AssetSelection.assets("opinions").upstream(),
            )
        assert result.success
        (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == "opinions"]
        meta = {k: v.value for k, v in event.step_materialization_data.materialization.metadata.items()}
        assert meta["shards"] == count and sum(meta["shard_documents"]) == meta["extracted_this_run"] == 120
        shard_steps = [
            e.step_key for e in result.all_events
            if e.event_type == DagsterEventType.STEP_SUCCESS and "extract_shard" in (e.step_key or "")
        ]  # fmt: skip
        assert len(shard_steps) == count
        assert not (data_dir / "shards" / "hotels").exists()  # merged and removed
        tables[count] = _opinion_rows(data_dir / "warehouse.duckdb", "hotels")
    assert tables[1] and tables[1] == tables[3]


@pytest.mark.slow
def test_the_multiprocess_executor_gives_the_in_process_tables_and_collection(tmp_path: Path) -> None:
    """`oprag run` with OPRAG_EXECUTOR=multiprocess: a process per step, the two shards side by side, the warehouse
    steps one at a time; the opinions table and the entity-split KB are the in-process run's."""
    results = {}
    for executor in ("in_process", "multiprocess"):
        data_dir = tmp_path / executor
        generate_demo(data_dir, docs=160, seed=3, domains=("hotels",))
        env = {
            **os.environ,
            "OPRAG_DATA_DIR": str(data_dir),
            "DAGSTER_HOME": str(tmp_path / f"home-{executor}"),
            "OPRAG_EXECUTOR": executor,
            "OPRAG_EXTRACT_SHARDS": "2",
            "OPRAG_EXTRACT_BATCH_SIZE": "20",
        }
        command = [
            sys.executable,
            "-m",
            "oprag_pipeline.cli",
            "run",
            "--select",
            '+key:"entity_split_kb" or +key:"enriched_entity_docs"',
        ]
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-3000:]
        with DagsterInstance.from_config(str(tmp_path / f"home-{executor}")) as instance:
            (run,) = instance.get_run_records()
            events = instance.all_logs(run.dagster_run.run_id)
        starts = {
            e.step_key: e.timestamp
            for e in events
            if e.dagster_event and e.dagster_event.event_type_value == "STEP_START"
        }
        ends = {
            e.step_key: e.timestamp
            for e in events
            if e.dagster_event and e.dagster_event.event_type_value == "STEP_SUCCESS"
        }
        pids = {e.dagster_event.pid for e in events if e.dagster_event and e.dagster_event.step_key} - {None}
        vector_store = build_resources(data_dir)["vector_store"].open_store()
        try:
            points = sorted(vector_store.existing_payload_hashes("hotels.entity_split_kb").items())
        finally:
            vector_store.close()
        results[executor] = (_opinion_rows(data_dir / "warehouse.duckdb", "hotels"), points, starts, ends, pids)
    (rows_in, points_in, *_), (rows_mp, points_mp, starts, ends, pids) = results["in_process"], results["multiprocess"]
    assert rows_in and rows_in == rows_mp
    assert points_in and points_in == points_mp
    assert len(results["in_process"][4]) == 1 and len(pids) > 2  # one process, then a process per step
    shard_a, shard_b = sorted(k for k in starts if "extract_shard" in k)
    if (os.cpu_count() or 1) >= 2:  # with one core the executor runs one step at a time
        assert starts[shard_b] < ends[shard_a] and starts[shard_a] < ends[shard_b], "the shards did not overlap"
    assert sum("embed_shard" in k for k in ends) == 2  # the per-entity KBs' texts embedded in two shards too
    parquet_only = ("extract_shard", "embed_shard", "collect_embedding")  # steps that never open the warehouse
    warehouse_steps = sorted(
        (starts[k], ends[k]) for k in starts if k in ends and not any(step in k for step in parquet_only)
    )
    for (_, end), (start, _) in itertools.pairwise(warehouse_steps):
        assert start >= end - 1e-3, "two warehouse steps ran at once"


def test_llm_extraction_runs_in_shards_with_its_tokens_and_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The anthropic extractor through the real client against the local fake: each shard step builds its own
    client, sends one request per document of its shard, and the merge step sums the shards' tokens and cost."""
    data_dir = tmp_path / "data"
    write_domain(data_dir / "raw" / "laptops", 24)
    monkeypatch.setenv("OPRAG_DATA_DIR", str(data_dir))
    for name in ("ANTHROPIC_AUTH_TOKEN", "OPRAG_ANTHROPIC_MODEL", "OPRAG_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + "0" * 24)
    monkeypatch.setenv("OPRAG_ANTHROPIC_PRICE_PER_MTOK", "3,15")
    with FakeLLMServer() as server, DagsterInstance.ephemeral() as instance:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        instance.add_dynamic_partitions(DOMAIN_PARTITIONS_NAME, ["laptops"])
        resources = build_resources(data_dir)
        resources["extractor"] = ExtractorResource(
            kind="anthropic", adapt="none", shards=3, batch_size=5, price_per_mtok="3,15"
        )
        upstream = AssetSelection.assets("opinions").upstream() - AssetSelection.assets("opinions")
        kwargs = {"partition_key": "laptops", "instance": instance, "resources": resources}
        assert materialize(ALL_ASSETS, selection=upstream, **kwargs).success  # the registry's LLM bootstrap too
        before = len(server.requests)
        result = materialize(ALL_ASSETS, selection=AssetSelection.assets("opinions"), **kwargs)
        assert result.success
        extraction_requests = [r for r in server.requests[before:] if r.usage is not None]
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == "opinions"]
    meta = {k: v.value for k, v in event.step_materialization_data.materialization.metadata.items()}
    assert meta["extracted_this_run"] == 24 and meta["shards"] == 3 and sum(meta["shard_documents"]) == 24
    assert len(extraction_requests) == 24  # one request per document, whichever shard it fell in
    tokens_in = sum(r.usage[0] for r in extraction_requests)
    tokens_out = sum(r.usage[1] for r in extraction_requests)
    assert meta["input_tokens"] == tokens_in > 0 and meta["output_tokens"] == tokens_out > 0
    assert meta["estimated_cost_usd"] == pytest.approx((3 * tokens_in + 15 * tokens_out) / 1e6, abs=1e-4)
    assert meta["opinions"] == len(_opinion_rows(data_dir / "warehouse.duckdb", "laptops"))
