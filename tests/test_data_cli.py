"""`ccpt data …` end to end: stats, exports, SFT data, and one-line errors."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from ccpt.cli import main

pytestmark = pytest.mark.shared_data


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_stats_json_counts(ccpt_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stats = _json(capsys, ["data", "stats", "--data-dir", str(ccpt_dir), "--format", "json"])
    assert stats["rows_per_type"] == {"emergent": 2500, "canceled": 1613, "component": 8201}
    assert stats["total_paper_rows"] == 12314
    assert {t: s["test"] for t, s in stats["splits"].items()} == {
        "pi_emergent": 200,
        "pi_canceled": 167,
        "npc_emergent": 167,
    }
    assert stats["toxic_rows"] == 271 and stats["toxic_in_test"] == {
        "pi_emergent": 8,
        "pi_canceled": 7,
        "npc_emergent": 6,
    }
    # κ is reported for the two three-annotator files only, over every row (all have 3 labels).
    assert stats["files"]["ccpt_emergent"]["fleiss_kappa_rows"] == 2500
    assert "fleiss_kappa" not in stats["files"]["ccpt_component"]


def test_stats_text_says_toxic_rows_are_kept(ccpt_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "stats", "--data-dir", str(ccpt_dir)]) == 0
    out = capsys.readouterr().out
    assert "12,314" in out and "271 toxic-flagged rows kept" in out
    assert "not in the paper's 12,315" not in out  # one count, not two different ones
    assert main(["data", "stats", "--data-dir", str(ccpt_dir), "--exclude-toxic"]) == 0
    assert "toxic rows excluded" in capsys.readouterr().out


def test_export_split_formats(ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "test.jsonl"
    info = _json(
        capsys,
        [
            "data",
            "export",
            "--data-dir",
            str(ccpt_dir),
            "--task",
            "pi_canceled",
            "--split",
            "test",
            "--out",
            str(out),
            "--format",
            "json",
        ],
    )
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert info["rows"] == len(rows) == 167
    assert rows[0]["id"].startswith("ccpt_canceled:") and isinstance(rows[0]["head_ratings"], list)
    parquet = tmp_path / "all.parquet"
    assert main(["data", "export", "--data-dir", str(ccpt_dir), "--out", str(parquet), "--as", "parquet"]) == 0
    import pyarrow.parquet as pq

    assert pq.read_table(parquet).num_rows == 12314 + 1690


def test_sft_export_never_contains_a_test_row(
    ccpt_dir: Path, tmp_path: Path, dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sft.jsonl"
    assert main(["data", "export", "--data-dir", str(ccpt_dir), "--sft", "--out", str(out), "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    examples = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    tests = [r for t in ("pi_emergent", "pi_canceled", "npc_emergent") for r in dataset.test(t)]
    held_out = {r.id for r in tests}
    assert examples and not {e["id"] for e in examples} & held_out

    def key(text: str) -> str:
        return " ".join(text.lower().split())

    # No test item's (N, P), (H, P) or N survives in the training data, whatever task it was exported for.
    records = {r.id: r for t in ("pi_emergent", "pi_canceled", "npc_emergent") for r in dataset.train(t)}
    trained = [records[e["id"]] for e in examples]
    assert not {(key(r.combination), key(r.property)) for r in trained} & {
        (key(r.combination), key(r.property)) for r in tests
    }
    assert not {(key(r.head), key(r.property)) for r in trained} & {(key(r.head), key(r.property)) for r in tests}
    assert not {key(r.combination) for r in trained} & {key(r.combination) for r in tests}
    # Task 3 (the fourth task) draws its items from every row, train pools included: none of its items, and no
    # row sharing an item's (N, P), is taught (with its type) either.
    items = dataset.type_prediction_set(seed=0)
    assert {i.gold for i in items} == {"emergent", "component", "canceled", "others"}
    assert not {e["id"] for e in examples} & {i.source for i in items if i.gold != "others"}
    assert not {(key(r.combination), key(r.property)) for r in trained} & {
        (key(i.combination), key(i.property)) for i in items
    }
    # Every train row is either exported or counted under exactly one rule; each rule removed something.
    pool = sum(len(dataset.train(t)) for t in ("pi_emergent", "pi_canceled", "npc_emergent"))
    assert info["rows"] == len(examples) == pool - sum(info["removed"].values())
    assert set(info["removed"]) == {"test row", "test (N, P)", "test (H, P)", "test N", "Task-3 row", "Task-3 (N, P)"}
    assert all(count > 0 for count in info["removed"].values()), info["removed"]
    assert not any(r.combination == "a ship without a rudder" and r.property == "directionless" for r in trained)
    for example in examples:
        roles = [m["role"] for m in example["messages"]]
        assert roles == ["system", "user", "assistant"]
        answer = json.loads(example["messages"][2]["content"])
        assert set(answer) == ({"combination", "modifier"} if example["task"] == "npc_emergent" else {"property"})
    npc = next(e for e in examples if e["task"] == "npc_emergent")
    answer = json.loads(npc["messages"][2]["content"])
    assert answer["combination"] not in npc["messages"][1]["content"]  # the prompt never leaks the answer


def test_errors_are_one_line(ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "stats", "--data-dir", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ccpt: error: data directory")
    for name in (
        "ccpt_emergent.csv",
        "ccpt_canceled.csv",
        "ccpt_component.csv",
        "add_ccpt_emergent.csv",
        "test_index.json",
    ):
        shutil.copy(ccpt_dir / name, tmp_path / name)
    (tmp_path / "ccpt_emergent.csv").write_text('sentence,combination\n"unterminated', encoding="utf-8")
    assert main(["data", "stats", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ccpt_emergent.csv" in err[0] and "missing column" in err[0]
    # A column named twice: before, the second one's values were read without a word.
    with (ccpt_dir / "ccpt_canceled.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    with (tmp_path / "ccpt_canceled.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([[*r, "property" if i == 0 else "swapped"] for i, r in enumerate(rows)])
    shutil.copy(ccpt_dir / "ccpt_emergent.csv", tmp_path / "ccpt_emergent.csv")
    assert main(["data", "stats", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ccpt_canceled.csv: column(s) 'property' appear more than once" in err[0], err


def test_sft_export_excludes_the_task3_sets_of_every_seed_asked_for(
    ccpt_dir: Path, tmp_path: Path, dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sft.jsonl"
    argv = ["data", "export", "--data-dir", str(ccpt_dir), "--sft", "--out", str(out), "--format", "json"]
    assert main([*argv, "--tp-seed", "0", "--tp-seed", "7"]) == 0
    info = json.loads(capsys.readouterr().out)
    ids = {json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()}
    for seed in (0, 7):
        assert not ids & {i.source for i in dataset.type_prediction_set(seed=seed) if i.gold != "others"}
    assert info["removed"]["Task-3 row"] > 584  # seed 0 alone removes 584 rows


def test_sft_leakage_is_judged_by_meaning_not_by_string(dataset) -> None:
    """The issue's case: the Task-3 item "death walkers" → mythical (ccpt_emergent:2359) stayed in the training
    data as the train row "the death walkers" → mythical (ccpt_emergent:1440). Articles, case, punctuation and
    noun inflection no longer hide a test item."""
    from ccpt.export import leak_key, sft_export

    assert leak_key("the death walkers") == leak_key("Death Walker.") == leak_key("death walkers") == "deathwalker"
    assert leak_key("An apple's core") == leak_key("an apple\u2019s core") == "applecore"
    assert leak_key("peeled") != leak_key("peel")
    items = dataset.type_prediction_set(seed=0)
    assert ("death walkers", "mythical") in {(i.combination, i.property) for i in items}
    export = sft_export(dataset)
    ids = {e["id"] for e in export.examples}
    assert "ccpt_emergent:1440" not in ids  # was exported
    # 4,519 before: 64 surface variants of a test item; then 2 more (seventh round): the train row "falling leaves"
    # (ccpt_emergent:1401, in two tasks) is the test item "a falling leafs" (ccpt_emergent:468) read as leaf, not leave.
    assert len(export.examples) == 4453
    assert "ccpt_emergent:1401" not in ids
    tests = [r for t in ("pi_emergent", "pi_canceled", "npc_emergent") for r in dataset.test(t)]
    test_pairs = {(leak_key(r.combination), leak_key(r.property)) for r in tests}
    test_pairs |= {(leak_key(i.combination), leak_key(i.property)) for i in items}
    records = {r.id: r for r in dataset.paper_records}
    assert not {(leak_key(records[i].combination), leak_key(records[i].property)) for i in ids} & test_pairs


@pytest.mark.parametrize(
    ("test", "train"),
    [
        (("a city centre", "busy"), ("a city center", "busy")),
        (("lemon cake", "flavour"), ("lemon cakes", "flavor")),
        (("a blind cavefish", "pale"), ("the blind cave fish", "pale")),
        (("a blind cavefish", "pale"), ("a blind cave-fish", "pale")),
        (("red apple", "sweet"), ("red\u200bapple", "sweet")),  # a zero-width space
        (("the dog's bone", "chewed"), ("the dog\u2019s bone", "chewed")),  # a curly apostrophe's possessive
        (("ｒｅｄ apple", "sweet"), ("red apple", "sweet")),  # full-width letters (NFKC)
        (("a grey theatre", "gloomy"), ("a gray theater", "gloomy")),
        (("realised dream", "colourful"), ("realized dreams", "colorful")),
        # Found by the second hostile round: accents, doubled l, ae/oe stems, -gre, words no rule reached.
        (("a café au lait", "creamy"), ("a cafe au lait", "creamy")),
        (("a naïve traveller", "lost"), ("a naive traveler", "lost")),
        (("a paediatric ward", "cheerful"), ("a pediatric ward", "cheerful")),
        (("a cancelled aeroplane", "grounded"), ("a canceled airplane", "grounded")),
        (("a meagre yoghurt", "sour"), ("a meager yogurt", "sour")),
        (("a woollen pyjama", "warm"), ("a woolen pajama", "warm")),
        # Fifth hostile round: letters NFKD keeps whole were dropped (Æsthetic → "sthetic"), and mould / practise
        # had no rule.
        (("an Æsthetic smouldering log", "practised"), ("an aesthetic smoldering log", "practiced")),
        (("a mouldy straße", "practising"), ("a moldy strasse", "practicing")),
        # Sixth hostile round: an ordinal or a number in digits, and a Cyrillic or Greek look-alike letter.
        (("a first-class seat", "roomy"), ("a 1st class seat", "roomy")),
        (("the twenty-first century", "digital"), ("the 21st century", "digital")),
        (("a three-legged stool", "wobbly"), ("a 3-legged stool", "wobbly")),
        (("a black cat", "lucky"), ("a black c\u0430t", "lucky")),  # a Cyrillic a
        (("salt & pepper", "mediaeval"), ("salt and pepper", "medieval")),
        (("rock'n'roll", "pretence"), ("rock and roll", "pretense")),
        (("a ripe apple", "sweet"), ("a ripe \u03b1pple", "sweet")),  # a Greek alpha
        # Seventh round: a plural of several lemmas, numbers from 100 and fractions in digits.
        (("an autumn leaf", "golden"), ("autumn leaves", "golden")),
        (("the axis of a wheel", "central"), ("the axes of a wheel", "central")),
        (("the 101st floor", "windy"), ("the one hundred and first floor", "windy")),
        (("a half-empty glass", "sad"), ("a \u00bd-empty glass", "sad")),
        (("three quarters of a pie", "eaten"), ("3/4 of a pie", "eaten")),
        # Seventh: -our before any ending, -tred, stems of any ending, -t past forms, Latin letters NFKD keeps.
        (("a quiet neighbourhood", "savoury"), ("a quiet neighborhood", "savory")),
        (("a ploughed field", "burnt"), ("a plowed field", "burned")),
        (("a centred draughtsman", "greying"), ("a centered draftsman", "graying")),
        (("spilt milk", "odourless"), ("spilled milk", "odorless")),
        (("a defenceless labourer", "sceptical"), ("a defenseless laborer", "skeptical")),
        (("a f\u0131sh tank", "wet"), ("a fish tank", "wet")),  # a dotless i
        (("a black c\u0251t", "lucky"), ("a black cat", "lucky")),  # a Latin alpha
    ],
)
def test_sft_leakage_meets_a_test_item_spelled_another_way(
    dataset, monkeypatch: pytest.MonkeyPatch, test: tuple[str, str], train: tuple[str, str]
) -> None:
    """Issue 42: train rows that were test items spelled the other way (British/American, closed/open compound,
    a zero-width space, a curly apostrophe) stayed in the SFT export. The key normalises both sides alike."""
    import dataclasses

    from ccpt.export import leak_keys, sft_export

    assert leak_keys(test[0]) & leak_keys(train[0]) and leak_keys(test[1]) & leak_keys(train[1])
    template = dataset.train("pi_emergent")[0]
    test_row = dataclasses.replace(template, row=10**6, combination=test[0], property=test[1])
    train_row = dataclasses.replace(template, row=10**6 + 1, combination=train[0], property=train[1])
    other = dataclasses.replace(template, row=10**6 + 2, combination="a wooden spoon", property="smooth")
    monkeypatch.setattr(dataset, "test", lambda task: [test_row] if task == "pi_emergent" else [])
    monkeypatch.setattr(dataset, "train", lambda task: [train_row, other] if task == "pi_emergent" else [])
    export = sft_export(dataset, type_items=[])
    assert [e["id"] for e in export.examples] == [other.id]  # the variant is removed, the unrelated row kept
    assert export.removed["test (N, P)"] + export.removed["test N"] == 1


def test_sft_leak_key_keeps_different_words_apart() -> None:
    """The spelling rules apply to both sides alike and only where a pair of spellings of one word can meet."""
    from ccpt.export import leak_keys

    pairs = [("four", "for"), ("hour", "hor"), ("flour", "flor"), ("peeled", "peel"), ("acre", "acer")]
    more = [
        ("hatred", "hated"),
        ("filling", "filing"),
        ("shoe", "she"),
        ("tonne", "ton"),
        ("whisky", "whiskey"),
        ("leave", "leaf"),
    ]
    for a, b in [*pairs, *more, ("a 1/3 share", "a 1/4 share"), ("the 110th", "the 101st"), ("axe", "axis")]:
        assert not leak_keys(a) & leak_keys(b), (a, b)
    assert leak_keys("leaves") == {"leave", "leaf"}  # each phrase the plural may stand for
    assert len(leak_keys(" ".join(["axes"] * 30))) <= 64  # bounded: three lemmas a word would give 3**30


@pytest.mark.parametrize(
    ("args", "named"),
    [
        # Before: each wrote a file and exited 0, the option dropped without a word.
        (["--task", "pi_emergent"], "--task: needs --split (or --sft)"),  # every record, not the task's
        (["--sft", "--split", "test"], "--split: SFT examples come from the train pools only"),  # train, not test
        (["--tp-seed", "3"], "--tp-seed: the Task-3 seeds to exclude apply to --sft only"),
        (["--as", "jsonl", "--out", "{tmp}/rows.csv"], "rows.csv names a csv file; this writes jsonl (--as csv)"),
    ],
)
def test_an_export_option_the_export_would_not_read_is_one_line(
    args: list[str], named: str, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_cli_validation import _one_line_error

    argv = ["data", "export", "--data-dir", str(ccpt_dir), *[a.replace("{tmp}", str(tmp_path)) for a in args]]
    line = _one_line_error(capsys, argv if "--out" in args else [*argv, "--out", str(tmp_path / "rows.jsonl")])
    assert named in line, line
    assert not list(tmp_path.iterdir())
