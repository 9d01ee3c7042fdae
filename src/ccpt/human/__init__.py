"""Human evaluation (paper §4.2, §6.1, Table 4): humans as solvers and as judges, through exported sheets
(:mod:`~ccpt.human.sheets`) or the ``ccpt human serve`` web app (:mod:`~ccpt.human.app`), which reads and writes
the same files.
"""

__layer__ = "human"  # human evaluation: the study sheets and the web app (tests/test_layering.py)
