"""Rows that claim one identity (:data:`ccpt.rows.SAMPLE_IDENTITY`; docs/metrics.md, "Identity"): a repeat with the
same content is one answer read twice (dropped, with a warning), one with different content an error."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd

from ccpt.errors import DataError
from ccpt.rows import RUN_IDENTITY, SAMPLE_CONTENT, SAMPLE_IDENTITY
from ccpt.spec import TASK_SPECS


def deduplicate(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with each sample identity once, and the warnings saying what was dropped; a DataError (one line
    naming both sources) when two rows share an identity but not their content."""
    key = [c for c in SAMPLE_IDENTITY if c in frame.columns]
    repeated = frame.duplicated(key, keep=False)
    if not repeated.any():
        return frame, []
    content = [c for c in SAMPLE_CONTENT if c in frame.columns]
    # Compare cells as text: NaN, None and a missing value are the same "no value" in every reader.
    # ``read_from``: the file a row was read from when it is not its source (a tidy export), named in the error.
    files = ["read_from"] if "read_from" in frame.columns else []
    view = frame.loc[repeated, key + content + ["source", *files]].astype("string").fillna("")
    same = view.duplicated(key + content, keep="first")
    conflict = view[~same].duplicated(key, keep=False)
    if conflict.any():
        rows = view[~same][conflict]
        first = rows.iloc[0]
        other = rows[(rows[key] == first[key]).all(axis=1)].iloc[1]
        row = frame.loc[first.name]
        parts = [f"{name} {row[name]}" for name in ("task", "model", "method", "judge", "seed", "instance", "sample")]
        described = ", ".join(p for p in parts if not p.endswith((" None", " nan")))
        names = (first["source"], other["source"])
        if names[0] == names[1] and files:  # a tidy export beside its own source: name the files read
            names = (first["read_from"], other["read_from"])
        raise DataError(
            f"{names[0]} and {names[1]} hold different answers under one identity "
            f"({described}): two runs claim to be one",
            "report them separately, or give each run its own model name or judge",
        )
    dropped = view[same]
    # Per (source kept, source of the dropped repeat), in input order: how many rows were dropped.
    kept = view.drop_duplicates(key, keep="first")[[*key, "source"]].rename(columns={"source": "kept"})
    pairs = dropped[[*key, "source"]].merge(kept, on=key, how="left").groupby(["kept", "source"], sort=False).size()
    warnings = []
    for (kept_source, source), count in pairs.items():
        where = f"{source} repeats {count} row(s)" + ("" if source == kept_source else f" of {kept_source}")
        warnings.append(f"{where} with the same identity and answer: counted once, {count} dropped")
    return frame.drop(index=dropped.index), warnings


def one_spelling(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with variant cells recording the same arguments spelled apart (``--judge-arg w=4`` and ``w='4'``,
    whose labels read alike) as the first of them: one run read twice, never two runs pooled under one label."""
    if frame.empty or "variant" not in frame:
        return frame
    first: dict[str, object] = {}
    spelled = {
        v: first.setdefault(json.dumps(_arguments(v), sort_keys=True), v) for v in frame["variant"].dropna().unique()
    }
    return frame.assign(variant=frame["variant"].map(spelled)) if any(k != v for k, v in spelled.items()) else frame


def adopt_variants(frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Rows that record no run arguments (a tidy table exported before ``variant`` existed) take the arguments of a
    run whose rows they all repeat, answer for answer (noted), so a file beside its own source is one answer read
    twice, not a second row ``arguments unrecorded``; a file that repeats only some of them keeps none."""
    if frame.empty or "variant" not in frame:
        return frame
    cells = frame["variant"].astype("string").fillna("").str.strip()
    unrecorded = cells == ""
    if not unrecorded.any() or unrecorded.all():
        return frame
    key = [c for c in (*SAMPLE_IDENTITY, *SAMPLE_CONTENT) if c != "variant" and c in frame.columns]
    view = frame[key].astype("string").fillna("").assign(variant=cells)
    recorded = view[~unrecorded].drop_duplicates().groupby(key, sort=False)["variant"]
    found = view[unrecorded].merge(recorded.agg(lambda v: v.iloc[0] if len(v) == 1 else "").reset_index(), on=key,
                                    how="left", suffixes=("_own", ""))  # fmt: skip
    found.index = view.index[unrecorded]
    file = "read_from" if "read_from" in frame.columns else "source"
    groups = [frame.loc[found.index, file].astype(str), *(found[c] for c in ("task", "model", "method", "judge"))]
    adopted = found.groupby(groups, sort=False, dropna=False)["variant"].transform(
        lambda v: v.iloc[0] if v.notna().all() and v.nunique() == 1 and v.iloc[0] else None
    )
    adopted = adopted.dropna()
    if adopted.empty:
        return frame
    frame = frame.copy()
    frame.loc[adopted.index, "variant"] = adopted
    files = ", ".join(dict.fromkeys(frame.loc[adopted.index, file].astype(str)))
    notes.append(f"{len(adopted)} row(s) recording no run arguments ({files}) repeat a run's answers: read as its")
    return frame


def fill_judges(frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """A failed generative row without a judge (older tidy tables) joins the one judge its file names for that run
    (noted), so it counts as that run's failure. A row with a relevance but no judge is no judge's verdict: it keeps
    no judge (reports show it apart), noted."""
    if frame.empty or "judge" not in frame:
        return frame
    judge = frame["judge"].astype("string")
    generative = frame["task"].isin([t for t, s in TASK_SPECS.items() if s.generative])
    missing = generative & (judge.isna() | (judge.str.strip() == ""))
    scored = missing & frame[[c for c in ("r_np", "r_hp", "r_mp") if c in frame]].notna().any(axis=1)
    if scored.any():
        files = ", ".join(dict.fromkeys(frame.loc[scored, "source"].astype(str)))
        notes.append(f"{int(scored.sum())} scored row(s) name no judge ({files}): shown apart, under no judge")
    missing &= ~scored
    if not missing.any():
        return frame
    run = ["source", "task", "model", "method", "sa_filter", "protocol"]
    named = frame.loc[generative & ~missing, [*run, "judge"]].astype("string").fillna("").drop_duplicates()
    single = named.groupby(run)["judge"].agg(lambda j: j.iloc[0] if len(j) == 1 else None)
    keys = frame.loc[missing, run].astype("string").fillna("")
    found = [single.get(tuple(k)) for k in keys.itertuples(index=False)]
    frame = frame.copy()
    frame.loc[missing, "judge"] = found
    if filled := sum(f is not None for f in found):
        notes.append(f"{filled} unscored row(s) without a judge joined the one judge their file names for that run")
    return frame


def pooled_settings(settings: Mapping[tuple[str, ...], Mapping[str, str]]) -> list[str]:
    """One warning per run identity whose rows come from logs sent other generation settings (``settings``: per
    :data:`ccpt.rows.RUN_IDENTITY`, each setting line → a log that was sent it). A run's settings are part of its
    rows' variant; rows re-judged by a ccpt that did not record them there (their source's settings are in the
    re-judged log's metadata only) are pooled into one Table-3 row, and said."""
    warnings = []
    for key, sent in settings.items():
        if len(sent) < 2:
            continue
        named = [(name, value) for name, value in zip(RUN_IDENTITY, key, strict=True) if value not in ("None", "nan")]
        parts = [f"{name} {value}" for name, value in named if name in ("task", "model", "method", "judge")]
        seen = "; ".join(f"{line} in {source}" for line, source in sent.items())
        warnings.append(
            f"rows of runs sent other generation settings are pooled into one row ({', '.join(parts)}: {seen}); "
            "report each setting's logs apart (one --log-dir per setting)"
        )
    return warnings


UNRECORDED = "unrecorded"
# The generation settings that change answers, as a log records what the model was sent (``log.plan.config``: the
# task's, the protocol's and the command line's, resolved and typed), each a run argument of its own
# (ccpt.results.inspect_logs.run_variant). The run seed is an identity column of its own.
ANSWER_SETTINGS = (
    "temperature", "top_p", "top_k", "max_tokens", "frequency_penalty", "presence_penalty", "stop_seqs",
    "num_choices", "best_of", "logit_bias", "system_message", "effort", "reasoning_effort", "reasoning_tokens",
)  # fmt: skip
JUDGE_ARG = "--judge-arg"  # how a variant names the judge's model arguments, as `ccpt run` takes them
REJUDGED_FROM = "re-judged from"  # a re-judged row's variant argument: the judge of the answers it re-judged
NOT_REJUDGED = "not re-judged"  # the tag of a run's own rows beside re-judged copies of them


def with_argument(variant: object, name: str, value: str) -> str:
    """A row's ``variant`` cell with one more argument, ``name`` = ``value`` (sorted JSON)."""
    return json.dumps({**(_arguments(variant) or {}), name: value}, sort_keys=True)


def rejudged_variant(variant: object, original: str, judge_args: Mapping[str, str]) -> str:
    """A re-judged row's ``variant``: its source's arguments, the judge its answers had (``re-judged from``, with the
    arguments that judge was given: they tell its source run apart, not its new scores) and the re-judging judge's
    own arguments (``judge_args``, named as `ccpt run` records them)."""
    arguments = _arguments(variant) or {}
    given = {k: arguments.pop(k) for k in sorted(arguments) if k.startswith(f"{JUDGE_ARG} ")}
    arguments[REJUDGED_FROM] = ", ".join([original, *(f"{k} {v}" for k, v in given.items())])
    return json.dumps({**arguments, **judge_args}, sort_keys=True)


def _arguments(variant: object) -> dict[str, str] | None:
    """A row's ``variant`` cell as name → value text (None: not recorded); a cell that is no JSON object is one
    value of its own (a hand-edited table), never an error."""
    if variant is None or (isinstance(variant, float) and variant != variant) or not str(variant).strip():
        return None
    try:
        values = json.loads(str(variant))
    except ValueError:
        values = None
    if not isinstance(values, dict):
        return {"arguments": str(variant)}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


def _absent(name: str) -> str:
    """What a recorded variant without argument ``name`` says: a -M or --judge-arg argument, a generation setting or
    an instance set every log records when given was not given ("unset"; before: "-M vocabulary unrecorded" beside
    a run given -M vocabulary=3); a task argument older logs did not record is unrecorded."""
    unset = name.startswith(("-M ", f"{JUDGE_ARG} ")) or name in ("limit", "sample_id", *ANSWER_SETTINGS)
    return "unset" if unset else UNRECORDED


def variant_tags(frame: pd.DataFrame) -> pd.Series:
    """Per row, what tells its run apart from the other runs of its task, model and method (``oracle_n 2``, ``split
    train, limit 8``): the arguments whose values differ among them (:data:`ccpt.rows.RUN_IDENTITY`'s
    ``variant``), then the judge a re-judged row's answers had (``re-judged from A``, or ``not re-judged``) when
    that differs; "" where the task, model and method have one run. Runs of other tasks are never told apart by
    their arguments: a task takes its own (Task 3 has no judge retries), and its rows are other columns."""
    tags = pd.Series("", index=frame.index, dtype=object)
    if frame.empty or "variant" not in frame:
        return tags
    cells = frame["variant"].astype("string").fillna("")
    keys = [frame[c].astype(str) for c in ("task", "model", "method") if c in frame]
    for _, group in cells.groupby(keys, sort=False):
        parsed = {v: _arguments(v) or {} for v in group.unique()}
        origins = {v: a.pop(REJUDGED_FROM, None) for v, a in parsed.items()}
        # A re-judged copy of a file that records no arguments records its origin alone: still "unrecorded".
        label = _told_apart({v: a or None for v, a in parsed.items()})
        if len(set(origins.values())) > 1:
            label = {
                v: ", ".join(filter(None, (t, f"{REJUDGED_FROM} {origins[v]}" if origins[v] else NOT_REJUDGED)))
                for v, t in label.items()
            }
        tags[group.index] = group.map(label)
    return tags


def _told_apart(arguments: Mapping[str, dict[str, str] | None]) -> dict[str, str]:
    """Per variant cell, the arguments whose values differ among the cells ("" when they are all one; ``arguments
    unrecorded`` for a cell that records none beside one that does)."""
    distinct = {json.dumps(a, sort_keys=True): a for a in arguments.values()}
    if len(distinct) < 2:
        return dict.fromkeys(arguments, "")
    recorded = [a for a in distinct.values() if a is not None]
    names = sorted({k for a in recorded for k in a})
    partial = len(recorded) < len(distinct)  # beside rows that record none, every recorded argument tells apart
    differ = [k for k in names if partial or len({a.get(k) for a in recorded}) > 1]

    # A value spelled as the absent word is quoted: `--judge-arg w "unset"` beside `--judge-arg w unset`.
    def shown(a: dict[str, str], k: str) -> str:
        return _absent(k) if k not in a else json.dumps(a[k]) if a[k] == _absent(k) else a[k]

    return {
        v: f"arguments {UNRECORDED}" if a is None else ", ".join(f"{k} {shown(a, k)}" for k in differ)
        for v, a in arguments.items()
    }


# Fewer instances than this can agree across sampled seeds by chance (a one-word property, a short reply).
_COPIED_SEED_MIN = 20


def copied_seeds(frame: pd.DataFrame, skip_sources: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Warnings naming each generative run whose two seeds hold the same replies and relevances on every one of at
    least ``_COPIED_SEED_MIN`` instances: the ± over seeds counts them as two draws. A copied seed, a cached reply,
    or a greedy model whose seeds change nothing. ``skip_sources``: files checked by their own reader (the
    authors')."""
    if frame.empty or "seed" not in frame or "answer_raw" not in frame:
        return []
    frame = frame[~frame["source"].isin(skip_sources)] if skip_sources else frame
    # Task 3's reply is one of four labels: a confident model gives the same label under every seed.
    generative = [spec is not None and spec.generative for spec in map(TASK_SPECS.get, frame["task"])]
    frame = frame.loc[pd.Series(generative, index=frame.index, dtype=bool)]
    run = [c for c in RUN_IDENTITY if c in frame.columns]
    key = [c for c in ("instance", "sample", "sa_iteration") if c in frame.columns]
    content = [c for c in SAMPLE_CONTENT if c in frame.columns]
    # The seed kept a number: seeds in numeric order (10 after 2).
    view = frame[[*run, *key, *content]].astype("string").fillna("").assign(seed=frame["seed"])
    # One hash per answer (where and what), then per run and seed the sorted hashes: equal tuples, equal seeds.
    view = view.assign(_answer=pd.util.hash_pandas_object(view[[*key, *content]], index=False).to_numpy())
    replied = view["answer_raw"].str.strip() != ""
    view = view[replied]
    warnings = []
    for names, group in view.groupby(run, sort=False, dropna=False):
        per_seed = group.groupby("seed", sort=True)["_answer"].agg(lambda h: tuple(sorted(h)))
        if len(per_seed) < 2:
            continue
        seen: dict[tuple[int, ...], str] = {}
        for seed, hashes in per_seed.items():
            instances = group.loc[group["seed"] == seed, "instance"].nunique()
            if instances >= _COPIED_SEED_MIN and (first := seen.get(hashes)) is not None:
                identity = dict(zip(run, names if isinstance(names, tuple) else (names,), strict=True))
                described = " ".join(str(identity.get(c, "")) for c in ("task", "model", "method"))
                warnings.append(
                    f"{described}: seeds {first} and {seed} hold the same replies and relevances on every one of "
                    f"their {instances} instances: the ± over seeds counts them as two draws (a copied seed, a "
                    "cached reply, or decoding no seed changes)"
                )
            seen.setdefault(hashes, str(seed))
    return warnings
