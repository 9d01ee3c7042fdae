"""The CCPT data-construction pipeline (paper §3.2–3.3, Figure 2, Appendix A): build CCPT-style data from new
corpora, and audit how the released data was made.

Stages (each a resumable file-to-file step; ``ccpt pipeline <stage>``; all of them: ``ccpt pipeline run``):
1. :func:`~ccpt.pipeline.mining.mine` — comparative sentences ("like", "as … as") from corpora.
2. :func:`~ccpt.pipeline.mining.combinations` — novel two-concept noun phrases (spaCy + ConceptNet).
3. :func:`~ccpt.pipeline.properties.extract_properties` — LLM properties + plausibility filter.
4. :func:`~ccpt.pipeline.candidates.select_candidates` — emergent / canceled / component candidates.
5. :func:`~ccpt.pipeline.annotation.export_tasks` / :func:`~ccpt.pipeline.annotation.import_answers` —
   crowdsourcing tasks out, answers in, the dataset in the released CCPT schema.
6. :func:`~ccpt.pipeline.novelty.novelty` — PMI of the combinations vs ConceptNet bigrams (Figure 3).

Heavy dependencies (spaCy, Ray, Inspect, torch) are imported only by the stages that need them.
"""

__layer__ = "pipeline"  # dataset construction (tests/test_layering.py)
