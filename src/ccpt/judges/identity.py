"""A judge's identity: what its scores depend on, as structured fields (name, version or weights hash, scale, reply
format, reading mode). Runs store these fields in their logs; reports, the agreement store and caches key on
:attr:`JudgeIdentity.key`, a stable string made from them and never parsed back."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

_DIGEST = re.compile(r"[0-9a-f]{13,}")  # a weights hash (sha256): its first 12 characters name it in a key
# What a version or scale may hold: the key's own separators ('@', '+', ' (', ', ') would let one identity's key
# spell another's ("1+raw" read as version 1 on the raw scale); 128 characters hold a sha256 twice over.
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
VERSION_TEXT = "up to 128 letters, digits, '.', '_' and '-'"  # TOKEN, as one-line errors say it
_TOKENS = ("version", "scale", "reply_format", "mode")


@dataclass(frozen=True)
class JudgeIdentity:
    """A judge as its scores depend on it. Two identities with a field apart are two judges: two report rows, two
    agreement figures, two cache entries."""

    name: str  # the Inspect model name (``openai/gpt-4o``, ``ccpt-judge/keyword``, ``ccpt-distilled/default``)
    version: str | None = None  # an in-process judge's declared version or its weights' sha256
    scale: str | None = None  # None: the judge's own scale; ``raw``: the distilled judge's uncalibrated one
    reply_format: str | None = None  # an LLM judge's negotiated reply format (json_schema, json_object, plain)
    mode: str = "text"  # how a reply is read: its integer (text) or the log-probability-weighted score (expected)

    @property
    def key(self) -> str:
        """The stable string form reports group by: ``openai/gpt-4o (json_schema)``, ``ccpt-judge/keyword@2``,
        ``ccpt-distilled/default@4d1ef41822ad+raw (expected)`` (a hash version cut to 12 characters; a declared
        version whole: ``release-2026.1`` and ``release-2026.2`` cut alike would pool two judges' rows)."""
        cut = self.version[:12] if self.version and _DIGEST.fullmatch(self.version) else self.version
        version = f"@{cut}" if cut else ""
        name = self.name + version + (f"+{self.scale}" if self.scale else "")
        qualifiers = [q for q in (self.reply_format, None if self.mode == "text" else self.mode) if q]
        return f"{name} ({', '.join(qualifiers)})" if qualifiers else name

    @property
    def scored(self) -> JudgeIdentity:
        """The identity without the negotiated reply format: what its agreement with human ratings is stored under
        (the format is how one server took the request, not what the judge is)."""
        return replace(self, reply_format=None)

    def fields(self) -> dict[str, str | None]:
        """The fields as a log stores them (JSON)."""
        return asdict(self)

    @classmethod
    def from_fields(cls, value: object) -> JudgeIdentity | None:
        """The identity a log stored (:meth:`fields`), or None when ``value`` is not one (a log's data, untrusted)."""
        if not isinstance(value, Mapping) or not isinstance(value.get("name"), str) or not value["name"]:
            return None
        known = {f.name for f in fields(cls)}
        kept: dict[str, Any] = {k: v for k, v in value.items() if k in known and (v is None or isinstance(v, str))}
        if known & set(value) - set(kept) or any(
            kept.get(k) is not None and not TOKEN.fullmatch(kept[k]) for k in _TOKENS
        ):
            return None  # a field of another type, or one spelling another identity's key ("1+raw"): not an identity
        return cls(**kept)

    @classmethod
    def legacy(cls, model: str, base_url: str | None, reply_format: str | None, mode: str) -> JudgeIdentity:
        """The one reader of logs written before judges stored their identity: the distilled judge then named its
        weights and scale in its base URL (``head-sha256:<sha>[+raw];weights-sha256:…``); any other judge is its
        model, reply format and mode."""
        base = str(base_url or "")
        if not base.startswith(LEGACY_DISTILLED_URL):
            return cls(model, reply_format=reply_format, mode=mode)
        head = base.removeprefix(LEGACY_DISTILLED_URL).split(";")[0]
        scale = "raw" if head.endswith("+raw") else None
        return cls(model, version=head.removesuffix("+raw") or None, scale=scale, mode=mode)


LEGACY_DISTILLED_URL = "head-sha256:"  # how the distilled judge named its weights in older logs' base URL
