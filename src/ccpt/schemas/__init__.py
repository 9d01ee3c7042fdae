"""One declared schema per file format ccpt reads (docs/schemas.md is generated from them): :mod:`~.base` the
cell types, row checker and one-line rejections; :mod:`~.results` result CSVs and the tidy table; :mod:`~.sheets`
sheets, annotation answers, judge-score pairs; :mod:`~.stores` the agreement store and ``test_index.json``;
:mod:`~.pipeline` the pipeline TOML; :mod:`~.run` a run's values; :mod:`~.docs` the catalogue and the docs page.

Import the submodule you need: pydantic builds each schema on first use, so ``import ccpt`` stays cheap.
"""

__layer__ = "core"  # schemas/pipeline.py and schemas/docs.py declare their own layer (tests/test_layering.py)
