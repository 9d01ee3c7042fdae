"""Concept graphs (ConceptNet) for Spreading Activation and the data pipeline: the authors' neighbourhood cache
(:class:`NeighbourCache`) and a ConceptNet dump indexed into SQLite (:class:`SqliteConceptGraph`, every query), both
with labels normalised by :func:`normalise_label`.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from ccpt.errors import CcptError, DataError
from ccpt.io.outputs import atomic_path

Capability = Literal["neighbours", "has_property", "is_concept"]

INDEX_SCHEMA_VERSION = "1"
# Labels like "en 1" / "fr 2" in the authors' cache are language codes leaking out of URIs, not concepts.
_JUNK_LABEL = re.compile(r"^[a-z]{2,3} \d+$")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_FULL = "build a full index with: ccpt conceptnet index DUMP"
_NEIGHBOURS_SQL = """
    SELECT label FROM (
      SELECT "end" AS label, weight FROM edges WHERE start = ?1
      UNION ALL
      SELECT start AS label, weight FROM edges WHERE "end" = ?1)
    WHERE label != ?1 GROUP BY label ORDER BY max(weight) DESC, label LIMIT ?2
"""
_HAS_PROPERTY_SQL = """
    SELECT "end" FROM edges WHERE start = ? AND rel = 'HasProperty' AND "end" != start
    GROUP BY "end" ORDER BY max(weight) DESC, "end" LIMIT ?
"""


class UnsupportedQuery(CcptError):
    """The graph backend cannot answer this kind of query (e.g. HasProperty on the neighbourhood cache)."""


@runtime_checkable
class ConceptGraph(Protocol):
    """What the rest of ccpt sees of a concept graph; queries not in ``capabilities`` raise UnsupportedQuery."""

    name: str
    capabilities: frozenset[Capability]

    def neighbours(self, concept: str, k: int = 10) -> tuple[str, ...]:
        """At most ``k`` English neighbour labels of ``concept``, strongest edge first; () if unknown."""

    def has_property(self, concept: str, k: int = 10) -> tuple[str, ...]:
        """At most ``k`` objects of ``concept --HasProperty--> x``, strongest first."""

    def is_concept(self, phrase: str) -> bool:
        """Whether ``phrase`` (a unigram or an n-gram) is an English concept of the graph."""


def normalise_label(text: str) -> str | None:
    """The canonical label of a concept URI (``/c/en/apple_pie/n/...``) or plain label: lower case, spaces, no
    sense suffix; None for empty labels, non-English URIs and language-code junk like ``"en 1"``."""
    if text.startswith("/c/"):
        parts = text.split("/")  # ['', 'c', 'en', 'apple_pie', 'n', ...]
        if len(parts) < 4 or parts[2] != "en":
            return None
        text = parts[3]
    label = " ".join(text.replace("_", " ").split()).lower()
    return None if not label or _JUNK_LABEL.match(label) else label


def read_neighbour_json(path: Path) -> dict[str, list[str]]:
    """The raw ``concept → labels`` of a ``conceptnet_adjacent.json``-style file; DataError if missing or bad."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"ConceptNet cache not found: {path}", hint="pass an existing file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read ConceptNet cache {path}: {exc}") from None
    if not isinstance(raw, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in raw.values()
    ):
        raise DataError(
            f"{path} is not a ConceptNet neighbourhood cache",
            hint='expected a JSON object {"concept": ["neighbour", ...], ...}',
        )
    return raw


class NeighbourCache:
    """The ``concept → ranked neighbour labels`` JSON cache, cleaned on load; only ``neighbours`` is available."""

    capabilities: frozenset[Capability] = frozenset({"neighbours"})

    def __init__(self, table: dict[str, tuple[str, ...]], name: str = "conceptnet-cache") -> None:
        self._table = table
        self.name = name

    @classmethod
    def from_mapping(cls, raw: dict[str, list[str]], name: str = "conceptnet-cache") -> NeighbourCache:
        """Build from raw JSON content: normalise keys and labels, drop junk and duplicates, keep order."""
        table: dict[str, list[str | None]] = {}
        for key, labels in raw.items():
            # Keys differing only in case/underscores ("Africa", "africa") are merged, first list first.
            if (concept := normalise_label(key)) is not None:
                table.setdefault(concept, []).extend(normalise_label(label) for label in labels)
        # Each list de-duplicated in order, without junk (None) and without the concept itself.
        return cls({c: tuple(dict.fromkeys(x for x in xs if x not in (None, c))) for c, xs in table.items()}, name=name)

    @classmethod
    def load(cls, path: str | Path) -> NeighbourCache:
        """Read a ``conceptnet_adjacent.json``-style file; raises DataError if it is missing or malformed."""
        return cls.from_mapping(read_neighbour_json(Path(path)), name=f"conceptnet-cache:{Path(path).name}")

    def __len__(self) -> int:
        return len(self._table)

    def neighbours(self, concept: str, k: int = 10) -> tuple[str, ...]:
        """The first ``k`` cleaned neighbours (the file is already ranked by weight); () if not cached."""
        label = normalise_label(concept)
        return self._table.get(label, ())[:k] if label else ()

    def has_property(self, concept: str, k: int = 10) -> tuple[str, ...]:
        """Not available from the cache (it stores no relation types)."""
        raise UnsupportedQuery(
            "the ConceptNet neighbourhood cache has no relation types, so no HasProperty edges", _FULL
        )

    def is_concept(self, phrase: str) -> bool:
        """Not available from the cache (it covers only the concepts of the CCPT test sets)."""
        raise UnsupportedQuery(
            "the ConceptNet neighbourhood cache covers a few thousand concepts, not ConceptNet's vocabulary", _FULL
        )


@dataclass(frozen=True)
class IndexStats:
    """What :func:`build_index` read and kept."""

    lines: int  # lines read from the dump
    kept_edges: int  # edges whose both ends are English concepts
    malformed: int  # lines that are not 5 tab-separated fields, or English edges with bad URIs / weight JSON
    english_concepts: int  # distinct English labels (from any edge, including edges to other languages)
    seconds: float


def _english(uri: bytes) -> str | None:
    """Label of an English node URI, None otherwise (non-English, malformed, or junk)."""
    if not uri.startswith(b"/c/en/"):
        return None
    try:
        return normalise_label(uri.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def _read_edges(
    dump: Path, stats: dict[str, int], progress: Callable[[int], None] | None
) -> Iterator[tuple[str | None, str, str | None, float]]:
    """Stream ``(start, rel, end, weight)`` of every edge with an English end (None: not English) into ``stats``."""
    with gzip.open(dump, "rb") as stream:
        for lines, line in enumerate(stream, start=1):
            if progress is not None and lines % 1_000_000 == 0:
                progress(lines)
            stats["lines"] = lines
            fields = line.rstrip(b"\r\n").split(b"\t")
            if len(fields) != 5 or not fields[1].startswith(b"/r/"):
                stats["malformed"] += 1
                continue
            start, end = _english(fields[2]), _english(fields[3])
            if start is None and end is None:
                continue  # an edge between non-English nodes: irrelevant, not checked further
            try:
                weight = float(json.loads(fields[4])["weight"])
            except (ValueError, KeyError, TypeError):
                stats["malformed"] += 1
                continue
            yield start, fields[1][3:].decode("ascii", "replace"), end, weight


def build_index(
    dump_path: str | Path, db_path: str | Path, *, force: bool = False, progress: Callable[[int], None] | None = None
) -> IndexStats:
    """Index a ConceptNet assertions dump (``.csv.gz``, 5 tab-separated columns) into SQLite, streaming, keeping
    edges between English concepts and every English label, atomically. ``progress(lines_read)`` is called every
    million lines. DataError if the dump is missing or the index exists and ``force`` is false."""
    dump, db = Path(dump_path), Path(db_path)
    if not dump.is_file():
        raise DataError(f"ConceptNet dump not found: {dump}", hint="pass conceptnet-assertions-5.7.0.csv.gz")
    if db.exists() and not force:
        raise DataError(f"ConceptNet index already exists: {db}", hint="pass --force to rebuild it")
    began = time.perf_counter()
    counts = {"lines": 0, "malformed": 0}
    with atomic_path(db) as partial, contextlib.closing(sqlite3.connect(partial)) as con:
        # The partial file is discarded on failure, so durability is not needed while loading.
        con.executescript(
            """
            PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE edges (
              start TEXT NOT NULL, rel TEXT NOT NULL, "end" TEXT NOT NULL, weight REAL NOT NULL);
            CREATE TEMP TABLE read (start TEXT, rel TEXT NOT NULL, "end" TEXT, weight REAL NOT NULL);
            """
        )
        try:  # every edge with an English end (the other end NULL if not English), streamed
            con.executemany("INSERT INTO read VALUES (?, ?, ?, ?)", _read_edges(dump, counts, progress))
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise DataError(
                f"cannot read ConceptNet dump {dump}: {exc}", hint="is it a complete .csv.gz file?"
            ) from None
        # Indexes after the load: far faster than maintaining them row by row.
        con.executescript(
            """
            INSERT INTO edges SELECT * FROM read WHERE start IS NOT NULL AND "end" IS NOT NULL;
            CREATE TABLE concepts (label TEXT PRIMARY KEY, n_words INTEGER NOT NULL) WITHOUT ROWID;
            INSERT INTO concepts
              SELECT label, length(label) - length(replace(label, ' ', '')) + 1 FROM (
                SELECT start AS label FROM read WHERE start IS NOT NULL
                UNION SELECT "end" FROM read WHERE "end" IS NOT NULL);
            DROP TABLE read;
            CREATE INDEX edges_start ON edges (start, rel);
            CREATE INDEX edges_end ON edges ("end");
            CREATE INDEX concepts_n_words ON concepts (n_words);
            """
        )
        (kept,), (n_concepts,) = (
            con.execute(f"SELECT count(*) FROM {table}").fetchone() for table in ("edges", "concepts")
        )
        stats = IndexStats(counts["lines"], kept, counts["malformed"], n_concepts, time.perf_counter() - began)
        meta = {
            "schema_version": INDEX_SCHEMA_VERSION,
            "source": dump.name,
            "source_bytes": str(dump.stat().st_size),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **{f"stats.{k}": str(v) for k, v in stats.__dict__.items()},
        }
        con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        con.commit()
    return stats


class SqliteConceptGraph:
    """Queries over an index built by :func:`build_index` (read-only)."""

    capabilities: frozenset[Capability] = frozenset({"neighbours", "has_property", "is_concept"})

    def __init__(self, db_path: str | Path) -> None:
        path = Path(db_path)
        if not path.is_file():
            raise DataError(f"ConceptNet index not found: {path}", hint="build it with: ccpt conceptnet index DUMP")
        # check_same_thread=False: Inspect may call from a worker thread; the connection is read-only.
        self._con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        meta: dict[str, str] = {}
        with contextlib.suppress(sqlite3.DatabaseError):  # not an SQLite file, or no meta table
            meta = dict(self._con.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
            self._con.close()
            raise DataError(
                f"{path} is not a ccpt ConceptNet index (or an old one)",
                hint="rebuild it with: ccpt conceptnet index DUMP --force",
            )
        self.meta = meta
        self.name = f"conceptnet:{meta.get('source', path.name)}"

    def close(self) -> None:
        """Close the database connection."""
        self._con.close()

    def _labels(self, sql: str, concept: str, k: int) -> tuple[str, ...]:
        label = normalise_label(concept)
        return () if label is None else tuple(row[0] for row in self._con.execute(sql, (label, k)))

    def neighbours(self, concept: str, k: int = 10) -> tuple[str, ...]:
        """At most ``k`` labels linked to ``concept`` in either direction, by strongest edge weight."""
        return self._labels(_NEIGHBOURS_SQL, concept, k)

    def has_property(self, concept: str, k: int = 10) -> tuple[str, ...]:
        """At most ``k`` objects of ``concept --HasProperty--> x``, by edge weight."""
        return self._labels(_HAS_PROPERTY_SQL, concept, k)

    def is_concept(self, phrase: str) -> bool:
        """Whether ``phrase`` (any number of words) is an English ConceptNet concept."""
        return bool(self._labels("SELECT label FROM concepts WHERE label = ?1 LIMIT ?2", phrase, 1))

    def concepts(self, n_words: int | None = None) -> Iterator[str]:
        """Every English concept label, or only those with ``n_words`` words (1 = the unigram concept set)."""
        where, args = ("", ()) if n_words is None else ("WHERE n_words = ?", (n_words,))
        return (label for (label,) in self._con.execute(f"SELECT label FROM concepts {where} ORDER BY label", args))


def default_index_path() -> Path:
    """Where ``ccpt conceptnet index`` writes by default: ``$CCPT_CONCEPTNET_DB`` or the user data dir."""
    if env := os.environ.get("CCPT_CONCEPTNET_DB"):
        return Path(env)
    from platformdirs import user_data_dir  # local import: only the CLI path needs it

    return Path(user_data_dir("ccpt")) / "conceptnet.sqlite"


def open_graph(path: str | Path) -> NeighbourCache | SqliteConceptGraph:
    """Open a graph file by content: a SQLite index, or else a JSON neighbourhood cache."""
    path = Path(path)
    if not path.is_file():
        raise DataError(
            f"concept graph not found: {path}",
            hint="pass a conceptnet_adjacent.json cache or an index built with: ccpt conceptnet index DUMP",
        )
    with path.open("rb") as handle:
        is_sqlite = handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    return SqliteConceptGraph(path) if is_sqlite else NeighbourCache.load(path)
