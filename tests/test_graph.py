"""Concept graphs: label cleaning, the authors' neighbourhood cache, the SQLite index of a ConceptNet dump.

The dump fixture is written in ConceptNet 5.7's real format: gzip, tab-separated, no header, 5 columns
(edge URI, relation, start node, end node, JSON with "weight").
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ccpt.cli import main
from ccpt.errors import DataError
from ccpt.graph import (
    ConceptGraph,
    NeighbourCache,
    SqliteConceptGraph,
    UnsupportedQuery,
    build_index,
    normalise_label,
    open_graph,
)


def edge(rel: str, start: str, end: str, weight: float) -> str:
    meta = json.dumps({"dataset": "/d/conceptnet/4/en", "license": "cc:by/4.0", "weight": weight})
    return f"/a/[/r/{rel}/,{start}/,{end}/]\t/r/{rel}\t{start}\t{end}\t{meta}"


DUMP_LINES = [
    edge("RelatedTo", "/c/en/apple", "/c/en/fruit", 3.0),
    edge("IsA", "/c/en/apple/n/wn/food", "/c/en/fruit/n", 5.0),  # same pair, stronger: ranks by max
    edge("AtLocation", "/c/en/apple", "/c/en/apple_tree", 2.0),
    edge("HasProperty", "/c/en/apple", "/c/en/red", 1.5),
    edge("HasProperty", "/c/en/apple", "/c/en/round", 2.5),
    edge("RelatedTo", "/c/en/pie", "/c/en/apple", 4.0),  # incoming edge: counts as a neighbour
    edge("RelatedTo", "/c/en/apple", "/c/en/apple", 9.0),  # self loop: never a neighbour
    edge("Synonym", "/c/en/apple", "/c/fr/pomme", 10.0),  # mixed language: not kept as an edge
    edge("Synonym", "/c/de/apfel", "/c/fr/pomme", 1.0),  # no English end: skipped
    edge("ExternalURL", "/c/en/banana", "http://dbpedia.org/resource/Banana", 1.0),
    "only\tthree\tfields",  # malformed: wrong column count
    edge("RelatedTo", "/c/en/apple", "/c/en/core", 1.0).rsplit("\t", 1)[0] + "\t{not json",  # malformed JSON
    edge("RelatedTo", "/c/en/apple", "/c/en/seed", 1.0).replace('"weight": 1.0', '"w": 1'),  # no weight
]


def write_dump(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return path


@pytest.fixture
def index(tmp_path: Path) -> tuple[Path, Path]:
    dump = write_dump(tmp_path / "assertions.csv.gz", DUMP_LINES)
    return dump, tmp_path / "conceptnet.sqlite"


# ----------------------------------------------------------------------------------------------------------
# Labels


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("/c/en/apple_pie/n/wn/food", "apple pie"),
        ("/c/en/apple", "apple"),
        ("/c/fr/pomme", None),
        ("en 1", None),
        ("fr 2", None),
        ("Farmer's_Market", "farmer's market"),
        ("  4  legs ", "4 legs"),
        ("m 16", "m 16"),
        ("", None),
    ],
)
def test_normalise_label(raw: str, label: str | None) -> None:
    assert normalise_label(raw) == label


# ----------------------------------------------------------------------------------------------------------
# The authors' neighbourhood cache


def test_cache_cleans_labels_and_keys() -> None:
    cache = NeighbourCache.from_mapping(
        {
            "wilted": ["en 1", "unwilted", "Unwilted", "wiltedness", "wilted"],
            "Africa": ["continent"],
            "africa": ["continent", "country"],
            "en 1": ["x"],
        }
    )
    assert cache.neighbours("wilted") == ("unwilted", "wiltedness")
    assert cache.neighbours("africa") == ("continent", "country")
    assert cache.neighbours("Africa", k=1) == ("continent",)
    assert cache.neighbours("unknown") == ()
    assert len(cache) == 2
    assert isinstance(cache, ConceptGraph)


def test_cache_refuses_queries_it_cannot_answer() -> None:
    cache = NeighbourCache.from_mapping({"apple": ["fruit"]})
    with pytest.raises(UnsupportedQuery, match="HasProperty"):
        cache.has_property("apple")
    with pytest.raises(UnsupportedQuery):
        cache.is_concept("apple")
    assert cache.capabilities == frozenset({"neighbours"})


def test_authors_cache_loads_clean(ccpt_dir: Path) -> None:
    cache = NeighbourCache.load(ccpt_dir / "conceptnet_adjacent.json")
    raw = json.loads((ccpt_dir / "conceptnet_adjacent.json").read_text())
    assert raw["wilted"] == ["en 1", "unwilted", "wiltedness"]  # the junk is in the file …
    assert cache.neighbours("wilted") == ("unwilted", "wiltedness")  # … and gone after loading
    assert cache.neighbours("lettuce", k=3) == tuple(raw["lettuce"][:3])  # rank order kept
    junk = [n for c in raw for n in cache.neighbours(c, k=1000) if n in {"en 1", "en 2", "fr 1"}]
    assert junk == []


def test_cache_load_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        NeighbourCache.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('["not", "a", "mapping"]')
    with pytest.raises(DataError, match="not a ConceptNet neighbourhood cache"):
        NeighbourCache.load(tmp_path / "bad.json")


# ----------------------------------------------------------------------------------------------------------
# SQLite index of a dump


def test_build_index_counts(index: tuple[Path, Path]) -> None:
    dump, db = index
    stats = build_index(dump, db)
    assert stats.lines == len(DUMP_LINES)
    assert stats.malformed == 3
    # English-English edges: the 7 first lines (fruit ×2, apple tree, red, round, pie, self loop).
    assert stats.kept_edges == 7
    # apple, fruit, apple tree, red, round, pie, + banana (only in an ExternalURL edge).
    assert stats.english_concepts == 7


def test_index_queries(index: tuple[Path, Path]) -> None:
    build_index(*index)
    graph = SqliteConceptGraph(index[1])
    assert isinstance(graph, ConceptGraph)
    # By strongest edge: fruit 5 (max of 3 and 5), pie 4 (incoming), round 2.5, apple tree 2, red 1.5.
    # Not: apple itself (self loop), pomme (French), core / seed (malformed lines).
    assert graph.neighbours("apple") == ("fruit", "pie", "round", "apple tree", "red")
    assert graph.neighbours("Apple", k=2) == ("fruit", "pie")
    assert graph.neighbours("/c/en/apple/n") == graph.neighbours("apple")
    assert graph.neighbours("fruit") == ("apple",)
    assert graph.neighbours("unknown") == ()
    assert graph.has_property("apple") == ("round", "red")
    assert graph.has_property("fruit") == ()
    assert graph.is_concept("apple tree") and graph.is_concept("Apple_Tree") and graph.is_concept("banana")
    assert not graph.is_concept("pomme") and not graph.is_concept("core")
    assert list(graph.concepts(n_words=1)) == ["apple", "banana", "fruit", "pie", "red", "round"]
    assert list(graph.concepts(n_words=2)) == ["apple tree"]
    assert graph.meta["source"] == "assertions.csv.gz"
    graph.close()


def test_index_is_not_overwritten_without_force(index: tuple[Path, Path]) -> None:
    dump, db = index
    build_index(dump, db)
    with pytest.raises(DataError, match="--force"):
        build_index(dump, db)
    write_dump(dump, DUMP_LINES[:1])
    assert build_index(dump, db, force=True).kept_edges == 1


def test_truncated_dump_leaves_no_index(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "full.csv.gz", DUMP_LINES * 200)
    truncated = tmp_path / "truncated.csv.gz"
    truncated.write_bytes(dump.read_bytes()[:-40])
    db = tmp_path / "conceptnet.sqlite"
    with pytest.raises(DataError, match="cannot read ConceptNet dump"):
        build_index(truncated, db)
    assert not db.exists() and list(tmp_path.glob("*.partial")) == []


def test_missing_index_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="build it with: ccpt conceptnet index DUMP"):
        SqliteConceptGraph(tmp_path / "none.sqlite")
    with pytest.raises(DataError, match="ConceptNet dump not found"):
        build_index(tmp_path / "none.csv.gz", tmp_path / "db.sqlite")


def test_open_graph_dispatches_on_content(index: tuple[Path, Path], tmp_path: Path) -> None:
    build_index(*index)
    assert isinstance(open_graph(index[1]), SqliteConceptGraph)
    (tmp_path / "cache.json").write_text('{"apple": ["fruit"]}')
    assert isinstance(open_graph(tmp_path / "cache.json"), NeighbourCache)


# ----------------------------------------------------------------------------------------------------------
# CLI


def test_cli_index_and_neighbours(index: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    dump, db = index
    assert main(["conceptnet", "index", str(dump), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "7 English edges" in out and "3 malformed lines skipped" in out
    assert main(["conceptnet", "neighbours", "apple", "--db", str(db), "-k", "2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["neighbours"] == ["fruit", "pie"]
    assert main(["conceptnet", "index", str(dump), "--db", str(db)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["conceptnet", "neighbours", "apple", "--db", str(db.with_name("x.sqlite"))]) == 2
    assert "ccpt conceptnet index DUMP" in capsys.readouterr().err
