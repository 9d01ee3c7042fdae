"""Judges that are not prompted LLMs: the distilled relevance judge trained on the dataset's human ratings.

Core package: no Inspect, no CLI. The Inspect provider that exposes it as a judge lives in
``ccpt.eval.distilled_provider``.
"""

__layer__ = "core"  # the distilled judge is core: torch, but no Inspect and no CLI (tests/test_layering.py)
