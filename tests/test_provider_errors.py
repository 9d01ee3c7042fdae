"""The two readers of text-only errors, checked against the installed Inspect and OpenAI SDK.

ccpt tells provider errors apart by their types and HTTP statuses (ccpt.eval.provider_errors); two things reach it
as text only, each read by one adapter:

- Inspect names a missing API key only in its PrerequisiteError's message (``inspect_compat.missing_api_key``);
- a sample error read back from an Inspect log is its message and traceback (``provider_errors.recorded_error``).

Checked against inspect_ai 0.3.285 and openai 3.54.0, through their real code paths. A failure here means the
installed library now says it otherwise: update the adapter, then ``CHECKED``.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest
from inspect_ai.model import get_model

from ccpt.eval.inspect_compat import missing_api_key

CHECKED = {"inspect_ai": "0.3.285", "openai": "3.54.0"}


def _changed(what: str) -> str:
    installed = {name: version(name) for name in CHECKED}
    return f"{what} changed: the adapter was checked against {CHECKED}, {installed} is installed; update it"


def test_a_missing_key_is_read_from_inspects_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOKEYSVC_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("NOKEYSVC_API_KEY", raising=False)
    with pytest.raises(Exception) as raised:
        get_model("openai-api/nokeysvc/x")
    assert missing_api_key(raised.value) == "NOKEYSVC_API_KEY", _changed(
        f"Inspect's missing-key error {raised.value!r}"
    )
    # Only Inspect's own error type is read: the same words in another exception are not a missing key.
    assert missing_api_key(RuntimeError("No X_API_KEY defined in the environment.")) is None
