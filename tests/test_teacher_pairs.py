"""Teacher pairs (`ccpt judge pairs`): GPT-4o's stored verdicts on model answers, read from the authors' files."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from ccpt.cli import main
from ccpt.judging.rated_pairs import pair_key
from ccpt.judging.teacher_pairs import read_frames, read_pairs_csv, teacher_pairs

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
