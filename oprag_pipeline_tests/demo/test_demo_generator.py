"""Demo corpus generator: determinism, file layout, planted distributions, and text that resists shallow reading.

The corpus is the project's own benchmark when no external data is available, so these tests check the *design*
(near-unanimous, ~10% minority, shift over time), the truth's internal consistency (σ-scale, offsets), and that
the text is varied enough that a keyword lexicon cannot simply read the planted sentiment back.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from oprag_pipeline.demo import DOMAINS, DemoResult, generate_demo, iter_jsonl
from oprag_pipeline.demo import generator as gen
from oprag_pipeline.demo.phrases import EMOTIONS, SIGMA

DOCS = 2000
SEED = 7
AUTHOR_COLUMNS = {
    "hotels": ("author_traveller_type", "author_reviewer_experience"),
    "seller_forum": ("author_revenue_band", "author_tenure", "author_region"),
}
POSITIVE_EMOTIONS = {"delight", "relief", "trust", "hope"}
NEGATIVE_EMOTIONS = {"frustration", "disappointment", "anger", "anxiety", "resignation", "hope"}

# A deliberately simple keyword lexicon: what a naive parser would do.
NAIVE_POSITIVE = set(
    "good great excellent amazing lovely nice clean comfortable friendly helpful quick fast best perfect love loved "
    "happy fair reasonable reliable smooth delicious spotless convenient wonderful fantastic superb outstanding easy "
    "useful recommend recommended".split()
)
NAIVE_NEGATIVE = set(
    "bad terrible awful horrible poor slow dirty rude worst noisy expensive broken disappointing disappointed "
    "unhelpful useless uncomfortable overpriced steep unfair ridiculous outrageous hate never problem complaint "
    "complaints late delayed frustrating angry furious".split()
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoResult]:
    root = tmp_path_factory.mktemp("demo")
    return root, generate_demo(root, docs=DOCS, seed=SEED)


@pytest.fixture(scope="module")
def loaded(corpus: tuple[Path, DemoResult]) -> dict[str, dict[str, Any]]:
    """Per domain: input rows by doc id, truth mentions, truth documents, entities.json."""
    root, result = corpus
    out: dict[str, dict[str, Any]] = {}
    for domain in DOMAINS:
        rows = {r["doc_id"]: r for f in result.files if f.parent.name == domain for r in iter_jsonl(f)}
        truth = root / "truth" / domain
        out[domain] = {
            "rows": rows,
            "mentions": list(iter_jsonl(truth / "mentions.jsonl")),
            "documents": {d["doc_id"]: d for d in iter_jsonl(truth / "documents.jsonl")},
            "entities": json.loads((truth / "entities.json").read_text()),
        }
    return out


def _shares(mentions: list[dict[str, Any]], entity_id: str) -> dict[str, float]:
    counts = Counter(m["sentiment"] for m in mentions if m["entity_id"] == entity_id)
    total = sum(counts.values())
    return {s: counts[s] / total for s in ("positive", "neutral", "negative")}


def _span(rows: dict[str, dict[str, Any]], m: dict[str, Any]) -> str:
    return rows[m["doc_id"]]["text"][m["span_start"] : m["span_end"]]


def _files_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------------------------------
# Layout, counts, determinism, file handling
# ---------------------------------------------------------------------------------------------------------------


def test_counts_layout_and_row_contract(corpus: tuple[Path, DemoResult], loaded: dict[str, dict[str, Any]]) -> None:
    root, result = corpus
    assert result.domains == {"hotels": DOCS // 2, "seller_forum": DOCS // 2}
    assert [f.relative_to(root).as_posix() for f in result.files] == [
        "raw/hotels/demo-00001.jsonl",
        "raw/seller_forum/demo-00001.jsonl",
    ]
    assert all(p.exists() for p in result.truth_files) and len(result.truth_files) == 6
    assert not list(root.rglob("*.tmp")), "temporary files must be renamed away"
    for domain, data in loaded.items():
        rows = data["rows"]
        assert len(rows) == DOCS // 2 == len(data["documents"])
        assert result.mentions[domain] == len(data["mentions"])
        assert next(iter(rows)) == f"{domain}-000001"
        for row in rows.values():
            assert row["text"] and row["title"] and len(row["title"]) < 80
            assert row["entity_scope"] and row["author_id"]
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["created_at"])
            assert "2023-01-01" <= row["created_at"] <= "2025-06-30"
            if domain == "hotels":
                assert row["rating"] in (1, 2, 3, 4, 5)
            else:
                assert row["rating"] is None
        years = Counter(r["created_at"][:4] for r in rows.values())
        assert set(years) == {"2023", "2024", "2025"}
        assert 4 <= len({r["entity_scope"] for r in rows.values()}) <= 6
        per_doc = Counter(m["doc_id"] for m in data["mentions"])
        assert set(per_doc.values()) <= {1, 2, 3, 4} and set(per_doc) == set(rows)


def test_same_seed_is_byte_identical_and_other_seed_differs(tmp_path: Path) -> None:
    first = generate_demo(tmp_path / "a", docs=600, seed=11)
    generate_demo(tmp_path / "b", docs=600, seed=11)
    generate_demo(tmp_path / "c", docs=600, seed=12)
    a, b, c = (_files_bytes(tmp_path / x) for x in "abc")
    assert a == b
    assert a.keys() == c.keys()
    assert a["raw/hotels/demo-00001.jsonl"] != c["raw/hotels/demo-00001.jsonl"]
    assert a["truth/seller_forum/mentions.jsonl"] != c["truth/seller_forum/mentions.jsonl"]
    assert first.domains == {"hotels": 300, "seller_forum": 300}


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_worker_processes_give_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_method: str
) -> None:
    """Blocks are seeded independently, so parallel generation must not change a single byte.

    `spawn` is what runs inside multi-threaded hosts such as Dagster; `fork` is the single-threaded default.
    """
    import multiprocessing

    monkeypatch.setattr(gen, "_mp_context", lambda: multiprocessing.get_context(start_method))
    docs = gen.BLOCK_DOCS * 2 + 300  # three blocks in one domain
    generate_demo(tmp_path / "serial", docs=docs, seed=5, domains=("seller_forum",), workers=1)
    generate_demo(tmp_path / "parallel", docs=docs, seed=5, domains=("seller_forum",), workers=2)
    assert _files_bytes(tmp_path / "serial") == _files_bytes(tmp_path / "parallel")


def test_shards_and_stale_demo_files_are_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    domain_dir = tmp_path / "raw" / "hotels"
    domain_dir.mkdir(parents=True)
    (domain_dir / "demo-00009.jsonl").write_text('{"doc_id": "stale", "text": "old"}\n')
    (domain_dir / "my_import.jsonl").write_text('{"doc_id": "mine", "text": "keep me"}\n')
    (domain_dir / "demo-notes.jsonl").write_text('{"doc_id": "notes", "text": "not a shard"}\n')
    monkeypatch.setattr(gen, "SHARD_DOCS", gen.BLOCK_DOCS)
    result = generate_demo(tmp_path, docs=gen.BLOCK_DOCS * 2 + 10, seed=1, domains=("hotels",))
    names = sorted(p.name for p in domain_dir.iterdir())
    assert names == ["demo-00001.jsonl", "demo-00002.jsonl", "demo-00003.jsonl", "demo-notes.jsonl", "my_import.jsonl"]
    assert [sum(1 for _ in iter_jsonl(f)) for f in result.files] == [gen.BLOCK_DOCS, gen.BLOCK_DOCS, 10]

    monkeypatch.setattr(gen, "SHARD_DOCS", 100_000)
    generate_demo(tmp_path, docs=50, seed=1, domains=("hotels",))
    assert sorted(p.name for p in domain_dir.iterdir()) == ["demo-00001.jsonl", "demo-notes.jsonl", "my_import.jsonl"]
    assert sum(1 for _ in iter_jsonl(domain_dir / "demo-00001.jsonl")) == 50
    assert sum(1 for _ in iter_jsonl(tmp_path / "truth" / "hotels" / "documents.jsonl")) == 50


def test_rejects_unknown_domains(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown demo domain"):
        generate_demo(tmp_path, docs=10, domains=("restaurants",))


# ---------------------------------------------------------------------------------------------------------------
# Planted truth
# ---------------------------------------------------------------------------------------------------------------


def test_entities_json_records_taxonomy_and_design(loaded: dict[str, dict[str, Any]]) -> None:
    for domain, data in loaded.items():
        entities = data["entities"]["entities"]
        assert 12 <= len(entities) <= 16
        designs = Counter(e["design"] for e in entities)
        assert designs["minority"] == 1 and designs["shift"] == 1 and designs["near_unanimous"] >= 1
        assert designs["split"] + designs["three_way"] >= 2
        for e in entities:
            assert e["tier1"] and e["tier2"] and e["entity_name"] and len(e["aliases"]) >= 4
            assert abs(sum(e["distribution"].values()) - 1) < 1e-9
        mentioned = {m["entity_id"] for m in data["mentions"]}
        assert mentioned == {e["entity_id"] for e in entities}, domain


def test_designed_distributions_are_recovered(loaded: dict[str, dict[str, Any]]) -> None:
    for domain, data in loaded.items():
        mentions = data["mentions"]
        entities = {e["entity_id"]: e for e in data["entities"]["entities"]}
        (minority,) = [e for e in entities.values() if e["design"] == "minority"]
        share = _shares(mentions, minority["entity_id"])[minority["minority_sentiment"]]
        assert 0.07 <= share <= 0.13, (domain, share)

        (shift,) = [e for e in entities.values() if e["design"] == "shift"]
        by_year: dict[str, Counter[str]] = defaultdict(Counter)
        for m in mentions:
            if m["entity_id"] == shift["entity_id"]:
                by_year[m["created_at"][:4]][m["sentiment"]] += 1
        first = by_year["2023"]["positive"] / sum(by_year["2023"].values())
        last = by_year["2025"]["positive"] / sum(by_year["2025"].values())
        assert abs(first - last) > 0.4, (domain, first, last)

        near = [e for e in entities.values() if e["design"] == "near_unanimous"]
        assert any(max(_shares(mentions, e["entity_id"]).values()) >= 0.85 for e in near)

        # Only the marked entity carries a ~10% minority view.
        for e in entities.values():
            if e["design"] in ("minority", "shift"):
                continue
            shares = _shares(mentions, e["entity_id"])
            assert not any(0.08 <= v <= 0.12 for v in shares.values()), (e["entity_id"], shares)


def test_mention_attributes_follow_the_scales(loaded: dict[str, dict[str, Any]]) -> None:
    for data in loaded.values():
        for m in data["mentions"]:
            expected = SIGMA.get((m["sentiment"], m["intensity"]), 0)
            assert m["sentiment_intensity"] == expected
            assert m["impact_score"] == {"low": 10, "medium": 20, "high": 30}[m["impact"]]
            assert m["evidence_type"] in ("personal_experience", "anecdotal", "data_driven")
            assert len(m["emotions"]) <= 2 and len(set(m["emotions"])) == len(m["emotions"])
            assert set(m["emotions"]) <= set(EMOTIONS)
            if m["sentiment"] == "positive":
                assert set(m["emotions"]) <= POSITIVE_EMOTIONS
            elif m["sentiment"] == "negative":
                assert set(m["emotions"]) <= NEGATIVE_EMOTIONS
        evidence = Counter(m["evidence_type"] for m in data["mentions"])
        assert all(evidence[e] > 0.08 * len(data["mentions"]) for e in evidence) and len(evidence) == 3


def test_spans_and_aliases_point_into_the_text(loaded: dict[str, dict[str, Any]]) -> None:
    for data in loaded.values():
        rows = data["rows"]
        by_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
        implicit = 0
        for m in data["mentions"]:
            text = rows[m["doc_id"]]["text"]
            assert 0 <= m["span_start"] < m["span_end"] <= len(text)
            if m["alias"] is None:
                implicit += 1
            else:
                assert text[m["alias_start"] : m["alias_end"]] == m["alias"]
                assert m["span_start"] <= m["alias_start"] < m["alias_end"] <= m["span_end"]
            by_doc[m["doc_id"]].append(m)
        for mentions in by_doc.values():
            ordered = sorted(mentions, key=lambda m: m["span_start"])
            assert all(a["span_end"] <= b["span_start"] for a, b in pairwise(ordered))
        assert 0 < implicit < 0.25 * len(data["mentions"])  # some opinions never name their target


def test_hotel_ratings_follow_sentiment(loaded: dict[str, dict[str, Any]]) -> None:
    data = loaded["hotels"]
    sentiments: dict[str, set[str]] = defaultdict(set)
    for m in data["mentions"]:
        sentiments[m["doc_id"]].add(m["sentiment"])
    pos = [data["rows"][d]["rating"] for d, s in sentiments.items() if s == {"positive"}]
    neg = [data["rows"][d]["rating"] for d, s in sentiments.items() if s == {"negative"}]
    assert sum(pos) / len(pos) > 3.8 and sum(neg) / len(neg) < 2.2
    assert len(set(pos)) >= 2 and len(set(neg)) >= 2  # noisy, not a lookup


def test_author_attributes_missing_for_about_a_fifth(loaded: dict[str, dict[str, Any]]) -> None:
    for domain, data in loaded.items():
        columns = AUTHOR_COLUMNS[domain]
        missing = 0
        for doc_id, row in data["rows"].items():
            present = [c for c in columns if c in row]
            assert present in ([], list(columns))  # all or nothing
            truth = data["documents"][doc_id]
            assert all(truth[c] for c in columns)
            assert truth["author_attributes_in_input"] == bool(present)
            if present:
                assert all(row[c] == truth[c] for c in columns)
            else:
                missing += 1
        assert 0.15 <= missing / len(data["rows"]) <= 0.25, (domain, missing)


def test_reviewer_experience_is_derivable_from_recurring_authors(loaded: dict[str, dict[str, Any]]) -> None:
    documents = loaded["hotels"]["documents"]
    per_author = Counter(d["author_id"] for d in documents.values())
    assert max(per_author.values()) >= 5 and sum(1 for c in per_author.values() if c > 1) > 50
    for d in documents.values():
        count = per_author[d["author_id"]]
        assert d["author_review_count"] == count
        expected = "novice" if count == 1 else "regular" if count <= 4 else "expert"
        assert d["author_reviewer_experience"] == expected
    experiences = Counter(d["author_reviewer_experience"] for d in documents.values())
    assert all(experiences[e] > 100 for e in ("novice", "regular", "expert"))


# ---------------------------------------------------------------------------------------------------------------
# Text realism
# ---------------------------------------------------------------------------------------------------------------


def test_text_is_varied(loaded: dict[str, dict[str, Any]]) -> None:
    for domain, data in loaded.items():
        rows, mentions = data["rows"], data["mentions"]
        sentences = Counter(
            s.strip() for r in rows.values() for s in re.split(r"(?<=[.!?])\s+", r["text"]) if s.strip()
        )
        assert len(sentences) > 2300, (domain, len(sentences))
        spans = {_span(rows, m) for m in mentions}
        assert len(spans) > 0.9 * len(mentions)
        templates = Counter(m["template"] for m in mentions)
        assert templates.most_common(1)[0][1] < 0.05 * len(mentions), templates.most_common(3)
        kinds = Counter(m["realisation"] for m in mentions)
        for kind in ("direct", "implied", "negation", "comparison", "hedge", "sarcasm", "data", "neutral"):
            assert kinds[kind] > 0, (domain, kind)
        assert kinds["sarcasm"] < 0.03 * len(mentions)
        # Several opinions in one document, sometimes inside one sentence.
        by_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for m in mentions:
            by_doc[m["doc_id"]].append(m)
        mixed = sum(1 for ms in by_doc.values() if len({m["sentiment"] for m in ms}) > 1)
        assert mixed > 0.3 * len(by_doc)
        joined = sum(
            1
            for ms in by_doc.values()
            for a, b in pairwise(ms)
            if re.fullmatch(
                r",? (but|although|whereas) |, ", rows[a["doc_id"]]["text"][a["span_end"] : b["span_start"]]
            )
        )
        assert joined > 25, (domain, joined)


def test_text_has_typos_forum_and_review_voice(loaded: dict[str, dict[str, Any]]) -> None:
    forum = " ".join(r["text"] for r in loaded["seller_forum"]["rows"].values())
    hotels = " ".join(r["text"] for r in loaded["hotels"]["rows"].values())
    assert "+1" in forum and "anyone else" in forum.lower() and "?" in forum
    assert "stay" in hotels and "euros" in hotels
    words = set(re.findall(r"[a-z]+", (forum + hotels).lower()))
    assert {"waited", "used", "apparently", "furious", "relieved"} <= words
    assert re.search(r"\b(was|is|were|are)(n't| not) (uncomfortable|great|exactly)", hotels + forum)
    # Typos: words that occur nowhere in the phrase banks.
    vocabulary = _bank_vocabulary()
    typos = {w for w in words if w not in vocabulary}
    assert len(typos) > 100, sorted(typos)[:20]


def _bank_vocabulary() -> set[str]:
    """Every word the phrase banks can produce (handles are made from bank words plus digits)."""
    from dataclasses import asdict, is_dataclass

    from oprag_pipeline.demo import phrases

    words: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            words.update(re.findall(r"[a-z]+", value.lower()))
        elif is_dataclass(value) and not isinstance(value, type):
            walk(asdict(value))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                walk(v)

    for name in dir(phrases):
        if name.isupper():
            walk(getattr(phrases, name))
    return words


def test_naive_lexicon_cannot_read_the_truth_back(loaded: dict[str, dict[str, Any]]) -> None:
    for domain, data in loaded.items():
        rows, mentions = data["rows"], data["mentions"]
        correct = 0
        for m in mentions:
            tokens = re.findall(r"[a-z']+", _span(rows, m).lower())
            score = sum(t in NAIVE_POSITIVE for t in tokens) - sum(t in NAIVE_NEGATIVE for t in tokens)
            predicted = "positive" if score > 0 else "negative" if score < 0 else "neutral"
            correct += predicted == m["sentiment"]
        accuracy = correct / len(mentions)
        assert accuracy < 0.7, (domain, accuracy)


def test_vader_cannot_read_the_truth_back(loaded: dict[str, dict[str, Any]]) -> None:
    vader = pytest.importorskip("vaderSentiment.vaderSentiment")
    analyzer = vader.SentimentIntensityAnalyzer()
    for domain, data in loaded.items():
        rows, mentions = data["rows"], data["mentions"]
        correct = 0
        for m in mentions:
            compound = analyzer.polarity_scores(_span(rows, m))["compound"]
            predicted = "positive" if compound >= 0.05 else "negative" if compound <= -0.05 else "neutral"
            correct += predicted == m["sentiment"]
        accuracy = correct / len(mentions)
        assert 0.35 < accuracy < 0.8, (domain, accuracy)  # informative, but far from the truth
