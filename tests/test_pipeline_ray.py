"""Stages 1–2 on Ray Data (a local Ray started in-process) write exactly what the process pool writes."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
from pipeline_fixtures import conceptnet_index, corpus_words, shakespeare_corpus

from ccpt.pipeline.mining import COMBINATIONS, COMPARATIVES, EngineOptions, combinations, mine

ray = pytest.importorskip("ray")
pytest.importorskip("spacy")
pytestmark = pytest.mark.ray  # starts a local Ray: runs in the cpu-heavy group (conftest.py)


def test_ray_engine_matches_process_pool(tmp_path: Path) -> None:
    corpus = shakespeare_corpus(tmp_path / "macbeth.txt", ["tragedies/macbeth.md"])
    db = conceptnet_index(tmp_path, corpus_words(corpus.read_text(encoding="utf-8")))
    counts = {}
    try:
        for engine in ("process", "ray"):
            work = tmp_path / engine
            options = EngineOptions(engine, workers=2)
            mined = mine([corpus], work, engine=options)
            combined = combinations(work, db, engine=options)
            counts[engine] = (mined.counts, combined.counts)
    finally:
        ray.shutdown()
    assert counts["ray"] == counts["process"]
    assert counts["ray"][1]["combinations"] > 0
    for name in (COMPARATIVES, COMBINATIONS):
        assert filecmp.cmp(tmp_path / "process" / name, tmp_path / "ray" / name, shallow=False)
