"""Issue 42's "Broke" cases: each hostile input is one line naming the culprit (exit 2), never a hang, a runaway or
an internal error: numbers past their declared bound, FIFOs where a file is read, task arguments `ccpt run` sets
itself, a spreadsheet-saved tidy file beside its log, an empty teacher file, an unwritable or full output, a
`--log-dir` with a line break, Ctrl-C while the commands import."""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import pytest
from loopback_openai import serve
from test_cli_validation import _one_line_error  # one helper for every "one line naming the culprit" check

from ccpt.cli import main
from ccpt.judging.teacher_pairs import COLUMNS as TEACHER_COLUMNS


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        # Before: each ran away in memory or time (a plan of 2e20 calls; a bootstrap array; 1e9 sheet files).
        (["run", "--model", "ccpt-scripted/m", "--seeds", "99999999999999999999", "--dry-run"], "--seeds"),
        (["run", "--model", "ccpt-scripted/m", "--oracle-n", "1000000", "--dry-run"], "--oracle-n"),
        (["run", "--model", "ccpt-scripted/m", "--limit", "10000000000", "--dry-run"], "--limit"),
        (["run", "--model", "ccpt-scripted/m", "-T", "sa_max_iterations=100000", "--dry-run"], "sa_max_iterations"),
        # Fourth hostile round: judge_retries had no upper bound (a judge that never answers in format: 1e6 calls).
        (["run", "--model", "ccpt-scripted/m", "-T", "judge_retries=1000000", "--dry-run"], "judge_retries"),
        (["compare", "{tmp}", "--a", "m:base", "--b", "m:cot", "--resamples", "100000000"], "--resamples"),
        (["human", "export-ratings", "{tmp}", "--out", "{tmp}/o", "--raters", "1000000000"], "--raters"),
        (["judge", "train", "--epochs", "1000"], "--epochs"),
        # Before: internal errors after 12–28 s of loading and training.
        (["judge", "train", "--set", "batch_size=0"], "batch_size=0"),
        (["judge", "train", "--set", "dropout=1.5"], "dropout=1.5"),
        (["judge", "train", "--set", "threads=0"], "threads=0"),
        (["judge", "train", "--set", "folds=1"], "folds must be ≥ 2"),
        (["judge", "train", "--set", "validation_fold=7"], "validation_fold must be one of the 5 folds"),
        # `ccpt run` sets the method (and seeds, …) per task run: -T method=cot planned CoT in place of each --method.
        (["run", "--model", "ccpt-scripted/m", "--method", "base", "--method", "gold", "-T", "method=cot"], "--method"),
        (["run", "--model", "ccpt-scripted/m", "-T", "seeds=2"], "--seeds"),
        # YAML 1.1 reads `yes` as true; a switch is spelled true or false.
        (["run", "--model", "ccpt-scripted/m", "-T", "system_prompt=yes", "--dry-run"], "system_prompt='yes'"),
        (["run", "--model", "ccpt-scripted/m", "--log-dir", "{tmp}/a\nb", "--dry-run"], "line break"),
        # Before: planned without a word: Task 3 ran Base for a CoT asked of it alone, --oracle-n was read by no
        # method, and a repeated --method/--model/--task planned (and would send) each of its task runs twice.
        (
            ["run", "--model", "ccpt-scripted/m", "--task", "type_prediction", "--method", "cot", "--dry-run"],
            "--method: cot applies to none of the selected tasks (type_prediction; Task 3 runs base)",
        ),
        (
            ["run", "--model", "ccpt-scripted/m", "--method", "base", "--oracle-n", "7", "--dry-run"],
            "--oracle-n: no selected --method takes it",
        ),
        (
            ["run", "--model", "ccpt-scripted/m", "--method", "base", "--method", "base", "--dry-run"],
            "--method: base given more than once",
        ),
        (
            ["run", "--model", "ccpt-scripted/m", "--model", "ccpt-scripted/m", "--dry-run"],
            "--model: ccpt-scripted/m given more than once",
        ),
    ],
)
def test_numbers_past_their_bound_and_misplaced_arguments_are_one_line(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert named in line, line
    assert not (tmp_path / "o").exists()


def test_a_switch_spelled_true_is_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str], ccpt_dir) -> None:
    argv = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/j", "--task", "pi_emergent",
            "--limit", "1", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path), "--dry-run",
            "-T", "system_prompt=True", "--seeds", "1000"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err  # the bound itself is allowed


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "results.csv"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{fifo}"],
        ["compare", "{fifo}", "--a", "m:base", "--b", "m:cot"],
        ["report", "{csv}", "--prices", "{fifo}"],
        ["judge", "score", "{fifo}", "--judge", "distilled", "--out", "{tmp}/s.csv"],
        ["judge", "train", "--teacher", "{fifo}"],
        ["judge", "pairs", "{fifo}", "--out", "{tmp}/p.csv"],
        ["human", "import-solver", "{fifo}", "--out", "{tmp}/t.csv"],
    ],
)
def test_a_fifo_where_a_file_is_read_is_one_line_not_a_hang(
    argv: list[str], fifo: Path, reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `report`, `compare`, `judge score` and `judge train` blocked forever opening the FIFO."""
    csv_file = str(reference_dir / "pi_emergent_gpt-4o_naive.csv")
    args = [a.replace("{fifo}", str(fifo)).replace("{csv}", csv_file).replace("{tmp}", str(tmp_path)) for a in argv]
    line = _one_line_error(capsys, args)
    assert str(fifo) in line and "not a regular file" in line, line


@pytest.mark.parametrize(
    ("link", "named"),
    [("loop", "Too many levels of symbolic links"), ("dangling", "dangling symbolic link")],
)
@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{path}"],
        ["compare", "{path}", "--a", "m:base", "--b", "m:cot"],
        ["rejudge", "{path}", "--judge", "distilled"],
        ["judge", "train", "--teacher", "{path}"],
        ["human", "import-solver", "{path}", "--out", "{tmp}/t.csv"],
        ["run", "--model", "ccpt-scripted/m", "--data-dir", "{path}", "--dry-run"],
    ],
)
def test_a_link_loop_or_a_dangling_link_is_named_as_such(
    argv: list[str], link: str, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a link loop or a dangling link given for a file was said not to exist."""
    path = tmp_path / link
    path.symlink_to(path if link == "loop" else tmp_path / "gone")
    line = _one_line_error(capsys, [a.replace("{path}", str(path)).replace("{tmp}", str(tmp_path)) for a in argv])
    assert str(path) in line and named in line and "does not exist" not in line, line


def test_an_output_that_is_a_fifo_is_never_replaced(fifo: Path, reference_dir: Path, capsys) -> None:
    """The atomic writer renames onto its target: onto a FIFO or /dev/null it would replace it with a file."""
    line = _one_line_error(capsys, ["report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), "--out", str(fifo)])
    assert f"--out {fifo}" in line and "not a regular file" in line
    assert fifo.is_fifo()


def test_a_price_of_1e308_is_refused(tmp_path: Path, reference_dir: Path, capsys) -> None:
    """Before: accepted, and every priced cost printed "inf"."""
    prices = tmp_path / "prices.toml"
    prices.write_text('"openai/gpt-4o" = { input = 1e308, output = 2.5 }\n')
    line = _one_line_error(
        capsys, ["report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), "--prices", str(prices)]
    )
    assert f"{prices}: openai/gpt-4o.input" in line and "1000000" in line, line


def _teacher(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(TEACHER_COLUMNS)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "empty file (no header row)"),  # before: "not a teacher-pairs CSV; missing column(s): model, …"
        ([], "no teacher pairs (a header and no rows)"),  # before: "every pair is a human test pair"
        # Before: a MemoryError (each occurrence held in memory).
        ([["m", "pi_emergent", "base", "1", "combination", "cat", "furry", "0.5", "100000000000", "0", "base", "x"]],
         "occurrences in [1, 1,000,000]"),
    ],
)  # fmt: skip
def test_a_teacher_file_gives_its_true_reason(
    content: list[list[str]] | None, reason: str, ccpt_dir: Path, tmp_path: Path, capsys
) -> None:
    path = tmp_path / "teacher.csv"
    path.write_text("") if content is None else _teacher(path, content)
    argv = ["judge", "train", "--teacher", str(path), "--data-dir", str(ccpt_dir), "--out", str(tmp_path / "h.st")]
    line = _one_line_error(capsys, argv)
    assert str(path) in line and reason in line, line


def test_a_spreadsheet_saved_tidy_file_beside_its_log_is_named(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "LOG and LOG hold different answers": the CSV's rows carry their log's name as their source."""
    logs, tidy, sheet = tmp_path / "logs", tmp_path / "tidy.csv", tmp_path / "sheet.csv"
    argv = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/j", "--task", "pi_emergent",
            "--method", "base", "--limit", "2", "--seeds", "1", "--no-preflight", "--display", "none",
            "--data-dir", str(ccpt_dir), "--log-dir", str(logs)]  # fmt: skip
    assert main(argv) == 0
    assert main(["report", str(logs), "--tidy", str(tidy)]) == 0
    capsys.readouterr()
    # A spreadsheet's save: numbers to two decimals, CRLF line ends.
    with tidy.open(newline="", encoding="utf-8-sig") as src, sheet.open("w", newline="", encoding="utf-8") as dst:
        writer = csv.writer(dst, lineterminator="\r\n")
        for row in csv.reader(src):
            writer.writerow(
                [f"{float(v):.2f}" if v.count(".") == 1 and v.replace(".", "").isdigit() else v for v in row]
            )
    line = _one_line_error(capsys, ["report", str(logs), str(sheet)])
    assert str(sheet) in line and "hold different answers" in line, line


@pytest.mark.parametrize("how", ["repeated column", "truncated", "semicolons"])
def test_a_mangled_result_csv_is_one_line_not_a_report(how: str, reference_dir: Path, tmp_path: Path, capsys) -> None:
    """Before: a repeated column and a truncated row gave a report (the second column ignored, the cut row's missing
    cells empty) and a semicolon file a pandas message over two lines."""
    with (reference_dir / "pi_emergent_gpt-4o_naive.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    width, delimiter = len(rows[0]), ","
    if how == "repeated column":  # a second copy of seed 0's answers, other values: pandas read the first
        rows = [[*r, "gpt-4o_naive_0_property" if i == 0 else "other"] for i, r in enumerate(rows)]
        named = "'gpt-4o_naive_0_property' appear more than once"
    elif how == "truncated":  # the last row cut short: pandas padded it with empty cells
        rows[-1] = rows[-1][: width - 7]
        named = f"row 199 has {width - 7} fields, the header {width}"
    else:  # a spreadsheet's export with its locale's separator
        delimiter, named = ";", "separated by ';'"
    path, out = tmp_path / "pi_emergent_m_naive.csv", tmp_path / "report.md"
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)
    line = _one_line_error(capsys, ["report", str(path), "--out", str(out)])
    assert str(path) in line and named in line, line
    assert not out.exists()


def test_a_reply_longer_than_the_csv_modules_cell_limit_is_read(reference_dir: Path, tmp_path: Path, capsys) -> None:
    """The strict reader keeps what pandas read: a reply past the csv module's default 128 KiB cell."""
    with (reference_dir / "pi_emergent_gpt-4o_naive.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows[1][rows[0].index("gpt-4o_naive_0_generated_")] = "word " * 40_000
    path = tmp_path / "pi_emergent_m_naive.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    assert main(["report", str(path), "--format", "csv"]) == 0, capsys.readouterr().err
    assert "table3,gpt-4o,base" in capsys.readouterr().out


def test_compare_of_a_run_with_itself_is_one_line(reference_dir: Path, ccpt_dir: Path, capsys) -> None:
    """Before: a "comparison" with every difference 0 and p = 1, as if the two runs had been measured equal."""
    argv = ["compare", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), "--data-dir", str(ccpt_dir),
            "--a", "gpt-4o:base", "--b", "GPT-4o:Base"]  # fmt: skip
    line = _one_line_error(capsys, argv)
    assert "--a and --b both name run gpt-4o:base (judge gpt-4o)" in line, line


@pytest.mark.parametrize(
    ("args", "named"),
    [
        # Before: the tidy table was written, then the label refused (exit 2 with an output left behind).
        (["--label", "nosuch=X"], "no model 'nosuch' in the results"),
        # Before: the last name won without a word.
        (["--label", "gpt-4o=A", "--label", "GPT-4o=B"], "--label gives 'gpt-4o' two names: 'A' and 'B'"),
        # Before: ignored (the stored files are read only beside --paper / --beside-paper).
        (["--results-dir", "{tmp}"], "--results-dir: the stored files are read with --paper or --beside-paper"),
    ],
)
def test_a_report_option_error_leaves_no_output(
    args: list[str], named: str, reference_dir: Path, tmp_path: Path, capsys
) -> None:
    tidy, out = tmp_path / "tidy.csv", tmp_path / "report.md"
    argv = ["report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), "--tidy", str(tidy), "--out", str(out)]
    line = _one_line_error(capsys, [*argv, *(a.replace("{tmp}", str(tmp_path)) for a in args)])
    assert named in line, line
    assert not tidy.exists() and not out.exists()


def test_an_uncreatable_out_directory_is_one_line_naming_it(tmp_path: Path, reference_dir: Path, capsys) -> None:
    """Before: `human export-ratings` / `export-solver` into an uncreatable --out were internal errors."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "sheets"
    line = _one_line_error(capsys, ["human", "export-ratings", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"),
                                    "--out", str(out)])  # fmt: skip
    assert f"--out {out}: not writable" in line, line


def test_ctrl_c_while_the_commands_import_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the commands were imported outside main's handlers, so Ctrl-C then printed a 47-line traceback."""
    import importlib

    import ccpt.cli

    def interrupted(name: str) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    monkeypatch.setattr(ccpt.cli.cli, "commands", {})
    assert main(["report", "x"]) == 130
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == ["ccpt: interrupted; rerun the same command to resume"]


def test_a_header_only_result_csv_is_named(reference_dir: Path, tmp_path: Path, capsys) -> None:
    """Before: "no results to report (check the paths given …)", naming no file."""
    path = tmp_path / "pi_emergent_gpt-4o_naive.csv"
    with (reference_dir / path.name).open(encoding="utf-8") as fh:
        path.write_text(fh.readline(), encoding="utf-8")
    line = _one_line_error(capsys, ["report", str(path)])
    assert f"{path}: no result rows (a header only)" in line, line


def test_a_truncated_eval_log_is_named_in_words(tmp_path: Path, capsys) -> None:
    """Before: "EOCD not found" (the zip reader's words for an archive cut short)."""
    source = next((Path(__file__).parent / "data" / "retried-sa-run").glob("*.eval"))
    cut = tmp_path / "logs" / source.name
    cut.parent.mkdir()
    cut.write_bytes(source.read_bytes()[:3000])
    line = _one_line_error(capsys, ["report", str(cut.parent)])
    assert f"{cut}: not a complete .eval log (truncated, or not an Inspect log at all)" in line, line


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="needs Linux's /proc")
def test_an_out_in_a_directory_that_takes_no_new_file_names_the_directory(reference_dir: Path, capsys) -> None:
    """Before: "--out /proc/version: cannot write (No such file or directory)" of a file that exists."""
    line = _one_line_error(capsys, ["report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), "--out",
                                    "/proc/version"])  # fmt: skip
    assert "--out /proc/version: cannot create a file in /proc" in line, line


def test_a_bad_out_writes_no_figures(reference_dir: Path, tmp_path: Path, capsys) -> None:
    """Before: the figures were saved, then the report's --out failed: an error exit that left files behind."""
    blocker, figures = tmp_path / "a-file", tmp_path / "figures"
    blocker.write_text("")
    argv = ["report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), "--figures", str(figures), "--out",
            str(blocker / "report.md")]  # fmt: skip
    line = _one_line_error(capsys, argv)
    assert f"--out {blocker / 'report.md'}: cannot create a file in {blocker}" in line, line
    assert not figures.exists() or not any(figures.iterdir())


def test_judge_score_that_scored_no_pair_fails(tmp_path: Path, monkeypatch, capsys) -> None:
    """Every pair refused by the judge's endpoint: the file is written and the failures counted, as before, but the
    command no longer exits 0."""
    pairs, out = tmp_path / "pairs.csv", tmp_path / "scored.csv"
    pairs.write_text("concept,property\nzzq stone,hard\nzzq cloud,soft\n", encoding="utf-8")
    with serve(fail_when="zzq") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        monkeypatch.setenv("LOOP_API_KEY", "test-key")
        argv = ["judge", "score", str(pairs), "--judge", "openai-api/loop/m", "--out", str(out)]
        line = _one_line_error(capsys, argv)
    assert "openai-api/loop/m: every one of the 2 pair(s) failed" in line, line
    with out.open(newline="", encoding="utf-8") as fh:
        assert [row["relevance"] for row in csv.DictReader(fh)] == ["", ""]


def test_judge_score_of_a_file_with_no_judgeable_row_fails(tmp_path: Path, capsys) -> None:
    """Every row lacks a property: nothing is sent and nothing scored, so the command does not exit 0."""
    pairs, out = tmp_path / "pairs.csv", tmp_path / "scored.csv"
    pairs.write_text("concept,property\nstone,\ncloud,\n", encoding="utf-8")
    line = _one_line_error(capsys, ["judge", "score", str(pairs), "--judge", "distilled", "--out", str(out)])
    assert f"{pairs}: no row has both a concept and a property; nothing was judged" in line, line


def test_a_csv_export_neutralises_formula_cells(ccpt_dir: Path, tmp_path: Path, capsys) -> None:
    """Before: a dataset cell starting with "=" was written as is, a live formula in a spreadsheet."""
    data = tmp_path / "data"
    shutil.copytree(ccpt_dir, data)
    source = data / "ccpt_emergent.csv"
    with source.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    column = rows[0].index("property")
    formula = '=HYPERLINK("http://x","y")'
    rows[1][column] = formula
    with source.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    out = tmp_path / "records.csv"
    assert main(["data", "export", "--data-dir", str(data), "--as", "csv", "--out", str(out)]) == 0, capsys.readouterr()
    with out.open(newline="", encoding="utf-8") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert "'" + formula in cells and not any(cell.startswith("=") for cell in cells)


def test_report_paper_names_a_local_copy_that_is_not_the_pinned_files(
    reference_dir: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fourth hostile round: `report --paper --results-dir COPY` (or $CCPT_RESULTS_DIR) printed an edited stored file's
    numbers as the paper's (GPT-4o Base E 40.8 → 60.8) with no line; a file the authors never stored, likewise. Both
    are named; the pinned files themselves are not."""
    import json

    source, copy = reference_dir / "pi_emergent_gpt-4o_naive.csv", tmp_path / "copy"
    copy.mkdir()
    with source.open(newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    rows[0][header.index("gpt-4o_naive_0_combination_relevance")] = "1.0"
    with (copy / source.name).open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows([header, *rows])
    shutil.copy(reference_dir / "pi_canceled_gpt-4o_naive.csv", copy / "mine.csv")
    assert main(["report", "--paper", "--results-dir", str(copy), "--data-dir", str(ccpt_dir), "--format", "json"]) == 0
    (note,) = [n for n in json.loads(capsys.readouterr().out)["notes"] if "not as the authors published" in n]
    assert f"differ from their pinned sha256: {copy / source.name}" in note
    assert f"are none of the pinned files: {copy / 'mine.csv'}" in note
    (copy / "mine.csv").unlink()
    shutil.copy(source, copy / source.name)
    assert main(["report", "--paper", "--results-dir", str(copy), "--data-dir", str(ccpt_dir), "--format", "json"]) == 0
    assert "not as the authors published" not in capsys.readouterr().out


def test_a_name_with_a_line_break_stays_on_one_stderr_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a path (or a model name) holding a line break split an error or a warning into lines that read as
    other messages."""
    missing = tmp_path / "no\nsuch.csv"
    line = _one_line_error(capsys, ["report", str(missing)])
    assert "no\\nsuch.csv" in line, line
    results = tmp_path / "results"  # real logs of one run, and a damaged one beside them
    shutil.copytree(Path(__file__).parent / "data" / "retried-sa-run", results)
    (results / "cut\nshort.eval").write_bytes(b"PK\x03\x04 not a whole archive")
    assert main(["report", str(results), "--out", str(tmp_path / "report.md")]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err[0].startswith("ccpt: warning: skipped") and "cut\\nshort.eval: not a complete" in err[0], err
    assert not any(line.startswith("short.eval") for line in err), err
