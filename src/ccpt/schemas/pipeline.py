"""The schema of the pipeline TOML file (``ccpt pipeline run CONFIG``, docs/pipeline.md): strict (TOML has
types), no unknown key, the defaults read from the stages' own option classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from ccpt.errors import CcptError
from ccpt.pipeline.annotation import PAPER_TEST_SIZES, AnnotationParams
from ccpt.pipeline.batch import BACKENDS, BatchOptions
from ccpt.pipeline.candidates import CandidateParams
from ccpt.pipeline.engine import ENGINES
from ccpt.pipeline.llm import LLMOptions
from ccpt.pipeline.mining import EngineOptions
from ccpt.pipeline.novelty import DEFAULT_WINDOW
from ccpt.pipeline.properties import PROPERTIES_PER_COMBINATION, PlausibilityOptions
from ccpt.schemas.base import FileFormat, Temperature, UnitFloat, location, one_line, read_toml
from ccpt.schemas.run import RUN_OPTIONS, at_most
from ccpt.spec import GENERATIVE_TASKS

__layer__ = "pipeline"  # built from the pipeline's own option classes (tests/test_layering.py)

# Upper bounds as the stages' command-line options have them (an extra digit in a TOML file ran away as on the
# command line): counts at most 1,000,000, processes 1,024, requests and their settings as `ccpt run`'s.
Positive = at_most(1_000_000)
NonNegative = at_most(1_000_000, low=0)
Processes = at_most(1024)  # each is a process, a Ray actor or an engine replica
Connections, MaxTokens = RUN_OPTIONS["max_connections"], RUN_OPTIONS["max_tokens"]
Timeout, Retries = RUN_OPTIONS["timeout"], RUN_OPTIONS["max_retries"]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
Path_ = Annotated[str, Field(min_length=1, description="a path, relative to the TOML file's directory")]
TestSizes = dict[Literal[GENERATIVE_TASKS], NonNegative]  # type: ignore[valid-type]


def _one_or_many(value: Any) -> Any:
    # `corpus = "books.txt"` means one file (iterating the string would make every character a path).
    return [value] if isinstance(value, str) else value


class _Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class EngineSection(_Section):
    """[engine]: where stages 1–2 run."""

    engine: Literal[ENGINES] = EngineOptions.engine  # type: ignore[valid-type]
    workers: Processes = EngineOptions.workers
    address: str | None = Field(None, description="a Ray cluster address (ray://host:10001 or auto)")


class MineSection(_Section):
    """[mine]: the corpus (stage 1)."""

    corpus: Annotated[list[Path_], BeforeValidator(_one_or_many), Field(min_length=1)]
    text_field: str = "text"
    id_field: str = "id"


class CombinationsSection(_Section):
    """[combinations]: novel noun phrases (stage 2)."""

    spacy_model: str | None = None
    prefilter: bool = True
    batch_size: Positive = 256


class LLMSection(_Section):
    """[llm]: the model of stages 3–4."""

    model: Annotated[str, Field(min_length=1, description="any Inspect model, e.g. gguf/qwen2.5-0.5b")]
    max_connections: Connections = LLMOptions.max_connections
    temperature: Temperature = LLMOptions.temperature
    seed: Seed = LLMOptions.seed
    max_tokens: MaxTokens = LLMOptions.max_tokens
    timeout: Timeout = Field(LLMOptions.timeout, description="seconds per model call")
    max_retries: Retries = LLMOptions.max_retries
    model_args: dict[str, Any] = Field(default_factory=dict)


class PropertiesSection(_Section):
    """[properties]: property extraction and the plausibility filter (stage 3)."""

    count: Positive = PROPERTIES_PER_COMBINATION
    limit: Positive | None = None
    plausibility: Literal["model", "vera"] = PlausibilityOptions.backend  # type: ignore[assignment]
    threshold: UnitFloat = PlausibilityOptions.threshold
    vera_weights: str | None = None
    device: str | None = None


class BatchSection(_Section):
    """[batch]: stage 3's property calls as a Ray Data batch job."""

    backend: Literal[BACKENDS]  # type: ignore[valid-type]
    model: Annotated[str, Field(min_length=1)]
    url: str | None = None
    api_key_env: str | None = None
    batch_size: Positive = BatchOptions.batch_size
    concurrency: Processes = BatchOptions.concurrency
    address: str | None = None
    max_retries: Retries = BatchOptions.max_retries
    accelerator_type: str | None = None
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    placement_group_config: dict[str, Any] | None = None
    engine_metrics: bool = False


class CandidatesSection(_Section):
    """[candidates]: emergent / canceled / component candidates (stage 4)."""

    per_phrase: Positive = CandidateParams.per_phrase
    component_sample: NonNegative = CandidateParams.component_sample
    canceled_phrases: NonNegative = CandidateParams.canceled_phrases
    head_properties: Positive = CandidateParams.head_properties
    seed: Seed = CandidateParams.seed


class AnnotateSection(_Section):
    """[annotate]: the annotation export and import (stage 5)."""

    annotators: Positive = AnnotationParams.annotators
    component_annotators: Positive = AnnotationParams.component_annotators
    answers: Path_ | None = None
    toxic_rule: Literal["any", "majority"] = AnnotationParams.toxic_rule  # type: ignore[assignment]
    seed: Seed = AnnotationParams.seed
    test_sizes: TestSizes = Field(default_factory=lambda: dict(PAPER_TEST_SIZES))
    out: Path_ | None = None


class NoveltySection(_Section):
    """[novelty]: PMI novelty (stage 6)."""

    counts: Path_ | None = None
    cooccurrence: Path_ | None = None
    corpus: Annotated[list[Path_], BeforeValidator(_one_or_many)] = Field(default_factory=list)
    window: Positive = DEFAULT_WINDOW
    conceptnet_sample: Positive | None = None
    seed: Seed = 0
    skip: bool = False


class PipelineFile(_Section):
    """The whole file: two top-level keys and one table per section."""

    workdir: Path_ = "ccpt-pipeline"
    conceptnet: Annotated[Path_, Field(description="the index built by `ccpt conceptnet index DUMP`")]
    engine: EngineSection = Field(default_factory=EngineSection)
    mine: MineSection
    combinations: CombinationsSection = Field(default_factory=CombinationsSection)
    llm: LLMSection
    properties: PropertiesSection = Field(default_factory=PropertiesSection)
    batch: BatchSection | None = None
    candidates: CandidatesSection = Field(default_factory=CandidatesSection)
    annotate: AnnotateSection = Field(default_factory=AnnotateSection)
    novelty: NoveltySection = Field(default_factory=NoveltySection)


PIPELINE_TOML = FileFormat(
    "pipeline TOML",
    PipelineFile,
    "ccpt pipeline run CONFIG",
    "One file drives every stage (docs/pipeline.md). Values are typed as TOML types them (no coercion: "
    'workers = "2" is an error); unknown sections and keys are errors; relative paths are relative to the '
    "file's directory; a single corpus path may be given as a string.",
)


def _where(loc: Any) -> str:
    """A TOML location: ``[llm] max_connections``, ``[mine] corpus[0]``, ``workdir``."""
    parts = [str(p) for p in loc]
    if len(parts) >= 2 and parts[0] in PipelineFile.model_fields and parts[0] not in ("workdir", "conceptnet"):
        return f"[{parts[0]}] {location(parts[1:])}"
    return location(parts)


def read_pipeline_toml(path: Path) -> PipelineFile:
    """The validated file; one :class:`CcptError` line naming the file, section and key otherwise."""
    try:
        return PipelineFile.model_validate(read_toml(path))
    except ValidationError as exc:
        raise CcptError(
            one_line(path, exc, _where), 'the keys are listed in docs/schemas.md, "pipeline TOML"'
        ) from None
