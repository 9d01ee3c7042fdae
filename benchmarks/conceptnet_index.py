"""ConceptNet index build rate (lines/s) and peak memory on synthetic dumps in the real 5-column format.

Writes synthetic ``.csv.gz`` dumps (about 10% English–English edges, as in ConceptNet 5.7: 3.4M of 34M lines;
the rest other languages or mixed), builds each index in a child process and reads that process's peak RSS.
Two sizes show whether memory stays flat as the dump grows.

    .venv/bin/python benchmarks/conceptnet_index.py [LINES ...]     # default: 100000 1000000
"""

from __future__ import annotations

import gzip
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LANGS = ["fr", "de", "ja", "es", "it", "ru", "zh", "pt", "nl"]
RELS = ["RelatedTo", "IsA", "HasProperty", "AtLocation", "Synonym", "PartOf", "UsedFor", "Antonym"]


def node(rng: random.Random, lang: str, vocab: int) -> str:
    word = f"w{rng.randrange(vocab)}" + ("_x" if rng.random() < 0.2 else "")
    sense = "/n/wn/thing" if rng.random() < 0.3 else ""
    return f"/c/{lang}/{word}{sense}"


def write_dump(path: Path, lines: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    vocab = max(1000, lines // 8)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for _ in range(lines):
            roll = rng.random()
            start = node(rng, "en" if roll < 0.25 else rng.choice(LANGS), vocab)
            end = node(rng, "en" if roll < 0.10 or 0.25 <= roll < 0.35 else rng.choice(LANGS), vocab)
            rel = rng.choice(RELS)
            meta = json.dumps({"dataset": "/d/conceptnet/4/en", "weight": round(rng.uniform(0.1, 10), 3)})
            out.write(f"/a/[/r/{rel}/,{start}/,{end}/]\t/r/{rel}\t{start}\t{end}\t{meta}\n")


def child(dump: str, db: str) -> None:
    from ccpt.graph import build_index

    stats = build_index(dump, db)
    print(json.dumps(stats.__dict__))


def measure(lines: int, workdir: Path) -> None:
    dump, db = workdir / f"dump-{lines}.csv.gz", workdir / f"index-{lines}.sqlite"
    write_dump(dump, lines)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    began = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(dump), str(db)], check=True, capture_output=True, text=True
    ).stdout
    wall = time.perf_counter() - began
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    stats = json.loads(out)
    peak = f"{peak_kib / 1024:.0f} MiB" if peak_kib > before else f"≤ {before / 1024:.0f} MiB (earlier child)"
    print(
        f"| {lines:,} | {stats['kept_edges']:,} | {stats['seconds']:.1f} | {lines / stats['seconds']:,.0f} "
        f"| {peak} | {db.stat().st_size / 2**20:.0f} MiB | {wall:.1f} |"
    )


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return
    sizes = [int(a) for a in argv] or [100_000, 1_000_000]
    print("| dump lines | English edges kept | build s | lines/s | peak RSS (child) | index size | wall s |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for lines in sorted(sizes):  # ascending, so each child's peak is its own (RUSAGE_CHILDREN is a max)
            measure(lines, Path(tmp))


if __name__ == "__main__":
    main(sys.argv[1:])
