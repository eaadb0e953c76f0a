"""MMR, xQuAD and PM-2 on small fixtures whose selections were worked out by hand from the papers' definitions."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from oprag_pipeline.index.diversify import Candidate, mmr, pm2, relevance_order, sigma_aspect_weights, xquad


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=float)
    return v / np.linalg.norm(v)


def ids(chosen: list[Candidate]) -> list[str]:
    return [c.point_id for c in chosen]


def test_mmr_skips_a_near_duplicate_for_a_novel_document() -> None:
    # a (0.9) and its near-duplicate a2 (0.85, cosine ≈ 0.999 to a); b is orthogonal and less relevant (0.5).
    # λ = 0.5: after a, a2 scores 0.5·0.85 − 0.5·0.999 ≈ −0.075, b scores 0.5·0.5 − 0 = 0.25: b comes second.
    a = Candidate("a", 0.9, vector=_unit(1, 0))
    a2 = Candidate("a2", 0.85, vector=_unit(1, 0.05))
    b = Candidate("b", 0.5, vector=_unit(0, 1))
    assert ids(mmr([b, a2, a], 3)) == ["a", "b", "a2"]
    # λ = 1 is pure relevance
    assert ids(mmr([b, a2, a], 3, lambda_=1.0)) == ["a", "a2", "b"]
    assert ids(mmr([b, a2, a], 1)) == ["a"]
    with pytest.raises(ValueError, match="vector"):
        mmr([Candidate("x", 1.0)], 1)


def test_xquad_by_hand() -> None:
    # relevance p1 3, p2 2 (aspect pos), n1 1 (aspect neg); weights 0.5 / 0.5; λ = 0.5. P(d|q) = rel / 6,
    # P(p1|pos) = 0.6, P(p2|pos) = 0.4, P(n1|neg) = 1.
    # step 1: p1 0.25 + 0.25·0.6 = 0.40; p2 0.167 + 0.25·0.4 = 0.267; n1 0.083 + 0.25·1 = 0.333 → p1
    # step 2: p2 0.167 + 0.25·0.4·(1 − 0.6) = 0.207; n1 0.333 → n1; then p2
    cands = [Candidate("p1", 3.0, "pos"), Candidate("p2", 2.0, "pos"), Candidate("n1", 1.0, "neg")]
    assert ids(xquad(cands, 3, {"pos": 0.5, "neg": 0.5})) == ["p1", "n1", "p2"]
    assert ids(xquad(cands, 3, {"pos": 0.5, "neg": 0.5}, lambda_=0.0)) == ["p1", "p2", "n1"]  # relevance only


def test_pm2_by_hand() -> None:
    # weights neg 2/3, pos 1/3; λ = 0.5; relevance normalised by the pool's maximum (1.0).
    # 1: qt neg .667, pos .333 → serve neg: n1 .5·.667·.6 = .200 vs p1 .5·.333·1 = .167 → n1 (seats neg 1)
    # 2: qt neg .222, pos .333 → serve pos: p1 .5·.333·1 = .167 vs n2 .5·.222·.5 = .056 → p1 (seats pos 1)
    # 3: qt neg .222, pos .111 → serve neg: n2 .5·.222·.5 = .056 vs p2 .5·.111·.9 = .050 → n2
    cands = [
        Candidate("p1", 1.0, "pos"),
        Candidate("p2", 0.9, "pos"),
        Candidate("p3", 0.8, "pos"),
        Candidate("n1", 0.6, "neg"),
        Candidate("n2", 0.5, "neg"),
        Candidate("n3", 0.4, "neg"),
    ]
    assert ids(pm2(cands, 3, {"neg": 2, "pos": 1})) == ["n1", "p1", "n2"]
    assert ids(relevance_order(cands)[:3]) == ["p1", "p2", "p3"]


def test_pm2_allocates_seats_by_sainte_lague_not_dhondt() -> None:
    # votes 53 / 24 / 23 for 7 seats: Sainte-Laguë gives 3 / 2 / 2 (D'Hondt would give 4 / 2 / 1). With λ = 1 the
    # served aspect always gets the seat while it has candidates.
    cands = [Candidate(f"{a}{i}", 1.0 - i / 100, a) for a in "ABC" for i in range(10)]
    seats = Counter(c.aspect for c in pm2(cands, 7, {"A": 53, "B": 24, "C": 23}, lambda_=1.0))
    assert seats == {"A": 3, "B": 2, "C": 2}


def test_pm2_drops_an_exhausted_aspect_and_fills_with_relevance() -> None:
    # one 'neg' candidate only; 'x' covers no aspect. After n1, pos is served; after p1 nothing covers an aspect.
    cands = [Candidate("p1", 0.9, "pos"), Candidate("n1", 0.3, "neg"), Candidate("x", 1.0, None)]
    assert ids(pm2(cands, 3, {"neg": 0.9, "pos": 0.1})) == ["n1", "p1", "x"]


def test_ties_are_broken_by_point_id() -> None:
    cands = [Candidate("b", 1.0, "s"), Candidate("a", 1.0, "s")]
    assert ids(pm2(cands, 2, {"s": 1.0})) == ids(xquad(cands, 2, {"s": 1.0})) == ["a", "b"]
    flat = [Candidate("b", 1.0, vector=_unit(1, 0)), Candidate("a", 1.0, vector=_unit(0, 1))]
    assert ids(mmr(flat, 2)) == ["a", "b"]


def test_sigma_aspect_weights_split_entities_equally() -> None:
    weights = sigma_aspect_weights({"wifi": {-30: 3, 20: 1}, "bed": {10: 5}, "none": {}}, ["wifi", "bed", "none"])
    assert weights == pytest.approx({("wifi", -30): 0.375, ("wifi", 20): 0.125, ("bed", 10): 0.5})


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="λ"):
        pm2([Candidate("a", 1.0, "s")], 1, {"s": 1}, lambda_=1.5)
    with pytest.raises(ValueError, match="non-negative"):
        xquad([Candidate("a", -1.0, "s")], 1, {"s": 1})
    with pytest.raises(ValueError, match="positive sum"):
        pm2([Candidate("a", 1.0, "s")], 1, {"s": 0})
