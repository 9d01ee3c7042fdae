"""``ccpt pipeline run CONFIG``: every stage from one TOML file, each skipped when already done.

Relative paths in the file are relative to the file's directory. Unknown sections or keys are errors (a
typo must not silently fall back to a default). The run stops after the annotation export until the
answers file named in ``[annotate] answers`` exists; rerun the same command once it does.

See docs/pipeline.md for a complete annotated example.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccpt.errors import CcptError
from ccpt.pipeline.annotation import PAPER_TEST_SIZES, AnnotationParams, export_tasks, import_answers
from ccpt.pipeline.batch import BatchOptions
from ccpt.pipeline.candidates import CandidateParams, select_candidates
from ccpt.pipeline.llm import LLMOptions
from ccpt.pipeline.manifest import StageResult
from ccpt.pipeline.mining import EngineOptions, combinations, mine
from ccpt.pipeline.novelty import DEFAULT_WINDOW, novelty
from ccpt.pipeline.properties import PROPERTIES_PER_COMBINATION, PlausibilityOptions, extract_properties

# section -> allowed keys (None = top level)
SCHEMA: dict[str | None, frozenset[str]] = {
    None: frozenset({"workdir", "conceptnet"}),
    "engine": frozenset({"engine", "workers", "address"}),
    "mine": frozenset({"corpus", "text_field", "id_field"}),
    "combinations": frozenset({"spacy_model", "prefilter", "batch_size"}),
    "llm": frozenset(
        {"model", "max_connections", "temperature", "seed", "max_tokens", "timeout", "max_retries", "model_args"}
    ),
    "properties": frozenset({"count", "limit", "plausibility", "threshold", "vera_weights", "device"}),
    "batch": frozenset(
        {
            "backend",
            "model",
            "url",
            "api_key_env",
            "batch_size",
            "concurrency",
            "address",
            "max_retries",
            "accelerator_type",
            "engine_kwargs",
            "placement_group_config",
            "engine_metrics",
        }
    ),
    "candidates": frozenset({"per_phrase", "component_sample", "canceled_phrases", "head_properties", "seed"}),
    "annotate": frozenset({"annotators", "component_annotators", "answers", "toxic_rule", "seed", "test_sizes", "out"}),
    "novelty": frozenset({"counts", "cooccurrence", "corpus", "window", "conceptnet_sample", "seed", "skip"}),
}


@dataclass
class PipelineConfig:
    """A parsed pipeline TOML file (paths resolved)."""

    path: Path
    workdir: Path
    conceptnet: Path
    corpus: tuple[Path, ...]
    engine: EngineOptions
    llm: LLMOptions
    batch: BatchOptions | None = None  # [batch]: stage 3's property calls as a Ray Data batch job
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        return self.sections.get(name, {})

    def resolve(self, value: str | None) -> Path | None:
        """A path from the file, relative to the file's directory; None for empty."""
        if not value:
            return None
        p = Path(value).expanduser()
        return p if p.is_absolute() else (self.path.parent / p)


def _check(raw: dict[str, Any], path: Path) -> None:
    for key, value in raw.items():
        if isinstance(value, dict):
            if key not in SCHEMA:
                raise CcptError(f"{path}: unknown section [{key}]", f"sections: {', '.join(s for s in SCHEMA if s)}")
            unknown = sorted(set(value) - SCHEMA[key])
            if unknown:
                raise CcptError(
                    f"{path}: unknown key(s) in [{key}]: {', '.join(unknown)}",
                    f"allowed: {', '.join(sorted(SCHEMA[key]))}",
                )
        elif key not in SCHEMA[None]:
            raise CcptError(f"{path}: unknown top-level key {key!r}", f"allowed: {', '.join(sorted(SCHEMA[None]))}")


def load_config(path: Path) -> PipelineConfig:
    """Read and validate a pipeline TOML file."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CcptError(f"pipeline config not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CcptError(f"{path}: invalid TOML ({exc})") from None
    _check(raw, Path(path))
    base = Path(path).resolve().parent

    def rel(value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else base / p

    for key in ("conceptnet",):
        if not raw.get(key):
            raise CcptError(
                f"{path}: missing top-level key {key!r}", "the ConceptNet index built by `ccpt conceptnet index`"
            )
    mine_section = raw.get("mine", {})
    corpus = mine_section.get("corpus") or []
    if not corpus:
        raise CcptError(f"{path}: [mine] corpus is empty", "list the corpus files: corpus = ['books.txt.gz']")
    llm = raw.get("llm", {})
    if not llm.get("model"):
        raise CcptError(f"{path}: [llm] model is missing", "e.g. model = 'gguf/qwen2.5-0.5b' or 'openai/gpt-4o-mini'")
    engine = raw.get("engine", {})
    return PipelineConfig(
        path=Path(path).resolve(),
        workdir=rel(raw.get("workdir", "ccpt-pipeline")),
        conceptnet=rel(raw["conceptnet"]),
        corpus=tuple(rel(c) for c in corpus),
        engine=EngineOptions(
            engine.get("engine", "process"), int(engine.get("workers", 2)), engine.get("address") or None
        ),
        llm=LLMOptions(**llm),
        batch=BatchOptions(**raw["batch"]) if raw.get("batch") else None,
        sections={k: v for k, v in raw.items() if isinstance(v, dict)},
    )


def run_all(config: PipelineConfig, *, force: bool = False, echo: Callable[[str], None] = print) -> list[StageResult]:
    """Run stages 1–6 in order, skipping finished ones; stops after the export while answers are missing."""
    results: list[StageResult] = []

    def done(result: StageResult) -> None:
        results.append(result)
        state = "up to date, skipped" if result.skipped else "done"
        echo(f"[{result.name}] {state}: {result.counts}")

    work = config.workdir
    mine_s, comb_s = config.section("mine"), config.section("combinations")
    done(
        mine(
            config.corpus,
            work,
            engine=config.engine,
            text_field=mine_s.get("text_field", "text"),
            id_field=mine_s.get("id_field", "id"),
            force=force,
        )
    )
    done(
        combinations(
            work,
            config.conceptnet,
            engine=config.engine,
            spacy_model=comb_s.get("spacy_model"),
            prefilter=comb_s.get("prefilter", True),
            batch_size=comb_s.get("batch_size", 256),
            force=force,
        )
    )
    prop_s = config.section("properties")
    plaus = PlausibilityOptions(
        backend=prop_s.get("plausibility", "model"),
        threshold=float(prop_s.get("threshold", PlausibilityOptions.threshold)),
        vera_weights=prop_s.get("vera_weights") or None,
        device=prop_s.get("device") or None,
    )
    done(
        extract_properties(
            work,
            config.llm,
            plausibility=plaus,
            count=prop_s.get("count", PROPERTIES_PER_COMBINATION),
            limit=prop_s.get("limit") or None,
            batch=config.batch,
            force=force,
        )
    )
    done(
        select_candidates(
            work,
            config.conceptnet,
            config.llm,
            plausibility=plaus,
            params=CandidateParams(**config.section("candidates")),
            force=force,
        )
    )
    ann = config.section("annotate")
    params = AnnotationParams(
        annotators=ann.get("annotators", 3),
        component_annotators=ann.get("component_annotators", 1),
        toxic_rule=ann.get("toxic_rule", "any"),
        test_sizes=tuple({**PAPER_TEST_SIZES, **ann.get("test_sizes", {})}.items()),
        seed=ann.get("seed", 0),
    )
    done(export_tasks(work, params=params, force=force))
    answers = config.resolve(ann.get("answers"))
    if answers is None or not answers.is_file():
        echo(
            f"waiting for annotations: fill in {work / 'annotation' / 'answers_template.csv'} (questions in "
            f"hits.csv / hits.html), save it as {answers or '[annotate] answers'}, then rerun this command"
        )
        return results
    dataset_dir = config.resolve(ann.get("out")) or work / "dataset"
    done(import_answers(work, answers, dataset_dir, params=params, force=force))
    nov = config.section("novelty")
    if nov.get("skip"):
        return results
    counts, cooc = config.resolve(nov.get("counts")), config.resolve(nov.get("cooccurrence"))
    corpus = tuple(p for p in (config.resolve(c) for c in nov.get("corpus", [])) if p) or (
        () if counts or cooc else config.corpus  # default: count in the mined corpus itself
    )
    done(
        novelty(
            dataset_dir,
            config.conceptnet,
            work / "novelty",
            counts_csv=counts,
            cooccurrence=cooc,
            corpus=corpus,
            window=nov.get("window", DEFAULT_WINDOW),
            conceptnet_sample=nov.get("conceptnet_sample") or None,
            seed=nov.get("seed", 0),
            force=force,
        )
    )
    echo(f"dataset ready: {dataset_dir} (try: ccpt data stats --data-dir {dataset_dir})")
    return results
