"""ccpt.scoring against the paper's equations (§4.3) and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from ccpt.scoring import (
    Relevances,
    classify,
    oracle_per_column,
    oracle_single_best,
    relevance_from_score,
    score_from_relevance,
)


def test_relevance_mapping_endpoints_and_inverse() -> None:
    assert relevance_from_score(1) == 0.0
    assert relevance_from_score(10) == 1.0
    assert relevance_from_score(4) == pytest.approx(1 / 3)
    assert score_from_relevance(relevance_from_score(7)) == pytest.approx(7)
    with pytest.raises(ValueError):
        relevance_from_score(0)


def test_emergence_and_cancellation_by_hand() -> None:
    # a boat on the rocks / strand (dataset row 0): N=7/9, H=3/9, M=0 -> E = 4/9, C = 0
    rel = Relevances(r_np=7 / 9, r_hp=3 / 9, r_mp=0.0)
    assert rel.r_hmp == pytest.approx(3 / 9)
    assert rel.emergence == pytest.approx(4 / 9)
    assert rel.cancellation == 0.0
    canceled = Relevances(r_np=0.0, r_hp=7 / 9, r_mp=5 / 9)
    assert canceled.score("canceled") == pytest.approx(7 / 9)
    assert canceled.score("emergent") == 0.0


def test_missing_relevance_propagates_none() -> None:
    rel = Relevances(r_np=0.5, r_hp=None, r_mp=0.2)
    assert rel.r_hmp is None and rel.emergence is None and rel.cancellation is None


SAMPLES = [Relevances(0.9, 0.5, 0.1), Relevances(0.6, 0.1, 0.0), Relevances(1.0, 0.3, 0.3)]


def test_oracle_per_column_takes_each_best_independently() -> None:
    # E per sample: 0.4, 0.5, 0.7; r_hmp: 0.5, 0.1, 0.3
    best = oracle_per_column(SAMPLES, "emergent")
    assert (best.r_np, best.r_hmp, best.score) == pytest.approx((1.0, 0.1, 0.7))
    canceled = oracle_per_column(SAMPLES, "canceled")
    # C per sample: 0, 0, 0 ; r_np min 0.6 ; r_hmp max 0.5
    assert (canceled.r_np, canceled.r_hmp, canceled.score) == pytest.approx((0.6, 0.5, 0.0))


def test_oracle_single_best_is_one_consistent_sample_with_tie_break() -> None:
    best = oracle_single_best(SAMPLES, "emergent")
    assert best.sample == 2 and (best.r_np, best.r_hmp, best.score) == pytest.approx((1.0, 0.3, 0.7))
    # ties on C (all 0): the lowest R_N,P wins for canceled -> sample 1
    assert oracle_single_best(SAMPLES, "canceled").sample == 1
    tied = [Relevances(0.5, 0.1, 0.1), Relevances(0.5, 0.1, 0.1)]
    assert oracle_single_best(tied, "emergent").sample == 0


def test_oracle_skips_failed_samples() -> None:
    best = oracle_per_column([Relevances(None, 0.1, 0.1), Relevances(0.4, 0.2, 0.0)], "emergent")
    assert best.score == pytest.approx(0.2) and best.n_valid == 1 and best.n_samples == 2
    assert oracle_single_best([Relevances(None, None, None)], "emergent").score is None


def test_classification_paper_table5_arithmetic() -> None:
    # Build counts equal to paper Table 5 (250 per type) and check the paper's summary numbers.
    table = np.array([[90.0, 4.4, 2.0, 3.6], [59.6, 37.2, 1.2, 2.0], [13.6, 15.6, 45.2, 25.6], [26.0, 5.6, 15.2, 53.2]])
    counts = np.rint(table * 2.5).astype(int)
    labels = ["emergent", "component", "canceled", "others"]
    gold, pred = [], []
    for i, g in enumerate(labels):
        for j, p in enumerate(labels):
            gold += [g] * counts[i, j]
            pred += [p] * counts[i, j]
    cls = classify(gold, pred)
    assert cls.accuracy == pytest.approx(0.564)
    assert cls.has_property_accuracy == pytest.approx(0.956)
    assert cls.lacks_property_accuracy == pytest.approx(0.696)
    assert cls.binary_accuracy == pytest.approx(0.826)
    assert cls.row_percent() == pytest.approx(table)


def test_unparsed_predictions_count_as_wrong() -> None:
    cls = classify(["emergent", "emergent", "others"], ["emergent", None, "banana"])
    assert cls.accuracy == pytest.approx(1 / 3)
    assert cls.unparsed.tolist() == [1, 0, 0, 1]
    assert cls.row_percent()[0, 0] == pytest.approx(50.0)
