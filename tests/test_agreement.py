"""Judge–human agreement (§6.1) on the dataset's stored GPT-4o scores."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ccpt.agreement import Pair, agreement, pairs_from_dataset, with_judge_scores
from ccpt.cli import main


def test_pairs_are_three_per_row_with_mean_likert(dataset) -> None:
    pairs = pairs_from_dataset(dataset)
    assert len(pairs) == 3 * (len(dataset.emergent) + len(dataset.canceled))
    first = pairs[0]  # ccpt_emergent:0, ratings (5,5,5) for the combination, judge 7/9
    assert (first.concept, first.property, first.role) == ("a boat on the rocks", "strand", "combination")
    assert first.human == 5.0 and first.human_relevance == 1.0 and first.judge == pytest.approx(7 / 9)


def test_paper_sized_sample_is_seeded_and_balanced(dataset) -> None:
    a = pairs_from_dataset(dataset, n=100, seed=1)
    assert len(a) == 300 and a == pairs_from_dataset(dataset, n=100, seed=1)
    assert sum(p.source.startswith("ccpt_canceled") for p in a) == 150


def test_agreement_excludes_and_counts_missing_judge_scores() -> None:
    pairs = [Pair("x", "p", "head", "s", h, j) for h, j in ((1, 0.0), (3, 0.4), (5, 0.9), (2, None))]
    result = agreement(pairs)
    assert result.n == 3 and result.n_missing == 1
    # By hand: x̄ = 3, ȳ = 1.3/3; Σdxdy = 1.8, Σdx² = 8, Σdy² = 0.97 − 1.69/3 = 1.22/3 → r = 1.8 / √(8·1.22/3).
    assert result.pearson == pytest.approx(1.8 / math.sqrt(8 * 1.22 / 3))
    assert result.spearman == pytest.approx(1.0)
    assert with_judge_scores(pairs, [0.1, 0.2, 0.3, 0.4])[3].judge == 0.4


def test_cli_judge_agreement_offline(ccpt_dir: Path, tmp_path: Path, capsys) -> None:
    figure = tmp_path / "fig4.png"
    assert main(["judge-agreement", "--data-dir", str(ccpt_dir), "--format", "json", "--figure", str(figure)]) == 0
    result = json.loads(capsys.readouterr().out)
    # Measured on the stored GPT-4o scores (no paper value for this exact set; §6.1 reports 0.85 / 0.83 on
    # its own 300 MTurk-rated pairs): a clearly positive, strong correlation.
    assert 0.7 < result["pearson"] < 0.9 and 0.7 < result["spearman"] < 0.9
    assert result["n"] == 12339
    # The figure is a real PNG of the documented size: 3.3 in square at 200 dpi (cropped by bbox_inches="tight").
    png = figure.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert 400 < width <= 660 and 400 < height <= 660
