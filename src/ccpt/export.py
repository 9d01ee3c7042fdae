"""Exporting CCPT records (JSONL / CSV / parquet) and chat-format SFT examples from the train pool."""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import islice, product
from pathlib import Path
from typing import Any, Literal

from ccpt.dataset import CCPTDataset, Record, TypeItem
from ccpt.errors import CcptError, require_pyarrow
from ccpt.io.outputs import atomic_path
from ccpt.io.safe_csv import neutralise
from ccpt.prompts import system_prompt, task_prompt
from ccpt.spec import BASE_TEMPLATE, GENERATIVE_TASKS, SFT_RULES, TASK_SPECS, TaskName
from ccpt.spreading.activation import noun_lemma

ExportFormat = Literal["jsonl", "csv", "parquet"]


def record_row(record: Record) -> dict[str, Any]:
    """A flat, JSON-ready dict of a record (tuples become lists, plus the stable ``id``)."""
    return {"id": record.id, **{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(record).items()}}


def select_records(ds: CCPTDataset, split: str | None, task: TaskName | None) -> list[Record]:
    """Records for export: everything (``split=None``), or one task's ``test`` / ``train`` split."""
    if split is None:
        return [*ds.paper_records, *ds.extra_emergent]
    if task is None:
        raise CcptError("--split needs --task (which task's split?)")
    return ds.test(task) if split == "test" else ds.train(task)


def write_rows(rows: list[dict[str, Any]], path: Path, fmt: ExportFormat) -> None:
    """Write dict rows atomically as JSONL, CSV (list fields JSON-encoded) or parquet."""
    if fmt not in ("jsonl", "csv", "parquet"):
        raise CcptError(f"unknown export format {fmt!r}; choose jsonl, csv or parquet")
    if fmt == "parquet":
        require_pyarrow(path)
    with atomic_path(path) as partial:
        if fmt == "jsonl":
            with partial.open("w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        elif fmt == "csv":
            with partial.open("w", newline="", encoding="utf-8") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else [])
                writer.writeheader()
                # Opened in spreadsheets: a cell that would run as a formula is neutralised (ccpt.io.safe_csv).
                writer.writerows(
                    {k: neutralise(json.dumps(v) if isinstance(v, list | dict) else v) for k, v in r.items()}
                    for r in rows
                )
        else:
            import pyarrow as pa  # optional: the `parquet` extra
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows), partial)


_ARTICLES = frozenset({"a", "an", "the"})
_TOKEN = re.compile(r"[a-z0-9]+")
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2018\u2019\u201b\u02bc\u2032\uff07`\u00b4", "'"))
# Letters NFKD leaves whole, which the ASCII tokens would drop (Æsthetic → "sthetic", straße → "strae").
# Dotless ı, Latin alpha ɑ and dotless ȷ too: NFKD keeps them, and "fısh" lost its vowel ("fsh").
_LIGATURES = str.maketrans(
    {"æ": "ae", "œ": "oe", "ø": "o", "ß": "ss", "ð": "d", "þ": "th", "ł": "l", "đ": "d", "ı": "i", "ɑ": "a", "ȷ": "j"}
)
# Cyrillic and Greek letters drawn like a Latin one (a Cyrillic "а" in "cаt"), read as that letter: the ASCII tokens
# would split the word there ("c", "t") and the test item would leak.
_CONFUSABLES = str.maketrans(
    dict(zip("авеёкмнорстухѕіјԁԛԝһӏαβγεηικνορτυχωϲϳɡ", "abeekmhopctyxsijdqwhlabyeniknoptuxwcjg", strict=True))
)
_POSSESSIVE = re.compile(r"'s\b")
_AND = re.compile(r"&|\b'n'\b|\s'n'?\s")  # salt & pepper, rock'n'roll, fish 'n' chips: "and"
_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")  # fmt: skip
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINAL_ENDS = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
                 "nine": "ninth", "twelve": "twelfth"}  # fmt: skip
_NUMBER = re.compile(r"^(\d{1,3})(st|nd|rd|th)?$")
# A fraction in digits (NFKD writes ½ as 1⁄2), as words: 1/2 "half", 3/4 "three quarters", 2/3 "two thirds".
_FRACTION = re.compile(r"\b(\d{1,2})\s*[/\u2044]\s*(\d{1,2})\b")
_DENOMINATORS = {2: "half", 4: "quarter"}


def _number_words(n: int) -> list[str]:
    """0-999 as words without "and" (the key drops it after "hundred" as well)."""
    if n >= 100:
        return [_UNITS[n // 100], "hundred", *(_number_words(n % 100) if n % 100 else [])]
    return [_UNITS[n]] if n < 20 else [_TENS[n // 10 - 2], *([_UNITS[n % 10]] if n % 10 else [])]


def _ordinal(words: list[str]) -> list[str]:
    last = words[-1]
    return [*words[:-1], _ORDINAL_ENDS.get(last) or (last[:-1] + "ieth" if last.endswith("y") else last + "th")]


def _number_word(word: str) -> str:
    """A number of 0-999 in digits as its words, so "21st century" meets "twenty-first century", "3-legged"
    meets "three-legged" and "101st" meets "one hundred and first" (joined: the key has no spaces); other words
    unchanged."""
    if not (found := _NUMBER.match(word)):
        return word
    words = _number_words(int(found[1]))
    return "".join(_ordinal(words) if found[2] else words)


def _fraction(found: re.Match[str]) -> str:
    numerator, denominator = int(found[1]), int(found[2])
    if denominator < 2:
        return found[0]
    part = _DENOMINATORS.get(denominator) or "".join(_ordinal(_number_words(denominator)))
    return part if numerator == 1 else f"{found[1]} {part}s"


# Stems whose British form starts a word of any ending (ploughed, draughtsman, greying, manoeuvrable, cosiness).
_STEMS = {
    "plough": "plow", "draught": "draft", "moustache": "mustache", "manoeuvr": "maneuver", "grey": "gray",
    "sceptic": "skeptic", "kerb": "curb", "cosi": "cozi", "cosy": "cozy", "odour": "odor",  # a 2-letter stem
}  # fmt: skip
# British spellings to one canonical (American) form, applied to every word of both sides, so only a pair of
# spellings of one word meets: -our (a stem of 3+ letters: not four, hour, flour), -tre/-bre/-gre/-hre, -ise/-yse,
# -ence/-ense, -lment, past forms in -t (burnt, spilt),
# the doubled l before an ending (travelling, cancelled, woollen), the ae/oe of Greek and Latin stems (paediatric,
# haemoglobin, foetus, oestrogen), and a few words no rule reaches.
_SPELLING = (
    # Any ending after a 3+ letter stem: neighbourhood, savoury, labourer, colourfully, flavoursome.
    (re.compile(r"^(\w{3,})our(\w*)$"), r"\1or\2"),
    (re.compile(r"^(\w{2,}[tbgh])re(s?)$"), r"\1er\2"),
    (re.compile(r"^(\w{2,}[tbgh])red$"), r"\1ered"),  # centred, fibred
    (re.compile(f"^({'|'.join(_STEMS)})"), lambda m: _STEMS[m.group(1)]),
    (re.compile(r"^(def|off|lic|pret)ence(s|less)?$"), r"\1ense\2"),
    (re.compile(r"^(fulfil|enrol|instal|distil)ment(s?)$"), r"\1lment\2"),
    (re.compile(r"^(\w{3,}[aeiou])ll(ing|ed|er|ers)$"), r"\1l\2"),  # 3+ letters first: filling is not filing
    (re.compile(r"(paed|haem|anaem|anaes|archaeo|leukaem)"), lambda m: m.group(1).replace("ae", "e")),
    (re.compile(r"^(oestr|oesoph|foet|diarrhoe)"), lambda m: m.group(1).replace("oe", "e", 1)),
    (re.compile(r"^(\w{2,})is(e|es|ed|ing|ation|ations)$"), r"\1iz\2"),
    (re.compile(r"^(\w{2,})ys(e|es|ed|ing)$"), r"\1yz\2"),
    (re.compile(r"^(\w{3,})ogue(s?)$"), r"\1og\2"),
    (re.compile(r"^(\w{3,})ogu(ed|ing)$"), r"\1og\2"),  # catalogued
    (re.compile(r"^(s?m)oul(d|der|t)(s|ed|ing|y|ers?|ered|ering)?$"), r"\1ol\2\3"),  # mould, smoulder, moult
)
_WORDS = {
    "grey": "gray", "tyre": "tire", "aluminium": "aluminum", "plough": "plow", "moustache": "mustache",
    "pyjamas": "pajamas", "doughnut": "donut", "defence": "defense", "offence": "offense", "licence": "license",
    "jewellery": "jewelry", "cosy": "cozy", "sceptical": "skeptical", "kerb": "curb",
    "aeroplane": "airplane", "manoeuvre": "maneuver", "sulphur": "sulfur", "programme": "program", "cheque": "check",
    "storey": "story", "yoghurt": "yogurt", "mum": "mom", "pyjama": "pajama", "fulfil": "fulfill", "enrol": "enroll",
    "skilful": "skillful", "instalment": "installment", "judgement": "judgment", "ageing": "aging", "axe": "ax",
    "sombre": "somber", "draught": "draft", "gaol": "jail",
    "woollen": "woolen", "practise": "practice", "practised": "practiced", "practises": "practices",
    "practising": "practicing", "aeon": "eon", "mediaeval": "medieval", "pretence": "pretense",
    "manoeuvres": "maneuvers", "manoeuvred": "maneuvered", "manoeuvring": "maneuvering",
    "artefact": "artifact", "artefacts": "artifacts",
    # Past forms in -t beside -ed (burnt toast, spilt milk): one verb's two spellings.
    "burnt": "burned", "spilt": "spilled", "dreamt": "dreamed", "learnt": "learned", "spelt": "spelled",
    "spoilt": "spoiled", "smelt": "smelled", "leapt": "leaped", "dwelt": "dwelled", "knelt": "kneeled",
}  # fmt: skip


def _spelling(word: str) -> str:
    word = _WORDS.get(word, word)
    for pattern, canonical in _SPELLING:
        word = pattern.sub(canonical, word)
    return word


# At most this many keys per phrase: each word with several noun lemmas multiplies them (a hostile phrase of
# twenty such words would give millions).
_MAX_KEYS = 64


def _words(text: str) -> list[str]:
    """The words of a phrase as the key compares them (see :func:`leak_key`), before their lemma."""
    # NFKD: compatibility forms (full-width letters) and accents apart from their letter (café → cafe).
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) not in ("Cf", "Mn"))
    text = _POSSESSIVE.sub("", text.translate(_APOSTROPHES).lower().translate(_LIGATURES).translate(_CONFUSABLES))
    text = _FRACTION.sub(_fraction, _AND.sub(" and ", text))
    words = [_number_word(w) for w in _TOKEN.findall(text) if w not in _ARTICLES]
    return [w for i, w in enumerate(words) if not (w == "and" and i and words[i - 1].endswith("hundred"))]


def _word_keys(word: str) -> tuple[str, ...]:
    """A word's forms to compare: its noun lemma in one spelling, first as :func:`noun_lemma` gives it, then every
    other noun lemma lemminflect knows ("leaves": leave, leaf; "axes": ax, axis)."""
    from lemminflect import getAllLemmas  # on first use: see ccpt.answers._word_forms

    # Spelling before the lemma too: lemminflect knows the American form's inflections (realized → realize).
    word = _spelling(word)
    others = getAllLemmas(word, upos="NOUN").get("NOUN", ()) if len(word) >= 3 else ()
    return tuple(dict.fromkeys(_spelling(lemma) for lemma in (noun_lemma(word), *others)))


def leak_key(text: str) -> str:
    """The form of a phrase the SFT exclusion compares, so that a test item spelled another way still meets it:
    Unicode NFKD with format characters (zero-width spaces, soft hyphens) and accents removed and curly apostrophes
    straight; Cyrillic and Greek look-alikes as the Latin letter they look like; numbers 0-999 and fractions in
    digits as words (1st, first; ½, half); lower case, no punctuation, possessive ('s) or article; each word of 3+
    letters as its noun lemma ("mice" → "mouse"; lemminflect maps "as" → "a") in one spelling (centre/center,
    flavour/flavor, paediatric/pediatric, travelling/traveling); and the words joined without spaces, so a closed
    and an open compound meet (cavefish, cave fish, cave-fish). A word with several noun lemmas gives its first
    here; :func:`leak_keys` gives them all."""
    return "".join(_word_keys(w)[0] for w in _words(text))


def leak_keys(text: str) -> frozenset[str]:
    """Every key of a phrase: :func:`leak_key` with each word's noun lemmas in turn ("the leaves" → leave, leaf),
    at most ``_MAX_KEYS``. Two phrases meet when their keys do."""
    return frozenset("".join(words) for words in islice(product(*map(_word_keys, _words(text))), _MAX_KEYS))


_keys = lru_cache(maxsize=1 << 16)(leak_keys)


def _pairs(a: str, b: str) -> set[tuple[str, str]]:
    return set(product(_keys(a), _keys(b)))


@dataclass(frozen=True)
class SFTExport:
    """SFT examples and, per rule of :data:`SFT_RULES`, how many train rows that rule removed."""

    examples: list[dict[str, Any]]
    removed: dict[str, int]


def sft_export(
    ds: CCPTDataset, tasks: Iterable[TaskName] = GENERATIVE_TASKS, type_items: Iterable[TypeItem] | None = None
) -> SFTExport:
    """Chat-format supervised fine-tuning examples from the train pools, with nothing a test item could leak from:
    a train row breaking a rule of :data:`SFT_RULES` (phrases compared by :func:`leak_key`) is dropped and counted.
    ``type_items``: the Task-3 evaluation set(s) to exclude (default: seed 0's, what ``ccpt run`` evaluates).
    """
    held_out = ds.held_out_rows()
    test_records = [r for task in GENERATIVE_TASKS for r in ds.test(task)]
    items = list(ds.type_prediction_set(seed=0) if type_items is None else type_items)
    test_np = set().union(*(_pairs(r.combination, r.property) for r in test_records))
    test_hp = set().union(*(_pairs(r.head, r.property) for r in test_records))
    test_n = set().union(*(_keys(r.combination) for r in test_records))
    type_rows = {i.source for i in items if i.property_source is None}  # an *others* item is no row
    type_np = set().union(*(_pairs(i.combination, i.property) for i in items))
    system = system_prompt()
    removed = dict.fromkeys(SFT_RULES, 0)
    examples: list[dict[str, Any]] = []
    for task in tasks:
        if task not in GENERATIVE_TASKS:
            raise CcptError(f"SFT export supports the generative tasks only, not {task!r}")
        for record in ds.train(task):
            np_, hp = _pairs(record.combination, record.property), _pairs(record.head, record.property)
            broken = (
                record.id in held_out,
                bool(np_ & test_np),
                bool(hp & test_hp),
                bool(_keys(record.combination) & test_n),
                record.id in type_rows,
                bool(np_ & type_np),
            )  # in the order of SFT_RULES: the first rule broken is the one counted
            rule = next((rule for rule, hit in zip(SFT_RULES, broken, strict=True) if hit), None)
            if rule is not None:
                removed[rule] += 1
                continue
            spec, fields = TASK_SPECS[task], asdict(record)
            prompt, answer = task_prompt(task, BASE_TEMPLATE, **spec.prompt_fields(fields)), spec.gold_fields(fields)
            messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)},
            ]
            examples.append({"id": record.id, "task": task, "messages": messages})
    return SFTExport(examples, removed)
