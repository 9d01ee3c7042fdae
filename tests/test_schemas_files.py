"""Hostile configuration and store files: the judge-agreement store and the pipeline TOML, built in the tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccpt.judges import JudgeIdentity
from ccpt.judging.agreement import Measurement, agreement_ci, judge_note, measurements, save, user_store

GOOD = {"pearson": 0.5, "spearman": 0.4, "n": 300, "pairs": "test", "mode": "text", "measured": "2026-01-01"}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CCPT_HOME", str(tmp_path))
    return user_store()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (json.dumps({"judge/x": {**GOOD, "pearson": "high"}}), "entry 'judge/x' / 'test': pearson: should be a valid"),
        (json.dumps({"judge/x": {"test": {**GOOD, "pearson": "high"}}}), "'judge/x' / 'test': pearson"),
        (json.dumps({"judge/x": {**GOOD, "pearson": 1.7}}), "pearson: should be less than or equal to 1"),
        (json.dumps({"judge/x": {"pearson": 0.5}}), "entry 'judge/x' / 'all': n: Field required"),
        (json.dumps({"judge/x": {**GOOD, "n": -4}}), "n: should be greater than or equal to 0"),
        (json.dumps({"judge/x": {**GOOD, "pearson_ci": [0.1]}}), "pearson_ci"),
        (json.dumps({"judge/x": 5}), "entry 'judge/x'"),
        ("[1, 2]", "not a JSON object"),
        ("{not json", "not readable as JSON"),
        ("[" * 50_000, "not readable as JSON"),
    ],
)
def test_a_malformed_store_is_named_in_the_note_not_a_crash(store: Path, content: str, reason: str) -> None:
    store.write_text(content, encoding="utf-8")
    note = judge_note([JudgeIdentity("judge/x")])
    assert reason in note and "ignored" in note
    assert (
        "judge/x: agreement with human ratings on the benchmark's test concepts not measured" in note
    )  # never the bad number
    assert "1.70" not in note


def test_a_malformed_entry_of_another_judge_is_not_mentioned_and_good_ones_are_used(store: Path) -> None:
    store.write_text(json.dumps({"judge/x": GOOD, "judge/y": {"pearson": "?"}}), encoding="utf-8")
    note = judge_note([JudgeIdentity("judge/x")])
    assert "judge/x: Pearson 0.50, Spearman 0.40" in note and "judge/y" not in note
    judges = {judge for judge, _ in measurements()}
    assert "judge/x" in judges and "judge/y" not in judges


def test_the_report_of_a_run_survives_a_malformed_store(
    store: Path, reference_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccpt.cli import main

    store.write_text(json.dumps({"gpt-4o": {"pearson": "high", "n": 3}}), encoding="utf-8")
    assert main(["report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv")]) == 0
    out = capsys.readouterr().out
    assert "entry 'gpt-4o' / 'all': pearson" in out and "| gpt-4o | Base |" in out


def test_saving_keeps_other_entries_and_sets_an_unreadable_store_aside(store: Path) -> None:
    new = Measurement("judge/new", "test", agreement_ci([1, 2, 3], [0.1, 0.3, 0.2]), measured="2026-01-01")
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps({"judge/old": {"test": {"pearson": "kept as it was"}}}), encoding="utf-8")
    save(new)
    saved = json.loads(store.read_text(encoding="utf-8"))
    assert saved == {"judge/old": {"test": {"pearson": "kept as it was"}}, "judge/new": {"test": new.entry()}}
    store.write_text("{truncated", encoding="utf-8")
    save(new)
    assert json.loads(store.read_text(encoding="utf-8")) == {"judge/new": {"test": new.entry()}}
    assert store.with_name(store.name + ".unreadable").read_text(encoding="utf-8") == "{truncated"
    assert not list(store.parent.glob("*.partial"))  # written atomically, nothing left behind


# ------------------------------------------------------------------------------------------ pipeline TOML

BASE = {
    "top": 'conceptnet = "cn.sqlite"\n',
    "mine": 'corpus = ["c.txt"]\n',
    "llm": 'model = "ccpt-scripted/m"\n',
}


def _toml(tmp_path: Path, section: str, line: str) -> Path:
    parts = dict(BASE)
    key = "top" if section == "top" else section
    name = line.split("=")[0].strip()
    kept = [old for old in parts.get(key, "").splitlines(keepends=True) if old.split("=")[0].strip() != name]
    parts[key] = "".join(kept) + line + "\n"  # the hostile line replaces the base file's value
    text = parts.pop("top") + "".join(f"[{name}]\n{body}" for name, body in parts.items())
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("section", "line", "named"),
    [
        ("engine", 'workers = "two"', r"\[engine\] workers: should be a valid integer"),
        ("engine", "workers = -1", r"\[engine\] workers: should be greater than or equal to 1"),
        ("engine", 'engine = "threads"', r"\[engine\] engine: should be 'process' or 'ray'"),
        ("mine", "corpus = 5", r"\[mine\] corpus"),
        ("mine", "corpus = []", r"\[mine\] corpus: Value should have at least 1 item"),
        ("properties", "threshold = 2.0", r"\[properties\] threshold: should be less than or equal to 1"),
        ("properties", "threshold = nan", r"\[properties\] threshold: should be a finite number"),
        ("properties", "count = 0", r"\[properties\] count: should be greater than or equal to 1"),
        ("candidates", "per_phrase = -5", r"\[candidates\] per_phrase: should be greater than or equal to 1"),
        ("annotate", "annotators = 0", r"\[annotate\] annotators: should be greater than or equal to 1"),
        ("annotate", "test_sizes = {pi_emergent = -3}", r"\[annotate\] test_sizes\.pi_emergent: should be greater"),
        ("annotate", "test_sizes = {pi_emergnt = 3}", r"\[annotate\] test_sizes\.pi_emergnt"),
        ("annotate", 'toxic_rule = "some"', r"\[annotate\] toxic_rule"),
        ("llm", "max_connections = 0", r"\[llm\] max_connections: should be greater than or equal to 1"),
        ("llm", "temperature = inf", r"\[llm\] temperature: should be a finite number"),
        ("llm", "max_tokens = 1.5", r"\[llm\] max_tokens: should be a valid integer"),
        ("llm", "modle = 1", r"\[llm\] modle: unknown key"),
        ("novelty", "window = 0", r"\[novelty\] window: should be greater than or equal to 1"),
        ("novelty", "seed = -1", r"\[novelty\] seed: should be greater than or equal to 0"),
        ("top", "workdir = 7", r"workdir: should be a valid string"),
        ("bogus", "x = 1", r"bogus: unknown key"),
        # Seventh hostile round: the command-line options had upper bounds, the TOML file's keys none.
        ("engine", "workers = 100000", r"\[engine\] workers: should be less than or equal to 1024"),
        ("llm", "timeout = 99999999", r"\[llm\] timeout: should be less than or equal to 86400"),
        ("llm", "max_connections = 1000000", r"\[llm\] max_connections: should be less than or equal to 10000"),
        ("llm", "max_retries = 1000", r"\[llm\] max_retries: should be less than or equal to 100"),
        ("candidates", "per_phrase = 10000000000", r"\[candidates\] per_phrase: should be less than or equal"),
        ("annotate", "annotators = true", r"\[annotate\] annotators: a number is expected, not true/false"),
    ],
)
def test_a_bad_pipeline_value_is_one_line_naming_section_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, line: str, named: str
) -> None:
    from ccpt.cli import main
    from ccpt.errors import CcptError
    from ccpt.pipeline.config import load_config

    path = _toml(tmp_path, section, line)
    with pytest.raises(CcptError, match=rf"p\.toml: {named}"):
        load_config(path)
    assert main(["pipeline", "run", str(path)]) == 2  # before any stage: nothing hangs, nothing is written
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ccpt: error:")
    assert not (tmp_path / "ccpt-pipeline").exists()


def test_pipeline_toml_file_problems_are_one_line(tmp_path: Path) -> None:
    from ccpt.errors import CcptError
    from ccpt.pipeline.config import load_config

    path = tmp_path / "p.toml"
    path.write_bytes(b'conceptnet = "cn\xff.sqlite"\n')
    with pytest.raises(CcptError, match=r"p\.toml: not UTF-8 text"):
        load_config(path)
    path.write_text("conceptnet = \n", encoding="utf-8")
    with pytest.raises(CcptError, match=r"p\.toml: invalid TOML"):
        load_config(path)
    with pytest.raises(CcptError, match=r"missing\.toml: file not found"):
        load_config(tmp_path / "missing.toml")
    path.write_text('[mine]\ncorpus = ["c.txt"]\n[llm]\nmodel = "m"\n', encoding="utf-8")
    with pytest.raises(CcptError, match=r"p\.toml: conceptnet: Field required"):
        load_config(path)


def test_valid_pipeline_toml_keeps_each_stage_default(tmp_path: Path) -> None:
    from ccpt.pipeline.config import load_config

    path = _toml(tmp_path, "mine", "")
    path.write_text(path.read_text().replace('corpus = ["c.txt"]', 'corpus = "one file.txt"'), encoding="utf-8")
    config = load_config(path)
    assert config.corpus == (tmp_path / "one file.txt",)  # a single path, not one path per character
    assert config.llm.max_connections == 8 and config.engine.workers == 2
    assert config.section("properties") == {}  # nothing set: the stage applies its own defaults


# ------------------------------------------------------------------------------------------------ corpora


def test_a_latin1_corpus_is_one_line_not_replacement_characters(tmp_path: Path, capsys) -> None:
    from ccpt.cli import main

    corpus = tmp_path / "old.txt"
    corpus.write_bytes("Old books were better than new ones.\nThe café was dark like a cave.\n".encode("latin-1"))
    assert main(["pipeline", "mine", str(corpus), "--workdir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "old.txt: line 2 is not UTF-8 (byte 0xe9 at column 8)" in err[0]
    corpus.write_bytes("Old books were better than new ones.\r\nThe café was dark like a cave.\r\n".encode())
    assert main(["pipeline", "mine", str(corpus), "--workdir", str(tmp_path / "w")]) == 0
    mined = (tmp_path / "w" / "comparatives.jsonl").read_text(encoding="utf-8")
    assert "café" in mined and "\ufffd" not in mined


# ------------------------------------------------------------------------------------------------ pickle

UNPICKLERS = {"pickle", "_pickle", "cPickle", "cloudpickle", "dill", "shelve", "marshal", "joblib"}


def test_no_ccpt_module_reads_pickle() -> None:
    """Inspect's model cache is pickle (documented in docs/evaluating.md); ccpt's own caches and stores must not be: a
    pickle-based loader in ccpt would run whatever code a writable cache file holds."""
    import ast

    src = Path(__file__).resolve().parents[1] / "src" / "ccpt"
    offenders = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(src)} imports {n}" for n in names if n.split(".")[0] in UNPICKLERS]
            # torch.load and numpy.load(allow_pickle=True) unpickle too.
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load":
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id in ("torch", "np", "numpy"):
                    pickled = owner.id == "torch" or any(k.arg == "allow_pickle" for k in node.keywords)
                    if pickled:
                        offenders.append(f"{path.relative_to(src)} calls {owner.id}.load")
    assert offenders == []
