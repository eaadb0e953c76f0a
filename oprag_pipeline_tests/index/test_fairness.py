"""Source-fair retrieval: the cap's maths on hand-made candidates, and fair mode against a real embedded Qdrant
engine and a real DuckDB warehouse, where one prolific author dominates the plain hybrid list."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pytest

from oprag_pipeline.index import fairness
from oprag_pipeline.index.diversify import Candidate
from oprag_pipeline.index.query import run_query
from oprag_pipeline.index.retrieval import ALL_MODES, FAIR, Retriever
from oprag_pipeline.index.vector_store import EdgeVectorStore, IndexPoint, point_uuid
from oprag_pipeline.ingest.store import ensure_tables as ensure_ingest_tables
from oprag_pipeline.sources import top_author_share

# --- pure functions -------------------------------------------------------------------------------------------


def test_source_cap_runs_from_k_to_one_on_a_log_scale() -> None:
    assert [fairness.source_cap(20, w) for w in fairness.FAIR_WEIGHTS] == [20, 9, 4, 2, 1]
    assert fairness.source_cap(10, 0.5) == 3  # ⌊√10⌋
    assert fairness.source_cap(1, 1.0) == 1 and fairness.source_cap(0, 0.5) == 0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fairness.source_cap(10, 1.5)


def _candidates(sources: str) -> list[Candidate]:
    """One candidate per letter, best first (relevance 1.0, 0.9, …), the letter naming its source."""
    return [Candidate(f"p{i:02d}", 1.0 - i / 10, s) for i, s in enumerate(sources)]


def test_cap_sources_skips_a_full_source_then_fills_with_what_it_skipped() -> None:
    picked = fairness.cap_sources(_candidates("aaaabca"), 4, cap=2)
    assert [c.point_id for c in picked] == ["p00", "p01", "p04", "p05"]  # a, a, b, c: the third and fourth a wait
    # too few other sources for 6 slots: the skipped a's come back, best first, after the capped list
    picked = fairness.cap_sources(_candidates("aaaabc"), 6, cap=1)
    assert [c.point_id for c in picked] == ["p00", "p04", "p05", "p01", "p02", "p03"]
    # a cap of k is the relevance order itself
    assert fairness.cap_sources(_candidates("aaaabc"), 3, cap=3) == _candidates("aaaabc")[:3]


def test_cap_sources_orders_ties_by_point_id_and_counts_unknown_sources_apart() -> None:
    tied = [Candidate("z", 0.5, "a"), Candidate("y", 0.5, "a"), Candidate("x", 0.5, "b")]
    assert [c.point_id for c in fairness.cap_sources(tied, 2, cap=1)] == ["x", "y"]
    anonymous = [Candidate(f"p{i}", 1.0 - i / 10, None) for i in range(3)]
    assert len(fairness.cap_sources(anonymous, 3, cap=1)) == 3  # no source is shared: nothing is skipped
    with pytest.raises(ValueError, match="at least one"):
        fairness.cap_sources(tied, 2, cap=0)


def test_near_identical_texts_join_their_authors_into_one_source() -> None:
    copied = "the shuttle never came and the driver would not answer the phone at all"
    source_of = {"p1": "ann", "p2": "bob", "p3": "bob", "p4": "cy", "p5": "doc:x5"}
    texts = {
        "p1": copied,
        "p2": copied + " that night",  # a pasted copy with a few words added
        "p3": "lovely garden and a quiet room facing the courtyard",
        "p4": "the shuttle came on time and the driver helped with our bags",  # same topic, own words
        "p5": "breakfast had fresh bread every single morning of our stay",
    }
    merged = fairness.merge_near_duplicates(source_of, texts)
    assert merged["p1"] == merged["p2"] == merged["p3"]  # ann's copy pulls in every hit of bob
    assert len({merged["p1"], merged["p4"], merged["p5"]}) == 3
    capped = fairness.cap_sources([Candidate(k, 1.0 - i / 10, merged[k]) for i, k in enumerate(texts)], 3, cap=1)
    assert [c.point_id for c in capped] == ["p1", "p4", "p5"]


def test_concentration_of_hits() -> None:
    c = fairness.concentration(["a"] * 6 + ["b", "b", "c", "d"], top=2)
    assert (c.items, c.sources) == (10, 4)
    assert c.max_share == pytest.approx(0.6) and c.top_share == pytest.approx(0.8)
    assert c.effective == pytest.approx(1 / (0.36 + 0.04 + 0.01 + 0.01))
    assert "largest source 60%" in c.describe() and "top-2 authors 80%" in c.describe("authors")
    even = fairness.concentration(list("abcde"))
    assert even.effective == pytest.approx(5.0) and even.top_share == 1.0
    assert fairness.concentration([]).items == 0
    assert top_author_share({"a": 5, "b": 3, "c": 2}, top=1) == 0.5


def test_source_key_and_map_from_the_warehouse(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "w.duckdb")) as conn:
        _documents(conn, [("x1", "ann"), ("x2", None), ("x3", "ann")], domain="d")
        _documents(conn, [("y1", "bob")], domain="other")
        assert fairness.source_map(conn, "d") == {"x1": "ann", "x2": "doc:x2", "x3": "ann"}
        assert fairness.source_map(conn, "d", ["x2", "x2"]) == {"x2": "doc:x2"}


# --- through a real index -------------------------------------------------------------------------------------

DIM = 8
QUERY = np.random.default_rng(7).normal(size=DIM)
QUERY /= np.linalg.norm(QUERY)
# 24 invented reviews; the 10 most relevant include 7 by "flooder" (points 0-5 and 8).
FLOODER = {0, 1, 2, 3, 4, 5, 8}
N_POINTS = 24


def _author(i: int) -> str | None:
    if i in FLOODER:
        return "flooder"
    return None if i == 23 else f"guest{i}"


def _vector(i: int) -> np.ndarray:
    side = np.random.default_rng(50 + i).normal(size=DIM)
    side -= (side @ QUERY) * QUERY
    v = QUERY + 0.08 * (i + 1) * side / np.linalg.norm(side)
    return v / np.linalg.norm(v)


class QueryEmbedder:
    """Every question embeds to QUERY, so relevance is the invented distance of each point."""

    def embed_dense_query(self, texts):
        return [QUERY for _ in texts]

    def embed_sparse_query(self, texts):
        return [([1], [1.0]) for _ in texts]


def _documents(conn: duckdb.DuckDBPyConnection, rows: list[tuple[str, str | None]], domain: str) -> None:
    ensure_ingest_tables(conn)
    conn.executemany(
        """INSERT INTO raw_documents (domain, doc_id, text, author_id, content_hash, source_file, source_row,
                                      first_ingest_id, changed_ingest_id) VALUES (?, ?, ?, ?, ?, 'f.jsonl', ?, 1, 1)""",
        [[domain, doc_id, f"review {doc_id}", author, doc_id, n] for n, (doc_id, author) in enumerate(rows)],
    )


@pytest.fixture
def indexed(tmp_path: Path):
    warehouse = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(warehouse)) as conn:
        _documents(conn, [(f"r{i}", _author(i)) for i in range(N_POINTS)], domain="hotels")
        from oprag_pipeline.warehouse import ensure_tables

        ensure_tables(conn, "opinions", "author_attributes")
    store = EdgeVectorStore(tmp_path / "qdrant")
    for kb in ("raw", "enriched"):
        name = f"hotels.{kb}_kb"
        store.ensure_collection(name, DIM)
        store.upsert(
            name,
            [
                IndexPoint(
                    id=point_uuid(f"{kb}{i}"),
                    dense=_vector(i),
                    sparse=([1], [2.0 - i / 100]),  # same order as the dense ranks: the fused list agrees
                    payload={"domain": "hotels", "doc_id": f"r{i}", "text": f"review r{i}", "content_hash": str(i)},
                )
                for i in range(N_POINTS)
            ],
        )
    yield warehouse, store
    store.close()


def _authors(hits) -> Counter:
    return Counter(_author(int(h.payload["doc_id"][1:])) for h in hits)


def test_fair_mode_caps_the_author_who_dominates_the_hybrid_list(indexed) -> None:
    warehouse, store = indexed
    assert FAIR in ALL_MODES
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        sources = {"hotels": fairness.source_map(conn, "hotels")}
    r = Retriever(store, QueryEmbedder(), sources=sources)
    hybrid = r.search("hotels", "how was the stay?", k=10, mode="hybrid", kb="enriched")
    assert _authors(hybrid)["flooder"] == 7  # the fixture does let one author dominate
    for weight, cap in ((0.5, 3), (1.0, 1)):
        fair = r.search("hotels", "how was the stay?", k=10, mode="fair", kb="enriched", fair_weight=weight)
        assert len(fair) == 10 and len({h.point_id for h in fair}) == 10
        assert _authors(fair)["flooder"] == cap, weight
        # the flooder's hits kept are its most relevant ones, and every other author's top hit is in
        assert [h.payload["doc_id"] for h in fair if _author(int(h.payload["doc_id"][1:])) == "flooder"] == [
            f"r{i}" for i in range(cap)
        ]
    # weight 0 is the plain hybrid list; the raw KB works the same (no opinion payload needed)
    assert [h.point_id for h in r.search("hotels", "q", k=10, mode="fair", kb="enriched", fair_weight=0.0)] == [
        h.point_id for h in hybrid
    ]
    raw = r.search("hotels", "q", k=10, mode="fair", kb="raw", fair_weight=1.0)
    assert _authors(raw)["flooder"] == 1
    # the retriever's own default weight (0.5) applies when none is given
    default = Retriever(store, QueryEmbedder(), sources=sources).search("hotels", "q", k=10, mode="fair")
    assert _authors(default)["flooder"] == 3
    with pytest.raises(ValueError, match="document sources"):
        Retriever(store, QueryEmbedder()).search("hotels", "q", k=10, mode="fair", fair_weight=1.0)
    with pytest.raises(ValueError, match="fair_weight applies"):
        r.search("hotels", "q", k=10, mode="hybrid", fair_weight=1.0)
    with pytest.raises(ValueError, match="fair_weight applies"):
        r.search("hotels", "q", k=10, mode="mmr", fair_weight=1.0)


def test_answer_context_can_be_gathered_in_fair_mode(indexed) -> None:
    """`oprag ask --mode fair`: the answer's passages come from the source-fair list (sources loaded on demand)."""
    from oprag_pipeline.generate.context import DomainKnowledge, gather
    from oprag_pipeline.index.retrieval import OpinionProfile
    from oprag_pipeline.registry.matching import AliasMatcher

    warehouse, store = indexed
    knowledge = DomainKnowledge("hotels", OpinionProfile(AliasMatcher.from_aliases({}), {}), {})
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        retriever = Retriever(store, QueryEmbedder(), fair_weight=1.0)
        context = gather(conn, retriever, knowledge, "how was the stay?", kb="raw", mode=FAIR, k=10)
    assert context.mode == FAIR and len(context.passages) == 10
    assert Counter(_author(int(p.doc_id[1:])) for p in context.passages)["flooder"] == 1


def test_query_output_reports_how_concentrated_the_hits_are(indexed) -> None:
    warehouse, store = indexed

    def query(mode: str, weight: float | None = None) -> str:
        return run_query(
            warehouse=warehouse,
            store=store,
            embedder=QueryEmbedder(),
            domain="hotels",
            query="how was the stay?",
            k=10,
            mode=mode,
            kb="raw",
            fair_weight=weight,
        )

    plain = query("hybrid")
    assert "10 hits for" in plain and "Authors: 10 hits from 4 authors: largest author 70%" in plain
    fair = query("fair", 1.0)
    assert "(fair, k=10)" in fair and "Authors: 10 hits from 10 authors: largest author 10%" in fair


# --- the command line, with the real embedder ---------------------------------------------------------------

# Invented reviews: three accounts post the same cold-breakfast complaint six times; five other guests write once.
FLOOD = [f"The breakfast was cold again, cold eggs and cold coffee, visit {n}." for n in range(6)]
OTHERS = [
    "Breakfast was fine, warm pastries and decent coffee.",
    "The pool was lovely and the breakfast buffet generous.",
    "Our room was quiet; breakfast could have been hotter.",
    "Check-in was quick and the staff were kind.",
    "The breakfast eggs were cold but the fruit was fresh.",
]


@pytest.mark.slow  # several seconds: a Dagster run, a subprocess or a long simulation
def test_query_command_fair_mode_and_its_weight(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from oprag_pipeline.cli import main
    from oprag_pipeline.index.sync import SourcePoint, sync_collection
    from oprag_pipeline.resources import EmbedderResource
    from oprag_pipeline.warehouse import ensure_tables

    monkeypatch.delenv("QDRANT_URL", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(data_dir.parent / "dagster_home"))
    (data_dir / "raw" / "hotels").mkdir(parents=True, exist_ok=True)  # the commands know a domain by its folder
    docs = [(f"f{n}", f"account{n % 3}", text) for n, text in enumerate(FLOOD)]
    docs += [(f"g{n}", f"guest{n}", text) for n, text in enumerate(OTHERS)]
    with duckdb.connect(str(data_dir / "warehouse.duckdb")) as conn:
        _documents(conn, [(doc_id, author) for doc_id, author, _ in docs], domain="hotels")
        ensure_tables(conn, "opinions", "author_attributes")
    store = EdgeVectorStore(data_dir / "qdrant")
    try:
        points = [
            SourcePoint(key=f"{d}#0", text=t, payload={"domain": "hotels", "doc_id": d, "text": t}) for d, _, t in docs
        ]
        sync_collection(store, EmbedderResource().embedder(), "hotels.raw_kb", points)
    finally:
        store.close()

    def query(*options: str):
        return CliRunner().invoke(
            main, ["query", "was the breakfast cold?", "--domain", "hotels", "--kb", "raw", "-k", "5", *options]
        )

    plain = query("--mode", "hybrid")
    assert plain.exit_code == 0, plain.output

    def flood_hits(output: str) -> int:
        return len(re.findall(r"^ +\d+\. \[[0-9.]+\] f\d", output, re.M))

    assert flood_hits(plain.output) >= 3, plain.output  # the flood does crowd the plain list
    fair = query("--mode", "fair", "--fair-weight", "1")
    assert fair.exit_code == 0, fair.output
    # three accounts, one text: a single voice, so a single hit
    assert flood_hits(fair.output) == 1 and "Authors: 5 hits from 5 authors: largest author 20%" in fair.output
    wrong = query("--mode", "hybrid", "--fair-weight", "0.5")
    assert wrong.exit_code != 0 and "fair_weight applies to mode 'fair' only" in wrong.output
    out_of_range = query("--mode", "fair", "--fair-weight", "2")
    assert out_of_range.exit_code != 0 and "--fair-weight" in out_of_range.output


def test_ask_command_refuses_a_fair_weight_without_fair_mode(data_dir: Path) -> None:
    from click.testing import CliRunner

    from oprag_pipeline.cli import main

    result = CliRunner().invoke(main, ["ask", "how is the wifi?", "--domain", "hotels", "--fair-weight", "0.5"])
    assert result.exit_code == 2 and "--fair-weight applies to --mode fair only" in result.output
