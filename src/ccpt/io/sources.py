"""Where data and graphs come from: a local directory, the verified download cache, or a pinned download (the one
core module that may reach the network, only when no local copy is given)."""

from __future__ import annotations

import os
from pathlib import Path

from ccpt.errors import DataError, path_problem
from ccpt.graph import NeighbourCache, SqliteConceptGraph, default_index_path, open_graph
from ccpt.io.download import CHECKSUMS, cache_dir, download, download_results

# The dataset's ConceptNet neighbourhood cache: the offline default graph (it covers the CCPT test splits).
GRAPH_CACHE_NAME = "conceptnet_adjacent.json"


def _local_copy(chosen: str | Path | None, variable: str, what: str, option: str) -> Path | None:
    """``chosen``, else ``$variable``, as a directory that exists (one line naming it otherwise); None: neither."""
    chosen = chosen or os.environ.get(variable)
    if not chosen:
        return None
    path = Path(chosen).expanduser()
    problem = path_problem(path, directory=True)
    if problem:
        raise DataError(f"{what} directory {path}: {problem}", f"check {option} / {variable}")
    return path


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    """Where the dataset files are: ``data_dir``, else ``$CCPT_DATA_DIR``, else the verified download cache."""
    # The download hashes cached files again: an altered one is fetched again, not read.
    return _local_copy(data_dir, "CCPT_DATA_DIR", "data", "--data-dir") or download()


def resolve_results_dir(results_dir: str | Path | None = None) -> Path:
    """Where the authors' stored result files are: ``results_dir``, else ``$CCPT_RESULTS_DIR``, else the verified
    download cache (every pinned file hashed again, a missing or altered one fetched)."""
    return _local_copy(results_dir, "CCPT_RESULTS_DIR", "results", "--results-dir") or download_results()


def stored_result_files(results_dir: str | Path | None = None) -> list[Path]:
    """The authors' result files (``*.csv``) in the stored-results directory and its subdirectories (a copy may
    keep other models' files in a folder of their own), sorted by name; one line when there are none."""
    root = resolve_results_dir(results_dir)
    files = sorted((p for p in root.rglob("*.csv") if p.is_file()), key=lambda p: (p.name, str(p)))
    if not files:
        raise DataError(f"no result files (*.csv) in {root}", "check --results-dir / CCPT_RESULTS_DIR")
    return files


def dataset_files(data_dir: str | Path | None) -> list[Path]:
    """The dataset files a command given ``data_dir`` reads, never downloading: what an output must not replace."""
    chosen = data_dir or os.environ.get("CCPT_DATA_DIR")
    root = Path(chosen).expanduser() if chosen else cache_dir()
    return [root / name for name in CHECKSUMS if (root / name).is_file()]


def resolve_graph(db: Path | None, cache: Path | None, data_dir: Path | None) -> NeighbourCache | SqliteConceptGraph:
    """The concept graph: ``db``, else ``cache``, else the built default index, else the neighbourhood cache."""
    if db is not None:
        return SqliteConceptGraph(db)
    if cache is not None:
        return open_graph(cache)
    if default_index_path().is_file():
        return SqliteConceptGraph(default_index_path())
    return NeighbourCache.load(graph_cache_file(data_dir))


def graph_cache_file(data_dir: Path | None) -> Path:
    """The dataset's ConceptNet neighbourhood cache file (downloaded into the verified cache if needed)."""
    root = resolve_data_dir(data_dir)
    if root == cache_dir():
        # Hashed again before every use, like the dataset files: an altered cached copy is fetched again, never read.
        download((GRAPH_CACHE_NAME,), target=root)
    if not (path := root / GRAPH_CACHE_NAME).is_file():
        raise DataError(
            f"no concept graph: {path} is missing and no index is built",
            hint="pass --cache FILE, or build an index with: ccpt conceptnet index DUMP",
        )
    return path
