"""Spreading Activation (paper §4.1) in one place: the algorithm against a tiny async ``generate``
(:mod:`~ccpt.spreading.activation`, the paper's version), the authors' as-run version
(:mod:`~ccpt.spreading.as_run`) and the Inspect solver (:mod:`~ccpt.spreading.solver`, which declares the eval
layer); the method declarations are :mod:`ccpt.methods.spreading`, beside every other method's."""

__layer__ = "core"  # no Inspect, except solver.py, which declares its own layer (tests/test_layering.py)
