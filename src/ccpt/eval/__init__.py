"""The Inspect AI integration: tasks, solvers, the judge and scorers, the model providers and the sweep.

Importing this package imports nothing; :mod:`ccpt.eval._registry` is Inspect's entry point.
"""

__layer__ = "eval"  # the Inspect integration (tests/test_layering.py)
