"""What the file checks cost: hashing the cached dataset at every use, and the tidy-table schema.

1. Cache verification: sha256 of the five dataset files (done at every use, so no restored mtime can pass an
   edited file off as verified) against parsing the same files (``load_dataset``, its memo cleared), and against
   loading them again in the same process (read, hashed, the parse taken from the memo keyed by the bytes), in one
   run.
2. The tidy-table schema: reading a tidy table of every shipped GPT-4o result file, repeated to ~90,000 rows
   (a large sweep), with ``from_tidy`` (schema check, derived columns recomputed) against the steps the reader
   took before it had a schema (read_csv, restore the sheet cells, to_dict, build the frame), timed in turns in
   the same run; and the schema check alone.

    .venv/bin/python benchmarks/file_checks.py [DATA_DIR] [REFERENCE_DIR]   # default: ../shared/data/…
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from ccpt import dataset
from ccpt.dataset import load_dataset
from ccpt.io.download import REQUIRED_FILES, is_verified
from ccpt.io.safe_csv import restore_frame
from ccpt.results import COLUMNS, export, from_tidy, load_results, tidy_frame
from ccpt.schemas.results import TIDY

ROOT = Path(__file__).resolve().parents[1]


def best_of(repeats: int, work) -> float:
    """The fastest of ``repeats`` timings (seconds): the machine is shared, the minimum is the least disturbed."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data" / "ccpt"
    reference = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT.parent / "shared" / "data" / "reference-results"

    hashing = best_of(5, lambda: [is_verified(data / name, name) for name in REQUIRED_FILES])
    parsing = best_of(3, lambda: (dataset._parse.cache_clear(), load_dataset(data)))
    again = best_of(5, lambda: load_dataset(data))  # the memo holds the last parse
    print("| step | seconds | ratio |")
    print("|---|---|---|")
    print(f"| sha256 of the 5 dataset files (every use) | {hashing:.4f} | {hashing / parsing:.3f} of parsing |")
    print(f"| load_dataset (parse the same files) | {parsing:.3f} | 1 |")
    print(f"| load_dataset again in the process (read, hash, memo) | {again:.4f} | {again / parsing:.3f} of parsing |")
    print()
    print("| step | seconds | ratio |")
    print("|---|---|---|")

    frame = load_results(sorted(reference.glob("*.csv")), load_dataset(data))
    copies = max(1, round(90_000 / len(frame)))
    big = pd.concat([frame.assign(model=frame["model"] + f"-copy{k}") for k in range(copies)], ignore_index=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = export(big, Path(tmp) / "tidy.csv")
        unchecked, checked = [], []
        for _ in range(3):  # in turns, so both see the same machine load
            unchecked.append(best_of(1, lambda: without_schema(path)))
            checked.append(best_of(1, lambda: from_tidy(path)))
        records = big.astype(object).where(big.notna(), None).to_dict("records")
        schema = best_of(3, lambda: TIDY.check(records, "tidy.csv"))
    base, new = min(unchecked), min(checked)
    print(f"| read a {len(big):,}-row tidy table without a schema (the old steps) | {base:.2f} | 1 |")
    print(f"| from_tidy: read + schema + derived columns recomputed | {new:.2f} | {new / base:.2f}× |")
    print(f"| the schema check alone (pydantic, {len(big):,} rows) | {schema:.2f} | {schema / base:.2f}× |")


def without_schema(path: Path) -> pd.DataFrame:
    """What reading a tidy table cost before it had a schema: read, restore sheet cells, rows, frame."""
    frame = restore_frame(pd.read_csv(path, keep_default_na=True))
    return tidy_frame(frame[list(COLUMNS)].astype(object).where(frame[list(COLUMNS)].notna(), None).to_dict("records"))


if __name__ == "__main__":
    main()
