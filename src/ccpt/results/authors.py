"""The authors' result CSVs (docs/metrics.md, "The authors' result files") read into the tidy table; the column
structure identifies runs, any model name is accepted. A Spreading Activation per-step file (``<run>-<t>.csv``) is
told by its name, which its ``C``/``C_T`` columns check."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ccpt.answers import list_literal_end, parse_answer, split_reply_list
from ccpt.errors import DataError, require_regular_file
from ccpt.io.safe_csv import read_text_frame
from ccpt.protocol import AS_RUN
from ccpt.results.table import DERIVED_TOLERANCE, derived_note, missing_columns, set_scores, tidy_frame
from ccpt.rows import empty_row
from ccpt.scoring import Relevances
from ccpt.spec import (
    NPC_EMERGENT,
    OTHERS,
    PI_CANCELED,
    PI_EMERGENT,
    TASK_SPECS,
    TYPE_PREDICTION,
    reference_method,
)

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset
    from ccpt.schemas.base import CellIssue


# Per-run columns <model>_<method>_<seed>[_<sample>]_<field>, any model text; no "meta.*" column ends like that.
_RUN_COLUMN = re.compile(
    r"^(?P<prefix>.+?)_(?P<seed>\d+)(?:_(?P<sample>\d+))?_(?P<field>generated_|property|combination|modifier|"
    r"combination_relevance|root_relevance|modifier_relevance|indiv_max|emergence|cancellation)$"
)
_TP_COLUMN = re.compile(r"^(?P<model>.+?)_generated_$")
_JUDGE_COLUMN = re.compile(r"^meta\.combination_(?P<judge>.+)_relevance$")


def _require(path: Path, columns: Iterable[str], required: Sequence[str], what: str) -> None:
    if missing := missing_columns(columns, required):
        raise DataError(
            f"{path}: not a CCPT {what} result file; missing column(s): {', '.join(missing)}",
            "expected the authors' result CSV format (docs/metrics.md, \"The authors' result files\")",
        )


def _detect_task(path: Path, columns: Sequence[str], fields: set[str]) -> str:
    if not fields:
        if any(_TP_COLUMN.match(c) for c in columns):
            return TYPE_PREDICTION
        raise DataError(
            f"{path}: no per-run result columns found (e.g. 'gpt-4o_naive_0_generated_' or "
            "'gpt-4o_naive_0_combination_relevance')",
            "is this one of the authors' result files?",
        )
    if "combination" in fields:
        return NPC_EMERGENT
    if "property" in fields:
        for field, pi_task in (("cancellation", PI_CANCELED), ("emergence", PI_EMERGENT)):
            if field in fields or any(re.match(rf"^meta\..*_{field}$", c) for c in columns):
                return pi_task
    raise DataError(
        f"{path}: cannot tell the task from the columns (need '<run>_property' with an emergence or "
        "cancellation column, or '<run>_combination')"
    )


def _instance_ids(
    instances: Sequence[Mapping[str, Any]], task: str, path: Path, dataset: CCPTDataset | None, notes: list[str]
) -> list[str]:
    """Dataset ids of a generative file's rows (by combination + property); a rejected row keeps '<task>:row<i>'."""
    positional = [f"{task}:row{i}" for i in range(len(instances))]
    if dataset is None:
        notes.append(
            f"{path.name}: no dataset given; instance ids are row positions ('{task}:row<i>'), "
            "pass --data-dir to use dataset ids and to add the Gold row"
        )
        return positional
    from ccpt.dataset import clean_combination

    pool: dict[tuple[str, str], list[str]] = {}
    for record in dataset.test(task):  # type: ignore[arg-type]
        pool.setdefault((record.combination.lower(), record.property.lower()), []).append(record.id)
    ids: list[str] = []
    for i, row in enumerate(instances):
        combination, prop = row["combination"], row["property"]
        if combination is None or prop is None:
            ids.append(positional[i])
            continue
        key = (clean_combination(combination).lower(), prop.lower())
        if key not in pool:
            raise DataError(
                f"{path}: row {i} ({combination!r}, {prop!r}) is not in the {task} test split of {dataset.source}",
                "use the dataset the results were produced on, or omit --data-dir",
            )
        ids.append(_take(pool[key]))
    return ids


def _take(ids: list[str]) -> str:
    """The next unused id of a repeated (phrase, property), in file order; past the last, the last again."""
    return ids.pop(0) if len(ids) > 1 else ids[0]


def _base_row(task: str, model: str, method_raw: str, seed: int, instance: str, path: Path) -> dict[str, Any]:
    method, sa_filter = reference_method(method_raw)
    return empty_row() | dict(
        task=task,
        model=model,
        method=method,
        sa_filter=sa_filter,
        method_raw=method_raw,
        seed=seed,
        instance=instance,
        sample=0,
        judge_failures=0,
        source=path.name,
        protocol=AS_RUN.name,  # the authors' stored files are "as run" by definition
    )


def from_reference_csv(path: str | Path, dataset: CCPTDataset | None = None) -> pd.DataFrame:
    """Read one of the authors' result CSVs into the tidy table: model, method, seed, sample and task from the
    column names (aggregates such as ``best+multi`` ignored); for NPC, R_H,P is the stored head relevance
    (``meta.root_<judge>_relevance``); ``answer`` the authors' parsed one, ``parse_ok`` from :mod:`ccpt.answers`."""
    path = require_regular_file(path)
    # Every cell as text: the schemas parse them (pandas would turn an answer "NA" or "None" into a missing value).
    frame = read_text_frame(path)
    if frame.empty:  # else "no results to report" would not say which file held none
        raise DataError(f"{path}: no result rows (a header only)")
    columns = list(frame.columns)
    runs: dict[tuple[str, int], dict[tuple[int | None, str], str]] = {}
    for column in columns:
        match = _RUN_COLUMN.match(column)
        if match and "+" not in match["prefix"] and "_" in match["prefix"]:
            sample = None if match["sample"] is None else int(match["sample"])
            runs.setdefault((match["prefix"], int(match["seed"])), {})[(sample, match["field"])] = column
    fields = {field for run in runs.values() for (_, field) in run}
    task = _detect_task(path, columns, fields)
    notes: list[str] = []
    if TASK_SPECS[task].generative:
        out = _generative_rows(frame, path, task, runs, dataset, notes)
    else:
        out = _type_prediction_rows(frame, path, dataset, notes)
    out.attrs["notes"] = notes
    out.attrs["warnings"] = _copied_seeds(path, frame, runs)
    return out


def _copied_seeds(path: Path, frame: pd.DataFrame, runs: Mapping[tuple[str, int], Mapping[Any, str]]) -> list[str]:
    """One warning per run whose two seeds hold the same cell, column for column, on every row: a seed's columns
    copied from another's. Sampled seeds of the authors' runs never agree on every row (70% of rows at most in the
    stored files), so such seeds are not two draws and their spread (±) says nothing; a model that answers alike
    under every seed would give the same line, which is as true of it."""
    by_prefix: dict[str, dict[int, Mapping[Any, str]]] = {}
    for (prefix, seed), cols in runs.items():
        by_prefix.setdefault(prefix, {})[seed] = cols
    warnings = []
    for prefix, seeds in by_prefix.items():
        order = sorted(seeds)
        same = [
            (a, b)
            for i, a in enumerate(order)
            for b in order[i + 1 :]
            if set(seeds[a]) == set(seeds[b])
            and all(frame[seeds[a][k]].equals(frame[seeds[b][k]]) for k in seeds[a])
            and frame[list(seeds[a].values())].ne("").any(axis=None)
        ]
        if same:
            pairs = ", ".join(f"{a} and {b}" for a, b in same)
            warnings.append(
                f"{path.name}: run {prefix!r} has seeds holding the same answers and relevances on every one of its "
                f"{len(frame)} rows ({pairs}): a seed's columns copied from another's? The spread over seeds (±) "
                "counts them as independent draws"
            )
    return warnings


# The run columns' field names → the sample schema's names (the judged answer has one name for both tasks).
_SAMPLE_FIELDS = {"property": "answer", "combination": "answer", "modifier": "answer_modifier"}
_DERIVED_FIELDS = ("indiv_max", "emergence", "cancellation")


def _generative_rows(
    frame: pd.DataFrame,
    path: Path,
    task: str,
    runs: Mapping[tuple[str, int], Mapping[tuple[int | None, str], str]],
    dataset: CCPTDataset | None,
    notes: list[str],
) -> pd.DataFrame:
    from ccpt.schemas.results import AUTHORS_ROW, AUTHORS_SAMPLE

    _require(path, frame.columns, ["combination", "root", "modifier", "property"], task)
    # meta.combination_human_relevance holds Likert tuples: not a judge.
    named = list(dict.fromkeys(m["judge"] for c in frame.columns if (m := _JUDGE_COLUMN.match(c))))
    judges = [j for j in named if j != "human"]
    judge = judges[0] if judges else "unknown"
    spec = TASK_SPECS[task]
    shape = {name: name for name in ("combination", "root", "modifier", "property")}
    if spec.completes_phrase:
        shape["head_relevance"] = f"meta.root_{judge}_relevance"
        _require(path, frame.columns, [shape["head_relevance"]], task)
    lines = frame.to_dict("records")  # plain dicts: much faster than frame.iloc per row
    instances = AUTHORS_ROW.check(
        [{field: line[name] for field, name in shape.items()} for line in lines], path.name, headers=shape
    )
    ids = _instance_ids(instances.rows, task, path, dataset, notes)
    issues = list(instances.issues)
    # A rejected instance cell (or NPC head relevance) is a failure of every sample of its row.
    row_bad = instances.bad_cells()
    rows: list[dict[str, Any]] = []
    mismatches: list[tuple[float, int, str]] = []
    steps = {prefix: _sa_step(path, prefix, lines, notes) for prefix in sorted({p for p, _ in runs})}  # C_T notes
    # Every sample of a run has the relevance columns the tables need (a missing column is a malformed file).
    needed = ["combination_relevance", "modifier_relevance"] + ([] if spec.completes_phrase else ["root_relevance"])
    for (prefix, seed), cols in sorted(runs.items()):
        samples = sorted({s for (s, f) in cols if f != "generated_"}, key=lambda s: -1 if s is None else s)
        model, _, method_raw = prefix.rpartition("_")
        raw_column = cols.get((None, "generated_"))
        names: dict[int | None, dict[str, str]] = {}  # per sample, its schema fields' columns (raw reply: shared)
        for t in samples:
            run = f"{prefix}_{seed}{'' if t is None else f'_{t}'}"
            if absent := [f"{run}_{f}" for f in needed if (t, f) not in cols]:
                raise DataError(f"{path}: missing column(s): {', '.join(absent)}")
            names[t] = {_SAMPLE_FIELDS.get(f, f): c for (s, f), c in cols.items() if s == t and f != "generated_"}
            if raw_column is not None:
                names[t]["generated_"] = raw_column
        keys = [(i, sample) for i in range(len(lines)) for sample in samples]
        headers = [names[sample] for _, sample in keys]
        cells = [{field: lines[i][name] for field, name in names[sample].items()} for i, sample in keys]
        checked = AUTHORS_SAMPLE.check(cells, path.name, row_numbers=[i for i, _ in keys], headers=headers)
        # Derived cells are never used, so a rejected one is not a failure of its sample (it is still listed).
        counted = [0] * len(cells)
        for issue in checked.issues:
            if issue.column not in {headers[issue.position or 0].get(f) for f in _DERIVED_FIELDS}:
                counted[issue.position or 0] += 1
        issues.extend(checked.issues)
        for position, ((i, sample), values) in enumerate(zip(keys, checked.rows, strict=True)):
            instance = instances.rows[i]
            index = 0 if sample is None else sample
            row = _base_row(task, model, method_raw, seed, ids[i], path)
            row.update(
                sa_iteration=steps[prefix],
                sample=index,
                combination=instance["combination"],
                head=instance["root"],
                modifier=instance["modifier"],
                property=instance["property"],
                judge=judge,
                invalid_cells=counted[position] + row_bad[i],
            )
            raw_list = values.get("generated_") or []
            raw = raw_list[index] if index < len(raw_list) else None
            parsed = parse_answer(spec, raw, instance["root"] or "") if raw is not None else None
            # The answer the authors judged (their parsed columns); ours only where they stored none.
            row["answer"] = values.get("answer") or (parsed.value if parsed else None)
            if spec.completes_phrase:
                row["answer_modifier"] = values.get("answer_modifier") or (parsed.modifier if parsed else None)
                r_hp = instance.get("head_relevance")
            else:
                r_hp = values.get("root_relevance")
            row["answer_raw"] = raw
            row["parse_ok"] = bool(parsed.ok) if parsed else False
            row["parse_error"] = parsed.error if parsed else _no_raw(raw_column, values, cells[position])
            relevances = (values.get("combination_relevance"), r_hp, values.get("modifier_relevance"))
            # An instance that cannot be trusted makes the sample a counted failure.
            set_scores(row, Relevances(*((None, None, None) if row_bad[i] else relevances)))
            # (|stored − recomputed|, row, column) of every stored derived cell that disagrees with ccpt's value.
            for field, value in zip(_DERIVED_FIELDS, (row["r_hmp"], row["score"], row["score"]), strict=True):
                stored, column = values.get(field), headers[position].get(field)
                if stored is not None and column and (value is None or abs(stored - value) > DERIVED_TOLERANCE):
                    mismatches.append((math.inf if value is None else abs(stored - value), i, column))
            rows.append(row)
    _note_issues(path, issues, notes)
    if mismatches:
        notes.append(derived_note(path.name, mismatches, "indiv_max / emergence / cancellation", "the relevances"))
    out = tidy_frame(rows)
    out.attrs["judges"] = judges  # every judge the file's metadata names (ccpt.judging.teacher_pairs checks them)
    return out


def _no_raw(raw_column: str | None, values: Mapping[str, Any], cells: Mapping[str, Any]) -> str:
    """Why a sample has no raw reply: no raw column, an empty cell, a rejected cell, or fewer replies stored."""
    if raw_column is None or not str(cells.get("generated_", "")).strip():
        return "no raw generation stored"
    if values.get("generated_") is None:
        return f"raw generation cell {raw_column!r} is not a list of generations (invalid cell)"
    return "no raw generation stored for this sample"


def _note_issues(path: Path, issues: Sequence[CellIssue], notes: list[str]) -> None:
    """One note listing the file's rejected cells (a cell shared by several samples is listed once)."""
    from ccpt.schemas.base import summary_line

    if distinct := list({(i.row, i.column): i for i in issues}.values()):
        notes.append(f"{path.name}: {summary_line(distinct)}")


# ----------------------------------------------------------------------- Spreading Activation files

# The authors' per-step files name the step after the run: "<task>_<model>_<method>-<t>.csv".
_STEP_SUFFIX = re.compile(r"-(?P<step>\d+)$")


def _sa_step(path: Path, prefix: str, lines: Sequence[Mapping[str, Any]], notes: list[str]) -> int | None:
    """The step t of the concept set C_t a Spreading Activation file's answers came from (by its name), or None. Its
    ``C_T`` column checks the name: a per-step file shows C_t − C_0 in every row (a DataError naming the steps its
    content fits otherwise: a file renamed to another step); a file whose ``C_T`` contradicts its name in most rows
    is noted: a Table-3 file shows the final set with the seed words, a no-filter file the final set − C_0."""
    _, sa_filter = reference_method(prefix.rpartition("_")[2])
    if sa_filter is None:
        return None
    match = _STEP_SUFFIX.search(path.stem)
    step = int(match["step"]) if match and path.stem[: match.start()].endswith(prefix) else None
    table3 = step is None and sa_filter
    fits: list[bool] = []
    fitting: Counter[int] = Counter()  # per step, the rows whose C_T is C_step − C_0
    for line in lines:
        sets, shown = parse_step_sets(line.get("C")), line.get("C_T")
        shown = split_reply_list(shown) if isinstance(shown, str) else None
        if sets and 0 in sets and shown is not None:
            seeds = set() if table3 else set(sets[0])
            # Shown: C_step (the final set without a step or past the last one), minus C_0 except in a Table-3 file.
            fits.append(set(shown) == set(sets.get(step, sets[max(sets)])) - seeds)
            fitting.update(t for t, concepts in sets.items() if set(shown) == set(concepts) - seeds)
    if step is not None and not all(fits):
        others = [t for t, n in sorted(fitting.items()) if n == len(fits)] or [fitting.most_common(1)[0][0]]
        raise DataError(
            f"{path}: the file name says step {step}, but its C_T column is not C_{step} without the seed words in "
            f"{len(fits) - sum(fits)} of {len(fits)} rows (its content fits step {' / '.join(map(str, others))})",
            "a per-step file renamed? give each step's file its own name <run>-<t>.csv",
        )
    if 2 * sum(fits) < len(fits):
        what = (
            "the final concept set with the seed words (a Table-3 file)"
            if table3
            else "the final concept set without the seed words (a no-filter file)"
        )
        notes.append(
            f"{path.name}: the file name says its answers were shown {what}, but its C_T column matches that in only "
            f"{sum(fits)} of {len(fits)} rows; check which run the file holds"
        )
    return step


def parse_step_sets(cell: Any) -> dict[int, list[str]] | None:
    """The authors' ``C`` cell ``{0: ['boat', 'rock'], 1: [...]}`` read without evaluation; None if not such a dict."""
    if not isinstance(cell, str):
        return None
    text = cell.strip()
    if not (text.startswith("{") and text.endswith("}")) or len(text) > 1_000_000:
        return None
    out: dict[int, list[str]] = {}
    i = 1
    while key := _STEP_KEY.match(text, i):
        end = list_literal_end(text, key.end())
        items = None if end is None else split_reply_list(text[key.end() : end + 1])
        if end is None or items is None:
            return None
        out[int(key[1])] = items
        i = end + 1
        if not (comma := _COMMA.match(text, i)):
            break
        i = comma.end()
    return None if text[i:-1].strip() else out


_STEP_KEY = re.compile(r"\s*(\d+)\s*:\s*(?=\[)")
_COMMA = re.compile(r"\s*,")


def _type_prediction_rows(
    frame: pd.DataFrame, path: Path, dataset: CCPTDataset | None, notes: list[str]
) -> pd.DataFrame:
    from ccpt.schemas.results import AUTHORS_TYPE

    answer_columns = [c for c in frame.columns if _TP_COLUMN.match(c)]
    _require(path, frame.columns, ["combination", "property", "human_label_majority"], TYPE_PREDICTION)
    lookup: dict[tuple[str, str, str], list[str]] = {}
    types: dict[tuple[str, str], set[str]] = {}  # (combination, property) → the dataset's gold types of that pair
    if dataset is not None:
        for record in dataset.paper_records:
            lookup.setdefault((record.type, record.combination.lower(), record.property.lower()), []).append(record.id)
            types.setdefault((record.combination.lower(), record.property.lower()), set()).add(record.type)
    else:
        notes.append(f"{path.name}: no dataset given; instance ids are row positions ('{TYPE_PREDICTION}:row<i>')")
    rows: list[dict[str, Any]] = []
    lines = frame.to_dict("records")
    issues: list[CellIssue] = []
    for column in answer_columns:
        model = _TP_COLUMN.match(column)["model"]  # type: ignore[index]
        unused = {key: list(ids) for key, ids in lookup.items()}  # every model's column matches afresh
        shape = dict(
            combination="combination", property="property", gold_type="human_label_majority", generated_=column
        )
        checked = AUTHORS_TYPE.check(
            [{field: line[name] for field, name in shape.items()} for line in lines], path.name, headers=shape
        )
        issues.extend(checked.issues)
        bad = checked.bad_cells()
        unmatched, relabelled, others = 0, 0, 0
        for i, values in enumerate(checked.rows):
            instance, known = _type_instance(values, i, unused, types if dataset is not None else None)
            unmatched += not known
            relabelled += known is None
            others += values["gold_type"] == OTHERS and bool(types.get(_pair(values)))
            raw = (values["generated_"] or [None])[0]
            parsed = parse_answer(TASK_SPECS[TYPE_PREDICTION], raw) if raw is not None else None
            # Without a usable gold label (or reply) the sample cannot be scored: a counted failure.
            usable = parsed is not None and parsed.ok and values["gold_type"] is not None and not bad[i]
            row = _base_row(TYPE_PREDICTION, model, "naive", 0, instance, path)
            row.update(
                combination=values["combination"],
                property=values["property"],
                gold_type=values["gold_type"],
                invalid_cells=bad[i],
                judge=None,
                answer_raw=raw,
                answer=parsed.value if parsed and parsed.ok else None,
                pred_type=parsed.value if usable else None,
                parse_ok=bool(parsed and parsed.ok),
                parse_error=parsed.error if parsed else _no_raw(column, values, {"generated_": lines[i][column]}),
            )
            rows.append(row)
        if unmatched > relabelled:
            missing = unmatched - relabelled
            notes.append(f"{path.name}: {missing} non-'others' rows not found in the dataset; ids are row positions")
        if relabelled:  # the dataset's pair under another gold type: an edited label would move Table 5 unsaid
            notes.append(
                f"{path.name}: {relabelled} row(s) give a (combination, property) of the dataset another gold type "
                f"than the dataset's ({column}); scored as the file says, ids are row positions"
            )
        if others:  # the authors' own file has 3 (pairs the dataset holds as canceled): said, as the file has them
            notes.append(
                f"{path.name}: {others} 'others' row(s) are (combination, property) pairs the dataset holds under "
                f"another gold type ({column}); scored as 'others', as the file says"
            )
    _note_issues(path, issues, notes)
    return tidy_frame(rows)


def _pair(values: Mapping[str, Any]) -> tuple[str, str]:
    """A Task-3 row's (combination, property) as the dataset's lookup keys it."""
    from ccpt.dataset import clean_combination

    return clean_combination(str(values["combination"] or "")).lower(), str(values["property"] or "").lower()


def _type_instance(
    values: Mapping[str, Any],
    i: int,
    lookup: Mapping[tuple[str, str, str], list[str]],
    types: Mapping[tuple[str, str], set[str]] | None,
) -> tuple[str, bool | None]:
    """A Task-3 row's instance id, and whether it was found: True (rows of 'others', or without a dataset, always
    are), False, or None when the dataset has its pair under another gold type (``types``: the dataset's types per
    pair; None: no dataset)."""
    positional = f"{TYPE_PREDICTION}:row{i}"
    gold, combination, prop = values["gold_type"], values["combination"], values["property"]
    if types is None or gold is None or combination is None or prop is None:
        return positional, True
    pair = _pair(values)
    ids = lookup.get((gold, *pair))
    if ids:
        return f"{gold}:{_take(ids)}", True
    if gold == OTHERS:  # no dataset record: named by its text, so a copied row is the same item
        return f"{TYPE_PREDICTION}:{OTHERS}:{'|'.join(pair)}", True
    return positional, None if types.get(pair, set()) - {gold} else False
