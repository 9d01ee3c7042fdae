"""`ccpt data …`: download, describe and export the CCPT dataset."""

from __future__ import annotations

from pathlib import Path

import click

from ccpt.cli.options import DIR, FILE, SEED, data_dir_option, defaulted, results_dir_option
from ccpt.io.jsonout import dumps, provenance
from ccpt.spec import GENERATIVE_TASKS, SFT_EXCLUDES

format_option = defaulted(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", help="text for people, json for scripts."
)


@click.group("data")
def command() -> None:
    """Get and inspect the CCPT dataset (12.3K noun phrase / property / type triplets)."""


@command.command("download")
@click.option("--to", "target", type=DIR, help="Download into this directory instead of the cache directory.")
@click.option(
    "--results",
    is_flag=True,
    help="Also fetch the authors' stored result files (the paper's model outputs with GPT-4o's verdicts, "
    "59 files, 31 MB; `ccpt report --paper` reads them), from the same commit, each checked by sha256.",
)
@format_option
def download_cmd(target: Path | None, results: bool, fmt: str) -> None:
    """Fetch the dataset from the authors' repository (pinned commit) and verify every file's sha256.

    Files already present with the right checksum are not downloaded again.
    """
    from ccpt.io.download import PINNED_COMMIT, REQUIRED_FILES, download, download_results, result_checksums

    where = download(target=target)
    stored = download_results(target=target / "results" if target else None) if results else None
    if fmt == "json":
        info = {"path": str(where), "commit": PINNED_COMMIT, "files": list(REQUIRED_FILES)}
        if stored is not None:
            info |= {"results_path": str(stored), "result_files": list(result_checksums())}
        click.echo(dumps(info, indent=None))
    else:
        click.echo(f"CCPT files verified at {where} (commit {PINNED_COMMIT[:12]})")
        if stored is not None:
            click.echo(f"stored result files verified at {stored} (commit {PINNED_COMMIT[:12]})")


@command.command("path")
@click.option("--results", is_flag=True, help="The stored result files' directory instead of the dataset's.")
@data_dir_option()
@results_dir_option()
def path_cmd(results: bool, data_dir: Path | None, results_dir: Path | None) -> None:
    """Print the directory ccpt reads the dataset (or, with --results, the stored result files) from.

    The same order every command follows: the option, else $CCPT_DATA_DIR / $CCPT_RESULTS_DIR, else the verified
    copy in ccpt's cache, downloaded (pinned commit, sha256-checked) when absent. For scripts, e.g.
    `ccpt report "$(ccpt data path --results)"/pi_emergent_gpt-4o_naive.csv`.
    """
    from ccpt.io.sources import resolve_data_dir, resolve_results_dir

    click.echo(str(resolve_results_dir(results_dir) if results else resolve_data_dir(data_dir)))


@command.command("stats")
@data_dir_option()
@click.option("--exclude-toxic", is_flag=True, help="Leave out rows annotators flagged as toxic.")
@format_option
def stats_cmd(data_dir: Path | None, exclude_toxic: bool, fmt: str) -> None:
    """Counts per type and file, split sizes, unique concepts, toxic rows, annotator agreement
    (Fleiss' kappa) and mean human relevance ratings."""
    from ccpt.data_stats import dataset_stats, format_stats
    from ccpt.dataset import load_dataset

    dataset = load_dataset(data_dir, exclude_toxic=exclude_toxic)
    stats = dataset_stats(dataset)
    if fmt == "json":
        click.echo(dumps({**stats, "provenance": provenance(data_dir=dataset.source or None)}))
    else:
        click.echo(format_stats(stats))


@command.command("export")
@data_dir_option()
@click.option("--out", type=FILE, required=True, help="Output file.")
@defaulted(
    "--as",
    "out_format",
    type=click.Choice(["jsonl", "csv", "parquet"]),
    default="jsonl",
    help="File format. JSONL loads with datasets.load_dataset('json', data_files=...).",
)
@click.option(
    "--task",
    type=click.Choice(GENERATIVE_TASKS),
    help="With --split: whose split. With --sft: that task's examples only.",
)
@click.option("--split", type=click.Choice(["test", "train"]), help="Export one split only.")
@click.option(
    "--sft",
    is_flag=True,
    help="Write chat-format supervised fine-tuning examples (system/user/assistant) for the generative "
    "tasks, from the train pools only, excluding every test item of all four tasks: "
    f"{SFT_EXCLUDES} (case- and space-insensitive); prints how many rows each rule removed.",
)
@click.option(
    "--tp-seed",
    "tp_seeds",
    type=SEED,
    multiple=True,
    help="With --sft: the seed(s) of the Task-3 evaluation set to exclude (default 0, what `ccpt run` "
    "evaluates; add the `-T seed=N` you evaluate Task 3 with). ccpt's Task-3 sets only: the authors' own Task-3 "
    "sample (the paper's Table 5, in their tp_*.csv result files) was drawn by their code and is not excluded.",
)
@click.option("--exclude-toxic", is_flag=True, help="Leave out rows annotators flagged as toxic.")
@format_option
def export_cmd(
    data_dir: Path | None,
    out: Path,
    out_format: str,
    task: str | None,
    split: str | None,
    sft: bool,
    tp_seeds: tuple[int, ...],
    exclude_toxic: bool,
    fmt: str,
) -> None:
    """Export records (all, or one split) or SFT examples to JSONL, CSV or parquet."""
    from ccpt.dataset import load_dataset
    from ccpt.export import record_row, select_records, sft_export, write_rows
    from ccpt.io.download import CHECKSUMS
    from ccpt.io.outputs import refuse_inputs

    # An option the chosen export does not read would be dropped without a word: refused before the loading.
    if sft and split:
        raise click.BadParameter("SFT examples come from the train pools only; drop --split", param_hint="--split")
    if tp_seeds and not sft:
        raise click.BadParameter("the Task-3 seeds to exclude apply to --sft only", param_hint="--tp-seed")
    if task and not (split or sft):
        raise click.BadParameter("needs --split (or --sft): without them every record is exported", param_hint="--task")
    named = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}.get(out.suffix.lower())
    if named and named != out_format:
        raise click.BadParameter(
            f"{out.name} names a {named} file; this writes {out_format} (--as {named})", param_hint="--out"
        )
    ds = load_dataset(data_dir, exclude_toxic=exclude_toxic)
    refuse_inputs(out, [Path(ds.source) / name for name in CHECKSUMS], "--out")  # e.g. --out DIR/ccpt_emergent.csv
    removed: dict[str, int] = {}
    if sft:
        tasks = (task,) if task else GENERATIVE_TASKS
        # Task 3 is evaluated on the full dataset unless --exclude-toxic is passed to the run as well: exclude
        # the items of both, so the export is safe either way.
        sources = [ds, load_dataset(data_dir)] if exclude_toxic else [ds]
        items = [i for source in sources for seed in tp_seeds or (0,) for i in source.type_prediction_set(seed=seed)]
        export = sft_export(ds, tasks, items)  # type: ignore[arg-type]
        rows, removed = export.examples, export.removed
    else:
        rows = [record_row(r) for r in select_records(ds, split, task)]  # type: ignore[arg-type]
    write_rows(rows, out, out_format)  # type: ignore[arg-type]
    if fmt == "json":
        info = {"path": str(out), "rows": len(rows), "format": out_format, "sft": sft}
        click.echo(dumps(info | ({"removed": removed} if sft else {}), indent=None))
    else:
        click.echo(f"wrote {len(rows):,} {'SFT examples' if sft else 'records'} to {out}")
        if sft:
            counts = ", ".join(f"{rule}: {n}" for rule, n in removed.items())
            click.echo(f"train rows removed (overlap with a test item): {counts}")
