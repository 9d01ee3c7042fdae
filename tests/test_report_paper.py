"""Paper-ready reports: display names, warnings about mixed instance sets, Table 5's n, ± kept by to_frame,
LaTeX floats that compile, honest figures, and `ccpt compare` matching names and warning about small n.

The results are small hand-made tables (expected values computed by hand in the comments) or real Inspect
logs of the scripted provider; LaTeX is compiled by a real pdflatex, figures are inspected as matplotlib
artists.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from human_app_helpers import unavailable
from test_report_formats import _row, results_fixture

from ccpt.cli import main
from ccpt.errors import CcptError
from ccpt.report import Report, build_report, render
from ccpt.report.names import parse_label
from ccpt.results import COLUMNS


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _scored(model: str, method: str, judge: str, per_seed: dict[int, list[float]]) -> list[dict[str, Any]]:
    """PI-emergent rows with R_H,M,P = 0, so E = R_N,P = the given value (instance i{k} for the k-th value)."""
    return [
        _row(task="pi_emergent", model=model, method=method, seed=seed, instance=f"i{k}", r_np=v, r_hp=0.0,
             r_mp=0.0, r_hmp=0.0, score=v, judge=judge)
        for seed, values in per_seed.items()
        for k, v in enumerate(values)
    ]  # fmt: skip


# ------------------------------------------------------------------------------------------ display names


def test_display_names_change_the_text_never_the_keys() -> None:
    report = build_report(results_fixture(), n_boot=50, examples_per_group=0, labels={"M/ONE": "Model One"})
    tables = report.tables()
    assert "table5:m/one:base" in tables and "table6:m/one:sa_llm" in tables  # ids stay the keys
    assert set(tables["table3"].to_frame()["Model"]) == {"Model One"}
    assert tables["table3"].rows[0].key == ("run", "m/one", "base", "judge/j")  # the judge is part of it
    assert tables["table5:m/one:base"].title.endswith("Model One / Base")
    assert set(tables["failures"].to_frame()["Model"]) == {"Model One"}
    records = report.to_frame()
    assert set(records["model"].dropna()) == {"m/one"} and set(records["model_label"].dropna()) == {"Model One"}
    for fmt in ("markdown", "latex", "html"):
        text = render(report, fmt)
        assert "Model One" in text and "| m/one |" not in text, fmt


def test_label_errors_are_one_line_and_model_ids_may_hold_equals_signs() -> None:
    frame = results_fixture()
    with pytest.raises(CcptError, match=r"no model 'm/two' in the results"):
        build_report(frame, labels={"m/two": "Two"})
    two = pd.concat([frame, frame.assign(model="m/two")])
    with pytest.raises(CcptError, match=r"would both print as 'Same'"):
        build_report(two, labels={"m/one": "Same", "m/two": "Same"})
    with pytest.raises(CcptError, match=r"would both print as 'm/two'"):
        build_report(two, labels={"m/one": "m/two"})  # a label may not take another model's printed id
    models = {"gguf//models/q=4.gguf", "ollama/llama3.1:8b"}
    assert parse_label("gguf//models/q=4.gguf=Q4 model", models) == ("gguf//models/q=4.gguf", "Q4 model")
    assert parse_label("OLLAMA/Llama3.1:8b=Llama = 8B", models) == ("ollama/llama3.1:8b", "Llama = 8B")
    with pytest.raises(CcptError, match="write MODEL=NAME"):
        parse_label("gpt-4o", models)


def test_cli_label_option(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results.csv"
    results_fixture().to_csv(results, index=False)
    assert main(["report", str(results), "--label", "m/one=Model One"]) == 0
    assert "| Model One | Base |" in capsys.readouterr().out
    assert main(["report", str(results), "--label", "m/zzz=Z"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ccpt: error: --label 'm/zzz=Z': no model 'm/zzz'") and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------- Table 5's n, to_frame(±)


def test_table5_n_counts_instances_not_instances_times_seeds() -> None:
    rows = [
        _row(task="type_prediction", model="m", method="base", seed=seed, instance=f"t{i}", gold_type=gold,
             pred_type=pred)
        for seed in (0, 1)
        for i, (gold, pred) in enumerate([("emergent", "emergent"), ("emergent", "others"), ("canceled", "canceled")])
    ]  # fmt: skip
    report = build_report(_frame(rows), n_boot=50, examples_per_group=0)
    table = report.tables()["table5:m:base"]
    n = table.to_frame().set_index("Actual \\ Predicted")["n"]
    assert n["Emergent"] == 2 and n["Canceled"] == 1  # not 4 and 2: seeds do not multiply instances
    assert "Accuracy: 66.7 ± 0.0% (n = 3 instances, 2 seeds)" in table.notes[0]  # 2 of 3 right in both seeds
    counts = report.to_frame().query("table == 'table5'").set_index("metric")["count"]
    assert counts["n:emergent"] == 2 and counts["accuracy"] == 3
    assert counts["confusion:emergent->emergent"] == 2  # confusion counts are predictions: 1 per seed


def test_table5_counts_an_item_drawn_twice_twice() -> None:
    # The authors' Task-3 sample holds two pairs twice; each draw is an item (the paper's 1,000 = 4 × 250).
    rows = [
        _row(task="type_prediction", model="m", method="base", seed=0, instance=instance, gold_type="canceled",
             pred_type=pred)
        for instance, pred in (("a", "canceled"), ("a", "canceled"), ("b", "others"))
    ]  # fmt: skip
    table = build_report(_frame(rows), examples_per_group=0).tables()["table5:m:base"]
    assert table.to_frame().set_index("Actual \\ Predicted").loc["Canceled", "n"] == 3
    assert "Accuracy: 66.7% (n = 3 instances" in table.notes[0]  # 2 of 3 draws right (not 1 of 2)


def test_every_table_states_its_n_in_every_format() -> None:
    from ccpt.report.latex import latex_escape

    # The fixture: Base and Multi-Oracle over 2 instances × 2 seeds, S.A. w/ LLM (with its C_t and no-filter
    # answers) over 2 instances × 1 seed; Table 5 over 6 instances, 1 seed.
    report = build_report(results_fixture(), n_boot=50, examples_per_group=0)
    lines = {
        "table3": "n per row: m/one / Base: 2 instances × 2 seeds; m/one / S.A.w/ LLM: 2 instances × 1 seed; "
        "m/one / Multi-Oracle: 2 instances × 2 seeds.",
        "table5:m/one:base": "Accuracy: 66.7% (n = 6 instances, 1 seed)",
        "table6:m/one:sa_llm": "n = 2 instances × 1 seed per cell.",
        "table7": "n = 2 instances × 1 seed in every run.",
    }
    tables = report.tables()
    for key, line in lines.items():
        assert any(note.startswith(line) for note in tables[key].notes), (key, tables[key].notes)
        assert line in render(report, "markdown") and line in render(report, "html")
        assert latex_escape(line) in render(report, "latex")  # in the float's caption
    # Rows of one n: said once; one instance is not "1 instances".
    rows = _scored("m", "base", "j", {0: [0.4, 0.6], 1: [0.2, 0.4]}) + _scored("m", "cot", "j", {0: [0.5], 1: [0.7]})
    assert build_report(_frame(rows), n_boot=50).tables()["table3"].notes == (
        "n per row: m / Base: 2 instances × 2 seeds; m / CoT: 1 instance × 2 seeds.",
    )
    rows = _scored("m", "base", "j", {0: [0.4, 0.6], 1: [0.2, 0.4]})
    rows += _scored("m", "cot", "j", {0: [0.5, 0.0], 2: [0.7, 0.0]})
    assert build_report(_frame(rows), n_boot=50).tables()["table3"].notes == (
        "n = 2 instances × 2 seeds in every row.",
    )


def test_the_n_line_counts_the_unscored_cells_the_means_leave_out() -> None:
    """Seen on llama-cpp-python's server with a judge pair refused (HTTP 500): one of 4 samples was left unscored,
    E averaged the other 3, and Table 3 and the figure's legend said "n = 4 instances × 1 seed" all the same."""
    from ccpt.report import table3
    from ccpt.report.figures import method_bars

    rows = _scored("m", "base", "j", {0: [0.3, 0.6, 0.3, 0.9]})
    rows[3].update(r_np=None, score=None)  # the judge failed: R_N,P and E unscored, R_H,M,P kept
    report = build_report(_frame(rows), n_boot=50, examples_per_group=0)
    line = "n = 4 instances × 1 seed, up to 1 unscored (left out of the means) in every row."
    assert report.tables()["table3"].notes == (line,)
    assert line in render(report, "markdown") and line in render(report, "html")
    e = report.to_frame().query("table == 'table3' and metric == 'score'").iloc[0]
    assert e["mean"] == pytest.approx(40.0) and e["n_instances"] == 4 and e["n_failed"] == 1  # over the 3 scored
    fig = method_bars(table3(_frame(rows), stat="sem"))
    (legend,) = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert legend == "m / Base (n = 4 instances × 1 seed, 1 unscored (left out of the means))"  # E's cells alone


def test_to_frame_spread_keeps_the_plus_minus_values() -> None:
    report = build_report(results_fixture(), stat="sem", n_boot=50, examples_per_group=0)
    plain = report.tables()["table3"].to_frame()
    spread = report.tables()["table3"].to_frame(spread=True).set_index("Method")
    assert "PI-Eme. E ↑ ±" not in plain.columns
    # Base E: seed means 0.5 and 0.4 → 45.0 ± sd(50, 40)/√2 = 5.0 (as printed, "45.0 ± 5.0").
    assert spread.loc["Base", "PI-Eme. E ↑"] == pytest.approx(45.0)
    assert spread.loc["Base", "PI-Eme. E ↑ ±"] == pytest.approx(5.0)
    assert pd.isna(spread.loc["S.A.w/ LLM", "PI-Eme. E ↑ ±"])  # one seed: the table prints no ±
    ci = build_report(results_fixture(), stat="ci", n_boot=200, examples_per_group=0).tables()["table3"]
    frame = ci.to_frame(spread=True).set_index("Method")
    assert frame.loc["Base", "PI-Eme. E ↑ lo"] <= 45.0 <= frame.loc["Base", "PI-Eme. E ↑ hi"]


# ----------------------------------------------------------------------------------- mixed instance sets


def test_rows_over_different_instance_sets_warn_with_counts() -> None:
    rows = _scored("m", "base", "j", {0: [0.5, 0.5, 0.5, 0.5, 0.5]}) + _scored("m", "gold", "j", {0: [0.9] * 3})
    report = build_report(_frame(rows), examples_per_group=0)
    (warning,) = report.warnings
    assert warning.startswith("Table 3, PI (1) Emergent: rows cover different instance sets")
    assert "m / Base: 5, m / Gold (this judge): 3 instances; 3 in all of them" in warning
    for fmt in ("markdown", "latex", "html"):
        assert "Warning: Table 3, PI (1) Emergent" in render(report, fmt)
    assert json.loads(render(report, "json"))["warnings"] == [warning]
    same = build_report(_frame(_scored("m", "base", "j", {0: [0.5] * 3}) + _scored("m", "gold", "j", {0: [0.9] * 3})))
    assert same.warnings == []


def test_filter_ablation_over_different_instances_warns() -> None:
    rows = [
        _row(task="pi_emergent", model="m", method="sa_llm", seed=0, instance=f"e{i}", r_np=0.5, r_hp=0.0, r_mp=0.0,
             r_hmp=0.0, score=0.5, sa_filter=flag)
        for flag, n in ((True, 4), (False, 2))
        for i in range(n)
    ]  # fmt: skip
    warnings = build_report(_frame(rows), examples_per_group=0).warnings
    assert any(w.startswith("Table 7, PI (1) Emergent, m / S.A.w/ LLM") and "without Filter: 2" in w for w in warnings)


def test_report_over_two_run_directories_warns_on_stderr(ccpt_dir: Path, tmp_path: Path, monkeypatch, capsys):
    """Two real Inspect runs (scripted provider): Gold over 3 instances in one directory, Base over 5 in another."""
    from inspect_ai import eval as inspect_eval

    from ccpt.eval.tasks import pi_emergent

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    for method, limit in (("gold", 3), ("base", 5)):
        (log,) = inspect_eval(
            pi_emergent(method=method, seeds=1, data_dir=str(ccpt_dir)),
            model="ccpt-scripted/solver",
            model_roles={"grader": "ccpt-scripted/judge"},
            limit=limit,
            log_dir=str(tmp_path / method),
            display="none",
        )
        assert log.status == "success"
    argv = ["report", str(tmp_path / "gold"), str(tmp_path / "base"), "--data-dir", str(ccpt_dir)]
    assert main([*argv, "--label", "ccpt-scripted/solver=Scripted"]) == 0
    out, err = capsys.readouterr()
    warning = next(line for line in err.splitlines() if line.startswith("ccpt: warning: Table 3"))
    assert "Scripted / Base: 5, Scripted / Gold (this judge): 3, Gold (stored GPT-4o judge): 5 instances" in warning
    assert "3 in all of them" in warning and "- Warning: Table 3" in out


# ------------------------------------------------------------------------------------------------ LaTeX

HOSTILE_MODEL = "evil\\input{/etc/passwd}_&%$#{}~^<>|\nmodel 模型 naïve"


def _latex_report() -> tuple[Report, str]:
    """The fixture's runs twice: as "m/one" with a display name, and under a hostile id with none."""
    frame = results_fixture()
    frame = pd.concat([frame, frame.assign(model=HOSTILE_MODEL)], ignore_index=True)
    report = build_report(frame, n_boot=50, examples_per_group=0, labels={"m/one": "Crème brûlée 50% & co"})
    return report, render(report, "latex")


def test_latex_tables_are_floats_with_caption_and_label() -> None:
    report, text = _latex_report()
    floats = re.findall(r"\\begin\{(table\*?)\}(.*?)\\end\{\1\}", text, flags=re.S)
    # One float per table the report holds, whichever they are; the failures table (8 columns) spans both columns.
    assert len(floats) == len(report.tables()) > 1
    assert [env for env, body in floats if r"\caption{Failures" in body] == ["table*"]
    labels = []
    for _, body in floats:
        assert body.count(r"\begin{tabular}") == 1 and r"\toprule" in body and r"\bottomrule" in body
        assert re.search(r"\\caption\{[^\n]+\}", body)
        labels += re.findall(r"\\label\{([^}]*)\}", body)
    assert len(labels) == len(set(labels)) == len(floats)
    assert all(re.fullmatch(r"tab:ccpt-[\w.-]+", x) for x in labels)
    assert r"Cr\`{e}me br\^{u}l\'{e}e 50\% \& co" in text  # accents as commands, specials escaped
    hostile = (
        r"evil\textbackslash{}input\{/etc/passwd\}\_\&\%\$\#\{\}\textasciitilde{}\textasciicircum{}"
        r"\textless{}\textgreater{}\textbar{} model [U+6A21][U+578B] na\"{\i}ve"
    )
    assert hostile in text
    # Outside comments nothing of the hostile id is live TeX: no \input, no raw special character.
    body = "\n".join(line for line in text.splitlines() if not line.startswith("%"))
    assert r"\input" not in body and "模型" not in body


def _pdflatex() -> str:
    """pdflatex; skipped when missing, failed under CCPT_REQUIRE_TEX=1 (CI: scripts/setup.sh --test installs it)."""
    path = shutil.which("pdflatex")
    if path is None:
        unavailable(
            "pdflatex not available (apt-get install texlive-latex-base texlive-latex-recommended)", "CCPT_REQUIRE_TEX"
        )
    return path


def test_latex_compiles_in_a_minimal_booktabs_document(tmp_path: Path) -> None:
    pdflatex = _pdflatex()
    (tmp_path / "report.tex").write_text(_latex_report()[1], encoding="utf-8")
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\usepackage[table]{xcolor}\n"
        "\\begin{document}\nSee Table~\\ref{tab:ccpt-table3}.\n\\input{report.tex}\n\\end{document}\n",
        encoding="utf-8",
    )
    for _ in range(2):  # twice: the \ref resolves on the second pass
        done = subprocess.run(
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "paper.tex"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-3000:]
    log = (tmp_path / "paper.log").read_text(encoding="latin-1")
    assert "Undefined" not in log and "(/etc/passwd" not in log  # labels resolve; the hostile \input never ran
    assert (tmp_path / "paper.pdf").read_bytes()[:4] == b"%PDF"


# ---------------------------------------------------------------------------------------------- figures


def test_bars_of_different_judges_get_their_own_panels_and_single_seeds_no_error_bars() -> None:
    from matplotlib.collections import LineCollection

    from ccpt.report import table3
    from ccpt.report.figures import method_bars

    rows = (
        _scored("m", "base", "judge/a", {0: [0.4, 0.6], 1: [0.2, 0.4]})  # 2 seeds: 40 ± 10
        + _scored("m", "cot", "judge/a", {0: [0.5, 0.7]})  # 1 seed: no ±
        + _scored("m", "gold", "judge/b", {0: [0.9, 0.9]})  # another judge
    )
    fig = method_bars(table3(_frame(rows), stat="sem"), labels={"m": "Model M"})
    panels = {ax.get_title(): ax for ax in fig.axes}
    assert set(panels) == {"Judge: judge/a", "Judge: judge/b"}
    a, b = panels["Judge: judge/a"], panels["Judge: judge/b"]
    legend = [t.get_text() for t in a.get_legend().get_texts()]
    assert legend == ["Model M / Base (n = 2 instances × 2 seeds)", "Model M / CoT (n = 2 instances × 1 seed)"]
    # One error bar (Base), of the printed ± (10 each side); none of zero length anywhere.
    (segments,) = [c.get_segments() for c in a.collections if isinstance(c, LineCollection)]
    assert len(segments) == 1 and abs(segments[0][1][1] - segments[0][0][1]) == pytest.approx(20.0)
    assert [t.get_text() for t in a.texts] == ["1 seed"] and [t.get_text() for t in b.texts] == ["1 seed"]
    assert not [c for c in b.collections if isinstance(c, LineCollection)]


@pytest.mark.parametrize("beside", ["all zeros", "low"])
def test_figures_of_the_stored_runs_beside_a_run_keep_every_bar_inside_one_range(
    beside: str, tmp_path: Path, reference_dir: Path, ccpt_dir: Path
) -> None:
    """`ccpt report <authors' GPT-4o CSVs> RUN --figures` where RUN (3 PI-emergent instances, another judge) is
    all zeros or low: the panels used to share the y-axis with the last panel's range, so the stored GPT-4o bars
    (Gold 58.4) were cut, and all zeros made a 1192 × 23,571 px PNG. Now one range holds every bar and error bar of
    every panel, the canvas is bounded, zero and missing bars are marked and each row's n is in its legend."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle
    from PIL import Image

    from ccpt.dataset import load_dataset
    from ccpt.report import report_from_paths
    from ccpt.report.figures import report_figures
    from ccpt.results import export, load_results

    dataset = load_dataset(ccpt_dir)
    stored = [reference_dir / "pi_emergent_gpt-4o_naive.csv", reference_dir / "npc_emergent_gpt-4o_naive.csv"]
    frame = load_results(stored[0], dataset)
    first = sorted(frame["instance"].unique())[:3]
    run = frame[frame["instance"].isin(first)].assign(model="small/run:0.5b", judge="judge/zero", r_hp=0.0, r_mp=0.0)
    run = run.assign(r_np=0.0 if beside == "all zeros" else 0.05 * (run["seed"] + 1))  # seeds 0-2: 5, 10, 15
    export(run, tmp_path / "run.csv")  # no NPC task: its bars are missing
    paths = [*stored, tmp_path / "run.csv"]
    argv = ["report", *map(str, paths), "--data-dir", str(ccpt_dir), "--label", "gpt-4o=GPT-4o"]
    assert main([*argv, "--figures", str(tmp_path / "figs"), "--out", str(tmp_path / "report.md")]) == 0

    report = report_from_paths(paths, dataset=dataset, labels={"gpt-4o": "GPT-4o"})
    (fig,) = [fig for stem, _, fig in report_figures(report) if stem == "scores_by_method"]
    panels = {ax.get_title(): ax for ax in fig.axes}
    assert list(panels) == ["Judge: gpt-4o", "Judge: judge/zero"]
    for title, ax in panels.items():
        low, high = ax.get_ylim()
        bars = [p for p in ax.patches if isinstance(p, Rectangle)]
        tops = [bar.get_y() + bar.get_height() for bar in bars]
        assert bars and all(low <= top <= high for top in tops), (title, (low, high), max(tops))
        for lines in (c for c in ax.collections if isinstance(c, LineCollection)):  # error bars
            assert all(low <= y <= high for segment in lines.get_segments() for _, y in segment), title
        marks = {(round(t.get_position()[0], 6), t.get_text()) for t in ax.texts}
        for bar in bars:  # a zero-height bar says "0" (or "n/a" where the row has no such cell)
            if bar.get_height() == 0:
                x = round(bar.get_x() + bar.get_width() / 2, 6)
                assert any(at == x and text in ("0", "n/a") for at, text in marks), (title, x)
        assert all(low <= t.get_position()[1] <= high for t in ax.texts)
        assert ax.get_xlabel() == "Error bars: ±1 SEM over seeds"
    legend = [t.get_text() for t in panels["Judge: gpt-4o"].get_legend().get_texts()]
    assert legend == ["GPT-4o / Base (n = PI-Eme. 200, NPC-Eme. 167 instances × 3 seeds)",
                      "Gold (stored GPT-4o judge) (n = PI-Eme. 200, NPC-Eme. 167 instances)"]  # fmt: skip
    (small,) = [t.get_text() for t in panels["Judge: judge/zero"].get_legend().get_texts()]
    assert small == "small/run:0.5b / Base (n = 3 instances × 3 seeds)"
    width, height = Image.open(tmp_path / "figs" / "scores_by_method.png").size
    assert width <= 1600 and height <= 1200, (width, height)  # 6.6 × 2.6 in at 200 dpi, plus the legends
    # Gold is 58.4 (PI) and 59.9 (NPC), the tallest bars: drawn whole, whatever the other panel holds.
    heights = sorted(round(bar.get_height(), 1) for bar in panels["Judge: gpt-4o"].patches)
    assert heights[-2:] == [58.4, 59.9] and panels["Judge: judge/zero"].get_ylim()[1] > 59.9


def test_bar_chart_draws_hostile_names_as_written(tmp_path: Path) -> None:
    from ccpt.report import table3
    from ccpt.report.figures import method_bars, save

    hostile = r"m$\foo{$_^"  # two "$": mathtext would parse "\foo{" and fail
    rows = _scored(hostile, "base", "judge$1$", {0: [0.4, 0.6]})
    fig = method_bars(table3(_frame(rows), stat="sem"))
    save(fig, tmp_path, "bars")  # draws every text: a mathtext error would raise here
    (ax,) = fig.axes
    assert ax.get_title() == r"Judge: judge\$1\$"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [r"m\$\foo{\$_^ / Base (n = 2 instances × 1 seed)"]


def test_confusion_figure_prints_no_nan() -> None:
    from ccpt.report.figures import confusion_heatmap
    from ccpt.scoring import classify

    # No component or others instance: those rows have no percentages. One canceled prediction unparsed.
    fig = confusion_heatmap(
        classify(["emergent", "emergent", "canceled"], ["emergent", "others", None]), instances=(2, 0, 1, 0)
    )
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    assert "nan" not in " ".join(texts).lower() and texts.count("—") == 10  # 2 empty rows × 5 columns
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "Unparsed" and "100.0" in texts
    assert [t.get_text() for t in ax.get_yticklabels()][1] == "Component\n(n=0)"


# ---------------------------------------------------------------------------------------------- compare


def test_compare_matches_names_as_printed_and_warns_when_n_is_too_small(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results.csv"
    results_fixture().to_csv(results, index=False)
    argv = ["compare", str(results), "--format", "json", "--label", "m/one=One"]
    # The fixture's 2 instances: Base E (55, 35) (seed-averaged) vs Multi-Oracle E (60, 60) → d = (−5, −25), −15.
    assert main([*argv, "--a", "ONE:base", "--b", "m/one:Multi-Oracle"]) == 0
    out, err = capsys.readouterr()
    (result,) = json.loads(out)
    assert result["a"] == "m/one:base" and result["a_label"] == "One:base" and result["mean_diff"] == pytest.approx(-15)
    assert result["p_value"] == pytest.approx(0.5) and result["min_p"] == pytest.approx(0.5)  # 2 of 4 sign patterns
    assert result["ci"] == [None, None] and result["ci_method"] == "sign-flip test inversion"
    expected = "n = 2 paired instances: the smallest two-sided sign-flip p-value is 0.5, so p ≤ 0.05 is impossible"
    assert expected in result["warnings"][0] and err.startswith("ccpt: warning: pi_emergent: " + expected)
    # A Filter ablation is a run of its own: with (0.6, 0.4) − without (0.3, 0.1) = +30.0.
    assert main([*argv, "--a", "one:sa-llm", "--b", "One:S.A.w/ LLM (no filter)"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["mean_diff"] == pytest.approx(30.0)
    assert main(["compare", str(results), "--a", "m/one:oracle", "--b", "m/one:base"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ccpt: error: no method 'oracle' in the results") and "multi_oracle (Multi-Oracle)" in err


def test_compare_text_output_names_the_ci_method(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results.csv"
    results_fixture().to_csv(results, index=False)
    assert main(["compare", str(results), "--a", "m/one:base", "--b", "m/one:multi_oracle", "--test", "bootstrap"]) == 0
    out = capsys.readouterr().out
    # Every bootstrap mean of d = (−5, −25) is negative: p is below one in 10,000, never printed as 0.
    assert "(95% CI -25.00 … -5.00, percentile bootstrap), p < 0.0001 (bootstrap, 10000 resamples)" in out


# ------------------------------------------------------------------------------------- HTML in Chromium


def test_html_report_with_figures_renders_in_headless_chromium(tmp_path: Path, reference_dir: Path, ccpt_dir: Path):
    """The stored GPT-4o files plus a second model over 3 instances and a hostile answer, through `ccpt report
    --format html`, opened in Debian's chromium: figures load, the warning shows, nothing runs, nothing is fetched,
    and the page is no wider than the window (the example answers' names used to run past it, unwrapped)."""
    from human_app_helpers import HOSTILE, chromium_path

    from ccpt.dataset import load_dataset
    from ccpt.results import export, load_results

    browser_path = chromium_path()
    served = "openai-api/a-local-server/qwen2.5-coder-0.5b-instruct-q4_k_m"  # a served model's long name
    frame = load_results(
        [reference_dir / "pi_emergent_gpt-4o_naive.csv", reference_dir / "tp_gpt-4o_naive.csv"],
        load_dataset(ccpt_dir),
    )
    frame.loc[frame.index[0], "answer_raw"] = HOSTILE
    first = sorted(frame.loc[frame["task"] == "pi_emergent", "instance"].unique())[:3]
    other = frame[(frame["task"] == "pi_emergent") & frame["instance"].isin(first)].assign(model=served)
    export(pd.concat([frame, other], ignore_index=True), tmp_path / "results.csv")
    out = tmp_path / "report.html"
    argv = ["report", str(tmp_path / "results.csv"), "--data-dir", str(ccpt_dir), "--format", "html"]
    assert main([*argv, "--out", str(out), "--label", "gpt-4o=GPT-4o"]) == 0

    from playwright.sync_api import sync_playwright

    events: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.on("dialog", lambda d: (events.append(f"dialog {d.message}"), d.dismiss()))
        page.on("pageerror", lambda e: events.append(f"error {e}"))
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else events.append(r.url))
        page.goto(out.resolve().as_uri())
        images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.alt])")
        warning = page.inner_text("li.warn")
        hostile_cells = page.locator("td.ans", has_text="<script>").count()
        scores = page.locator("td", has_text="E = ").count()
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert events == []  # no dialog (the <script> did not run), no page error, no request leaving the file
    assert len(images) == 2 and all(done and width > 300 for done, width, _ in images)
    assert images[0][2].startswith("E / C per task") and images[1][2].startswith("Table 5 confusion matrix")
    assert warning.startswith("Warning: Table 3, PI (1) Emergent: rows cover different instance sets")
    assert f"{served} / Base: 3" in warning and "GPT-4o / Base: 200" in warning
    assert widths[0] <= widths[1], widths
    # Shown as text, in both models' examples (the second model copies the first instances); each with its E.
    assert hostile_cells == 2 and scores >= 6
    assert (tmp_path / "report.png").stat().st_size > 10_000
