"""Judging without Inspect: the distilled relevance judge trained on the dataset's human ratings, and judge–human
agreement (the rated pairs, the measurement, the store of measurements reports quote). Core package: no Inspect,
no CLI; the distilled judge's Inspect provider is ``ccpt.eval.distilled_provider``, live LLM judges ``ccpt.eval.judge``.
"""

__layer__ = "core"  # torch and numpy, but no Inspect and no CLI (tests/test_layering.py)
