"""The benchmark's metadata, declared once in ``benchmark.toml`` beside this module: title, paper, tasks and their
test-split sizes, the pinned assets with their hashes, and the comparability version every task carries
(``Task(version=…)``) and every log records; its changelog says what each version changed."""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from types import MappingProxyType


@dataclass(frozen=True)
class Benchmark:
    """``benchmark.toml``, read."""

    title: str
    paper: str
    version: int  # the comparability version: two numbers of two versions are two rows
    test_sizes: Mapping[str, int]  # task → instances in its test split
    base_url: str  # the authors' repository (raw files), at ``commit``
    commit: str
    path: str  # the data directory in the repository
    sha256: Mapping[str, str]  # file name → its pinned sha256
    optional: tuple[str, ...]  # assets fetched only when a method needs them: not the dataset
    results_path: str  # the stored result files' directory in the repository
    results_sha256: Mapping[str, str]  # stored result file name → its pinned sha256
    changelog: Mapping[int, str]  # version → what it changed

    @property
    def dataset_sha256(self) -> str:
        """The pinned dataset's digest (:func:`dataset_digest` of its files' pinned hashes): its version."""
        return dataset_digest({name: h for name, h in self.sha256.items() if name not in self.optional})


def dataset_digest(hashes: Mapping[str, str]) -> str:
    """One digest of a dataset's files: sha256 over ``name sha256`` lines in name order (files absent from
    ``hashes`` are not part of it)."""
    lines = "".join(f"{name} {digest}\n" for name, digest in sorted(hashes.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


@cache
def benchmark() -> Benchmark:
    """The shipped ``benchmark.toml`` (read once: it is part of the package, never edited at run time)."""
    data = tomllib.loads(files("ccpt").joinpath("benchmark.toml").read_text(encoding="utf-8"))
    assets = data["assets"]
    return Benchmark(
        title=data["title"],
        paper=data["paper"],
        version=int(data["version"]),
        test_sizes=MappingProxyType({task: int(spec["test_size"]) for task, spec in data["tasks"].items()}),
        base_url=assets["base_url"],
        commit=assets["commit"],
        path=assets["path"],
        sha256=MappingProxyType(dict(assets["sha256"])),
        optional=tuple(assets.get("optional", ())),
        results_path=assets["results"]["path"],
        results_sha256=MappingProxyType(dict(assets["results"]["sha256"])),
        changelog=MappingProxyType({int(entry["version"]): entry["changes"] for entry in data["changelog"]}),
    )
