"""A toy in-process judge added in one file, as a plug-in package adds one (CONTRIBUTING.md, "Adding a judge"):
keyword overlap, the share of the property's letter trigrams found in the concept.
tests/test_judges.py registers it through a ``ccpt.judges`` entry point; it is never registered in other tests."""

from collections.abc import Sequence

from ccpt.judges import Judge


def _grams(text: str) -> set[str]:
    """The text's letter trigrams (lower case, whitespace folded): word overlap that also credits shared stems."""
    folded = " ".join(text.lower().split())
    return {folded[i : i + 3] for i in range(len(folded) - 2)}


def keyword_overlap(pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Each (concept, property) pair's relevance in [0, 1]: the share of the property's trigrams in the concept."""
    return [len(_grams(prop) & _grams(concept)) / max(1, len(_grams(prop))) for concept, prop in pairs]


JUDGE = Judge(
    "keyword",  # the name `--judge` takes (its Inspect model: ccpt-judge/keyword)
    "Keyword overlap",  # its label in reports
    score=keyword_overlap,  # (concept, property) pairs → relevances in [0, 1]
    version="1",  # bump it when the scores change: old and new runs then report as two judges
    cost_per_pair=0.0,  # US dollars per judged pair, for `ccpt run --dry-run --prices`
)
