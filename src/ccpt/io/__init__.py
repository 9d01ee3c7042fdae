"""The I/O plumbing under the benchmark: downloads and where data comes from, atomic outputs, strict JSON,
spreadsheet-safe CSV, model weights and their inventory, the retry policy, provider errors, install hints."""

__layer__ = "core"  # no Inspect, no CLI (tests/test_layering.py)
