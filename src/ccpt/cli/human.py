"""`ccpt human …`: human evaluation sheets (paper §4.2, §6.1, Appendix B.3–B.5)."""

from __future__ import annotations

from pathlib import Path

import click

from ccpt.cli.messages import warn
from ccpt.cli.options import (
    COUNT,
    DIR,
    EXISTING_FILE,
    EXISTING_PATH,
    FILE,
    SEED,
    Declared,
    data_dir_option,
    defaulted,
    judge_mode_option,
)
from ccpt.schemas.run import at_most
from ccpt.spec import DEFAULT_PROTOCOL, GENERATIVE_TASKS, TASKS


@click.group("human")
def command() -> None:
    """Export and import human evaluation sheets (humans as solvers, humans as judges)."""


@command.command("export-solver")
@click.option("--task", required=True, type=click.Choice(TASKS))
@click.option("--out", required=True, type=DIR, help="Directory for sheet.csv + sheet.html.")
@click.option(
    "--n",
    "n_items",
    type=COUNT,
    help="Seeded subset of this many items (default: the whole test split; at most 1,000,000: no split is that large).",
)
@defaulted("--seed", type=SEED, default=0)
@data_dir_option()
def export_solver(task: str, out: Path, n_items: int | None, seed: int, data_dir: Path | None) -> None:
    """Question sheet for humans solving a task (Appendix B.3 format; Task 3 in Figure 7's format)."""
    from ccpt.dataset import load_dataset
    from ccpt.human.sheets import export_solver_sheet

    paths = export_solver_sheet(load_dataset(data_dir), task, out, n=n_items, seed=seed)  # type: ignore[arg-type]
    click.echo("wrote " + ", ".join(str(p) for p in paths))


@command.command("import-solver")
@click.argument("sheets", nargs=-1, required=True, type=EXISTING_FILE)
@click.option("--out", required=True, type=FILE, help="Tidy rows (.csv or .parquet), model='human'.")
@data_dir_option()
@click.option(
    "--judge",
    "judge_model",
    help="Judge the human answers with this model, like model answers (the Human row of Table 3). "
    "Without it the rows are unjudged (Task 3 is always scored against the gold type).",
)
@judge_mode_option
def import_solver(
    sheets: tuple[Path, ...], out: Path, data_dir: Path | None, judge_model: str | None, judge_mode: str | None
) -> None:
    """Read filled solver sheets into tidy rows; `ccpt report RUN OUT` then shows them as the Human row."""
    from ccpt.dataset import load_dataset
    from ccpt.human.sheets import import_solver_sheets, judge_answers
    from ccpt.io.outputs import refuse_inputs
    from ccpt.io.sources import dataset_files
    from ccpt.results import export

    refuse_inputs(out, [*sheets, *dataset_files(data_dir)], "--out")
    frame = import_solver_sheets(sheets, load_dataset(data_dir))  # together: one rater is one seed across them
    judged_by = None
    if judge_model is not None:
        from inspect_ai.model import get_model

        from ccpt.eval.judge import default_judge_mode
        from ccpt.eval.scorers import make_judge
        from ccpt.judges import model_name

        judge_model = model_name(judge_model)
        # The ccpt protocol's judge (its prompt and reply format), as `ccpt run` judges a model's answers by default.
        mode = judge_mode or default_judge_mode(judge_model)
        judge = make_judge(get_model(judge_model), mode, protocol=DEFAULT_PROTOCOL)  # type: ignore[arg-type]

        async def relevance(concept: str, prop: str) -> float | None:
            return (await judge.relevance(concept, prop)).relevance

        frame = judge_answers(frame, relevance)
        judged_by = judge.identity.key  # as a run's rows name this judge, so the Human row joins them
        frame.loc[frame["task"].isin(GENERATIVE_TASKS), ["judge", "protocol"]] = [judged_by, DEFAULT_PROTOCOL]
    export(frame, out)
    click.echo(f"wrote {len(frame)} rows to {out}" + (f" (judged by {judged_by})" if judged_by else ""))


@command.command("export-ratings")
@click.argument("paths", nargs=-1, required=True, type=EXISTING_PATH)
@click.option("--out", required=True, type=DIR)
@defaulted(
    "--n",
    "n_items",
    type=COUNT,
    default=30,
    help="Answers per (task, model, method) (at most 1,000,000: each is a row of every rater's sheets).",
)
@defaulted(
    "--raters",
    type=Declared(at_most(1000)),
    default=2,
    help="Rating sheets to write, one per rater (at most 1,000: each is two files of every sampled pair).",
)
@defaulted("--seed", type=SEED, default=0)
@data_dir_option()
def export_ratings(
    paths: tuple[Path, ...], out: Path, n_items: int, raters: int, seed: int, data_dir: Path | None
) -> None:
    """Figure-8 rating sheets (concept, property, 1–10) for a seeded subsample of any run's answers."""
    from ccpt.cli.options import optional_dataset
    from ccpt.human.sheets import export_rating_sheets
    from ccpt.io.outputs import refuse_inputs
    from ccpt.io.sources import dataset_files
    from ccpt.results import load_results, unreadable_line
    from ccpt.results.load import input_files

    for sheet in [out / "key.csv", *(out / f"rater_{k}.{e}" for k in range(1, raters + 1) for e in ("csv", "html"))]:
        refuse_inputs(sheet, [*input_files(paths), *dataset_files(data_dir)], "--out")
    frame = load_results(paths, optional_dataset(data_dir))
    if unreadable := frame.attrs.get("unreadable", []):  # its answers are in no sheet: named, as `report` names it
        warn(f"skipped {unreadable_line(unreadable)}")
    written = export_rating_sheets(frame, out, n=n_items, raters=raters, seed=seed)
    click.echo("wrote " + ", ".join(str(p) for p in written))


@command.command("import-ratings")
@click.argument("sheets", nargs=-1, required=True, type=EXISTING_FILE)
@click.option("--key", required=True, type=EXISTING_FILE, help="The key.csv written by export-ratings.")
@defaulted("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown")
def import_ratings(sheets: tuple[Path, ...], key: Path, fmt: str) -> None:
    """Table 4 (human judge) and human–LLM-judge agreement from filled rating sheets."""
    from ccpt.human.sheets import human_judge_report, read_ratings

    click.echo(human_judge_report(read_ratings(key, sheets), fmt=fmt), nl=False)  # type: ignore[arg-type]


@command.command("serve")
@click.argument("study_dir", type=DIR)
@click.option(
    "--annotators",
    "n_annotators",
    type=COUNT,
    help="Create N annotators (at most 1,000,000: each is an account with its own link).",
)
@click.option("--names", type=EXISTING_FILE, help="File of annotator names, one per line (instead of --annotators).")
@defaulted("--host", default="127.0.0.1", help="Address to listen on (LAN: 0.0.0.0).")
@defaulted("--port", type=click.IntRange(0, 65535), default=8765)
@click.option(
    "--rating-overlap",
    type=COUNT,
    help="Raters per rated pair (default: every rater; at most 1,000,000: more than any study's raters); set when "
    "the study is created.",
)
@click.option("--export", "export_only", is_flag=True, help="Write STUDY_DIR/export/*.csv and exit.")
def serve(
    study_dir: Path,
    n_annotators: int | None,
    names: Path | None,
    host: str,
    port: int,
    rating_overlap: int | None,
    export_only: bool,
) -> None:
    """Annotation web app over the sheets in STUDY_DIR (export-solver, export-ratings, annotate-export).

    Prints one secret link per annotator and an admin link; answers are kept in STUDY_DIR/human.sqlite.
    """
    from ccpt.errors import CcptError, DataError
    from ccpt.io.extras import install_command

    try:
        from ccpt.human.app import server
    except ImportError as exc:
        raise CcptError(f"ccpt human serve needs {exc.name}", f"install the extra: {install_command('human')}") from exc

    if n_annotators is not None and names is not None:
        raise DataError("pass either --annotators or --names, not both")
    host = server.check_host(host)  # before the study database is touched
    people = server.read_names(names) if names else [f"annotator{k}" for k in range(1, (n_annotators or 0) + 1)]
    prepared = server.prepare(study_dir, people or None, rating_overlap, create=not export_only)
    if export_only:
        from ccpt.human.app.export import export_answers

        result = export_answers(prepared.study, prepared.store, study_dir / "export")
        for kind in result.assigned:
            click.echo(f"{kind}: {result.answered[kind]} of {result.assigned[kind]} assignments answered")
        click.echo("wrote " + ", ".join(str(p) for p in result.files))
        return
    if not server.is_loopback(host):
        click.echo(
            f"warning: listening on {host}: anyone on this network who has a link can open it. Share each link "
            "only with its annotator; traffic is plain HTTP.",
            err=True,
        )
    web = server.Server(prepared, host, port)
    for name, link in web.links():
        click.echo(f"{name}: {link}")
    click.echo("Ctrl-C stops the server; answers are saved as they are given.")
    web.run()
