"""Focused tests of the data-construction pipeline stages (paper §3.2–3.3)."""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import pytest
from pipeline_fixtures import conceptnet_index

from ccpt.dataset import RELEASED_HEADERS, load_dataset
from ccpt.errors import CcptError
from ccpt.pipeline.annotation import (
    ANSWER_COLUMNS,
    HIT_COLUMNS,
    import_answers,
    majority,
)
from ccpt.pipeline.candidates import cap_per_phrase
from ccpt.pipeline.comparatives import find_markers
from ccpt.pipeline.config import load_config
from ccpt.pipeline.corpus import Document, iter_documents, split_sentences
from ccpt.pipeline.manifest import StageSpec, atomic_text, run_stage
from ccpt.pipeline.novelty import Counts, counts_from_csv, pmi
from ccpt.pipeline.plausibility import statement

# ---------------------------------------------------------------------------------------------- stage 1


@pytest.mark.parametrize(
    "sentence",
    [
        "She brought bread as well as wine.",
        "Come as soon as you can.",
        "Fruits such as apples are sweet.",
        "He looked as if he had seen a ghost.",
        "It felt as though the sky had fallen.",
        "I like a good story.",
        "We would like to see the king.",
        "Bring swords, shields and the like.",
        "As far as I know, he is here.",
        "He walked as long as the road went.",
    ],
)
def test_false_friends_are_not_comparisons(sentence: str) -> None:
    assert find_markers(sentence) == ()


@pytest.mark.parametrize(
    ("sentence", "kind", "phrase"),
    [
        ("They crashed together like a boat on the rocks.", "like", "a boat on the rocks"),
        ("Our economy will be as unstable as an apple on a toothpick.", "as…as", "an apple on a toothpick"),
        ("Like a caged tiger, he paced.", "like", "a caged tiger"),
        ("She was as good as gold.", "as…as", "gold"),  # "as good as" compares here: not a false friend
    ],
)
def test_comparisons_are_found_at_the_compared_phrase(sentence: str, kind: str, phrase: str) -> None:
    (marker,) = find_markers(sentence)
    assert marker.kind == kind
    assert sentence[marker.position :].strip().startswith(phrase)


def test_sentence_offsets_point_into_the_document() -> None:
    text = "First line here.  Then he ran\n like a hare!  And stopped"
    sentences = list(split_sentences(Document("d", text)))
    assert [s.text for s in sentences] == ["First line here.", "Then he ran like a hare!", "And stopped"]
    for s in sentences:
        assert " ".join(text[s.start : s.end].split()) == s.text


def test_corpus_formats_plain_jsonl_and_gzip(tmp_path: Path) -> None:
    plain = tmp_path / "book.txt"
    plain.write_text("Para one.\nStill one.\n\n\nPara two.\n", encoding="utf-8")
    assert [(d.doc_id, d.text) for d in iter_documents(plain)] == [
        ("book.txt#0", "Para one.\nStill one.\n"),
        ("book.txt#1", "Para two.\n"),
    ]
    jsonl = tmp_path / "news.jsonl.gz"
    with gzip.open(jsonl, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "a1", "body": "As cold as ice."}) + "\n" + json.dumps({"body": "x"}) + "\n")
    docs = list(iter_documents(jsonl, text_field="body"))
    assert [(d.doc_id, d.text) for d in docs] == [("a1", "As cold as ice."), ("news.jsonl.gz:2", "x")]
    with pytest.raises(CcptError, match="no string field 'text'"):
        list(iter_documents(jsonl))


# ---------------------------------------------------------------------------------------------- stage 2

SENTENCES = [
    "They crashed together like a boat on the rocks.",  # PP modifier, plural lemmatised: boat / rock
    "He howled like a maddening dog.",  # participle modifier lemmatised: dog / madden
    "It was as cold as ice cream.",  # "ice cream" is a ConceptNet bigram: not novel
    "She ran like a big old dog.",  # two modifiers: not a two-concept combination
    "He stood as still as a marble statue.",  # both unigram concepts, not a bigram: kept
    "It shone like a purple zorbleflax.",  # head not a concept
]
CONCEPTS = [
    "boat",
    "rock",
    "dog",
    "madden",
    "maddening",
    "ice",
    "cream",
    "ice cream",
    "big",
    "old",
    "marble",
    "statue",
    "purple",
]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict]:
    pytest.importorskip("spacy")
    from ccpt.pipeline.mining import COMBINATIONS, EngineOptions, combinations, mine

    tmp = tmp_path_factory.mktemp("stage2")
    corpus = tmp / "c.txt"
    corpus.write_text("\n\n".join(SENTENCES) + "\n", encoding="utf-8")
    db = conceptnet_index(tmp, CONCEPTS)
    work = tmp / "work"
    engine = EngineOptions(workers=1)
    mine([corpus], work, engine=engine)
    result = combinations(work, db, engine=engine)
    rows = [json.loads(line) for line in (work / COMBINATIONS).read_text(encoding="utf-8").splitlines()]
    return rows, result.counts


def test_heads_and_modifiers_are_lemmatised(extracted: tuple[list[dict], dict]) -> None:
    rows, _ = extracted
    found = {(r["combination"], r["head"], r["modifier"]) for r in rows}
    assert ("a boat on the rocks", "boat", "rock") in found
    assert ("a maddening dog", "dog", "madden") in found
    assert ("a marble statue", "statue", "marble") in found


def test_novelty_filter_and_one_modifier_rule(extracted: tuple[list[dict], dict]) -> None:
    rows, counts = extracted
    combos = {r["combination"] for r in rows}
    assert "ice cream" not in combos and counts["rejected_ngram_concept"] == 1
    assert "a big old dog" not in combos and counts["rejected_modifier_count"] >= 1
    assert not any("zorbleflax" in c for c in combos)
    assert len(rows) == 3


def test_prefilter_skips_sentences_without_two_concepts(tmp_path: Path) -> None:
    from ccpt.pipeline.combinations import ExtractConfig, load_vocabulary, passes_prefilter
    from ccpt.pipeline.comparatives import find_markers

    db = conceptnet_index(tmp_path, CONCEPTS)
    vocab = load_vocabulary(str(db))
    config = ExtractConfig(conceptnet=str(db))
    keep = "They crashed together like a boat on the rocks."
    drop = "It shone like a purple zorbleflax."
    assert passes_prefilter(keep, find_markers(keep)[0], vocab, config)
    assert not passes_prefilter(drop, find_markers(drop)[0], vocab, config)


# ---------------------------------------------------------------------------------------------- stages 3–4


def test_at_most_five_per_noun_phrase() -> None:
    rows = [
        {"combination": "a caged tiger", "head": "tiger", "modifier": "caged", "property": f"p{i}"} for i in range(8)
    ]
    rows += [{"combination": "A caged tiger", "head": "tiger", "modifier": "caged", "property": "q"}]
    rows += [{"combination": "a wet dog", "head": "dog", "modifier": "wet", "property": "smelly"}]
    kept = cap_per_phrase(rows, 5)
    assert [r["property"] for r in kept] == ["p0", "p1", "p2", "p3", "p4", "smelly"]


@pytest.mark.parametrize(
    ("subject", "prop", "expected"),
    [
        ("pure crystal", "be limpid", "pure crystal is limpid."),
        ("caged tiger", "pace restlessly", "caged tiger can pace restlessly."),
        ("peeled apple", "white", "peeled apple is white."),
        ("house on fire", "has smoke", "house on fire has smoke."),
    ],
)
def test_plausibility_statements(subject: str, prop: str, expected: str) -> None:
    assert statement(subject, prop) == expected


# ---------------------------------------------------------------------------------------------- stage 5


def _write_hits(work: Path, hits: list[dict]) -> None:
    folder = work / "annotation"
    folder.mkdir(parents=True)
    with (folder / "hits.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=HIT_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(hits)


def _hit(hit_id: str, ctype: str, n: int, combination: str = "a caged tiger") -> dict:
    return {
        "hit_id": hit_id,
        "form": "canceled" if ctype == "canceled" else "emergent",
        "candidate_type": ctype,
        "assignments": n,
        "root": combination.split()[-1],
        "modifier": combination.split()[-2],
        "combination": combination,
        "property": "pace restlessly",
        "sentence": "It paced like a caged tiger.",
        "doc_id": "d",
        "property_source": "",
        "question": "…",
    }


def test_import_majority_kappa_and_released_schema(tmp_path: Path) -> None:
    work = tmp_path / "work"
    hits = [
        _hit("emergent-1", "emergent", 3),
        _hit("emergent-2", "emergent", 3, "a wet dog"),
        _hit("emergent-3", "emergent", 3, "a red car"),
        _hit("component-1", "component", 1, "a red apple"),
        _hit("canceled-1", "canceled", 3, "a broken clock"),
    ]
    _write_hits(work, hits)
    # Labels on the emergent form: item 1 → (E,E,E), item 2 → (E,E,C), item 3 → (C,O,O).
    labels = {
        "emergent-1": ["0", "emergent", "0"],
        "emergent-2": ["0", "0", "1"],
        "emergent-3": ["1", "2", "others"],
        "component-1": ["component"],
        "canceled-1": ["0", "canceled", "2"],
    }
    answers = tmp_path / "answers.csv"
    with answers.open("w", newline="", encoding="utf-8") as fh:
        # MTurk batch-results style headers must be understood too.
        fh.write(
            "Input.hit_id,WorkerId,Answer.label,Answer.combination_relevance,Answer.root_relevance,"
            "Answer.modifier_relevance,Answer.toxic,Answer.source\n"
        )
        for hit_id, hit_labels in labels.items():
            for k, label in enumerate(hit_labels):
                toxic = "true" if (hit_id, k) == ("emergent-2", 1) else ""
                source = "2" if hit_id.startswith("component") else ""
                fh.write(f"{hit_id},W{k},{label},5,{k + 1},3,{toxic},{source}\n")
    out = tmp_path / "dataset"
    result = import_answers(work, answers, out)
    report = json.loads((out / "annotation_report.json").read_text(encoding="utf-8"))
    # Hand computation (Fleiss 1971) for the emergent form, categories (E, C, O), 3 raters:
    # counts [3,0,0], [2,1,0], [0,1,2]; p_j = (5/9, 2/9, 2/9); P_i = 1, 1/3, 1/3 → P̄ = 5/9;
    # P_e = (25 + 4 + 4)/81 = 33/81; κ = (45/81 − 33/81) / (48/81) = 0.25.
    assert report["fleiss_kappa"]["emergent"]["kappa"] == pytest.approx(0.25)
    assert report["fleiss_kappa"]["emergent"]["items"] == 3
    assert result.counts["rows_ccpt_emergent"] == 2  # item 3's majority is "others": left out
    assert report["outcomes"]["emergent_candidates_labelled_others"] == 1
    with (out / "ccpt_emergent.csv").open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == RELEASED_HEADERS["ccpt_emergent"]
        rows = list(reader)
    assert rows[1]["meta.human_labels"] == "(emergent, emergent, component)"
    assert rows[1]["meta.root_human_relevance"] == "(1, 2, 3)"
    assert rows[1]["meta.toxicity"] == "True" and rows[0]["meta.toxicity"] == "False"
    ds = load_dataset(out)
    assert len(ds.emergent) == 2 and len(ds.canceled) == 1 and len(ds.component) == 1
    assert ds.component[0].combination_ratings == (5,) and ds.component[0].property_source == "root"
    assert ds.canceled[0].human_labels == ("canceled", "canceled", "others")
    assert len(ds.test("pi_emergent")) == 2  # paper size 200, capped at the file's 2 rows


def test_import_rejects_bad_answers(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _write_hits(work, [_hit("emergent-1", "emergent", 3)])
    answers = tmp_path / "answers.csv"
    answers.write_text(",".join(ANSWER_COLUMNS) + "\nemergent-1,W1,canceled,5,5,5,,\n", encoding="utf-8")
    with pytest.raises(CcptError, match=r"row 0, column 'label': 'canceled' is not an option of the emergent form"):
        import_answers(work, answers)
    answers.write_text(",".join(ANSWER_COLUMNS) + "\nemergent-1,W1,0,7,5,5,,\n", encoding="utf-8")
    with pytest.raises(CcptError, match=r"row 0, column 'combination_relevance': should be less than or equal to 5"):
        import_answers(work, answers)


def test_import_refuses_answers_of_another_export(tmp_path: Path) -> None:
    """Seventh hostile round: every export numbers its HITs alike, so answers filled for another workdir's HITs
    were read as this one's labels. A row showing its HIT (the template's columns, a platform's Input.<name>) must
    show this export's; case and spaces a spreadsheet changes are the same HIT."""
    work = tmp_path / "work"
    _write_hits(work, [_hit("emergent-1", "emergent", 3)])
    answers = tmp_path / "answers.csv"
    header = ",".join([*ANSWER_COLUMNS, "combination", "Input.property"])
    answers.write_text(f"{header}\nemergent-1,W1,0,5,5,5,,,A  Caged Tiger,pace restlessly\n", encoding="utf-8")
    assert import_answers(work, answers)  # the same HIT
    answers.write_text(f"{header}\nemergent-1,W1,0,5,5,5,,,a caged tiger,roar loudly\n", encoding="utf-8")
    with pytest.raises(CcptError, match=r"row 0: HIT 'emergent-1' is property 'roar loudly' here but 'pace restl"):
        import_answers(work, answers)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        # The same worker answering one HIT twice would be two votes of one person.
        (["W1,0,5,5,5,,", "W2,0,5,5,5,,", "W1,1,5,5,5,,"], r"row 2 repeats row 0 \(hit_id × worker_id"),
        # … also when a spreadsheet padded the id with spaces.
        (["W1,0,5,5,5,,", "W2,0,5,5,5,,", " W1 ,1,5,5,5,,"], r"row 2 repeats row 0 \(hit_id × worker_id"),
        # Five answers where three were assigned.
        ([f"W{k},0,5,5,5,," for k in range(5)], r"row 3, column 'hit_id': HIT 'emergent-1' has more answers"),
        (["W1,0,5,5,5,maybe,"], r"row 0, column 'toxic'"),
        (["W1,0,5,,5,,"], r"row 0, column 'root_relevance'"),
        (["W1,7,5,5,5,,"], r"row 0, column 'label'"),
    ],
)
def test_import_rejects_duplicated_and_surplus_answers(tmp_path: Path, rows: list[str], message: str) -> None:
    work = tmp_path / "work"
    _write_hits(work, [_hit("emergent-1", "emergent", 3)])
    answers = tmp_path / "answers.csv"
    answers.write_text(",".join(ANSWER_COLUMNS) + "".join(f"\nemergent-1,{r}" for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(CcptError, match=message):
        import_answers(work, answers)
    assert not (work / "dataset").exists()  # nothing half-written


def test_majority_tie_is_others() -> None:
    assert majority(["emergent", "component", "others"]) == "others"
    assert majority(["emergent", "component"]) == "others"
    assert majority(["emergent", "emergent", "component"]) == "emergent"
    assert majority(["component"]) == "component"


def test_released_headers_match_the_released_files(ccpt_dir: Path) -> None:
    for stem, header in RELEASED_HEADERS.items():
        with (ccpt_dir / f"{stem}.csv").open(newline="", encoding="utf-8") as fh:
            assert tuple(next(csv.reader(fh))) == header


# ---------------------------------------------------------------------------------------------- stage 6


def test_pmi_by_hand(tmp_path: Path) -> None:
    counts_csv = tmp_path / "counts.csv"
    counts_csv.write_text(
        "ngram,count\ncaged,10\ntiger,20\nother,70\ncaged tiger,3\ntiger caged,1\nred sky,96\n", encoding="utf-8"
    )
    counts = counts_from_csv(counts_csv, {("caged", "tiger")})
    # P(w,c) = (3+1)/100, P(caged) = 10/100, P(tiger) = 20/100 → log2(0.04 / 0.02) = 1.
    assert pmi(("caged", "tiger"), counts) == pytest.approx(1.0)
    assert pmi(("red", "sky"), counts) is None  # not asked for → not counted → zero frequency
    empty = Counts(counts.words, counts.pairs, counts.total_words, 0)
    assert pmi(("caged", "tiger"), empty) is None
    assert math.isclose(counts.total_pairs, 100)


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("counts", "named"),
    [
        ("ngram,count\ncaged,10\ncaged tiger\n", "line 3: 1 cells, the header 2"),  # before: internal TypeError
        ("ngram,count,count\ncaged,10,99\n", "'count' appear more than once"),  # before: 99 read, 10 ignored
        ("ngram,count\ncaged,-10\n", "count '-10' is not a whole number ≥ 0"),  # before: a negative probability
        ("ngram,count\ncaf\xe9,10\n".encode("latin-1"), "not UTF-8 text"),  # before: an internal error
    ],
)
def test_a_bad_counts_file_is_one_line_naming_it(
    counts: str | bytes, named: str, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_cli_validation import _one_line_error

    path = tmp_path / "counts.csv"
    path.write_bytes(counts if isinstance(counts, bytes) else counts.encode())
    db = conceptnet_index(tmp_path, ["caged tiger", "tiger"])
    out = tmp_path / "novelty"
    argv = ["pipeline", "novelty", str(ccpt_dir), "--conceptnet", str(db), "--counts", str(path), "--out", str(out)]
    line = _one_line_error(capsys, argv)
    assert str(path) in line and named in line, line
    assert not (out / "novelty.json").exists()


# ---------------------------------------------------------------------------------------------- resumability


def _spec(tmp_path: Path, param: int = 1) -> StageSpec:
    source = tmp_path / "in.txt"
    if not source.exists():
        source.write_text("input", encoding="utf-8")
    return StageSpec("demo", tmp_path, (source,), (tmp_path / "out.txt",), {"param": param})


def test_finished_stage_is_skipped_and_redone_when_inputs_change(tmp_path: Path) -> None:
    calls = []

    def work() -> dict:
        calls.append(1)
        with atomic_text(tmp_path / "out.txt") as fh:
            fh.write("result")
        return {"rows": 1}

    assert not run_stage(_spec(tmp_path), work).skipped
    again = run_stage(_spec(tmp_path), work)
    assert again.skipped and again.counts == {"rows": 1} and len(calls) == 1
    assert not run_stage(_spec(tmp_path, param=2), work).skipped  # parameters changed
    (tmp_path / "in.txt").write_text("changed", encoding="utf-8")
    assert not run_stage(_spec(tmp_path, param=2), work).skipped  # input changed
    (tmp_path / "out.txt").write_text("edited by hand", encoding="utf-8")
    assert not run_stage(_spec(tmp_path, param=2), work).skipped  # output tampered with
    assert len(calls) == 4


def test_two_writers_of_one_output_do_not_share_a_temporary_file(tmp_path: Path) -> None:
    """The stages' atomic writes used one fixed ``<name>.partial``: a second writer truncated the first one's
    half-written file. Each writer now has its own temporary name, and the last rename wins whole."""
    target = tmp_path / "out.txt"
    with atomic_text(target) as first:
        first.write("first, ")
        with atomic_text(target) as second:
            second.write("second writer")
        assert target.read_text(encoding="utf-8") == "second writer"
        first.write("complete")
    assert target.read_text(encoding="utf-8") == "first, complete"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left


def test_killed_stage_leaves_nothing_and_is_redone(tmp_path: Path) -> None:
    def killed() -> dict:
        with atomic_text(tmp_path / "out.txt") as fh:
            fh.write("half a result")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stage(_spec(tmp_path), killed)
    assert not list(tmp_path.glob("*out.txt*"))  # neither the output nor its temporary file
    assert not _spec(tmp_path).manifest_path.exists()

    def finish() -> dict:
        with atomic_text(tmp_path / "out.txt") as fh:
            fh.write("result")
        return {"rows": 1}

    assert not run_stage(_spec(tmp_path), finish).skipped


def test_config_rejects_unknown_keys(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    config.write_text(
        'conceptnet = "cn.sqlite"\n[mine]\ncorpus = ["c.txt"]\n[llm]\nmodel = "x/y"\nmodle = 1\n', encoding="utf-8"
    )
    with pytest.raises(CcptError, match=r"\[llm\] modle: unknown key"):
        load_config(config)


def test_config_batch_section_is_checked_when_loaded(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    base = 'conceptnet = "cn.sqlite"\n[mine]\ncorpus = ["c.txt"]\n[llm]\nmodel = "x/y"\n'
    config.write_text(base + '[batch]\nbackend = "http"\nmodel = "m"\n', encoding="utf-8")
    with pytest.raises(CcptError, match="needs a url"):
        load_config(config)
    config.write_text(
        base + '[batch]\nbackend = "vllm"\nmodel = "org/model"\nengine_kwargs = {max_model_len = 4096}\n',
        encoding="utf-8",
    )
    batch = load_config(config).batch
    assert batch is not None and batch.backend == "vllm" and batch.engine_kwargs == {"max_model_len": 4096}
