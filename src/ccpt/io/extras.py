"""The command that installs one of ccpt's optional parts (an extra of pyproject.toml), said the way this copy of
ccpt was installed: ccpt is installed from a checkout, a wheel or a git URL (pip records which in
``direct_url.json``), so ``pip install 'ccpt[extra]'`` would ask an index for a package it may not hold."""

from __future__ import annotations

import json
from importlib import metadata
from urllib.parse import unquote, urlparse


def _source() -> tuple[str, bool] | None:
    """(where this ccpt was installed from, editable?) from pip's record, or None (an index, or no record)."""
    try:
        recorded = metadata.distribution("ccpt").read_text("direct_url.json")
        info = json.loads(recorded or "null")
    except (metadata.PackageNotFoundError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return None
    url = info["url"]
    if isinstance(vcs := info.get("vcs_info"), dict):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        return f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else ""), False
    if url.startswith("file://"):
        editable = bool((info.get("dir_info") or {}).get("editable"))
        return unquote(urlparse(url).path), editable
    return url, False


def install_command(extra: str) -> str:
    """``pip install …`` for the extra ``extra`` of this ccpt, e.g. ``pip install '/home/me/ccpt[distilled]'``."""
    source = _source()
    if source is None:
        return f"pip install 'ccpt[{extra}]'"
    where, editable = source
    if "+" in where.split("://", 1)[0]:  # a VCS URL: the PEP 508 direct reference
        return f"pip install 'ccpt[{extra}] @ {where}'"
    return f"pip install {'-e ' if editable else ''}'{where}[{extra}]'"
