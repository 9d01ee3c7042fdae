"""ConceptNet as the pipeline sees it: the unigram concept set in memory, n-gram membership from the SQLite index."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from pathlib import Path

from lemminflect import getAllLemmas

from ccpt.graph import SqliteConceptGraph

# Words that are ConceptNet concepts but never carry a concept in a noun phrase.
_STOPWORD_TEXT = (
    "a an the this that these those my your his her its our their thy thine mine yours some any no every each "
    "all both either neither one two three many much more most few little such own other another same "
    "of in on at by for with from to into onto upon over under about as like than and or but nor so "
    "i you he she it we they me him us them who whom whose which what there here be is are was were been am "
    "do does did have has had not very too just only also even"
)
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


@functools.lru_cache(maxsize=200_000)
def word_forms(word: str) -> tuple[str, ...]:
    """``word`` lower-cased plus its dictionary lemmas (lemminflect, any part of speech); cached per process."""
    lowered = word.lower().strip("'’")
    return tuple(dict.fromkeys([lowered, *itertools.chain.from_iterable(getAllLemmas(lowered).values())]))


@dataclass
class ConceptVocabulary:
    """Unigram concepts (a set) and n-gram membership (the index) of one ConceptNet index."""

    unigrams: frozenset[str]
    graph: SqliteConceptGraph

    @classmethod
    def load(cls, index: Path) -> ConceptVocabulary:
        """Read every English unigram concept of the index into memory (≈1 s per 100K concepts)."""
        graph = SqliteConceptGraph(index)
        return cls(frozenset(graph.concepts(n_words=1)), graph)

    def is_unigram(self, word: str) -> bool:
        """Whether ``word`` (already lemmatised or a surface form) is a unigram concept."""
        return word.lower() in self.unigrams

    def is_content_concept(self, word: str) -> bool:
        """Prefilter test: some form of ``word`` is a unigram concept and it is not a function word."""
        forms = word_forms(word)
        return forms[0] not in STOPWORDS and any(f in self.unigrams for f in forms)

    def is_ngram_concept(self, phrase: str) -> bool:
        """Whether a multi-word ``phrase`` is itself a ConceptNet concept (the combination is not novel)."""
        return " " in phrase.strip() and self.graph.is_concept(phrase)
