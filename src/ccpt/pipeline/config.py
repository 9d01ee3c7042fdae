"""``ccpt pipeline run CONFIG``: every stage from one TOML file, each skipped when already done.

The file is checked against its schema (:mod:`ccpt.schemas.pipeline`) before any stage starts; relative paths are
relative to its directory. Example: docs/pipeline.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ccpt.pipeline.annotation import PAPER_TEST_SIZES, AnnotationParams, export_tasks, import_answers
from ccpt.pipeline.batch import BatchOptions
from ccpt.pipeline.candidates import CandidateParams, select_candidates
from ccpt.pipeline.llm import LLMOptions
from ccpt.pipeline.manifest import StageResult
from ccpt.pipeline.mining import EngineOptions, combinations, mine
from ccpt.pipeline.novelty import DEFAULT_WINDOW, novelty
from ccpt.pipeline.properties import PROPERTIES_PER_COMBINATION, PlausibilityOptions, extract_properties
from ccpt.schemas.pipeline import read_pipeline_toml


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
        return _relative(self.path.parent, value) if value else None


def _relative(base: Path, value: str) -> Path:
    return base / Path(value).expanduser()  # an absolute path stays as it is


def load_config(path: Path) -> PipelineConfig:
    """Read and validate a pipeline TOML file against its schema (docs/schemas.md, "pipeline TOML")."""
    parsed = read_pipeline_toml(Path(path))
    rel = functools.partial(_relative, Path(path).resolve().parent)

    # Only the keys the file sets: each stage applies its own defaults (the schema's are the same values).
    sections = {
        name: getattr(parsed, name).model_dump(exclude_unset=True)
        for name in parsed.model_fields_set
        if isinstance(getattr(parsed, name), BaseModel)
    }
    return PipelineConfig(
        path=Path(path).resolve(),
        workdir=rel(parsed.workdir),
        conceptnet=rel(parsed.conceptnet),
        corpus=tuple(rel(c) for c in parsed.mine.corpus),
        engine=EngineOptions(parsed.engine.engine, parsed.engine.workers, parsed.engine.address or None),
        llm=LLMOptions(**parsed.llm.model_dump()),
        batch=BatchOptions(**parsed.batch.model_dump()) if parsed.batch is not None else None,
        sections=sections,
    )


def run_all(config: PipelineConfig, *, force: bool = False, echo: Callable[[str], None] = print) -> list[StageResult]:
    """Run stages 1–6 in order, skipping finished ones; stops after the export while answers are missing."""
    results: list[StageResult] = []

    def done(result: StageResult) -> None:
        results.append(result)
        state = "up to date, skipped" if result.skipped else "done"
        echo(f"[{result.name}] {state}: {result.counts}")

    work = config.workdir
    fields = {k: v for k, v in config.section("mine").items() if k != "corpus"}  # text_field, id_field
    done(mine(config.corpus, work, engine=config.engine, force=force, **fields))
    # [combinations] holds keyword arguments of combinations() (spacy_model, prefilter, batch_size) only.
    done(combinations(work, config.conceptnet, engine=config.engine, force=force, **config.section("combinations")))
    prop_s = config.section("properties")
    plaus = PlausibilityOptions(
        backend=prop_s.get("plausibility", "model"),
        threshold=float(prop_s.get("threshold", PlausibilityOptions.threshold)),
        vera_weights=prop_s.get("vera_weights") or None,
        device=prop_s.get("device") or None,
    )
    count, limit = prop_s.get("count", PROPERTIES_PER_COMBINATION), prop_s.get("limit") or None
    done(
        extract_properties(
            work, config.llm, plausibility=plaus, count=count, limit=limit, batch=config.batch, force=force
        )
    )
    candidates = CandidateParams(**config.section("candidates"))
    done(select_candidates(work, config.conceptnet, config.llm, plausibility=plaus, params=candidates, force=force))
    ann = config.section("annotate")
    params = AnnotationParams(
        **{k: ann[k] for k in ("annotators", "component_annotators", "toxic_rule", "seed") if k in ann},
        test_sizes=tuple({**PAPER_TEST_SIZES, **ann.get("test_sizes", {})}.items()),
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
