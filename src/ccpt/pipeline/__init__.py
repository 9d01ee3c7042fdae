"""The CCPT data-construction pipeline (paper §3.2–3.3, Figure 2, Appendix A): stages 1–6, each a resumable
file-to-file step (``ccpt pipeline <stage>``; all: ``ccpt pipeline run``; docs/pipeline.md). Heavy dependencies
(spaCy, Ray, Inspect, torch) are imported only by the stages that need them.
"""

__layer__ = "pipeline"  # dataset construction (tests/test_layering.py)
