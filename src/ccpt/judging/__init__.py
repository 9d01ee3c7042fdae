"""Judging without Inspect: the distilled relevance judge trained on the dataset's human ratings, and judge–human
agreement (the rated pairs, the measurement, the store of measurements reports quote).

Core package: no Inspect, no CLI. The Inspect provider that exposes the distilled judge lives in
``ccpt.eval.distilled_provider``; live LLM judges are called through ``ccpt.eval.judge``.
"""

__layer__ = "core"  # torch and numpy, but no Inspect and no CLI (tests/test_layering.py)
