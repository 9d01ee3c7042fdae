"""Teacher pairs (`ccpt judge pairs`): GPT-4o's stored verdicts on model answers, read from the authors' files."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from ccpt.cli import main
from ccpt.judging.rated_pairs import pair_key
from ccpt.judging.teacher_pairs import COLUMNS, TeacherPair, read_frames, read_pairs_csv, teacher_pairs, training_sample

CLAUDE = "claude-3-5-sonnet-20241022"


@pytest.fixture(scope="module")
def claude_canceled(reference_dir: Path) -> Path:
    path = reference_dir / "more-models" / f"pi_canceled_{CLAUDE}_naive.csv"
    if not path.is_file():
        pytest.skip(f"{path} not in the shared data")
    return path


def test_pairs_of_a_file_are_its_judged_cells_deduplicated(claude_canceled: Path) -> None:
    pairs = teacher_pairs(read_frames([claude_canceled]))
    # 167 rows × 3 seeds × (N, H, M) judged pairs, counted independently of ccpt's reader with pandas on the raw
    # columns: 966 distinct (concept, answered property) after whitespace collapsing and case folding.
    raw = pd.read_csv(claude_canceled, dtype=str, keep_default_na=False)
    expected: dict[tuple[str, str], list[float]] = {}
    for seed in range(3):
        for _, line in raw.iterrows():
            answer = line[f"{CLAUDE}_naive_{seed}_property"]
            for field, column in (("combination", "combination"), ("root", "root"), ("modifier", "modifier")):
                cell = line[f"{CLAUDE}_naive_{seed}_{field}_relevance"]
                if answer.strip() and cell:
                    expected.setdefault(pair_key(line[column], answer), []).append(float(cell))
    assert len(pairs) == len(expected) == 966
    assert {p.key for p in pairs} == set(expected)
    for pair in pairs:
        assert pair.relevance == pytest.approx(sum(expected[pair.key]) / len(expected[pair.key]))
        assert pair.model == CLAUDE and pair.task == "pi_canceled" and pair.method == "naive"
        assert pair.role in ("combination", "head", "modifier") and pair.instance
    # The file's first row, seed 0: "an orchard without fruit" / the answered property, relevance as stored.
    first = raw.iloc[0]
    answer = first[f"{CLAUDE}_naive_0_property"]
    pair = next(p for p in pairs if p.key == pair_key(first["combination"], answer))
    assert pair.role == "combination" and pair.instance == "pi_canceled:row0"
    stored = float(first[f"{CLAUDE}_naive_0_combination_relevance"])
    assert pair.values[0] == stored


def test_cli_writes_pairs_that_read_back(claude_canceled: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "pairs.csv"
    assert main(["judge", "pairs", str(claude_canceled), "--out", str(out)]) == 0
    assert "wrote 966 teacher pairs from 1 files" in capsys.readouterr().out
    back = read_pairs_csv(out)
    direct = teacher_pairs(read_frames([claude_canceled]))
    assert [(p.key, round(p.relevance, 6), len(p.values)) for p in back] == [
        (p.key, round(p.relevance, 6), len(p.values)) for p in direct
    ]


def test_same_answer_in_two_runs_is_one_pair_with_both_methods(reference_dir: Path) -> None:
    base = reference_dir / "pi_emergent_gpt-4o_naive.csv"
    multi = reference_dir / "pi_emergent_gpt-4o_multi.csv"
    pairs = teacher_pairs(read_frames([base, multi]))
    keys = [(p.model, p.key) for p in pairs]
    assert len(keys) == len(set(keys))
    shared = [p for p in pairs if p.methods == {"naive", "multi"}]
    assert shared, "Base and Multi share answers (e.g. the same property for the same phrase)"
    assert all(len(p.values) >= 2 for p in shared)


def test_bad_input_is_one_line(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope.csv"
    other = tmp_path / "other.csv"
    other.write_text("concept,property\napple,red\n", encoding="utf-8")
    for path in (missing, other):
        code = main(["judge", "pairs", str(path), "--out", str(tmp_path / "out.csv")])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert str(path) in err
    assert not (tmp_path / "out.csv").exists()


def test_a_teacher_csv_with_missing_columns_is_refused(tmp_path: Path) -> None:
    from ccpt.errors import DataError

    path = tmp_path / "pairs.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["concept", "property", "relevance"], ["apple", "red", "0.9"]])
    with pytest.raises(DataError, match="missing column"):
        read_pairs_csv(path)
    # Every cell is checked before anything trains on it: one line naming the file and line.
    good = ["m", "pi_emergent", "naive", "i", "combination", "apple", "red", "0.9", "2", "0", "naive", "f.csv"]
    for cells, reason in [
        ([*good[:7], "nan", *good[8:]], r"line 2: relevance must be in \[0, 1\]"),
        ([*good[:7], "7", *good[8:]], r"line 2: relevance must be in \[0, 1\]"),
        ([*good[:8], "0", *good[9:]], r"occurrences in \[1, 1,000,000\]"),
        ([*good[:8], "x", *good[9:]], "are not numbers"),
        (good[:5], "line 2: 12 cells expected"),
        ([*good, "extra"], "line 2: 12 cells expected"),
    ]:
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([list(COLUMNS), cells])
        with pytest.raises(DataError, match=reason):
            read_pairs_csv(path)
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([list(COLUMNS), good])
    assert read_pairs_csv(path)[0].relevance == 0.9
    # Seventh hostile round: a second row of one model's pair (spelled with other spacing and case) added its
    # relevance to the pair's mean target, silently; another model's row of the pair is its own verdict.
    again = [*good[:5], " APPLE ", "Red", "0.0", *good[8:]]
    other_model = ["n", *good[1:]]
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([list(COLUMNS), good, other_model, again])
    with pytest.raises(DataError, match=r"line 4 repeats the pair of line 2 \(m: ' APPLE ', 'Red'\)"):
        read_pairs_csv(path)
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([list(COLUMNS), good, other_model])
    assert [p.model for p in read_pairs_csv(path)] == ["m", "n"]


def test_lomo_figures_of_the_teacher_itself_and_of_a_judge_blind_to_the_phrase(reference_dir: Path) -> None:
    """GPT-4o's own stored relevances, served as a judge, give back GPT-4o's Table 3 (up to the pair mean and the
    answers ccpt cannot parse); a judge that scores N like H shows the canceled blind spot: C collapses."""
    from ccpt.judging.lomo import figures, table3_runs

    files = [reference_dir / f"{task}_gpt-4o_naive.csv" for task in ("pi_emergent", "pi_canceled", "npc_emergent")]
    frames = read_frames(files)
    pairs = teacher_pairs(frames)
    runs = table3_runs(frames)
    assert set(runs) == {"gpt-4o"}
    own = {p.key: p.relevance for p in pairs}
    f = figures("gpt-4o", runs["gpt-4o"], own, pairs)
    assert f.cells == 9 and f.columns == 9 and f.best_kept == 9  # one method: its best is itself
    assert f.mad < 1.0 and f.pair_pearson == pytest.approx(1.0)
    assert f.canceled_c_cells["base"][0] == pytest.approx(55.5, abs=0.05)  # the paper's PI-canceled Base C
    # A judge that gives every pair the relevance GPT-4o gave the head noun with that property: R_N,P = R_H,P.
    head = {pair_key(p.concept, p.property): p.relevance for p in pairs if p.role == "head"}
    blind = dict(own)
    for frame in frames:
        for row in frame.to_dict("records"):
            if row["task"] == "pi_canceled" and isinstance(row["answer"], str):
                value = head.get(pair_key(row["head"], row["answer"]))
                if value is not None:
                    blind[pair_key(row["combination"], row["answer"])] = value
    g = figures("gpt-4o", runs["gpt-4o"], blind, pairs)
    assert g.canceled_c is not None and g.canceled_c < -30


def _pair(model: str, concept: str, prop: str, *values: float) -> TeacherPair:
    return TeacherPair(model, "pi_emergent", "naive", "i", "combination", concept, prop, list(values))


def test_training_sample_merges_models_drops_excluded_pairs_and_is_seeded() -> None:
    pairs = [
        _pair("a", "Old Lettuce", "wilted", 1.0, 1.0),
        _pair("b", "old  lettuce", "WILTED", 0.0),  # the same pair from another model: one target, all values
        _pair("a", "a red apple", "sweet", 0.5),
        _pair("b", "test phrase", "held out", 0.9),
    ] + [_pair("c", f"concept {i}", "p", i / 100) for i in range(50)]
    texts, targets = training_sample(pairs, {pair_key("test phrase", "held out")}, cap=1000)
    by_key = {pair_key(*t): y for t, y in zip(texts, targets, strict=True)}
    assert len(texts) == 52 and pair_key("test phrase", "held out") not in by_key
    assert by_key[pair_key("old lettuce", "wilted")] == pytest.approx(2 / 3)
    assert by_key[pair_key("a red apple", "sweet")] == 0.5
    # The cap keeps a seeded sample; the same seed gives the same sample whatever the input order.
    small, _ = training_sample(pairs, set(), cap=10)
    assert len(small) == 10 and training_sample(list(reversed(pairs)), set(), cap=10)[0] == small
    assert training_sample(pairs, set(), cap=10, seed=1)[0] != small


def test_runs_map_is_near_identity_for_gpt4o_itself(reference_dir: Path) -> None:
    """Fitted on a run judged by GPT-4o's own stored relevances, the map has (almost) nothing to correct."""
    from ccpt.judging.lomo import fit_runs_map, table3_runs

    files = [reference_dir / f"pi_{kind}_gpt-4o_naive.csv" for kind in ("emergent", "canceled")]
    runs = table3_runs(read_frames(files))
    stored = {p.key: p.relevance for p in teacher_pairs(read_frames(files))}
    asked: list[tuple[str, str]] = []

    def score(texts):
        asked.extend(texts)
        return [stored[pair_key(c, p)] for c, p in texts]

    calibration, figures = fit_runs_map(runs, score, limit=400)
    assert len(asked) == len(set(asked)) <= 3 * 400  # each distinct pair scored once
    assert figures["uncalibrated"] < 1.5  # points: pairs averaged over repeats, so not exactly 0
    assert "400 sample rows" in calibration.fitted_on and "gpt-4o" in calibration.fitted_on
    assert calibration.apply([0.0, 1.0]) == pytest.approx([0.0, 1.0], abs=0.05)
