"""Reading corpora as a stream of documents, and splitting documents into sentences with offsets.

``.jsonl`` / ``.ndjson``: one JSON object per line; anything else: plain text, one document per blank-line
separated paragraph (``<file>#<n>``); ``.gz`` is decompressed on the fly. Files must be UTF-8: any other byte is
an error naming the file and line. Offsets are character offsets into the document text.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, groupby, pairwise
from pathlib import Path
from typing import BinaryIO

from ccpt.errors import DataError

JSONL_SUFFIXES = (".jsonl", ".ndjson")
# A sentence ends at . ! ? (possibly repeated), optionally followed by closing quotes/brackets, then space.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Document:
    """One document of a corpus."""

    doc_id: str
    text: str


@dataclass(frozen=True)
class Sentence:
    """A sentence of a document: whitespace-normalised text and its [start, end) offsets in the document."""

    doc_id: str
    start: int
    end: int
    text: str


def _open_binary(path: Path, data: bytes | None = None) -> BinaryIO:
    if data is not None:
        return io.BytesIO(gzip.decompress(data) if path.name.endswith(".gz") else data)
    return gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")  # type: ignore[return-value]


def _lines(path: Path, fh: BinaryIO) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line, decoded as UTF-8 strictly (no replacement characters)."""
    for number, raw in enumerate(fh, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{path}: line {number} is not UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})",
                f"convert the corpus to UTF-8, e.g. iconv -f latin1 -t utf-8 {path.name}",
            ) from None
        text = (text.removeprefix("\ufeff") if number == 1 else text).replace("\r\n", "\n")
        # Universal newlines, as text mode reads them: an old-Mac "\r" ends a line too.
        *ended, last = text.split("\r")
        for part in ended:
            yield number, part + "\n"
        yield number, last


def iter_documents(
    path: Path, *, text_field: str = "text", id_field: str = "id", data: bytes | None = None
) -> Iterator[Document]:
    """Stream the documents of one corpus file (``data``: the file's bytes, when already read, e.g. by Ray)."""
    if data is None and not path.is_file():
        raise DataError(f"corpus file not found: {path}")
    try:
        with _open_binary(path, data) as fh:
            lines = _lines(path, fh)
            if Path(path.name.removesuffix(".gz")).suffix.lower() in JSONL_SUFFIXES:
                yield from _jsonl_documents(path, lines, text_field, id_field)
            else:  # one document per blank-line separated paragraph
                groups = groupby(lines, key=lambda item: bool(item[1].strip()))
                paragraphs = ("".join(line for _, line in group) for filled, group in groups if filled)
                yield from (Document(f"{path.name}#{index}", text) for index, text in enumerate(paragraphs))
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read corpus file {path}: {exc}", "is it complete?") from None


def _jsonl_documents(
    path: Path, lines: Iterator[tuple[int, str]], text_field: str, id_field: str
) -> Iterator[Document]:
    for line_no, line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {line_no} is not JSON ({exc.msg})") from None
        except RecursionError:
            raise DataError(f"{path}: line {line_no} is not a document (nested too deeply)") from None
        text = obj.get(text_field) if isinstance(obj, dict) else None
        if not isinstance(text, str):
            raise DataError(f"{path}: line {line_no} has no string field {text_field!r}", "set --text-field")
        doc_id = obj.get(id_field)
        yield Document(str(doc_id) if doc_id is not None else f"{path.name}:{line_no}", text)


def split_sentences(doc: Document) -> Iterator[Sentence]:
    """Split a document at sentence-final punctuation; keeps offsets, normalises whitespace in the text."""
    text = doc.text
    ends = (match.end() for match in _SENTENCE_END.finditer(text))
    for start, end in pairwise(chain([0], ends, [len(text)])):
        chunk = text[start:end]
        stripped = chunk.strip()
        if stripped:
            s = start + len(chunk) - len(chunk.lstrip())
            yield Sentence(doc.doc_id, s, s + len(stripped), _SPACES.sub(" ", stripped))
