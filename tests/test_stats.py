"""ccpt.stats against textbook examples and hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ccpt.stats import (
    fleiss_kappa,
    kendall_tau_b,
    krippendorff_alpha_interval,
    paired_compare,
    pearson,
    spearman,
    summarize,
)


def test_fleiss_kappa_wikipedia_worked_example() -> None:
    # Fleiss (1971) / Wikipedia: 10 subjects, 14 raters, 5 categories; P̄ = 0.378, P̄e = 0.213, κ = 0.210.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_perfect_and_invalid() -> None:
    assert fleiss_kappa([[2, 0], [0, 2]]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 2]])


def test_krippendorff_alpha_interval_textbook() -> None:
    # Krippendorff (2011) "Computing Krippendorff's alpha-reliability", 4 observers × 12 units:
    # interval α = 0.849.
    n = None
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3]
    c = [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]
    assert krippendorff_alpha_interval(list(zip(a, b, c, d, strict=True))) == pytest.approx(0.849, abs=5e-4)


def test_summarize_paper_sem_by_hand() -> None:
    # 2 instances × 3 seeds; seed means 0.3, 0.4, 0.5
    values = [[0.1, 0.2, 0.3], [0.5, 0.6, 0.7]]
    paper = summarize(values, "paper")
    assert paper.mean == pytest.approx(0.4)
    assert paper.spread == pytest.approx(math.sqrt(2 / 3) * 0.1)  # population SD of (0.3, 0.4, 0.5)
    sem = summarize(values, "sem")
    assert sem.spread == pytest.approx(0.1 / math.sqrt(3))  # sample SD 0.1 / √3
    assert (sem.n_seeds, sem.n_instances, sem.n_failed) == (3, 2, 0)


def test_summarize_failed_cells_are_excluded_and_counted() -> None:
    s = summarize([[0.1, None], [0.3, 0.5]], "paper")
    assert s.mean == pytest.approx((0.2 + 0.5) / 2) and s.n_failed == 1


def test_bootstrap_ci_brackets_mean_and_is_seeded() -> None:
    rng = np.random.default_rng(1)
    values = rng.random((50, 3))
    a = summarize(values, "ci", n_boot=500, seed=3)
    b = summarize(values, "ci", n_boot=500, seed=3)
    assert a.lo < a.mean < a.hi and (a.lo, a.hi) == (b.lo, b.hi)
    constant = summarize([[0.5, 0.5]] * 4, "ci", n_boot=100)
    assert constant.lo == constant.hi == pytest.approx(0.5)


def test_pearson_and_spearman_hand_computed() -> None:
    # x = 1,2,3 ; y = 2,4,7: r = 5 / sqrt(2 * 12.667)
    assert pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(5 / math.sqrt(2 * (38 / 3)))
    # ranks x: 1,2.5,2.5,4 ; y: 1,3,2,4 -> Pearson of ranks = 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_kendall_tau_b() -> None:
    assert kendall_tau_b([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)
    assert math.isnan(kendall_tau_b([1, 1], [1, 2]))  # no variation on one side: undefined
    # ties: τ-b = (C − D) / sqrt((n0 − n1)(n0 − n2)) with one tie in x: (2 − 0) / sqrt(2 × 3)
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 6**0.5)


def test_paired_permutation_exact_small_case() -> None:
    # d = 1,1,2,-1: |mean| = 0.75; of 16 sign flips, |mean| >= 0.75 for 8 -> p = 0.5
    result = paired_compare([1, 2, 3, 4], [0, 1, 1, 5], test="permutation")
    assert result.mean_diff == pytest.approx(0.75)
    assert result.p_value == pytest.approx(0.5)
    assert result.n == 4 and result.n_resamples == 16
    assert result.effect_size == pytest.approx(0.75 / np.std([1, 1, 2, -1], ddof=1))


def test_paired_bootstrap_detects_clear_difference() -> None:
    a = np.linspace(0.5, 1.0, 40)
    result = paired_compare(a, a - 0.2, test="bootstrap", n_resamples=2000)
    assert result.mean_diff == pytest.approx(0.2)
    assert result.ci_low == pytest.approx(0.2) and result.p_value == 0.0


def _sign_flip_p(d: list[float], delta: float) -> float:
    """Reference: the exact two-sided sign-flip p of H0 "d symmetric about delta", by enumeration."""
    import itertools

    shifted = [x - delta for x in d]
    observed = abs(sum(shifted))
    flips = list(itertools.product((1, -1), repeat=len(d)))
    hits = sum(abs(sum(s * x for s, x in zip(signs, shifted, strict=True))) >= observed - 1e-9 for signs in flips)
    return hits / len(flips)


def test_five_pairs_cannot_reach_five_percent_and_the_ci_says_so() -> None:
    # n = 5, every difference positive: the smallest possible two-sided sign-flip p is 2 / 2^5 = 0.0625.
    result = paired_compare([5, 6, 7, 8, 9], [1, 2, 3, 4, 5], test="permutation")
    assert result.p_value == pytest.approx(0.0625) and result.min_p == pytest.approx(0.0625)
    assert not result.attainable
    assert result.ci_low == -math.inf and result.ci_high == math.inf  # no shift δ can be rejected at 5%
    # At the 90% level p = 0.0625 ≤ 0.10 is reachable, and the interval is finite and excludes 0.
    relaxed = paired_compare([5, 6, 7, 8, 9], [1, 2, 3, 4, 5], test="permutation", level=0.9)
    assert relaxed.attainable and 0 < relaxed.ci_low <= 4 <= relaxed.ci_high < math.inf
    # A zero difference cannot be flipped: 4 non-zero differences → smallest p 2 / 2^4.
    assert paired_compare([1, 2, 3, 4, 5], [1, 1, 1, 1, 1]).min_p == pytest.approx(0.125)


def test_sign_flip_interval_is_the_inverted_test() -> None:
    d = [3.0, -1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    result = paired_compare(d, [0.0] * len(d), test="permutation", level=0.9)
    assert result.p_value == pytest.approx(_sign_flip_p(d, 0.0))
    eps = 1e-6
    for bound, outward in ((result.ci_low, -eps), (result.ci_high, eps)):
        assert _sign_flip_p(d, bound - outward) > 0.1  # just inside: not rejected
        assert _sign_flip_p(d, bound + outward) <= 0.1  # just outside: rejected


@pytest.mark.parametrize("test", ["permutation", "bootstrap"])
def test_ci_and_p_value_always_agree(test: str) -> None:
    """0 lies outside the CI exactly when p ≤ 1 − level: both come from one method (never a bootstrap CI beside
    a permutation p)."""
    rng = np.random.default_rng(3)
    decisions = set()
    for trial in range(120):
        n = int(rng.integers(6, 40))
        d = rng.normal(rng.uniform(-0.8, 0.8), 1.0, n).round(1)  # rounded: ties and zero differences occur
        level = (0.9, 0.95)[trial % 2]
        r = paired_compare(d, np.zeros(n), test=test, n_resamples=2000, seed=trial, level=level)
        significant = r.p_value <= 1 - level
        excluded = not r.ci_low <= 0 <= r.ci_high
        if abs(r.p_value - (1 - level)) > 2e-3:  # a p on the level itself is decided by the replicates' ties
            assert significant == excluded, (trial, r)
        decisions.add(significant)
    assert decisions == {True, False}  # both outcomes were exercised


def test_paired_compare_rejects_a_level_outside_0_1() -> None:
    with pytest.raises(ValueError, match="level"):
        paired_compare([1, 2], [0, 0], level=95)


def _alpha_pairwise(ratings):
    """The previous O(n²) implementation (all pairwise differences), kept as the reference for small inputs."""
    import numpy as np

    units = [np.array([r for r in unit if r is not None], dtype=float) for unit in ratings]
    units = [u for u in units if len(u) >= 2]
    n_total = sum(len(u) for u in units)
    d_o = sum(((u[:, None] - u[None, :]) ** 2).sum() / (len(u) - 1) for u in units) / n_total
    pooled = np.concatenate(units)
    d_e = ((pooled[:, None] - pooled[None, :]) ** 2).sum() / (n_total * (n_total - 1))
    return float(1.0 - d_o / d_e)


def test_krippendorff_alpha_streaming_equals_pairwise_on_small_inputs() -> None:
    import random

    rng = random.Random(7)
    for _ in range(50):
        raters = rng.randint(2, 5)
        ratings = [
            [None if rng.random() < 0.3 else float(rng.randint(1, 10)) for _ in range(raters)]
            for _ in range(rng.randint(3, 40))
        ]
        if sum(1 for unit in ratings if sum(r is not None for r in unit) >= 2) == 0:
            continue
        assert krippendorff_alpha_interval(ratings) == pytest.approx(_alpha_pairwise(ratings), rel=1e-9, abs=1e-12)
    assert math.isnan(krippendorff_alpha_interval([[3.0, 3.0], [3.0, 3.0]]))  # no variance: undefined
    assert math.isnan(krippendorff_alpha_interval([[1.0, None], [None]]))  # nothing pairable


def test_krippendorff_alpha_of_a_million_ratings_stays_small() -> None:
    """1.12M ratings (400K units of 3 raters, every fifth missing one; a generator): n×n needed terabytes."""
    import subprocess
    import sys

    # Peak RSS from VmHWM: ru_maxrss of a child starts at the (large) pytest parent's value on Linux.
    code = (
        "import re\n"
        "from ccpt.stats import krippendorff_alpha_interval\n"
        "units = ((float(i % 10 + 1), float((i * 7) % 10 + 1), None if i % 5 == 0 else float((i * 3) % 10 + 1))"
        " for i in range(400_000))\n"
        "alpha = krippendorff_alpha_interval(units)\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
        "print(alpha, peak)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    alpha, max_rss_kib = out.stdout.split()
    assert int(max_rss_kib) < 200 * 1024, f"peak RSS {int(max_rss_kib) / 1024:.0f} MiB"
    assert -1.0 <= float(alpha) <= 1.0


def test_pearson_of_a_constant_judge_is_undefined_not_minus_zero() -> None:
    human = [0.1, 0.5, 0.9, 0.3]
    judge = [0.7, 0.7, 0.7, 0.7]  # a mean of 0.7s is not exactly 0.7: deviations of ~1e-17
    assert math.isnan(pearson(human, judge)) and math.isnan(spearman(human, judge))


def test_library_backed_statistics_give_the_hand_written_numbers() -> None:
    """Numbers printed by the hand-written implementations (before scipy.stats and ``krippendorff``) on the same
    seeded inputs: the library versions agree to 1e-12, i.e. to every printed digit, and the seeded resampling
    draws the same replicates."""
    from ccpt.judging.agreement import agreement_ci

    rng = np.random.default_rng(2026)
    x = rng.integers(1, 11, 37).astype(float)
    y = (x + rng.normal(0, 2, 37)).round()
    assert pearson(x, y) == pytest.approx(0.8179333230877948, rel=1e-12)
    assert spearman(x, y) == pytest.approx(0.7992868325969992, rel=1e-12)
    assert kendall_tau_b(list(x), list(y)) == pytest.approx(0.6315182461307127, rel=1e-12)
    units = [[None if rng.random() < 0.25 else float(rng.integers(1, 11)) for _ in range(3)] for _ in range(60)]
    assert krippendorff_alpha_interval(units) == pytest.approx(-0.18539648218221116, rel=1e-12)
    matrix = rng.random((41, 3))
    matrix[rng.random(matrix.shape) < 0.15] = np.nan
    ci = summarize(matrix, "ci", n_boot=2000, seed=5)
    assert (ci.lo, ci.hi) == pytest.approx((0.4419656684905556, 0.5561977815814707), rel=1e-12)
    a = rng.random(31).round(2)
    b = (a - rng.normal(0.05, 0.2, 31)).round(2)
    expected = {
        "bootstrap": (-0.016774193548387085, 0.11838709677419355, 0.13333333333333333),
        "permutation": (-0.019230769231961542, 0.1227777777786389, 0.14928357214261911),
    }
    for test, numbers in expected.items():
        r = paired_compare(a, b, test=test, n_resamples=3000, seed=7)  # type: ignore[arg-type]
        assert (r.ci_low, r.ci_high, r.p_value) == pytest.approx(numbers, rel=1e-12)
    human = rng.integers(1, 11, 80) / 10
    judge = [None if rng.random() < 0.1 else float(v) for v in (human + rng.normal(0, 0.3, 80)).round(1)]
    agree = agreement_ci(list(human), judge, n_resamples=400, seed=3)
    assert agree.pearson_ci == pytest.approx((0.6003738504204262, 0.799897772007656), rel=1e-12)
    assert agree.spearman_ci == pytest.approx((0.594842777791292, 0.8200083280134135), rel=1e-12)


def test_chunked_alpha_is_the_krippendorff_package_alpha() -> None:
    """The chunked α uses the installed ``krippendorff``'s coincidence helpers (private names): pinned here to the
    package's public ``alpha`` on the same data, with chunks smaller than the units (a 200-value domain)."""
    import krippendorff

    rng = np.random.default_rng(11)
    for values in (10, 200):  # 200 values: 50 units per chunk, so 500 units span 10 chunks
        data = rng.integers(1, values + 1, (4, 500)).astype(float)
        data[rng.random(data.shape) < 0.3] = np.nan
        units = [[None if math.isnan(v) else v for v in column] for column in data.T]
        reference = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
        assert krippendorff_alpha_interval(units) == pytest.approx(reference, rel=1e-12)


def test_too_few_resamples_are_refused() -> None:
    """One bootstrap resample gave a zero-width 'CI' that excluded its own estimate: fewer than 2/(1 − level)
    resamples are refused instead (each tail of the interval needs a replicate)."""
    from ccpt.stats import min_resamples

    assert (min_resamples(0.95), min_resamples(0.9)) == (40, 20)
    with pytest.raises(ValueError, match="at least 40"):
        paired_compare([1, 2, 3], [0, 0, 0], test="bootstrap", n_resamples=1)
    r = paired_compare([1.0, 2.0, 4.0, 3.5, 0.5], [0.0] * 5, test="bootstrap", n_resamples=40)
    assert r.ci_low <= r.mean_diff <= r.ci_high


def test_compare_refuses_too_few_resamples_in_one_line(tmp_path, capsys) -> None:
    from ccpt.cli import main

    code = main(["compare", str(tmp_path), "--a", "m:base", "--b", "m:cot", "--resamples", "1"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("ccpt: error:") and "--resamples" in lines[0] and "at least 40" in lines[0]
