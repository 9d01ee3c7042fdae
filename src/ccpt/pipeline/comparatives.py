"""Stage 1 (paper §3.2 Step 1): find sentences that compare one concept to another with "like" or "as … as".

Each match records where the compared phrase begins; non-comparing uses are masked first (:data:`FALSE_FRIENDS`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from ccpt.pipeline.corpus import Document, split_sentences

# Expressions with "as"/"like" that do not compare two concepts (regexes over lower-cased text), first fixed ones.
_FIXED_AS = (
    "as well as|as soon as|as long as|as far as|as much as|as many as|as well|such as|as if|as though|as to|"
    "as for|as of|as per|as such|as usual|as yet|as follows|as opposed to|as regards|as a result|so as to"
)
FALSE_FRIENDS: tuple[str, ...] = (
    *(rf"\b{phrase}\b" for phrase in _FIXED_AS.split("|")),
    # the verb "like": after a subject pronoun, a modal, "to", or a negation ("I like it", "would like to")
    r"\b(?:i|you|we|they|he|she|who|would|should|could|might|will|shall|may|must|to|do|does|did|don't|"
    r"doesn't|didn't|not|never|really|'d)\s+like\b",
    r"\b(?:and|or) the like\b",  # "… and the like"
    r"\blike-",  # "like-minded"
)

# "as ADJ/ADV as": one or two words between the two "as".
_EQUATIVE = re.compile(r"\bas\s+(?:[a-z'’-]+\s+)?[a-z'’-]+\s+as\b")
_LIKE = re.compile(r"\blike\b")
_FALSE_FRIEND_PATTERNS = tuple(re.compile(p) for p in FALSE_FRIENDS)


@dataclass(frozen=True)
class Marker:
    """One comparison: ``kind`` "like" or "as…as", ``position`` the offset where the compared phrase begins."""

    kind: str
    position: int


@dataclass(frozen=True)
class Comparative:
    """A comparative sentence (stage 1 output row)."""

    doc_id: str
    start: int  # offsets of the sentence in the document
    end: int
    sentence: str
    markers: tuple[Marker, ...]

    def to_row(self) -> dict[str, Any]:
        return {**asdict(self), "markers": [[m.kind, m.position] for m in self.markers]}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Comparative:
        markers = tuple(Marker(str(k), int(p)) for k, p in row["markers"])
        return cls(row["doc_id"], row["start"], row["end"], row["sentence"], markers)


def find_markers(sentence: str) -> tuple[Marker, ...]:
    """The comparisons in ``sentence`` ("like …", "as ADJ as …"), false friends excluded."""
    lowered = sentence.lower()
    if "like" not in lowered and " as " not in f" {lowered} ":
        return ()  # most sentences: no regex work at all
    masked = lowered  # false-friend matches blanked out, every other character kept at its offset
    for pattern in _FALSE_FRIEND_PATTERNS:
        masked = pattern.sub(lambda m: " " * len(m.group()), masked)
    markers = [Marker("like", m.end()) for m in _LIKE.finditer(masked)]
    markers += [Marker("as…as", m.end()) for m in _EQUATIVE.finditer(masked)]
    # Drop a marker with nothing after it ("… is what I like.") — there is no compared phrase.
    kept = [m for m in markers if any(c.isalpha() for c in sentence[m.position : m.position + 40])]
    return tuple(sorted(kept, key=lambda m: m.position))


def mine_documents(docs: Iterable[Document]) -> Iterator[Comparative | None]:
    """For every sentence of every document: a :class:`Comparative`, or None (so callers can count sentences)."""
    for doc in docs:
        for sentence in split_sentences(doc):
            markers = find_markers(sentence.text)
            yield (
                Comparative(sentence.doc_id, sentence.start, sentence.end, sentence.text, markers) if markers else None
            )
