"""Inspect AI entry point: importing this module registers ccpt tasks and model providers.

The test suite's ``ccpt-scripted`` provider is not here: it lives in tests/plugins and is registered for tests only.
"""

from ccpt.eval import distilled_provider, local_model  # noqa: F401
from ccpt.eval.tasks import npc_emergent, pi_canceled, pi_emergent, type_prediction  # noqa: F401
