"""Property-based tests: authors' result files and tidy tables with random hostile cells (Hypothesis).

For any file: no internal error (a rejection is a one-line DataError naming a hostile key cell), no number outside
its range in the tidy table or any report table, and every cell the schema rejects is counted — each hostile value
cell is either read as written (and in range) or set aside and counted on its sample.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccpt.errors import DataError
from ccpt.report import build_report
from ccpt.results import export, from_reference_csv, load_results

MODEL = "org/model-1.5:q4"  # model names hold dots, colons and slashes
RUN = f"{MODEL}_naive"
ROWS = 4
SEEDS = (0, 1)
RELEVANCES = ("combination_relevance", "root_relevance", "modifier_relevance")
DERIVED = ("indiv_max", "emergence")

HOSTILE_TEXT = [
    "", " ", "nan", "NaN", "inf", "-inf", "1e309", "-1e309", "5.0", "-2.0", "1.0000001", "-0.0", "high", "0.5.1",
    "1,0", "[0.5]", "None", "null", "'0.5", "=1+1", "0x1", "½", "1e-400", '"0.3"', "0.3\n", "\\", "{}", "[]",
    "['a'", "[\"x\"]", "['{\"property\": \"red\"}']", "['it\\'s', \"a \\\\ b\"]",
]  # fmt: skip
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True
)


def _cell() -> st.SearchStrategy[str]:
    """A hostile cell: a known troublemaker, any float as text, an integer, or random printable text."""
    return st.one_of(
        st.sampled_from(HOSTILE_TEXT),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.floats(min_value=0, max_value=1).map(repr),
        st.integers(-10, 10).map(str),
        st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    )


def _authors_file() -> pd.DataFrame:
    """A small, valid authors' PI-emergent file: ROWS instances, two seeds of one run."""
    rows = []
    for i in range(ROWS):
        row = {"combination": f"a wet dog {i}", "root": "dog", "modifier": "wet", "property": f"smelly {i}"}
        for seed in SEEDS:
            r_np, r_hp, r_mp = (0.9 - 0.1 * i, 0.2 + 0.05 * seed, 0.1 * i)
            row |= {
                f"{RUN}_{seed}_generated_": f'[\'{{"property": "odd {i}"}}\']',
                f"{RUN}_{seed}_property": f"odd {i}",
                f"{RUN}_{seed}_combination_relevance": repr(r_np),
                f"{RUN}_{seed}_root_relevance": repr(r_hp),
                f"{RUN}_{seed}_modifier_relevance": repr(r_mp),
                f"{RUN}_{seed}_indiv_max": repr(max(r_hp, r_mp)),
                f"{RUN}_{seed}_emergence": repr(max(r_np - max(r_hp, r_mp), 0.0)),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def _authors_cells() -> st.SearchStrategy[dict[tuple[int, str], str]]:
    columns = [f"{RUN}_{s}_{f}" for s in SEEDS for f in (*RELEVANCES, *DERIVED, "generated_")]
    key = st.tuples(st.integers(0, ROWS - 1), st.sampled_from(columns))
    return st.dictionaries(key, _cell(), min_size=1, max_size=6)


def _in_range(frame: pd.DataFrame) -> None:
    for column in ("r_np", "r_hp", "r_mp", "r_hmp", "score"):
        values = pd.to_numeric(frame[column], errors="raise")
        assert values.dropna().between(0.0, 1.0).all(), (column, values.tolist())
    assert (frame["invalid_cells"] >= 0).all()


def _report_in_range(frame: pd.DataFrame) -> None:
    report = build_report(frame, stat="sem", n_boot=20)
    if report.generative is not None:
        for row in report.generative.rows:
            for summary in row.cells.values():
                assert summary.mean is None or math.isnan(summary.mean) or 0.0 <= summary.mean <= 100.0
    assert sum(f.invalid_cells for f in report.failures) == int(frame["invalid_cells"].sum())


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@SETTINGS
@given(cells=_authors_cells())
def test_authors_files_with_hostile_cells(cells: dict[tuple[int, str], str]) -> None:
    frame = _authors_file()
    for (row, column), value in cells.items():
        frame.loc[row, column] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pi_emergent_hostile.csv"
        frame.to_csv(path, index=False)
        out = from_reference_csv(path)  # a value cell never rejects an authors' file
    assert len(out) == ROWS * len(SEEDS)
    _in_range(out)
    expected = pd.Series(0, index=out.index)
    for (row, column), value in cells.items():
        seed = int(column.removeprefix(f"{RUN}_")[0])
        field = column.removeprefix(f"{RUN}_{seed}_")
        sample = out[(out["instance"] == f"pi_emergent:row{row}") & (out["seed"] == seed)].iloc[0]
        index = sample.name
        if field in RELEVANCES:
            read = {"combination_relevance": "r_np", "root_relevance": "r_hp", "modifier_relevance": "r_mp"}[field]
            number = _as_float(value) if value.strip() else None
            if pd.isna(sample[read]):
                if value.strip():  # rejected: counted on its sample, and the sample is unscored
                    expected[index] += 1
                    assert pd.isna(sample["score"])
            else:  # accepted: read as written, and in range
                assert number is not None and math.isclose(sample[read], number, abs_tol=1e-12)
        elif field == "generated_" and "invalid cell" in str(sample["parse_error"]):
            # A raw-reply list that is not one: the raw text is lost (never guessed) and the loss is counted.
            assert value.strip() and pd.isna(sample["answer_raw"]) and not sample["parse_ok"]
            expected[index] += 1
        # A derived cell is never read: the score is always the one recomputed from the relevances.
        if not pd.isna(sample["r_np"]) and not pd.isna(sample["r_hmp"]):
            assert math.isclose(sample["score"], max(sample["r_np"] - sample["r_hmp"], 0.0), abs_tol=1e-12)
    assert out["invalid_cells"].tolist() == expected.tolist()
    # The file's note lists every rejected cell, derived ones (rejected, but never needed) included.
    listed = [int(m.group(1)) for n in out.attrs["notes"] if (m := re.search(r": (\d+) invalid cells? set aside", n))]
    assert sum(listed) >= int(expected.sum())
    _report_in_range(out)


@pytest.fixture(scope="module")
def tidy_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tidy")
    source = root / "pi_emergent_source.csv"
    _authors_file().to_csv(source, index=False)
    return export(from_reference_csv(source), root / "tidy.csv")


TIDY_VALUES = ("r_np", "r_hp", "r_mp", "r_hmp", "score", "parse_ok", "judge_failures", "gold_type", "pred_type")
TIDY_KEYS = ("seed", "sample", "task", "instance", "sa_filter")


def _tidy_cells() -> st.SearchStrategy[dict[tuple[int, str], str]]:
    key = st.tuples(st.integers(0, ROWS * len(SEEDS) - 1), st.sampled_from(TIDY_VALUES + TIDY_KEYS))
    return st.dictionaries(key, _cell(), min_size=1, max_size=6)


@SETTINGS
@given(cells=_tidy_cells())
def test_tidy_tables_with_hostile_cells(tidy_csv: Path, cells: dict[tuple[int, str], str]) -> None:
    frame = pd.read_csv(tidy_csv, dtype=str, keep_default_na=False)
    for (row, column), value in cells.items():
        frame.loc[row, column] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "edited.csv"
        frame.to_csv(path, index=False)
        try:
            out = load_results(path)
        except DataError as exc:  # only a hostile key cell (or a duplicate it created) may reject the file
            message = str(exc)
            assert "\n" not in message
            named = [f"row {r}, column '{c}'" for (r, c) in cells if c in TIDY_KEYS]
            named += [f"row {r}: sample" for (r, c) in cells if c == "sample"]  # more samples than its method draws
            assert any(n in message for n in named) or "repeats row" in message, message
            return
    _in_range(out)
    counted = 0
    for (row, column), value in cells.items():
        if column in TIDY_KEYS or not value.strip():
            continue
        read = out.loc[row, column]
        if column in ("r_np", "r_hp", "r_mp") and not pd.isna(read):
            assert math.isclose(read, float(value), abs_tol=1e-12)
        rejected = pd.isna(read) or (column == "parse_ok" and read is None)
        counted += bool(rejected and column not in ("r_hmp", "score"))
    # r_hmp and score are recomputed, never read: whatever was written there.
    generative = out["task"] != "type_prediction"
    both = generative & out["r_hp"].notna() & out["r_mp"].notna()
    assert (out.loc[both, "r_hmp"] == out.loc[both, ["r_hp", "r_mp"]].max(axis=1)).all()
    assert int(out["invalid_cells"].sum()) >= counted
    _report_in_range(out)
