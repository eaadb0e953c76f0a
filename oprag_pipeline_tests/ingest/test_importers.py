"""Importers: exact output rows on invented fixtures, the writer's guarantees, and imports of the real corpora.

The fixtures under fixtures/importers/ are invented text in each source layout, with the edge cases each
format is known for. The real-corpus tests read ../shared/data next to the checkout and skip where it is absent.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oprag_pipeline import importers
from oprag_pipeline.evaluate.gold import load_rated_aspects
from oprag_pipeline.importers import IMPORTERS, ImportResult, run_import
from oprag_pipeline.importers.common import parse_date
from oprag_pipeline.importers.huliu import parse_annotations
from oprag_pipeline.importers.memd_absa import detokenise
from oprag_pipeline.importers.tripadvisor import RATED_ASPECT_TERMS
from oprag_pipeline.settings import RATED_ASPECTS_FILE

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"


def _unpack_tripadvisor_fixture() -> Path:
    """The hotel files are stored gzipped (their exact bytes: CRLF, one in cp1252) and unpacked for the importer,
    which reads the plain `hotel_<id>_parsed.txt` layout."""
    target = Path(tempfile.mkdtemp(prefix="oprag-fixture-")) / "tripadvisor"
    target.mkdir()
    for source in (FIXTURES / "tripadvisor").iterdir():
        if source.suffix == ".gz":
            (target / source.stem).write_bytes(gzip.decompress(source.read_bytes()))
        else:
            shutil.copyfile(source, target / source.name)
    return target


TRIPADVISOR = _unpack_tripadvisor_fixture()
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

TABLE_OPTIONS = {
    "text_col": "body",
    "id_col": "review_id",
    "title_col": "headline",
    "scope_col": "product",
    "author_col": "user",
    "date_col": "posted",
    "rating_col": "stars",
}


def read_rows(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf"), "output must not start with a BOM"
    return [json.loads(line) for line in raw.decode("utf-8").splitlines()]


def only_file(result: ImportResult) -> list[dict[str, Any]]:
    """The rows of the one documents file an import wrote (a `_`-prefixed side file such as the rated aspects is
    not documents)."""
    documents = [p for p in result.files_written if not p.name.startswith("_")]
    assert len(documents) == 1
    rows = read_rows(documents[0])
    assert len(rows) == result.documents
    return rows


def assert_offsets_slice_to_targets(rows: list[dict[str, Any]], *, ignore_case: bool = False) -> int:
    """Every gold opinion with offsets points at its target in the document text; returns how many were checked."""
    checked = 0
    for row in rows:
        for opinion in row.get("gold_opinions", []):
            if opinion["from"] is None:
                assert opinion["to"] is None
                continue
            piece = row["text"][opinion["from"] : opinion["to"]]
            if ignore_case:
                assert piece.lower() == opinion["target"].lower(), (row["doc_id"], opinion)
            else:
                assert piece == opinion["target"], (row["doc_id"], opinion)
            checked += 1
    return checked


def require_shared(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/data not present: {path} is missing (real-corpus test)")
    return path


# ----------------------------------------------------------------------------------------------------------------------
# API and writer


def test_unknown_format_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as error:
        run_import("yelp", FIXTURES / "table_reviews.csv", "d", tmp_path)
    names = {"tripadvisor", "ukpconvarg", "semeval-absa", "memd-absa", "huliu", "opiniobank", "table"}
    for name in names:
        assert name in str(error.value)
    assert set(IMPORTERS) == names


def test_missing_source_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "hotels"
    with pytest.raises(FileNotFoundError, match="nowhere/hotels"):
        run_import("tripadvisor", missing, "d", tmp_path)


@pytest.mark.parametrize("domain", ["", "..", "a/b", ".hidden", "_private"])
def test_bad_domain_names_are_refused(tmp_path: Path, domain: str) -> None:
    with pytest.raises(ValueError, match="domain"):
        run_import("ukpconvarg", FIXTURES / "ukpconvarg_arguments.jsonl", domain, tmp_path)


def test_reimport_is_idempotent_and_leaves_no_temp_files(tmp_path: Path) -> None:
    first = run_import("tripadvisor", TRIPADVISOR, "hotels", tmp_path)
    content = first.files_written[0].read_bytes()
    second = run_import("tripadvisor", TRIPADVISOR, "hotels", tmp_path)
    assert second.files_written == first.files_written
    assert second.files_written[0].read_bytes() == content
    assert second.documents == first.documents and second.skipped == first.skipped
    assert sorted(p.name for p in (tmp_path / "raw" / "hotels").iterdir()) == [
        RATED_ASPECTS_FILE,
        "tripadvisor-tripadvisor.jsonl",
    ]
    assert second.files_written[1].read_bytes() == first.files_written[1].read_bytes()


def test_failed_import_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_import("ukpconvarg", FIXTURES / "ukpconvarg_arguments.jsonl", "debates", tmp_path)
    before = result.files_written[0].read_bytes()

    def exploding(source: Path, ctx: Any, **options: Any):  # type: ignore[no-untyped-def]
        yield "x", 1, {"doc_id": "ukp-1", "text": "half an import"}
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(importers.IMPORTERS, "ukpconvarg", exploding)
    with pytest.raises(RuntimeError, match="disk on fire"):
        run_import("ukpconvarg", FIXTURES / "ukpconvarg_arguments.jsonl", "debates", tmp_path)
    assert result.files_written[0].read_bytes() == before
    assert [p.name for p in (tmp_path / "raw" / "debates").iterdir()] == ["ukpconvarg-ukpconvarg_arguments.jsonl"]


def test_writer_skips_rows_that_break_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def sloppy(source: Path, ctx: Any, **options: Any):  # type: ignore[no-untyped-def]
        yield "f", 1, {"doc_id": "a", "text": "fine"}
        yield "f", 2, {"doc_id": "", "text": "no id"}
        yield "f", 3, {"doc_id": "b", "text": "  "}
        yield "f", 4, {"doc_id": "a", "text": "same id again"}
        yield "f", 5, {"doc_id": "c", "text": "nan rating", "rating": float("nan")}
        yield "f", 6, {"doc_id": "d", "text": "ünïcode ✓"}

    monkeypatch.setitem(importers.IMPORTERS, "table", sloppy)
    result = run_import("table", FIXTURES / "table_reviews.csv", "d", tmp_path)
    assert [row["doc_id"] for row in only_file(result)] == ["a", "d"]
    assert [(file, number) for file, number, _ in result.skipped] == [("f", 2), ("f", 3), ("f", 4), ("f", 5)]
    assert "duplicate doc_id 'a'" in result.skipped[2][2]
    assert "ünïcode ✓" in result.files_written[0].read_text(encoding="utf-8")  # UTF-8, not \u escapes


def test_progress_bar_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_import("tripadvisor", TRIPADVISOR, "hotels", tmp_path, progress=True)
    assert "tripadvisor" in capsys.readouterr().err
    run_import("tripadvisor", TRIPADVISOR, "hotels", tmp_path)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Dec 23, 2008", "2008-12-23"),
        ("Feb 29, 2008", "2008-02-29"),
        ("Feb 30, 2008", None),
        ("23 December 2008", "2008-12-23"),
        ("2008/12/23", "2008-12-23"),
        ("2021-05-02", "2021-05-02"),
        ("2021-05-02T10:30:00Z", "2021-05-02T10:30:00+00:00"),
        ("2021-05-02 00:00:00", "2021-05-02"),
        ("04/03/2022", None),  # day/month order is never guessed
        ("sometime", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_date(value: str | None, expected: str | None) -> None:
    assert parse_date(value) == expected


# ----------------------------------------------------------------------------------------------------------------------
# tripadvisor


def test_tripadvisor_fixture_rows(tmp_path: Path) -> None:
    result = run_import("tripadvisor", TRIPADVISOR, "hotels", tmp_path)
    domain_dir = tmp_path / "raw" / "hotels"
    assert result.files_written == [domain_dir / "tripadvisor-tripadvisor.jsonl", domain_dir / RATED_ASPECTS_FILE]
    # the rated aspects' entity names travel with the data, for the gold mapping (which knows no hotel words)
    assert load_rated_aspects(domain_dir) == {a: tuple(t) for a, t in RATED_ASPECT_TERMS.items()}
    no_aspects = dict.fromkeys(
        (
            "rating_value",
            "rating_rooms",
            "rating_location",
            "rating_cleanliness",
            "rating_checkin",
            "rating_service",
            "rating_business",
        )
    )
    assert only_file(result) == [
        {
            "doc_id": "ta-9001-1",
            "text": "Quiet rooms, slow lift We stayed four nights at the Harbourlight Inn. The room was spotless and "
            "silent, but the lift took ages every morning.",
            "entity_scope": "hotel_9001",
            "author_id": "maple_traveller",
            "created_at": "2007-03-03",
            "rating": 4,
            "rating_value": 3,
            "rating_rooms": 5,
            "rating_location": 4,
            "rating_cleanliness": 5,
            "rating_checkin": 4,
            "rating_service": 4,
            "rating_business": None,
        },
        {  # no <Date>, aspects -1 -> null
            "doc_id": "ta-9001-2",
            "text": "Never again The front desk lost our booking and nobody apologised.",
            "entity_scope": "hotel_9001",
            "author_id": "gullwatcher",
            "created_at": None,
            "rating": 1,
            **no_aspects,
            "rating_checkin": 1,
        },
        {  # placeholder author, odd date, Overall 0, collapsed review
            "doc_id": "ta-9001-3",
            "text": "Lovely breakfast terrace",
            "entity_scope": "hotel_9001",
            "author_id": None,
            "created_at": None,
            "rating": None,
            **no_aspects,
            "text_truncated": True,
        },
        {  # block 4 (blank content) is skipped but still counts for numbering; text spans two lines
            "doc_id": "ta-9001-5",
            "text": "Good value for a harbour view.\nThe second paragraph mentions the noisy bar downstairs.",
            "entity_scope": "hotel_9001",
            "author_id": "night_owl",
            "created_at": "2008-02-29",
            "rating": 3,
            "rating_value": 4,
            "rating_rooms": 3,
            "rating_location": 5,
            "rating_cleanliness": 4,
            "rating_checkin": 3,
            "rating_service": 3,
            "rating_business": 2,
        },
        {  # cp1252 file
            "doc_id": "ta-9002-1",
            "text": "Café downstairs was great – the staff’s smiles made our day.",
            "entity_scope": "hotel_9002",
            "author_id": "Renée",
            "created_at": "2009-07-14",
            "rating": 5,
            "rating_value": 5,
            "rating_rooms": 4,
            "rating_location": 5,
            "rating_cleanliness": 5,
            "rating_checkin": 5,
            "rating_service": 5,
            "rating_business": None,
        },
    ]
    assert result.skipped == [("hotel_9001_parsed.txt", 15, "no <Content> text")]
    assert result.warnings == [
        ("hotel_9001_parsed.txt", 10, "unparsable <Date> 'Someday in 2006': created_at left null")
    ]


def test_tripadvisor_single_file_names_the_output_after_it(tmp_path: Path) -> None:
    result = run_import("tripadvisor", TRIPADVISOR / "hotel_9002_parsed.txt", "hotels", tmp_path)
    assert result.files_written[0].name == "tripadvisor-hotel_9002_parsed.jsonl"
    assert [row["doc_id"] for row in only_file(result)] == ["ta-9002-1"]


# ----------------------------------------------------------------------------------------------------------------------
# ukpconvarg


def test_ukpconvarg_rows(tmp_path: Path) -> None:
    result = run_import("ukpconvarg", FIXTURES / "ukpconvarg_arguments.jsonl", "debates", tmp_path)
    assert result.files_written[0].name == "ukpconvarg-ukpconvarg_arguments.jsonl"
    leaf, brew = "Should towns ban leaf blowers", "Is cold brew better than espresso"
    assert only_file(result) == [
        {
            "doc_id": "ukp-a101",
            "text": "The noise starts at seven every Saturday and a rake does the same job.",
            "entity_scope": leaf,
            "author_id": "rakewielder",
            "stance": "Yes, they are too loud",
            "vote_up": 3,
            "vote_down": 1,
            "author_post_count": 2,
            "author_votes_up": 8,
        },
        {
            "doc_id": "ukp-a102",
            "text": "Professional gardeners would lose hours of work per client.",
            "entity_scope": leaf,
            "author_id": "greenthumb",
            "stance": "No, gardeners need them",
            "vote_up": 0,
            "vote_down": 2,
            "author_post_count": 1,
            "author_votes_up": 0,
        },
        {
            "doc_id": "ukp-a103",
            "text": "Cold brew is smoother and keeps for a week in the fridge.",
            "entity_scope": brew,
            "author_id": "rakewielder",
            "stance": "Cold brew",
            "vote_up": 5,
            "vote_down": 0,
            "author_post_count": 2,
            "author_votes_up": 8,
        },
    ]
    assert [(f, n) for f, n, _ in result.skipped] == [
        ("ukpconvarg_arguments.jsonl", 4),
        ("ukpconvarg_arguments.jsonl", 5),
    ]
    assert result.skipped[0][2].startswith("malformed JSON")
    assert result.skipped[1][2] == "empty text (arg_id 'a104')"


# ----------------------------------------------------------------------------------------------------------------------
# semeval-absa


def _op(target: str | None, category: str | None, polarity: str, start: int | None, end: int | None) -> dict:
    return {"target": target, "category": category, "polarity": polarity, "strength": None, "from": start, "to": end}


def test_semeval_2014_sentences(tmp_path: Path) -> None:
    result = run_import("semeval-absa", FIXTURES / "semeval" / "gadgets_2014.xml", "gadgets", tmp_path)
    rows = only_file(result)
    assert rows == [
        {
            "doc_id": "absa-gadgets-2014-g1",
            "text": "The battery of the Lumo tablet lasts two days, but the screen scratches easily.",
            "gold_opinions": [
                _op("battery", None, "positive", 4, 11),
                _op("screen", None, "negative", 55, 61),
                _op(None, "hardware", "conflict", None, None),
            ],
        },
        {  # the wrong offset of "speaker" (30:37) is corrected to where the word is
            "doc_id": "absa-gadgets-2014-g2",
            "text": "Setup took five minutes and the speaker sounds thin.",
            "gold_opinions": [_op("Setup", None, "positive", 0, 5), _op("speaker", None, "negative", 32, 39)],
        },
        {"doc_id": "absa-gadgets-2014-g3", "text": "I bought it on a Tuesday.", "gold_opinions": []},
        {  # target absent from the text -> null offsets; polarity "mixed" is not in the vocabulary -> dropped
            "doc_id": "absa-gadgets-2014-g4",
            "text": "Price is fine.",
            "gold_opinions": [_op("cost", None, "neutral", None, None)],
        },
    ]
    assert assert_offsets_slice_to_targets(rows) == 4
    assert result.skipped == [("gadgets_2014.xml", 5, "sentence g5 has no text")]
    assert [(n, reason) for _, n, reason in result.warnings] == [
        (2, "sentence g2: target 'speaker' at 30:37 relocated"),
        (4, "sentence g4: target 'cost' at 0:4 not found in the sentence; offsets left null"),
        (4, "sentence g4: opinion with polarity 'mixed' dropped"),
    ]


def test_semeval_review_format_joins_sentences_and_shifts_offsets(tmp_path: Path) -> None:
    result = run_import("semeval-absa", FIXTURES / "semeval" / "gadgets_2016.xml", "gadgets", tmp_path)
    rows = only_file(result)
    assert rows == [
        {
            "doc_id": "absa-gadgets-2016-r7",
            "text": "Ordered the Brightway desk lamp last week. The dimmer is smooth but the base wobbles. "
            "My cat ignores it.",
            "gold_opinions": [
                _op(None, "LAMP#GENERAL", "neutral", None, None),  # target="NULL"
                _op("dimmer", "LAMP#DESIGN", "positive", 47, 53),
                _op("base", "LAMP#BUILD", "negative", 72, 76),
                _op(None, "LAMP#GENERAL", "positive", None, None),  # review-level opinion
            ],
        },
        {
            "doc_id": "absa-gadgets-2016-r8",
            "text": "Bulb died in a month.",
            "gold_opinions": [_op("Bulb", "LAMP#QUALITY", "negative", 0, 4)],
        },
    ]
    assert assert_offsets_slice_to_targets(rows) == 3
    assert result.skipped == [] and result.warnings == []


def test_semeval_folder_and_mams_layout_without_ids(tmp_path: Path) -> None:
    result = run_import("semeval-absa", FIXTURES / "semeval", "gadgets", tmp_path)
    assert result.files_written[0].name == "semeval-absa-semeval.jsonl"
    rows = only_file(result)
    assert result.documents == 4 + 2 + 3
    mams = [row for row in rows if row["doc_id"].startswith("absa-mams-like-")]
    assert [re.sub(r"-[0-9a-f]{8}$", "-<hash>", row["doc_id"]) for row in mams] == [
        "absa-mams-like-1-<hash>",
        "absa-mams-like-2-<hash>",
        "absa-mams-like-3-<hash>",
    ]
    assert mams[1]["doc_id"][-8:] == mams[2]["doc_id"][-8:]  # same text -> same hash, told apart by position
    assert mams[0]["gold_opinions"] == [
        _op("noodles", None, "negative", 4, 11),
        _op("waiter", None, "positive", 30, 36),
    ]
    assert mams[2]["gold_opinions"] == [
        _op(None, "food", "positive", None, None),
        _op(None, "service", "negative", None, None),
    ]
    assert assert_offsets_slice_to_targets(rows) == 4 + 3 + 4


# ----------------------------------------------------------------------------------------------------------------------
# memd-absa


def test_memd_absa_rows_keep_explicit_aspects_as_gold(tmp_path: Path) -> None:
    result = run_import("memd-absa", FIXTURES / "memd_absa", "kettles", tmp_path)
    assert result.files_written[0].name == "memd-absa-memd_absa.jsonl"
    rows = only_file(result)
    assert rows == [
        {
            "doc_id": "memd-kettles-test-1",
            "text": "The spout pours cleanly, but the lid doesn't close.",
            "gold_opinions": [
                _op("spout", "Kettle#Design", "positive", 4, 9),
                _op("lid", "Kettle#Quality", "negative", 33, 36),
            ],
        },
        {  # the only aspect is implicit: no target for the registry, so no gold
            "doc_id": "memd-kettles-test-2",
            "text": "It boils in (roughly) two minutes, which is fine.",
            "gold_opinions": [],
        },
        {
            "doc_id": "memd-kettles-test-3",
            "text": "My neighbour's power base wobbles.",
            "gold_opinions": [_op("power base", "Kettle#Build", "negative", 15, 25)],
        },
    ]
    assert assert_offsets_slice_to_targets(rows) == 3
    assert result.skipped == [("Test.json", 4, "empty sentence"), ("Test.json", 5, "record has no 'raw_words' string")]
    assert result.warnings == [
        ("Test.json", 3, "quadruple 2: aspect span 4:9 is outside the sentence's 7 tokens: dropped"),
        ("Test.json", 3, "quadruple 3: sentiment 'MIXED' unknown: dropped"),
        ("Test.json", None, "1 quadruple(s) with an implicit aspect left out of the gold (no target)"),
    ]


def test_memd_absa_detokenise_keeps_token_offsets() -> None:
    tokens = ["I", "ca", "n't", "say", "(", "honestly", ")", "it", "'s", "50", "%", "better", "..."]
    text, spans = detokenise(tokens)
    assert text == "I can't say (honestly) it's 50% better..."
    assert [text[a:b] for a, b in spans] == tokens


def test_memd_absa_refuses_files_that_are_not_sentence_arrays(tmp_path: Path) -> None:
    bad = tmp_path / "src" / "Broken.json"
    bad.parent.mkdir()
    bad.write_text('{"raw_words":"not in an array"}', encoding="utf-8")
    (tmp_path / "src" / "Cut.json").write_text('[{"raw_words":"half', encoding="utf-8")
    result = run_import("memd-absa", tmp_path / "src", "d", tmp_path / "data")
    assert result.documents == 0
    assert [(Path(f).name, n) for f, n, _ in result.skipped] == [("Broken.json", None), ("Cut.json", None)]
    assert "expected a JSON array" in result.skipped[0][2] and "not readable as JSON" in result.skipped[1][2]


@pytest.mark.slow
def test_real_memd_absa_domains(tmp_path: Path) -> None:
    for domain in ("Books", "Clothing", "Hotel"):
        source = require_shared("memd_absa", domain)
        records = [r for path in sorted(source.glob("*.json")) for r in json.loads(path.read_text(encoding="utf-8"))]
        result = run_import("memd-absa", source, domain.lower(), tmp_path)
        rows = only_file(result)
        explicit = sum(q["aspect"]["from"] >= 0 for r in records for q in r["quadruples"])
        assert result.documents == len(records) and result.skipped == []
        assert assert_offsets_slice_to_targets(rows) == explicit
        assert sum(len(row["gold_opinions"]) for row in rows) == explicit


# ----------------------------------------------------------------------------------------------------------------------
# huliu


def test_huliu_rows(tmp_path: Path) -> None:
    result = run_import("huliu", FIXTURES / "huliu", "kettles", tmp_path)
    rows = only_file(result)
    scope = "Zephyr Kettle Z2"

    def op(target: str, polarity: str, strength: int, start: int | None, flags: list[str] | None = None) -> dict:
        opinion = {
            "target": target,
            "category": None,
            "polarity": polarity,
            "strength": strength,
            "from": start,
            "to": None if start is None else start + len(target),
        }
        if flags:
            opinion["flags"] = flags
        return opinion

    second = (
        "this kettle boils in two minutes and the noise is barely there . my old one was a tin can . "
        "worth every penny . it gets warm at the top . they should make the filter removable . "
        "much better than the Acme kettle ."
    )
    assert rows == [
        {  # sentences before the first [t]
            "doc_id": "hl-zephyr-kettle-z2-1",
            "text": "got this kettle as a gift . the lid sticks when hot .",
            "title": None,
            "entity_scope": scope,
            "gold_opinions": [op("lid", "negative", 2, 32)],
        },
        {
            "doc_id": "hl-zephyr-kettle-z2-2",
            "text": second,
            "title": "fast and quiet",
            "entity_scope": scope,
            "gold_opinions": [
                op("kettle", "positive", 3, 5),
                op("noise", "positive", 2, 41),
                op("price", "positive", 1, None, ["u"]),  # [u]: not named in the sentence
                op("handle", "negative", 1, None, ["p"]),  # [p]: named by a pronoun
                op("filter", "negative", 2, second.index("filter"), ["s"]),
                op("kettle", "positive", 2, second.index("Acme kettle") + 5, ["cc"]),
            ],
        },
        {
            "doc_id": "hl-zephyr-kettle-z2-3",
            "text": "water pooled under the base after a week . the spout is narrow . this line has no separator",
            "title": "leaks",
            "entity_scope": scope,
            "gold_opinions": [op("base", "negative", 3, 23)],
        },
        {  # review 4 has a title and no sentences: skipped, but numbering keeps counting
            "doc_id": "hl-zephyr-kettle-z2-5",
            "text": "no title here but still a review .",
            "title": None,
            "entity_scope": scope,
            "gold_opinions": [],
        },
    ]
    assert assert_offsets_slice_to_targets(rows) == 6
    assert result.skipped == [("Zephyr Kettle Z2.txt", 19, "review without sentences")]
    assert sorted(result.warnings) == [
        ("Zephyr Kettle Z2.txt", 17, "feature 'spout' without [+n]/[-n] polarity dropped"),
        ("Zephyr Kettle Z2.txt", 18, "line without '##' kept as a sentence without annotations"),
    ]
    assert result.files_written[0].name == "huliu-huliu.jsonl"


def test_huliu_single_file_output_name(tmp_path: Path) -> None:
    result = run_import("huliu", FIXTURES / "huliu" / "Zephyr Kettle Z2.txt", "kettles", tmp_path)
    assert result.files_written[0].name == "huliu-Zephyr_Kettle_Z2.jsonl"
    assert result.documents == 4


def test_huliu_annotation_parser() -> None:
    items, problems = parse_annotations("picture quality[+2], size[-3][u][cs], zoom[+][p]")
    assert items == [
        ("picture quality", "positive", 2, []),
        ("size", "negative", 3, ["u", "cs"]),
        ("zoom", "positive", None, ["p"]),
    ]
    assert problems == []
    items, problems = parse_annotations("lens[+5], [+1], strap")
    assert items == [("lens", "positive", None, [])]
    assert len(problems) == 3


# ----------------------------------------------------------------------------------------------------------------------
# opiniobank

OPINIOBANK_ROWS = [
    {
        "doc_id": "ob-11-expert",
        "text": "Pros:\n- breakfast: Generous breakfast buffet with local bread.\n"
        "- location: Two minutes from the ferry pier.\nCons:\n- lift: A single slow lift serves six floors.",
        "title": "Expert review: Harbourlight Inn",
        "entity_scope": "Harbourlight Inn",
        "author_role": "expert",
        "gold_opinions": [
            _op("breakfast", None, "positive", 8, 17),
            _op("location", None, "positive", 65, 73),
            _op("lift", None, "negative", 116, 120),
        ],
    },
    {
        "doc_id": "ob-11-1",
        "text": "Breakfast was the highlight, though the lift queue was silly.",
        "entity_scope": "Harbourlight Inn",
        "created_at": "2021-05-02",
        "rating": 4,
        "vote_up": 2,
        "author_role": "user",
        "author_review_posted": 12,
        "author_cities_visited": 7,
        "author_helpful_votes": 30,
    },
    {
        "doc_id": "ob-11-3",
        "text": "Right by the pier, we walked everywhere.",
        "entity_scope": "Harbourlight Inn",
        "created_at": None,
        "rating": 5,
        "vote_up": 0,
        "author_role": "user",
        "author_review_posted": 3,
        "author_cities_visited": 2,
        "author_helpful_votes": 1,
    },
    {  # expert_review stored as a JSON string, empty cons
        "doc_id": "ob-12-expert",
        "text": "Pros:\n- fireplace: A stone fireplace warms the lounge.",
        "title": "Expert review: Pinecone Lodge",
        "entity_scope": "Pinecone Lodge",
        "author_role": "expert",
        "gold_opinions": [_op("fireplace", None, "positive", 8, 17)],
    },
    {
        "doc_id": "ob-12-1",
        "text": "Cosy lounge, thin walls.",
        "entity_scope": "Pinecone Lodge",
        "created_at": "2020-11-20",
        "rating": 3,
        "vote_up": 1,
        "author_role": "user",
        "author_review_posted": 40,
        "author_cities_visited": 25,
        "author_helpful_votes": 9,
    },
]


def test_opiniobank_rows(tmp_path: Path) -> None:
    result = run_import("opiniobank", FIXTURES / "opiniobank_sample.json", "hotels", tmp_path)
    rows = only_file(result)
    assert rows == OPINIOBANK_ROWS
    assert assert_offsets_slice_to_targets(rows) == 4
    assert result.skipped == [("opiniobank_sample.json", 1, "empty text (doc_id 'ob-11-2')")]
    assert result.warnings == [
        ("opiniobank_sample.json", 1, "ob-11-3: unparsable publication_date 'sometime in spring'; created_at left null")
    ]


def test_opiniobank_accepts_jsonl_wrapped_and_flat_shapes(tmp_path: Path) -> None:
    entities = json.loads((FIXTURES / "opiniobank_sample.json").read_text())
    jsonl = tmp_path / "entities.jsonl"
    jsonl.write_text("\n".join(json.dumps(entity) for entity in entities) + "\n")
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"test": entities, "version": "1"}))
    for source in (jsonl, wrapped):
        assert only_file(run_import("opiniobank", source, "hotels", tmp_path)) == OPINIOBANK_ROWS
    flat = tmp_path / "flat.jsonl"
    flat.write_text(json.dumps({"entity_id": 12, "entity_name": "Pinecone Lodge", **entities[1]["user_reviews"][0]}))
    assert only_file(run_import("opiniobank", flat, "hotels", tmp_path)) == [OPINIOBANK_ROWS[-1]]


def test_opiniobank_without_expert_documents(tmp_path: Path) -> None:
    result = run_import("opiniobank", FIXTURES / "opiniobank_sample.json", "hotels", tmp_path, expert_reviews=False)
    assert [row["doc_id"] for row in only_file(result)] == ["ob-11-1", "ob-11-3", "ob-12-1"]


# ----------------------------------------------------------------------------------------------------------------------
# table

TABLE_ROWS = [
    {
        "doc_id": "p1",
        "text": "The blender crushes ice, finally.",
        "title": "Strong motor",
        "entity_scope": "Blendo 300",
        "author_id": "u17",
        "created_at": "2022-03-04",
        "rating": 5,
        "author_country": "NZ",
        "rating_battery": 4,
    },
    {
        "doc_id": "p2",
        "text": "Jug cracked after two weeks; support never answered.",
        "title": "Fragile",
        "entity_scope": "Blendo 300",
        "author_id": "u18",
        "created_at": None,  # 04/03/2022: day/month order unknown
        "rating": 1,
        "author_country": None,
        "rating_battery": 2,
    },
]


def test_table_csv_with_full_mapping(tmp_path: Path) -> None:
    result = run_import("table", FIXTURES / "table_reviews.csv", "blenders", tmp_path, **TABLE_OPTIONS)
    assert result.files_written[0].name == "table-table_reviews.jsonl"
    assert only_file(result) == TABLE_ROWS  # the unmapped, unprefixed `colour` column is dropped
    assert result.skipped == [
        ("table_reviews.csv", 4, "empty 'body'"),
        ("table_reviews.csv", 5, "duplicate doc_id 'p1' (first at table_reviews.csv:2)"),
    ]
    assert result.warnings == [("table_reviews.csv", 3, "unparsable date '04/03/2022': created_at left null")]


def test_table_gzip_jsonl_and_parquet_give_the_same_rows(tmp_path: Path) -> None:
    import csv

    with (FIXTURES / "table_reviews.csv").open(newline="") as handle:
        records = list(csv.DictReader(handle))
    for record in records:  # typed values, as JSON and Parquet would hold them
        record["stars"] = int(record["stars"])
        record["rating_battery"] = int(record["rating_battery"]) if record["rating_battery"] else None
        record["author_country"] = record["author_country"] or None
    gz = tmp_path / "src" / "reviews.jsonl.gz"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in records).encode()))
    parquet = tmp_path / "src" / "reviews2.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet)
    csv_gz = tmp_path / "src" / "reviews3.csv.gz"
    csv_gz.write_bytes(gzip.compress((FIXTURES / "table_reviews.csv").read_bytes()))
    for source in (gz, parquet, csv_gz):
        result = run_import("table", source, "blenders", tmp_path, **TABLE_OPTIONS)
        assert only_file(result) == TABLE_ROWS, source.name
    assert result.files_written[0].name == "table-reviews3.jsonl"


def test_table_without_id_column_hashes_rows(tmp_path: Path) -> None:
    result = run_import("table", FIXTURES / "table_posts.jsonl", "sellers", tmp_path, text_col="message")
    rows = only_file(result)
    ids = [row["doc_id"] for row in rows]
    assert re.fullmatch(r"row-[0-9a-f]{16}", ids[0]) and re.fullmatch(r"row-[0-9a-f]{16}", ids[1])
    assert ids[2] == ids[0] + "-2"  # an identical row is kept, with a suffix
    assert rows[1] == {
        "doc_id": ids[1],
        "text": "Fees are fine if the buyer protection works.",
        "author_tenure_years": 9,
    }
    again = run_import("table", FIXTURES / "table_posts.jsonl", "sellers", tmp_path / "other", text_col="message")
    assert [row["doc_id"] for row in only_file(again)] == ids  # stable across runs and folders


def test_table_option_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="text_col"):
        run_import("table", FIXTURES / "table_reviews.csv", "d", tmp_path)
    with pytest.raises(TypeError, match="colour_col"):
        run_import("table", FIXTURES / "table_reviews.csv", "d", tmp_path, text_col="body", colour_col="colour")
    assert not (tmp_path / "raw").exists()  # a refused import creates no (empty) domain folder
    result = run_import("table", FIXTURES / "table_reviews.csv", "d", tmp_path, text_col="missing")
    assert result.documents == 0 and "text column 'missing' not in the file" in result.skipped[0][2]


# ----------------------------------------------------------------------------------------------------------------------
# The output is what the ingest stage accepts


def test_every_fixture_import_is_accepted_by_ingest(tmp_path: Path) -> None:
    from oprag_pipeline.ingest.readers import read_domain

    results = [
        run_import("tripadvisor", TRIPADVISOR, "all", tmp_path),
        run_import("ukpconvarg", FIXTURES / "ukpconvarg_arguments.jsonl", "all", tmp_path),
        run_import("semeval-absa", FIXTURES / "semeval", "all", tmp_path),
        run_import("memd-absa", FIXTURES / "memd_absa", "all", tmp_path),
        run_import("huliu", FIXTURES / "huliu", "all", tmp_path),
        run_import("opiniobank", FIXTURES / "opiniobank_sample.json", "all", tmp_path),
        run_import("table", FIXTURES / "table_reviews.csv", "all", tmp_path, **TABLE_OPTIONS),
        run_import("table", FIXTURES / "table_posts.jsonl", "all", tmp_path, text_col="message"),
    ]
    read = read_domain(tmp_path / "raw" / "all", max_text_chars=100_000)
    assert read.quarantined == []
    assert read.accepted == sum(result.documents for result in results)


# ----------------------------------------------------------------------------------------------------------------------
# Real corpora in ../shared/data


@pytest.mark.slow
def test_real_tripadvisor_subset(tmp_path: Path) -> None:
    texts = require_shared("tripadvisor_hotels", "Texts")
    source = tmp_path / "Texts"
    source.mkdir()
    hotels = sorted(texts.glob("hotel_*_parsed.txt"))[:5]
    assert len(hotels) == 5
    blocks = 0
    for path in hotels:
        shutil.copy(path, source / path.name)
        blocks += path.read_bytes().count(b"\n<Content>") + path.read_bytes().startswith(b"<Content>")
    result = run_import("tripadvisor", source, "hotels", tmp_path / "data")
    rows = only_file(result)
    assert result.documents + len(result.skipped) == blocks
    assert len({row["doc_id"] for row in rows}) == len(rows)
    assert {row["entity_scope"] for row in rows} == {"hotel_" + p.name.split("_")[1] for p in hotels}
    for row in rows:
        assert row["text"].strip() and "showReview(" not in row["text"]
        assert row["created_at"] is None or re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["created_at"])
        for key in ("rating", "rating_value", "rating_rooms", "rating_location", "rating_service"):
            assert row[key] is None or 1 <= row[key] <= 5
    assert sum(row["created_at"] is not None for row in rows) == len(rows)
    assert sum(row["author_id"] is not None for row in rows) > len(rows) / 2


@pytest.mark.slow
def test_real_ukpconvarg(tmp_path: Path) -> None:
    source = require_shared("ukpconvarg1", "arguments.jsonl")
    result = run_import("ukpconvarg", source, "debates", tmp_path)
    rows = only_file(result)
    assert result.documents == 1052 and result.skipped == []
    assert len({row["entity_scope"] for row in rows}) == 16
    assert len({(row["entity_scope"], row["stance"]) for row in rows}) == 32
    authors = {row["author_id"] for row in rows}
    assert len(authors) == 750
    posts_by_author: dict[str, int] = {}
    for row in rows:
        posts_by_author[row["author_id"]] = posts_by_author.get(row["author_id"], 0) + 1
    assert all(row["author_post_count"] == posts_by_author[row["author_id"]] for row in rows)
    assert all(isinstance(row["vote_up"], int) and isinstance(row["vote_down"], int) for row in rows)


@pytest.mark.slow
def test_real_mams_test_sets(tmp_path: Path) -> None:
    atsa = require_shared("mams", "MAMS-ATSA", "test.xml")
    acsa = require_shared("mams", "MAMS-ACSA", "test.xml")
    raw = atsa.read_text(encoding="utf-8")
    result = run_import("semeval-absa", atsa, "restaurants", tmp_path)
    rows = only_file(result)
    assert result.documents == raw.count("<sentence>") == 500
    assert sum(len(row["gold_opinions"]) for row in rows) == raw.count("<aspectTerm ")
    assert assert_offsets_slice_to_targets(rows) == raw.count("<aspectTerm ")
    assert all(len({o["polarity"] for o in row["gold_opinions"]}) >= 2 for row in rows)  # MAMS: mixed polarities
    assert result.skipped == [] and result.warnings == []
    # The ACSA test set has the same file name: both land in one domain only under different file names when
    # imported from their folders, and their doc_ids never collide.
    categories = run_import("semeval-absa", acsa.parent, "restaurants", tmp_path)
    assert categories.files_written[0].name == "semeval-absa-MAMS-ACSA.jsonl"
    acsa_ids = {row["doc_id"] for row in only_file(categories)}
    assert not acsa_ids & {row["doc_id"] for row in rows}
    assert all(o["target"] is None and o["category"] for row in only_file(categories) for o in row["gold_opinions"])


def test_table_json_array_is_read_record_by_record(tmp_path: Path) -> None:
    """A record nested 100,000 levels deep costs its own row: the records around it are imported."""
    source = tmp_path / "export.json"
    deep = '{"id": "deep", "body": ' + "[" * 100_000 + "]" * 100_000 + "}"
    good = [json.dumps({"id": "a", "body": "Battery lasts ] two days."}), json.dumps({"id": "b", "body": "Fine."})]
    source.write_text("[" + good[0] + ",\n" + deep + ",\n" + good[1] + "]")
    result = run_import("table", source, "phones", tmp_path / "data", text_col="body", id_col="id")
    assert result.documents == 2
    assert [(file, number) for file, number, _ in result.skipped] == [("export.json", 2)]
    assert "json_too_deep" in result.skipped[0][2]
