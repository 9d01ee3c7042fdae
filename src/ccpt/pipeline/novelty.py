"""Stage 6 (paper §3.3, Figure 3): how novel are the dataset's combinations? PMI against ConceptNet bigrams.

PMI(w, c) = log2 P(w, c) / (P(w) P(c)), w = modifier, c = head, co-occurrence order-free; zero-frequency pairs
are excluded and counted. Counts from an ``ngram,count`` CSV, a ``w<TAB>c<TAB>count`` co-occurrence TSV, or the
user's corpus (lemmas, pairs within ``window`` words; only the pairs under study are stored).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import math
import random
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lemminflect import getAllLemmas

from ccpt.dataset import FILE_SPECS, read_records
from ccpt.errors import DataError
from ccpt.graph import SqliteConceptGraph
from ccpt.io.safe_csv import check_header
from ccpt.pipeline.corpus import iter_documents
from ccpt.pipeline.manifest import StageResult, StageSpec, atomic_text, open_text, run_stage, write_json

Pair = tuple[str, str]
_TOKEN = re.compile(r"[a-z][a-z'-]*")
DEFAULT_WINDOW = 5


@dataclass
class Counts:
    """Unigram counts, order-free pair counts (only for the pairs asked about) and their totals."""

    words: Counter[str] = field(default_factory=Counter)
    pairs: Counter[Pair] = field(default_factory=Counter)
    total_words: int = 0
    total_pairs: int = 0

    def add_pair(self, w: str, c: str, n: int, wanted: set[Pair]) -> None:
        """Count ``n`` co-occurrences of ``w`` and ``c`` (kept per pair only for the wanted pairs)."""
        self.total_pairs += n
        if (key := _key(w, c)) in wanted:
            self.pairs[key] += n


def _key(w: str, c: str) -> Pair:
    return (w, c) if w <= c else (c, w)


def counts_from_csv(path: Path, wanted: set[Pair]) -> Counts:
    """``ngram,count`` rows: unigrams and two-word n-grams."""
    counts = Counts()
    with open_text(path) as fh:  # streamed: an n-gram export can hold millions of rows
        reader = csv.reader(fh)
        header = next(reader, [])
        check_header(path, header)  # a second 'count' column was read in place of the first
        if not {"ngram", "count"} <= set(header):
            raise DataError(f"{path}: expected columns ngram,count")
        at_ngram, at_count = header.index("ngram"), header.index("count")
        for line, values in enumerate(reader, start=2):
            if not values:
                continue  # a blank line
            if len(values) != len(header):  # a short row was an internal error, a long one read in part
                raise DataError(f"{path}: line {line}: {len(values)} cells, the header {len(header)}")
            ngram, count = values[at_ngram], values[at_count]
            try:
                n = int(count)
            except ValueError:
                n = -1
            if n < 0:  # a negative count would make a probability of the PMI negative
                raise DataError(f"{path}: line {line}: count {count!r} is not a whole number ≥ 0")
            tokens = ngram.lower().split()
            if len(tokens) == 1:
                counts.words[tokens[0]] += n
            elif len(tokens) == 2:
                counts.add_pair(*tokens, n, wanted)
    return replace(counts, total_words=sum(counts.words.values()))


def counts_from_cooccurrence(path: Path, wanted: set[Pair]) -> Counts:
    """``w<TAB>c<TAB>count`` rows; unigram counts are the pair marginals."""
    counts = Counts()
    with open_text(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3 or not fields[2].strip().isdigit():
                raise DataError(f"{path}: line {line_no}: expected w<TAB>c<TAB>count")
            w, c, n = fields[0].lower(), fields[1].lower(), int(fields[2])
            counts.words[w] += n
            counts.words[c] += n
            counts.add_pair(w, c, n, wanted)
    return replace(counts, total_words=sum(counts.words.values()))


def _lemma(word: str) -> str:
    lemmas = getAllLemmas(word)
    return next((lemmas[pos][0] for pos in ("NOUN", "ADJ", "VERB", "ADV") if pos in lemmas), word)


def counts_from_corpus(paths: Iterable[Path], wanted: set[Pair], window: int = DEFAULT_WINDOW) -> Counts:
    """Count lemmas and within-``window`` co-occurrences of the wanted pairs in the user's corpus."""
    counts = Counts()
    lemma = functools.cache(_lemma)  # per call: a corpus repeats its words, and lemmatising each is the slow part
    members = {w for pair in wanted for w in pair}
    for path in paths:
        for doc in iter_documents(Path(path)):
            tokens = [lemma(t) for t in _TOKEN.findall(doc.text.lower())]
            counts.words.update(tokens)
            # the pairs in the window
            counts.total_pairs += sum(min(window, len(tokens) - 1 - i) for i in range(len(tokens)))
            for i, w in enumerate(tokens):
                if w in members:
                    counts.pairs.update(key for c in tokens[i + 1 : i + 1 + window] if (key := _key(w, c)) in wanted)
    return replace(counts, total_words=sum(counts.words.values()))


def pmi(pair: Pair, counts: Counts) -> float | None:
    """log2 P(w,c) / (P(w) P(c)); None when the pair or either word has zero frequency."""
    w, c = pair
    n_wc, n_w, n_c = counts.pairs.get(_key(w, c), 0), counts.words.get(w, 0), counts.words.get(c, 0)
    if min(n_wc, n_w, n_c) == 0 or counts.total_pairs == 0:
        return None
    return math.log2((n_wc / counts.total_pairs) / ((n_w / counts.total_words) * (n_c / counts.total_words)))


def conceptnet_pairs(index: Path, sample: int | None, seed: int) -> set[Pair]:
    """ConceptNet's two-word English concepts as pairs (a seeded sample of ``sample`` if given)."""
    with contextlib.closing(SqliteConceptGraph(index)) as graph:
        labels = [label.split() for label in graph.concepts(n_words=2)]
    pairs = sorted({(x[0], x[1]) for x in labels if len(x) == 2})
    if sample is not None and sample < len(pairs):
        pairs = random.Random(seed).sample(pairs, sample)
    return set(pairs)


def summarise(values: dict[Pair, float | None]) -> dict[str, Any]:
    """n, zero-frequency exclusions and mean / median PMI of one set."""
    kept = [v for v in values.values() if v is not None]
    return {
        "pairs": len(values),
        "excluded_zero_frequency": len(values) - len(kept),
        "mean_pmi": statistics.fmean(kept) if kept else None,
        "median_pmi": statistics.median(kept) if kept else None,
    }


def histogram(sets: dict[str, list[float]]) -> Any:
    """Figure 3: PMI distributions (density histograms on shared bins)."""
    from ccpt.report.figures import COLUMN_WIDTH_IN, new_figure

    fig, ax = new_figure(COLUMN_WIDTH_IN, COLUMN_WIDTH_IN * 0.75)
    everything = [v for values in sets.values() for v in values]
    if everything:
        lo, hi = math.floor(min(everything)), math.ceil(max(everything))
        bins = [lo + i * (hi - lo) / 30 for i in range(31)] if hi > lo else 10
        for name, values in sets.items():
            if values:
                ax.hist(
                    values, bins=bins, density=True, alpha=0.55, label=f"{name} (mean {statistics.fmean(values):.2f})"
                )
        ax.legend(fontsize=6)
    ax.set_xlabel("PMI (log2)", fontsize=8)
    ax.set_ylabel("density", fontsize=8)
    ax.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


def novelty(
    dataset_dir: Path,
    conceptnet: Path,
    out_dir: Path,
    *,
    counts_csv: Path | None = None,
    cooccurrence: Path | None = None,
    corpus: tuple[Path, ...] = (),
    window: int = DEFAULT_WINDOW,
    conceptnet_sample: int | None = None,
    seed: int = 0,
    force: bool = False,
) -> StageResult:
    """Stage 6: PMI of the dataset's combinations vs ConceptNet bigrams → ``novelty.json``, ``pmi.csv``, figure."""
    sources = [s for s in (counts_csv, cooccurrence) if s is not None]
    if len(sources) + bool(corpus) != 1:
        raise DataError("give exactly one count source", "--counts CSV, --cooccurrence TSV, or --corpus FILE…")
    files = [dataset_dir / f"{stem}.csv" for stem in FILE_SPECS if (dataset_dir / f"{stem}.csv").is_file()]
    outputs = (out_dir / "novelty.json", out_dir / "pmi.csv", out_dir / "pmi_histogram.png")
    recorded = {"window": window, "conceptnet_sample": conceptnet_sample, "seed": seed}
    spec = StageSpec("novelty", out_dir, (*files, Path(conceptnet), *sources, *corpus), outputs, recorded)

    def work() -> dict[str, Any]:
        if not files:
            raise DataError(f"no CCPT files in {dataset_dir}", "pass the dataset directory written by annotate-import")
        # Distinct (modifier, head) pairs per CCPT file, lower-cased.
        per_file = {f.stem: {(r.modifier.lower(), r.head.lower()) for r in read_records(f, f.stem)} for f in files}
        sets: dict[str, set[Pair]] = {
            "dataset": set().union(*per_file.values()),
            **per_file,
            "conceptnet_bigrams": conceptnet_pairs(conceptnet, conceptnet_sample, seed),
        }
        wanted = {_key(*p) for pairs in sets.values() for p in pairs}
        if sources:
            read = counts_from_csv if counts_csv is not None else counts_from_cooccurrence
            try:
                counts = read(sources[0], wanted)
            except UnicodeDecodeError as exc:  # was an internal error
                raise DataError(f"{sources[0]}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        else:
            counts = counts_from_corpus(corpus, wanted, window)
        values = {name: {p: pmi(p, counts) for p in sorted(pairs)} for name, pairs in sets.items()}
        with atomic_text(outputs[1]) as fh:
            writer = csv.writer(fh)
            writer.writerow(["set", "modifier", "head", "pair_count", "pmi"])
            for name, table in values.items():
                for (w, c), v in table.items():
                    writer.writerow([name, w, c, counts.pairs.get(_key(w, c), 0), "" if v is None else f"{v:.4f}"])
        summary = {name: summarise(table) for name, table in values.items()}
        report = {
            "formula": "PMI(w,c) = log2 P(w,c) / (P(w) P(c)), w = modifier, c = head",
            "total_words": counts.total_words,
            "total_pairs": counts.total_pairs,
            "sets": summary,
        }
        write_json(outputs[0], report)
        from ccpt.report.figures import save_as

        fig = histogram(
            {name: [v for v in values[name].values() if v is not None] for name in ("dataset", "conceptnet_bigrams")}
        )
        save_as(fig, outputs[2])
        fig.clear()
        return {
            name: {k: summary[name][k] for k in ("pairs", "excluded_zero_frequency", "mean_pmi")}
            for name in ("dataset", "conceptnet_bigrams")
        }

    return run_stage(spec, work, force=force)
