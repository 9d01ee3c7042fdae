"""The CCPT dataset: real files, quirks, splits, Task-3 sampling, and every error path."""

from __future__ import annotations

import csv
import hashlib
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ccpt.dataset import CCPTDataset, clean_combination, load_dataset, read_records, read_test_index
from ccpt.errors import DataError

pytestmark = pytest.mark.shared_data


def test_counts_match_the_released_files(dataset: CCPTDataset) -> None:
    assert (len(dataset.emergent), len(dataset.canceled), len(dataset.component)) == (2500, 1613, 8201)
    assert len(dataset.extra_emergent) == 1690
    # The paper says 12,315; the files hold 12,314 (emergent has 2,500, not 2,501).
    assert len(dataset.paper_records) == 12314


def test_split_sizes(dataset: CCPTDataset) -> None:
    assert [len(dataset.test(t)) for t in ("pi_emergent", "pi_canceled", "npc_emergent")] == [200, 167, 167]
    assert len(dataset.train("pi_canceled")) == 1613 - 167
    test_ids = {r.id for r in dataset.test("pi_emergent")}
    assert not test_ids & {r.id for r in dataset.train("pi_emergent")}


def test_test_split_follows_index_order(dataset: CCPTDataset, ccpt_dir: Path) -> None:
    index = read_test_index(ccpt_dir / "test_index.json")
    assert [r.row for r in dataset.test("npc_emergent")] == list(index["npc_emergent"])


def test_known_rows(dataset: CCPTDataset) -> None:
    first = dataset.emergent[0]
    assert (first.combination, first.head, first.modifier, first.property) == (
        "a boat on the rocks",
        "boat",
        "rock",
        "strand",
    )
    assert first.head_ratings == (3, 3, 3) and first.modifier_ratings == (3, 2, 4)
    assert first.judge_combination == pytest.approx(7 / 9) and first.judge_score == pytest.approx(4 / 9)
    canceled = dataset.canceled[0]
    # Trailing punctuation in the file ("a maddening dog,") is cleaned.
    assert canceled.combination == "a maddening dog"
    assert canceled.human_labels == ("canceled", "canceled", "component")
    assert canceled.judge_modifier == pytest.approx(3 / 9)  # the current column, not the legacy one
    component = dataset.component[0]
    assert component.property_source == "root" and component.human_labels == ("component",)


def test_quirks_are_parsed_not_dropped(dataset: CCPTDataset) -> None:
    assert sum(r.sentence is None for r in dataset.emergent) == 89
    # The raw code "2" (77 emergent rows) is read as "others"; no raw codes survive.
    labels = Counter(label for r in dataset.emergent for label in r.human_labels)
    assert labels["others"] == 77 and "2" not in labels
    assert all(not r.combination.endswith((",", ".", ";")) for r in dataset.paper_records)
    assert sum(r.toxic for r in dataset.paper_records) == 271
    assert [sum(r.toxic for r in dataset.test(t)) for t in ("pi_emergent", "pi_canceled", "npc_emergent")] == [
        8,
        7,
        6,
    ]


def test_exclude_toxic_shrinks_splits(ccpt_dir: Path) -> None:
    ds = load_dataset(ccpt_dir, exclude_toxic=True)
    assert ds.excluded_toxic == sum(1 for r in load_dataset(ccpt_dir).paper_records if r.toxic) + sum(
        1 for r in load_dataset(ccpt_dir).extra_emergent if r.toxic
    )
    assert len(ds.test("pi_emergent")) == 192
    assert not any(r.toxic for r in ds.paper_records)


def test_clean_combination() -> None:
    assert clean_combination("  a maddening dog, ") == "a maddening dog"
    assert clean_combination("egg in the batter.") == "egg in the batter"


# ------------------------------------------------------------------------------------------ Task 3


def test_type_prediction_set_is_balanced_and_seeded(dataset: CCPTDataset) -> None:
    items = dataset.type_prediction_set(per_type=250, seed=7)
    assert Counter(i.gold for i in items) == {"emergent": 250, "component": 250, "canceled": 250, "others": 250}
    assert items == dataset.type_prediction_set(per_type=250, seed=7)
    assert items != dataset.type_prediction_set(per_type=250, seed=8)


def test_others_pairs_are_never_annotated_pairs(dataset: CCPTDataset) -> None:
    annotated = {(r.combination.lower(), r.property.lower()) for r in dataset.paper_records}
    others = [i for i in dataset.type_prediction_set(seed=3) if i.gold == "others"]
    assert others and all((i.combination.lower(), i.property.lower()) not in annotated for i in others)
    assert len({(i.combination, i.property) for i in others}) == len(others)


# ------------------------------------------------------------------------------------------ errors


def _copy_dataset(src: Path, dst: Path) -> Path:
    for name in ("ccpt_emergent.csv", "ccpt_canceled.csv", "ccpt_component.csv", "add_ccpt_emergent.csv"):
        shutil.copy(src / name, dst / name)
    shutil.copy(src / "test_index.json", dst / "test_index.json")
    return dst


def test_missing_file_names_the_file(ccpt_dir: Path, tmp_path: Path) -> None:
    _copy_dataset(ccpt_dir, tmp_path)
    (tmp_path / "ccpt_canceled.csv").unlink()
    with pytest.raises(DataError, match=r"missing dataset file .*ccpt_canceled\.csv"):
        load_dataset(tmp_path)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(tmp_path / "nope")


def test_truncated_csv_names_file_and_row(ccpt_dir: Path, tmp_path: Path) -> None:
    _copy_dataset(ccpt_dir, tmp_path)
    path = tmp_path / "ccpt_emergent.csv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(DataError, match=r"ccpt_emergent\.csv.*(truncated|malformed)"):
        load_dataset(tmp_path)


def test_missing_column_is_named(ccpt_dir: Path, tmp_path: Path) -> None:
    _copy_dataset(ccpt_dir, tmp_path)
    path = tmp_path / "ccpt_component.csv"
    with (ccpt_dir / "ccpt_component.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    drop = rows[0].index("meta.toxicity")
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([r[:drop] + r[drop + 1 :] for r in rows])
    with pytest.raises(DataError, match=r"missing column\(s\) meta\.toxicity"):
        load_dataset(tmp_path)


def test_bad_cell_names_row_and_column(ccpt_dir: Path, tmp_path: Path) -> None:
    _copy_dataset(ccpt_dir, tmp_path)
    path = tmp_path / "ccpt_canceled.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rows[5]["meta.root_human_relevance"] = "(5, 9, 3)"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(DataError, match=r"row 5, column 'meta\.root_human_relevance': .*\(got '9'\)"):
        read_records(path)


def test_corrupt_test_index(ccpt_dir: Path, tmp_path: Path) -> None:
    _copy_dataset(ccpt_dir, tmp_path)
    (tmp_path / "test_index.json").write_text('{"pi_emergent": [1, 2', encoding="utf-8")
    with pytest.raises(DataError, match=r"test_index\.json: .*Invalid JSON"):
        load_dataset(tmp_path)


def test_test_index_out_of_range(ccpt_dir: Path, tmp_path: Path) -> None:
    _copy_dataset(ccpt_dir, tmp_path)
    (tmp_path / "test_index.json").write_text(
        '{"pi_emergent": [99999], "pi_canceled": [0], "npc_emergent": [0]}', encoding="utf-8"
    )
    with pytest.raises(DataError, match="row 99999"):
        load_dataset(tmp_path)


def test_sha_helper_matches_hashlib(ccpt_dir: Path) -> None:
    from ccpt.io.download import CHECKSUMS, sha256_file

    path = ccpt_dir / "test_index.json"
    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest() == CHECKSUMS["test_index.json"]


def test_truncated_row_reports_its_real_field_count(ccpt_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "ccpt_component.csv"
    lines = (ccpt_dir / "ccpt_component.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    first = next(csv.reader([lines[1]]))
    short = ",".join(f'"{v}"' for v in first[:3]) + "\n"  # a row cut after its third field
    path.write_text(lines[0] + short, encoding="utf-8")
    with pytest.raises(DataError, match=rf"row 0 \(line 2\) has 3 fields, expected {len(header)}"):
        read_records(path)
    path.write_text(lines[0] + lines[1].rstrip("\r\n") + ',"x","y"\n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"has {len(header) + 2} fields, expected {len(header)}"):
        read_records(path)


def test_a_byte_order_mark_is_not_part_of_the_first_column(ccpt_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "ccpt_canceled.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (ccpt_dir / "ccpt_canceled.csv").read_bytes())  # as saved by a spreadsheet
    assert len(read_records(path)) == 1613


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"pi_emergent": [true, 1], "pi_canceled": [0], "npc_emergent": [0]}',
            r"pi_emergent\[0\]: should be a valid int",
        ),
        (
            '{"pi_emergent": [1, 2, 1], "pi_canceled": [0], "npc_emergent": [0]}',
            r"pi_emergent: lists \[1\] more than once",
        ),
        ("[" * 100_000 + "]" * 100_000, "recursion limit exceeded"),
        ('{"pi_emergent": [1.0], "pi_canceled": [0], "npc_emergent": [0]}', r"pi_emergent\[0\]: should be a valid int"),
        ('{"pi_emergent": [-1], "pi_canceled": [0], "npc_emergent": [0]}', r"pi_emergent\[0\]: should be greater than"),
        (
            '{"pi_emergent": "1,2", "pi_canceled": [0], "npc_emergent": [0]}',
            r"pi_emergent: should be a valid (list|array)",
        ),
        ('{"pi_canceled": [0], "npc_emergent": [0]}', r"pi_emergent: Field required"),
        ("[1, 2]", r"should be an object"),
        ("\udcff", r"Invalid JSON"),
    ],
    ids=["bool", "duplicates", "deep", "float", "negative", "string", "missing", "list", "not-utf8"],
)
def test_a_malformed_test_index_is_one_error(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "test_index.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))  # "\udcff" is the byte 0xff: not UTF-8
    with pytest.raises(DataError, match=message):
        read_test_index(path)


def test_an_empty_test_split_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "test_index.json"
    path.write_text('{"pi_emergent": [], "pi_canceled": [0], "npc_emergent": [0]}', encoding="utf-8")
    with pytest.raises(DataError, match=r"test_index\.json: pi_emergent: Value should have at least 1 item"):
        read_test_index(path)


def _set_cells(path: Path, row: int, cells: dict[str, str]) -> None:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rows[row].update(cells)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        # The case: 7 / -5 in a test row made the Gold row 255.6 / -107.4 and judge agreement 0.626.
        (
            {"meta.combination_gpt-4o_relevance": "7", "meta.root_gpt-4o_relevance": "-5"},
            r"ccpt_emergent\.csv: row 0, column 'meta\.combination_gpt-4o_relevance': should be less than or equal "
            r"to 1 \(got '7'\)",
        ),
        ({"meta.root_gpt-4o_relevance": "-5"}, r"row 0, column 'meta\.root_gpt-4o_relevance': should be greater"),
        ({"meta.modifier_gpt-4o_relevance": "inf"}, r"column 'meta\.modifier_gpt-4o_relevance': .*finite"),
        ({"meta.gpt-4o_emergence": "nan"}, r"column 'meta\.gpt-4o_emergence': .*finite"),
        ({"meta.toxicity": "flase"}, r"column 'meta\.toxicity': should be a valid boolean"),
        ({"meta.human_labels": "(emergent, 7)"}, r"column 'meta\.human_labels': not a type label"),
        ({"human_label_majority": "bogus"}, r"column 'human_label_majority': not a type label"),
    ],
    ids=["issue-7-and-minus-5", "negative", "inf", "nan", "flag", "label", "majority"],
)
def test_a_stored_judge_relevance_out_of_range_is_one_line(
    ccpt_dir: Path, tmp_path: Path, cells: dict[str, str], message: str
) -> None:
    """The stored GPT-4o relevances are the Gold row's answers and judge agreement's reference: a cell outside
    [0, 1] (or inf, nan) in the dataset cannot be set aside without changing them, so it rejects the file. (An
    empty cell is "not judged", as the data-construction pipeline writes its rows.)"""
    _copy_dataset(ccpt_dir, tmp_path)
    _set_cells(tmp_path / "ccpt_emergent.csv", 0, cells)  # row 0 is the first pi_emergent test row
    with pytest.raises(DataError, match=message) as caught:
        load_dataset(tmp_path)
    assert "\n" not in str(caught.value)


def test_the_schema_reads_the_released_files_unchanged(dataset: CCPTDataset) -> None:
    """The real files through the dataset schema: every stored relevance in [0, 1], labels and ratings parsed."""
    judged = [*dataset.emergent, *dataset.canceled]
    values = [v for r in judged for v in (r.judge_combination, r.judge_head, r.judge_modifier, r.judge_score)]
    assert len(values) == 4 * 4113 and all(v is not None and 0 <= v <= 1 for v in values)
    assert all(r.judge_combination is None for r in dataset.component)
    first = dataset.emergent[0]
    assert (first.combination, first.combination_ratings, first.toxic) == ("a boat on the rocks", (5, 5, 5), False)


def test_a_bad_stored_relevance_is_one_line_at_the_command_line(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `ccpt report` printed a plausible Gold row (29.0 / 90.6 / 61.7 with 7 and -5 in the first PI-emergent
    test row) and exit 0. Now every command that reads the dataset stops with one line naming file, row and column."""
    from ccpt.cli import main

    _copy_dataset(ccpt_dir, tmp_path)
    _set_cells(tmp_path / "ccpt_emergent.csv", 0, {"meta.combination_gpt-4o_relevance": "7"})
    assert main(["data", "stats", "--data-dir", str(tmp_path)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"ccpt: error: {tmp_path / 'ccpt_emergent.csv'}: row 0, column ")


def test_a_test_row_without_a_stored_relevance_is_counted_in_the_gold_row(
    ccpt_dir: Path, reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty stored relevance is "not judged" (the pipeline writes such rows): the Gold row leaves that instance
    out of the cells that need it. Before, its cells silently averaged fewer instances than the others; now the
    report says how many, per task."""
    from ccpt.cli import main

    (tmp_path / "data").mkdir()
    _copy_dataset(ccpt_dir, tmp_path / "data")
    _set_cells(tmp_path / "data" / "ccpt_emergent.csv", 0, {"meta.combination_gpt-4o_relevance": ""})
    results = str(reference_dir / "pi_emergent_gpt-4o_naive.csv")
    assert main(["report", results, "--data-dir", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    n = len(load_dataset(ccpt_dir).test("pi_emergent"))
    assert (f"Gold (stored GPT-4o judge): instances without a stored relevance (never judged), left out of the "
            f"cells that need it: pi_emergent 1 of {n}") in out  # fmt: skip
    assert main(["report", results, "--data-dir", str(ccpt_dir)]) == 0
    assert "without a stored relevance" not in capsys.readouterr().out  # the released files: every row judged


def test_a_dataset_loaded_again_is_the_files_as_they_are_now(ccpt_dir: Path, tmp_path: Path) -> None:
    """The parse is memoised by the files' bytes: a file edited in place between two loads (same size, same path)
    is read anew, and a caller that changes its dataset's lists changes no other caller's."""
    data = tmp_path / "data"
    shutil.copytree(ccpt_dir, data)
    first = load_dataset(data)
    name = first.emergent[0].property
    first.emergent.clear()
    assert load_dataset(data).emergent[0].property == name
    source = data / "ccpt_emergent.csv"
    text = source.read_text(encoding="utf-8")
    edited = "x" * len(name)
    source.write_text(text.replace(f",{name},", f",{edited},", 1), encoding="utf-8")
    again = load_dataset(data)
    assert again.emergent[0].property == edited and again.sha256 != first.sha256
