"""One declared schema per file format ccpt reads (docs/schemas.md is generated from them); import the submodule
you need, so ``import ccpt`` stays cheap."""

__layer__ = "core"  # schemas/pipeline.py and schemas/docs.py declare their own layer (tests/test_layering.py)
