"""Names as the tables print them: model display names (``--label MODEL=NAME``; ids stay the keys) and the
matching of a model or method a user typed against the names in the results."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

from ccpt.errors import CcptError
from ccpt.methods import method_label


def _fold(text: str) -> str:
    """Case, spaces, hyphens and underscores do not tell names apart: ``Multi-Oracle`` = ``multi_oracle``."""
    return re.sub(r"[\s_-]+", "_", text.strip().casefold())


def _listing(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "none"


def _one_hit(what: str, exact: str, text: str, hits: set[str], shown: Iterable[str]) -> str:
    """The one name ``text`` matched, else one CcptError line: ambiguous, or no such name (``shown`` listed)."""
    if len(hits) == 1:
        return hits.pop()
    if hits:
        raise CcptError(f"{what} {text!r} is ambiguous: it names {_listing(hits)}", f"write the {what} {exact} exactly")
    raise CcptError(f"no {what} {text!r} in the results", f"{what}s: {_listing(shown)}")


def model_text(model: str, labels: Mapping[str, str] | None) -> str:
    """The text printed for ``model``: its display name if it has one, else the id itself."""
    return labels.get(model, model) if labels else model


def match_model(text: str, models: Collection[str], labels: Mapping[str, str] | None = None) -> str:
    """The model id that ``text`` names (id or display name, any case); a CcptError unless exactly one matches."""
    if text in models:
        return text
    hits = {m for m in models if m.casefold() == text.casefold()}
    hits |= {m for m, name in (labels or {}).items() if m in models and name.casefold() == text.casefold()}
    return _one_hit("model", "id", text, hits, [f"{m} ({labels[m]})" if labels and m in labels else m for m in models])


def match_method(text: str, methods: Collection[str]) -> str:
    """The method name that ``text`` names: name or label, any case, spaces, hyphens and underscores alike."""
    if text in methods:
        return text
    key = _fold(text)
    hits = {m for m in methods if key in (_fold(m), _fold(method_label(m)))}
    return _one_hit("method", "name", text, hits, [f"{m} ({method_label(m)})" for m in methods])


def parse_label(spec: str, models: Collection[str]) -> tuple[str, str]:
    """``MODEL=NAME`` → (model id, display name), split at the first ``=`` whose left side names a model."""
    splits = [i for i, ch in enumerate(spec) if ch == "="]
    if not splits:
        raise CcptError(f"--label {spec!r}: write MODEL=NAME", "e.g. --label gpt-4o=GPT-4o")
    for i in splits:
        left = spec[:i]
        if left in models or any(m.casefold() == left.casefold() for m in models):
            name = spec[i + 1 :].strip()
            if not name:
                raise CcptError(f"--label {spec!r}: the display name is empty", "write MODEL=NAME")
            return match_model(left, models), name
    raise CcptError(f"--label {spec!r}: no model {spec[: splits[0]]!r} in the results", f"models: {_listing(models)}")


def parse_labels(specs: Iterable[str], models: Collection[str]) -> dict[str, str]:
    """Every ``--label MODEL=NAME`` (see :func:`parse_label`); one model given two names is an error, not the last."""
    out: dict[str, str] = {}
    for spec in specs:
        model, name = parse_label(spec, models)
        if out.get(model, name) != name:
            raise CcptError(f"--label gives {model!r} two names: {out[model]!r} and {name!r}", "keep one")
        out[model] = name
    return out


def resolve_labels(labels: Mapping[str, str] | None, models: Collection[str]) -> dict[str, str]:
    """Display names keyed by the results' model ids; a CcptError for an unknown key or two models one name."""
    out: dict[str, str] = {}
    for key, name in (labels or {}).items():
        if not str(name).strip():
            raise CcptError(f"display name of {key!r} is empty")
        out[match_model(str(key), models)] = str(name).strip()
    shown: dict[str, str] = {}
    for model in models:
        name = out.get(model, model)
        if name.casefold() in shown:
            raise CcptError(
                f"models {shown[name.casefold()]!r} and {model!r} would both print as {name!r}",
                "give each model its own display name",
            )
        shown[name.casefold()] = model
    return out


def file_stem(text: str) -> str:
    """A file-name (or LaTeX label) stem: ASCII letters, digits, ``-``, ``.``, ``_`` kept, anything else ``_``."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-._") else "_" for ch in text).strip("._") or "x"


def unique_name(stem: str, taken: set[str]) -> str:
    """``stem``, or ``stem-2``, ``stem-3`` … if taken; the result is added to ``taken``."""
    k, out = 1, stem
    while out in taken:
        k += 1
        out = f"{stem}-{k}"
    taken.add(out)
    return out
