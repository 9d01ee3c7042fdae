"""`ccpt judge …`: train the distilled judge, score any (concept, property) pairs with any judge, and score the
paper's stored answers (paper-scores)."""

from __future__ import annotations

import csv
import math
import time
from collections import Counter
from pathlib import Path

import click

from ccpt.cli.messages import say, warn
from ccpt.cli.options import (
    COUNT,
    DIR,
    EXISTING_DIR,
    EXISTING_FILE,
    FILE,
    Declared,
    data_dir_option,
    defaulted,
    judge_arg_option,
    judge_mode_option,
    results_dir_option,
)
from ccpt.errors import DataError, ModelError
from ccpt.io.safe_csv import neutralise
from ccpt.schemas.run import Positive, at_most


@click.group("judge")
def command() -> None:
    """The distilled relevance judge (docs/judge.md), and scoring pairs with any judge."""


@command.command("train")
@data_dir_option()
@defaulted("--out", type=FILE, default=Path("distilled_head.safetensors"), help="Head file to write (atomically).")
@click.option(
    "--epochs",
    type=Declared(at_most(100)),
    help="Override the shipped head's epochs (for experiments; at most 100, each a pass over the pool).",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a training hyperparameter (experiments; the shipped head uses the defaults), e.g. --set epochs=4. "
    "Each is checked against its declared range before any data loads (batch_size 1–4,096, dropout in [0, 1), "
    "threads 1–1,024, folds 2–100, …: ccpt.judging.cross_encoder.TrainConfig), so a slip is one line.",
)
@click.option(
    "--max-pairs",
    type=COUNT,
    help="Train on the first N pairs of the pool only (a quick smoke run; at most 1,000,000: a larger number is a "
    "slip, the pool holds thousands).",
)
@click.option(
    "--cache-dir",
    type=DIR,
    help="Frozen blocks' outputs and per-epoch checkpoints go here (default: the ccpt cache); a killed run resumes.",
)
@click.option(
    "--teacher",
    type=EXISTING_FILE,
    help="Fine-tune a trained head on these teacher pairs (`ccpt judge pairs`) instead of training on human ratings.",
)
@click.option(
    "--init",
    type=EXISTING_FILE,
    help="With --teacher: the head to start from (default: the shipped judge's MiniLM head).",
)
def train(
    data_dir: Path | None,
    out: Path,
    epochs: int | None,
    overrides: tuple[str, ...],
    max_pairs: int | None,
    cache_dir: Path | None,
    teacher: Path | None,
    init: Path | None,
) -> None:
    """Train a head of the distilled judge on the training pool.

    With no options this reproduces the shipped MiniLM head (distilled_head.safetensors); with
    `--set encoder=all-mpnet-base-v2 --set epochs=4` the shipped MPNet head (distilled_head_mpnet.safetensors).
    `ccpt judge ensemble` then averages them into the shipped judge.

    The pool is every human-rated pair of the emergent, canceled and component files except the test rows
    of every task and any pair equal (normalised) to a test pair.

    With `--teacher PAIRS.csv` it fine-tunes the shipped MiniLM head (or `--init HEAD`) on GPT-4o's stored
    verdicts instead: 12,000 distinct teacher pairs (seeded), none equal to a human test pair, one epoch at
    learning rate 1e-4 (the linear layer 1e-3) — the shipped judge's third head (distilled_head_teacher.safetensors).
    """
    if init is not None and teacher is None:
        raise click.BadParameter("--init only applies with --teacher", param_hint="--init")
    if teacher is not None and (epochs is not None or overrides or max_pairs):
        raise click.BadParameter("the teacher recipe is fixed; drop --epochs/--set/--max-pairs", param_hint="--teacher")
    from dataclasses import replace

    from ccpt.dataset import load_dataset
    from ccpt.io.weights import model_cache_dir
    from ccpt.judging.cross_encoder import TrainConfig
    from ccpt.judging.distilled import save_head, shipped_heads, train_head
    from ccpt.judging.rated_pairs import training_pairs

    config = TrainConfig() if epochs is None else replace(TrainConfig(), epochs=epochs)
    for item in overrides:
        config = replace(config, **_override(config, item))
    if problem := config.problem():  # settings that would train no head (epochs, folds, the validation fold)
        raise click.BadParameter(problem, param_hint="--set" if overrides else "--epochs")
    _check_config(config)
    ds = load_dataset(data_dir)  # after every option is checked: a typo costs no data loading
    pairs = training_pairs(ds)[:max_pairs] if max_pairs else None
    cache = cache_dir or model_cache_dir().parent / "distilled-training"
    started = time.monotonic()
    log = lambda line: click.echo(line, err=True)  # noqa: E731
    if teacher is not None:
        head, metadata = _teacher_head(ds, teacher, init, log, cache)
    else:
        head, metadata = train_head(ds, config, log=log, pairs=pairs, cache_dir=cache)
    sha = save_head(head, out, metadata)
    shipped = shipped_heads().get(sha)
    same = f" (the shipped head {shipped})" if shipped else ""
    click.echo(f"wrote {out} sha256 {sha}{same} in {time.monotonic() - started:.0f}s")


def _teacher_head(ds: object, teacher: Path, init: Path | None, log: object, cache: Path) -> tuple[object, dict]:
    """Fine-tune ``init`` (default: the shipped MiniLM head) on the teacher pairs in ``teacher``."""
    from ccpt.judging.distilled import SHIPPED_MINILM, finetune_on_teacher, load_head, shipped_heads, shipped_judge
    from ccpt.judging.rated_pairs import heldout_pairs, pair_key
    from ccpt.judging.teacher_pairs import read_pairs_csv, training_sample

    test_keys = {pair_key(p.concept, p.property) for p in heldout_pairs(ds)}  # type: ignore[arg-type]
    pairs = read_pairs_csv(teacher)
    if not pairs:  # the true reason, not "every pair is a human test pair"
        raise DataError(f"{teacher}: no teacher pairs (a header and no rows)", "write it with `ccpt judge pairs`")
    texts, targets = training_sample(pairs, test_keys)
    if not texts:
        raise DataError(f"{teacher}: no teacher pair left to train on (every pair is a human test pair)")
    expected = None
    if init is None:  # the shipped human-trained MiniLM head, checked against the sha256 its manifest pins
        pinned = {file: sha for sha, file in shipped_heads().items()}
        init, expected = shipped_judge().with_name(SHIPPED_MINILM), pinned[SHIPPED_MINILM]
    start = load_head(init, expected)
    click.echo(f"{len(texts)} teacher pairs from {teacher}, starting from {start.path.name}", err=True)
    return finetune_on_teacher(ds, start, texts, targets, log, cache)  # type: ignore[arg-type]


@command.command("ensemble")
@click.argument("heads", nargs=-1, required=True, type=EXISTING_FILE)
@data_dir_option()
@defaulted(
    "--out",
    type=FILE,
    default=Path("distilled_judge.json"),
    help="Manifest to write (atomically); use it as --judge ccpt-distilled//abs/path/distilled_judge.json.",
)
@click.option(
    "--weight",
    "weights",
    multiple=True,
    type=Declared(Positive),
    help="One per head, in order (finite, > 0): a weighted mean (default: the plain mean).",
)
@click.option(
    "--map-runs",
    multiple=True,
    type=EXISTING_DIR,
    help="Fit the calibration map on the authors' stored Table-3 runs in these directories (6,000 sample rows, "
    "GPT-4o's stored relevances) instead of on the human validation fold.",
)
def ensemble(
    heads: tuple[Path, ...], data_dir: Path | None, out: Path, weights: tuple[float, ...], map_runs: tuple[Path, ...]
) -> None:
    """Average head files (from `ccpt judge train`) into one judge: validation figures and calibration refitted.

    The shipped judge (docs/judge.md) is reproduced, in the shipped manifest's directory, by
    `ccpt judge ensemble distilled_head.safetensors distilled_head_mpnet.safetensors
    distilled_head_teacher.safetensors --weight 1 --weight 1 --weight 2 --map-runs
    ../shared/data/reference-results --map-runs ../shared/data/reference-results/more-models`.
    """
    from ccpt.dataset import load_dataset
    from ccpt.io.download import sha256_file
    from ccpt.io.outputs import refuse_inputs
    from ccpt.judging.distilled import JUDGE_SHA256, member_weights, write_ensemble
    from ccpt.judging.lomo import fit_runs_map, table3_runs
    from ccpt.judging.teacher_pairs import read_frames

    if out.suffix.lower() != ".json":
        raise click.BadParameter(f"the manifest must be a .json file, got {out}", param_hint="--out")
    refuse_inputs(out, list(heads), "--out")
    if weights and len(weights) != len(heads):
        raise click.BadParameter(f"{len(weights)} weights for {len(heads)} heads: one per head", param_hint="--weight")
    try:  # before the dataset and the heads are read: what a manifest may hold (ccpt.judging.distilled)
        member_weights(list(weights or [1.0]))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--weight") from None
    # A head given twice (the same path too, which passed) or a copy of one would count twice in the mean.
    seen: dict[str, Path] = {}
    for head in heads:
        if head.is_file() and (first := seen.setdefault(sha256_file(head), head)) is not head:
            again = "given twice" if first == head else f"{first} again (the same bytes)"
            raise click.BadParameter(f"{head} is {again}: give each once", param_hint="HEADS")
    ds = load_dataset(data_dir)
    calibrate = None
    if map_runs:  # write_ensemble's calibrate: a map fitted on the Table-3 runs found in the --map-runs directories
        files = sorted({f.resolve() for d in map_runs for f in d.glob("*.csv") if f.is_file()})  # a dir given twice
        skipped: list[str] = []
        warnings: list[str] = []
        runs = table3_runs(read_frames(files, ds, skipped=skipped, warnings=warnings))
        _say(skipped, warnings)
        if not runs:
            raise DataError(f"no stored Table-3 run (Base/SA result files) in {', '.join(map(str, map_runs))}")
        calibrate = lambda judge: fit_runs_map(runs, judge.raw)  # noqa: E731
    started = time.monotonic()
    log = lambda line: click.echo(line, err=True)  # noqa: E731
    sha = write_ensemble(ds, heads, out, log=log, weights=weights or None, calibrate=calibrate)
    same = " (the shipped judge)" if sha == JUDGE_SHA256 else ""
    click.echo(f"wrote {out} sha256 {sha}{same} in {time.monotonic() - started:.0f}s")


def _say(skipped: list[str], warnings: list[str]) -> None:
    """On stderr: each file not read, with its reason, and each row read twice (counted once)."""
    for reason in skipped:
        click.echo(f"skipped {reason}", err=True)
    for warning in warnings:
        warn(warning)


def _check_config(config: object) -> None:
    """Refuse a training configuration out of its declared ranges (``TrainConfig``), naming the value, before any data
    is loaded."""
    from dataclasses import asdict

    from pydantic import TypeAdapter, ValidationError

    from ccpt.judging.cross_encoder import TrainConfig
    from ccpt.schemas.base import _reason, shown

    values = asdict(config)  # type: ignore[call-overload]
    try:
        TypeAdapter(TrainConfig).validate_python(values)  # each value already typed by _override
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0])
        raise click.BadParameter(f"{name}={shown(values[name])}: {_reason(first)}", param_hint="--set") from None


def _override(config: object, item: str) -> dict[str, object]:
    """``NAME=VALUE`` → {name: value typed like the config field} (BadParameter naming the item otherwise)."""
    name, sep, value = item.partition("=")
    current = getattr(config, name, None) if sep else None
    if current is None and name != "validation_fold":
        raise click.BadParameter(f"expected NAME=VALUE with a TrainConfig field, got {item!r}", param_hint="--set")
    if value == "none":
        return {name: None}
    if isinstance(current, bool):
        if value.lower() not in ("true", "false"):
            raise click.BadParameter(f"{name} must be true or false, got {value!r}", param_hint="--set")
        return {name: value.lower() == "true"}
    if isinstance(current, str):
        return {name: value}
    try:
        typed = type(current if current is not None else 0)(value)
    except ValueError:
        raise click.BadParameter(f"{name} must be a number, got {value!r}", param_hint="--set") from None
    if not (math.isfinite(typed) and typed >= 0):  # every numeric hyperparameter is ≥ 0
        raise click.BadParameter(f"{name} must be a finite number ≥ 0, got {value!r}", param_hint="--set")
    return {name: typed}


@command.command("score")
@click.argument("pairs_csv", type=EXISTING_FILE)
@click.option("--judge", "judge_model", required=True, help="distilled, gguf/qwen2.5-1.5b, openai/gpt-4o, …")
@judge_mode_option
@click.option("--out", required=True, type=FILE, help="Scored CSV to write.")
def score(pairs_csv: Path, judge_model: str, judge_mode: str | None, out: Path) -> None:
    """Score (concept, property) pairs: input columns concept, property (others kept); adds `relevance` in [0, 1].

    A pair the judge fails on gets an empty relevance and is counted; nothing is filled in.
    """
    from ccpt.eval.judge import default_judge_mode, live_scores
    from ccpt.io.outputs import atomic_path, refuse_inputs
    from ccpt.io.safe_csv import read_sheet_rows
    from ccpt.judges import model_name
    from ccpt.schemas.sheets import PAIRS

    refuse_inputs(out, [pairs_csv], "--out")
    sheet = read_sheet_rows(pairs_csv, ["concept", "property"])
    header, rows = sheet.header, sheet.rows
    if "relevance" in header:
        raise DataError(f"{pairs_csv}: already has a 'relevance' column; rename it first")
    checked = PAIRS.check(rows, str(pairs_csv), row_numbers=sheet.numbers)
    # A pair the schema rejected (empty concept or property) is not sent: no relevance, counted below.
    usable = [row["concept"] is not None and row["property"] is not None for row in checked.rows]
    rejected = [issue.cell() for issue in checked.issues]
    model = model_name(judge_model)
    mode = judge_mode or default_judge_mode(model)
    started = time.monotonic()
    pairs = [(r["concept"].strip(), r["property"].strip()) for r, ok in zip(rows, usable, strict=True) if ok]
    judged = iter(live_scores(model, mode, pairs) if pairs else [])  # type: ignore[arg-type]
    scores = [next(judged) if ok else None for ok in usable]
    elapsed = time.monotonic() - started
    failed = sum(s is None for s, ok in zip(scores, usable, strict=True) if ok)
    with atomic_path(out) as partial, partial.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*header, "relevance"])
        for row, value in zip(rows, scores, strict=True):
            writer.writerow([*(neutralise(row[c]) for c in header), "" if value is None else f"{value:.6f}"])
    skipped = f"; {len(rejected)} not judged ({'; '.join(rejected[:3])}{'; …' if len(rejected) > 3 else ''})"
    click.echo(
        f"scored {len(pairs) - failed} of {len(rows)} pairs with {model} in {elapsed:.1f}s; "
        f"{failed} failed (empty relevance){skipped if rejected else ''} → {out}"
    )
    if rows and not pairs:  # written and counted, but a command that scored nothing did not succeed
        raise DataError(f"{pairs_csv}: no row has both a concept and a property; nothing was judged")
    if pairs and failed == len(pairs):
        raise ModelError(
            f"{model}: every one of the {len(pairs)} pair(s) failed; {out} holds no relevance",
            "check the judge (its endpoint, key and --judge-mode), then rerun",
        )


@command.command("pairs")
@click.argument("files", nargs=-1, required=True, type=FILE)
@click.option("--out", required=True, type=FILE, help="Teacher-pairs CSV.")
@data_dir_option(help="CCPT dataset directory: instance ids become dataset ids (otherwise row positions).")
@click.option(
    "--include-steps",
    is_flag=True,
    help="Also read Spreading Activation per-step files (…-<t>.csv; some carry copied score columns).",
)
def pairs_command(files: tuple[Path, ...], out: Path, data_dir: Path | None, include_steps: bool) -> None:
    """Teacher pairs: every (concept, property) pair GPT-4o judged in the authors' result FILES, deduplicated.

    One row per model and normalised pair, with GPT-4o's stored relevance (mean over occurrences), how often it
    occurs, the spread of its stored values and the tags of its first occurrence (task, method, instance, role).
    docs/judge.md ("Teacher pairs and leave-one-model-out") says what was trained on them and measured.
    """
    from ccpt.cli.options import optional_dataset
    from ccpt.io.outputs import refuse_inputs
    from ccpt.judging.teacher_pairs import read_frames, teacher_pairs, write_pairs

    refuse_inputs(out, list(files), "--out")
    dataset = optional_dataset(data_dir)
    skipped: list[str] = []
    warnings: list[str] = []
    frames = read_frames(files, dataset, skipped=skipped, warnings=warnings)
    if not frames:  # nothing readable: the (first) reason is the error
        more = f" (and {len(skipped) - 1} more file(s) not read)" if len(skipped) > 1 else ""
        raise DataError(f"{skipped[0]}{more}")
    _say(skipped, warnings)  # e.g. the authors' Llama NPC Multi file: generations, no judge column
    pairs = teacher_pairs(frames, include_steps=include_steps)
    if not pairs:
        raise DataError(f"no judged pair in {len(files)} file(s): are they the authors' generative result files?")
    write_pairs(pairs, out)
    counts = ", ".join(f"{m}: {n}" for m, n in sorted(Counter(p.model for p in pairs).items()))
    click.echo(f"wrote {len(pairs)} teacher pairs from {len(files)} files ({counts}) → {out}")


@command.command("paper-scores")
@defaulted(
    "--judge",
    "judge_model",
    default="distilled",
    help="An in-process judge: distilled, ccpt-distilled/PATH, or a registered judge's name.",
)
@judge_arg_option("calibrated=false scores on the raw (human) scale, as `ccpt run --judge-arg` does.")
@results_dir_option()
@data_dir_option()
@click.option(
    "--out",
    type=FILE,
    help="Write the store here (default: ccpt's store for this judge, the one `ccpt report --beside-paper` reads).",
)
def paper_scores(
    judge_model: str, judge_args: tuple[str, ...], results_dir: Path | None, data_dir: Path | None, out: Path | None
) -> None:
    """Score every stored answer of the paper's models with an in-process judge, for `ccpt report RUN --beside-paper`.

    Reads every authors' result file found (--results-dir / $CCPT_RESULTS_DIR / the verified download: other
    models' files you fetched included) and writes one relevance per judged (concept, property) pair, keyed by the
    judge's identity. An LLM judge re-judges the stored files with `ccpt rejudge` instead (a log per file).
    """
    from ccpt import judges
    from ccpt.cli.options import key_values
    from ccpt.dataset import load_dataset
    from ccpt.io.sources import stored_result_files
    from ccpt.report.paper import read_stored, table3_rows
    from ccpt.results.paper_scores import PaperScores, file_hashes, pairs_of, score_pairs, store_path, write_store
    from ccpt.spec import TYPE_PREDICTION

    model = judges.model_name(judge_model)
    if (found := judges.of_model(model)) is None:
        raise click.BadParameter(
            f"{judge_model} is not an in-process judge; an LLM judge re-judges the stored files with "
            '`ccpt rejudge "$(ccpt data path --results)"/*.csv --judge MODEL --out DIR`',
            param_hint="--judge",
        )
    declared, variant = found
    scoring = declared.ready(variant, key_values(judge_args, "--judge-arg"))
    # The identity a run's rows record for this judge (ccpt.eval.distilled_provider).
    identity = judges.JudgeIdentity(model, scoring.version, scoring.scale).key
    files = stored_result_files(results_dir)
    stored, notes = read_stored(files, load_dataset(data_dir))
    for note in notes:
        say(note)
    rows = table3_rows(stored)
    rows = rows[rows["task"] != TYPE_PREDICTION]  # Task 3 has no judge
    read = {str(s) for s in rows["source"].dropna()}  # the files whose answers are scored (no per-step files)
    pairs = pairs_of(rows)
    started = time.monotonic()
    scores = score_pairs(pairs, scoring.score, judge=identity)
    target = out or store_path(identity)
    used = [p for p in files if p.name in read]
    write_store(PaperScores(identity, file_hashes(used), scores, target), target)
    if failed := len(pairs) - len(scores):  # the judge gave None: their answers count as never judged
        say(f"{identity} gave no score to {failed:,} of {len(pairs):,} pairs: their answers count as never judged")
    click.echo(
        f"scored {len(scores):,} pairs of {len(used)} stored files with {identity} in "
        f"{time.monotonic() - started:.0f}s → {target}"
    )
