"""Stages 1 (:func:`mine`) and 2 (:func:`combinations`) as resumable file-to-file steps on either engine."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ccpt.errors import CcptError
from ccpt.pipeline.combinations import ExtractConfig, batched, extract_batch
from ccpt.pipeline.comparatives import FALSE_FRIENDS, mine_documents
from ccpt.pipeline.corpus import Document, iter_documents
from ccpt.pipeline.engine import ENGINES, RaySource, run_process_pool, run_ray
from ccpt.pipeline.manifest import StageResult, StageSpec, atomic_text, read_jsonl, run_stage
from ccpt.pipeline.progress import Progress

COMPARATIVES = "comparatives.jsonl"
COMBINATIONS = "combinations.jsonl"
DOCS_PER_BATCH = 200


@dataclass(frozen=True)
class EngineOptions:
    """Where stages 1–2 run."""

    engine: str = "process"
    workers: int = 2
    address: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise CcptError(f"unknown engine {self.engine!r}", f"choose one of {', '.join(ENGINES)}")


def mine_batch(units: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Stage 1 on one batch of documents."""
    found = list(mine_documents(Document(**u) for u in units))
    rows = [f.to_row() for f in found if f is not None]
    return rows, {"documents": len(units), "sentences": len(found), "comparative_sentences": len(rows)}


def _file_units(batch: dict[str, Any], **fields: str) -> list[dict[str, Any]]:
    """Ray: a batch of whole files (bytes + path) → documents (``fields``: text_field, id_field)."""
    return [
        asdict(doc)
        for path, data in zip(batch["path"], batch["bytes"], strict=True)
        for doc in iter_documents(Path(str(path)), **fields, data=bytes(data))
    ]


def _json_lines(batch: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(str(line)) for line in batch["text"] if str(line).strip()]


def mine(
    corpus: Sequence[Path],
    workdir: Path,
    *,
    engine: EngineOptions = EngineOptions(),
    text_field: str = "text",
    id_field: str = "id",
    force: bool = False,
) -> StageResult:
    """Stage 1: stream ``corpus`` files and write the comparative sentences to ``workdir/comparatives.jsonl``."""
    if not corpus:
        raise CcptError("no corpus files given", "pass one or more .txt / .jsonl / .gz files")
    paths = tuple(sorted(Path(p) for p in corpus))
    out = workdir / COMPARATIVES
    recorded = {"text_field": text_field, "id_field": id_field, "false_friends": list(FALSE_FRIENDS)}
    spec = StageSpec("mine", workdir, paths, (out,), recorded)

    def work() -> dict[str, int]:
        if engine.engine == "ray":
            source = RaySource(
                build=lambda data: data.read_binary_files([str(p) for p in paths], include_paths=True),
                to_units=functools.partial(_file_units, text_field=text_field, id_field=id_field),
            )
            results = run_ray(mine_batch, source, workers=engine.workers, address=engine.address, batch_size=1)
        else:
            docs = (asdict(d) for p in paths for d in iter_documents(p, text_field=text_field, id_field=id_field))
            results = run_process_pool(mine_batch, batched(docs, DOCS_PER_BATCH), engine.workers)
        return _write(out, results, Progress("mine: documents"), "documents")

    return run_stage(spec, work, force=force)


def _write(
    out: Path, results: Iterator[tuple[list[dict[str, Any]], dict[str, int]]], progress: Progress, unit: str
) -> dict[str, int]:
    """Write the rows of every batch in order; ``progress`` advances by each batch's ``unit`` count."""
    counts: Counter[str] = Counter()
    with atomic_text(out) as fh, progress:
        for rows, part in results:
            counts.update(part)
            progress.advance(part.get(unit, 0))
            fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return counts


def combinations(
    workdir: Path,
    conceptnet: Path,
    *,
    engine: EngineOptions = EngineOptions(),
    spacy_model: str | None = None,
    prefilter: bool = True,
    batch_size: int = 256,
    parse_window: bool = True,
    force: bool = False,
) -> StageResult:
    """Stage 2: parse the prefiltered comparative sentences (``parse_window=False``: whole) into combinations."""
    source_file, out = workdir / COMPARATIVES, workdir / COMBINATIONS
    config = ExtractConfig(
        conceptnet=str(Path(conceptnet).resolve()),
        spacy_model=spacy_model or ExtractConfig.spacy_model,
        prefilter=prefilter,
        parse_window=parse_window,
    )
    job = functools.partial(extract_batch, config)
    params = {
        "spacy_model": config.spacy_model,
        "prefilter": prefilter,
        "window": config.window,
        "min_concept_words": config.min_concept_words,
        # Only when off: manifests written before the parse window existed stay valid (same results).
        **({} if parse_window else {"parse_window": False}),
    }
    spec = StageSpec("combinations", workdir, (source_file, Path(conceptnet)), (out,), params)

    def work() -> dict[str, int]:
        if engine.engine == "ray":
            source = RaySource(build=lambda data: data.read_text(str(source_file)), to_units=_json_lines)
            results = run_ray(job, source, workers=engine.workers, address=engine.address, batch_size=batch_size)
        else:
            results = run_process_pool(job, batched(read_jsonl(source_file), batch_size), engine.workers)
        with source_file.open("rb") as fh:
            total = sum(1 for line in fh if line.strip())
        return _write(out, results, Progress("combinations: sentences", total=total), "sentences")

    return run_stage(spec, work, force=force)
