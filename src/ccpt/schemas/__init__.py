"""One declared schema per file format ccpt reads (docs/schemas.md is generated from them).

- :mod:`ccpt.schemas.base` — cell types, the row checker, one-line rejections;
- :mod:`ccpt.schemas.results` — the authors' result CSVs and the tidy table;
- :mod:`ccpt.schemas.sheets` — solver and rating sheets, annotation answers, judge-score pairs;
- :mod:`ccpt.schemas.stores` — the agreement store and ``test_index.json``;
- :mod:`ccpt.schemas.pipeline` — the pipeline TOML file;
- :mod:`ccpt.schemas.run` — the values of a run (task arguments, `ccpt run`'s options): types and ranges;
- :mod:`ccpt.schemas.docs` — the catalogue of every format and the docs page rendered from it.

Import the submodule you need: pydantic builds each schema on first use, so ``import ccpt`` stays cheap.
"""

__layer__ = "core"  # schemas/pipeline.py and schemas/docs.py declare their own layer (tests/test_layering.py)
