"""Where `ccpt report --paper` spends its time: reading the authors' stored files, making the rows as a report
averages them (models tagged, as-run fills), and computing each table, in one run, each phase's share of the whole.

    .venv/bin/python benchmarks/paper_report.py [DATA_DIR] [REFERENCE_DIR]   # default: ../shared/data/…
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ccpt.dataset import load_dataset
from ccpt.io.sources import stored_result_files
from ccpt.report.paper import read_stored
from ccpt.report.tables import TABLES
from ccpt.report.tables.common import as_reported
from ccpt.report.tables.definition import TableOptions

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    shared = ROOT.parent / "shared" / "data"
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else shared / "ccpt"
    results_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else shared / "reference-results"
    dataset = load_dataset(data_dir)
    files = stored_result_files(results_dir)
    phases: list[tuple[str, float]] = []

    started = time.perf_counter()
    stored, _notes = read_stored(files, dataset)
    phases.append((f"read {len(files)} stored files ({len(stored):,} rows)", time.perf_counter() - started))

    started = time.perf_counter()
    rows = as_reported(stored)
    phases.append(("rows as reported (tags, as-run fills)", time.perf_counter() - started))

    options = TableOptions(stat="paper", oracle="paper", dataset=dataset)
    for table in TABLES:
        started = time.perf_counter()
        table.compute(rows, options)
        phases.append((f"table {table.name}", time.perf_counter() - started))

    total = sum(seconds for _, seconds in phases)
    print("| phase | seconds | share |\n|---|---|---|")
    for name, seconds in phases:
        print(f"| {name} | {seconds:.2f} | {seconds / total:.2f} |")
    print(f"| all | {total:.2f} | 1 |")


if __name__ == "__main__":
    main()
