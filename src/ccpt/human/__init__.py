"""Human evaluation (paper §4.2, §6.1, Table 4): humans as solvers and as judges.

Two routes to the same files: :mod:`~ccpt.human.sheets` exports the study sheets (CSV + printable HTML) and reads
the filled ones back (the Human row, Table 4, agreement with the LLM judge); :mod:`~ccpt.human.app` is the
``ccpt human serve`` web app, which shows the same exported sheets to annotators and writes answers in the format
the sheet importers read.
"""

__layer__ = "human"  # human evaluation: the study sheets and the web app (tests/test_layering.py)
