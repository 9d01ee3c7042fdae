"""Measurements of docs/judge.md for the distilled judge (and any other judge).

    .venv/bin/python benchmarks/distilled_judge.py floor --data-dir DIR [--encoder all-mpnet-base-v2]  # floor, ridge
    .venv/bin/python benchmarks/distilled_judge.py frozen-cross --data-dir DIR --encoder all-mpnet-base-v2 --block 8
    .venv/bin/python benchmarks/distilled_judge.py ood --data-dir DIR --reference DIR --judge distilled
    .venv/bin/python benchmarks/distilled_judge.py cost --data-dir DIR --judge distilled [--n 30]
    .venv/bin/python benchmarks/distilled_judge.py ensemble --data-dir DIR --heads A.safetensors B.safetensors
    .venv/bin/python benchmarks/distilled_judge.py table3 --data-dir DIR --reference DIR --heads shipped [--raw]

- ``floor``: the role-only predictor (mean training target of the pair's role: noun phrase, head or
  modifier) and approach 1 (frozen MiniLM sentence embeddings of concept and property → ridge, 5-fold
  row-grouped CV on the training pool to pick alpha), both on the held-out test pairs.
- ``ood`` (measure 3): agreement with the GPT-4o judge scores stored with GPT-4o's own PI-emergent,
  PI-canceled and NPC-emergent answers (one pair per judged (concept, answer) of the reference CSVs).
- ``cost`` (measure 4): seconds per judged pair, one pair at a time through ccpt's Judge with an empty
  Inspect cache; median over the first ``n`` test pairs, one run.
- ``ensemble`` (approach 7): each head alone and the mean of their relevances, on validation fold 0 of the
  training pool (3-rater pairs: the selection figure) and on the held-out test pairs (with bootstrap CIs).
  ``shipped`` stands for the head inside the package.
- ``table3`` (measures 2 and 3 on the shipped GPT-4o result files): every parsed answer of the Base,
  Multi-Oracle and the eight Table-3 Spreading Activation files (named explicitly, so the per-step files are
  never read) is re-judged by the head(s) (several: the mean of their raw relevances) with and without the
  head's calibration map. Measure 2: agreement with the GPT-4o judge scores stored with the answers (one
  point per answer and concept). Measure 3: Table 3 (the report's own code, ``--stat paper``) under the
  distilled judge against the stored GPT-4o cells, per cell, with the mean absolute difference over the
  Base/SA cells and the per-column Kendall τ of the method ranking (``ccpt.report.cross_judge``). Pairs
  are scored in batches straight through the head (the same relevance the provider returns, see
  tests/test_distilled.py); ``ccpt rejudge`` gives the same cells through Inspect.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from ccpt.dataset import load_dataset
from ccpt.judging.agreement import agreement_ci
from ccpt.judging.rated_pairs import ROLES, folds, heldout_pairs, training_pairs


def floor(data_dir: str, encoder_name: str = "all-minilm-l6-v2") -> dict:
    import numpy as np
    import torch

    from ccpt.judging.encoder import load_encoder, mean_pool

    ds = load_dataset(data_dir)
    train, test = training_pairs(ds), heldout_pairs(ds)
    role_mean = {r: sum(p.target for p in train if p.role == r) / sum(p.role == r for p in train) for r in ROLES}
    out = {"role_floor": agreement_ci([p.human for p in test], [role_mean[p.role] for p in test]).as_dict()}

    torch.set_num_threads(1)
    encoder = load_encoder(name=encoder_name)
    texts = sorted({s for p in [*train, *test] for s in (p.concept, p.property)})
    vectors = {}
    with torch.inference_mode():
        for start in range(0, len(texts), 256):
            chunk = texts[start : start + 256]
            batch = encoder.batch(chunk)
            pooled = torch.nn.functional.normalize(mean_pool(encoder.model(batch), batch["attention_mask"]), dim=-1)
            vectors.update(zip(chunk, pooled.numpy(), strict=True))

    def features(pairs):
        u = np.stack([vectors[p.concept] for p in pairs])
        v = np.stack([vectors[p.property] for p in pairs])
        words = np.array([[min(len(p.concept.split()), 6)] for p in pairs], dtype=float)
        return np.hstack([u, v, u * v, np.abs(u - v), (u * v).sum(1, keepdims=True), words])

    def ridge(x, y, w, alpha):
        sw = np.sqrt(w)[:, None]
        xa = np.hstack([x, np.ones((len(x), 1))]) * sw
        reg = alpha * np.eye(xa.shape[1])
        reg[-1, -1] = 0.0
        return np.linalg.solve(xa.T @ xa + reg, xa.T @ (y * sw[:, 0]))

    x, xt = features(train), features(test)
    y = np.array([p.target for p in train])
    three = np.array([len(p.ratings) > 1 for p in train])
    fold = np.array(folds(train, 5))
    best = None
    for alpha in (1.0, 10.0, 100.0):
        for single in (1.0, 0.3, 0.0):
            w = np.where(three, 1.0, single)
            cv = np.zeros(len(y))
            for k in range(5):
                fit = (fold != k) & (w > 0)
                beta = ridge(x[fit], y[fit], w[fit], alpha)
                cv[fold == k] = np.hstack([x[fold == k], np.ones(((fold == k).sum(), 1))]) @ beta
            r = float(np.corrcoef(y[three], cv[three])[0, 1])
            if best is None or r > best[0]:
                best = (r, alpha, single)
    r, alpha, single = best
    w = np.where(three, 1.0, single)
    beta = ridge(x[w > 0], y[w > 0], w[w > 0], alpha)
    pred = np.hstack([xt, np.ones((len(xt), 1))]) @ beta
    out["frozen_ridge"] = {
        "cv_pearson_3rater": round(r, 4),
        "alpha": alpha,
        "single_rater_weight": single,
        "test": agreement_ci([p.human for p in test], [float(v) for v in pred]).as_dict(),
    }
    return out


def _continue_blocks(encoder, states: list, start: int, stop: int, batch_size: int = 64) -> list:
    """Run blocks ``start:stop`` on per-pair ``[tokens, hidden]`` states (outputs of block ``start``)."""
    import torch

    from ccpt.judging.cross_encoder import _pad

    out: list = []
    with torch.inference_mode():
        for i in range(0, len(states), batch_size):
            chunk = states[i : i + batch_size]
            x, mask = _pad(chunk)
            hidden = encoder.model.run(x, mask, start, stop)
            out.extend(hidden[j, : len(chunk[j])].clone() for j in range(len(chunk)))
    return out


def frozen_cross(data_dir: str, encoder_name: str, split: int, cache_dir: str | None, from_block: int = 0) -> dict:
    """Frozen cross-encoder features: the mean-pooled output of block ``split`` for the (concept, property)
    pair → ridge (alpha by 5-fold row-grouped CV on the 3-rater training pairs) → held-out test pairs.

    With ``cache_dir`` = the training cache of ``ccpt judge train --cache-dir`` and the same split, the training
    pairs' block outputs are read from there (the same cache key), so only the test pairs are run.
    """
    import numpy as np
    import torch

    from ccpt.judging.cross_encoder import TrainConfig, lower_states
    from ccpt.judging.encoder import load_encoder

    torch.set_num_threads(1)
    ds = load_dataset(data_dir)
    pool, test = training_pairs(ds), heldout_pairs(ds)
    config = TrainConfig()
    fold_ids = folds(pool, config.folds, config.seed)
    # The pairs `ccpt judge train` fits on (3-rater pairs outside validation fold 0), in its order.
    train = [p for p, k in zip(pool, fold_ids, strict=True) if k != config.validation_fold and len(p.ratings) > 1]
    encoder = load_encoder(name=encoder_name)
    cache = Path(cache_dir) if cache_dir else None
    started = time.perf_counter()
    # With --from-block, the training pairs' cached outputs of that block (a training run's cache) are carried on.
    first = from_block or split
    states = lower_states(encoder, first, [(p.concept, p.property) for p in train], cache_dir=cache)
    if first < split:
        states = _continue_blocks(encoder, states, first, split)
    test_states = lower_states(encoder, split, [(p.concept, p.property) for p in test])
    seconds = time.perf_counter() - started

    def pooled(items):
        return np.stack([s.mean(0).numpy() for s in items])

    x, xt = pooled(states), pooled(test_states)
    mean, std = x.mean(0), x.std(0) + 1e-6
    x, xt = (x - mean) / std, (xt - mean) / std
    y = np.array([p.target for p in train])
    row_fold = np.array(folds(train, 5, 1))

    def ridge(a, b, alpha):
        a1 = np.hstack([a, np.ones((len(a), 1))])
        reg = alpha * np.eye(a1.shape[1])
        reg[-1, -1] = 0.0
        return np.linalg.solve(a1.T @ a1 + reg, a1.T @ b)

    best = None
    for alpha in (10.0, 100.0, 1000.0, 10000.0):
        cv = np.zeros(len(y))
        for k in range(5):
            beta = ridge(x[row_fold != k], y[row_fold != k], alpha)
            cv[row_fold == k] = np.hstack([x[row_fold == k], np.ones(((row_fold == k).sum(), 1))]) @ beta
        r = float(np.corrcoef(y, cv)[0, 1])
        if best is None or r > best[0]:
            best = (r, alpha)
    r, alpha = best
    pred = np.hstack([xt, np.ones((len(xt), 1))]) @ ridge(x, y, alpha)
    return {
        "encoder": encoder_name,
        "block": split,
        "train_pairs": len(train),
        "cv_pearson": round(r, 4),
        "alpha": alpha,
        "frozen_seconds": round(seconds, 1),
        "test": agreement_ci([p.human for p in test], [float(v) for v in pred]).as_dict(),
        "test_predictions": [round(float(v), 5) for v in pred],
    }


def ood(data_dir: str, reference: str, judge: str) -> dict:
    from ccpt.eval.judge import live_scores
    from ccpt.judges import model_name as judge_model_name
    from ccpt.results import from_reference_csv

    ds = load_dataset(data_dir)
    pairs: list[tuple[str, str]] = []
    stored: list[float] = []
    for name in ("pi_emergent_gpt-4o_naive.csv", "pi_canceled_gpt-4o_naive.csv", "npc_emergent_gpt-4o_naive.csv"):
        frame = from_reference_csv(Path(reference) / name, ds)
        for row in frame.to_dict("records"):
            if not row["parse_ok"] or not row["answer"]:
                continue
            if row["task"] == "npc_emergent":
                candidates = [
                    (row["answer"], row["property"], row["r_np"]),
                    (row["answer_modifier"], row["property"], row["r_mp"]),
                ]
            else:
                candidates = [
                    (row["combination"], row["answer"], row["r_np"]),
                    (row["head"], row["answer"], row["r_hp"]),
                    (row["modifier"], row["answer"], row["r_mp"]),
                ]
            for concept, prop, value in candidates:
                if concept and prop and value is not None and value == value:
                    pairs.append((str(concept), str(prop)))
                    stored.append(float(value))
    model = judge_model_name(judge)
    scores = live_scores(model, "expected" if model.startswith("gguf/") else "text", pairs)
    return {"judge": model, "vs": "stored GPT-4o judge scores", **agreement_ci(stored, scores).as_dict()}


def cost(data_dir: str, judge: str, n: int) -> dict:
    os.environ["INSPECT_CACHE_DIR"] = tempfile.mkdtemp(prefix="ccpt-cost-")  # every call is a real call
    from inspect_ai.model import get_model

    from ccpt.eval.judge import Judge
    from ccpt.judges import model_name as judge_model_name

    ds = load_dataset(data_dir)
    model = judge_model_name(judge)
    scorer = Judge(get_model(model), mode="expected" if model.startswith("gguf/") else "text")  # type: ignore[arg-type]
    asyncio.run(scorer.relevance("warm-up concept", "warm-up property"))  # model load is not a per-pair cost
    seconds = []
    for p in heldout_pairs(ds)[:n]:
        started = time.perf_counter()
        asyncio.run(scorer.relevance(p.concept, p.property))
        seconds.append(time.perf_counter() - started)
    return {
        "judge": model,
        "n": len(seconds),
        "median_s": statistics.median(seconds),
        "mean_s": statistics.fmean(seconds),
    }


def ensemble(data_dir: str, heads: list[str]) -> dict:
    from itertools import combinations

    from ccpt.judging.cross_encoder import TrainConfig
    from ccpt.judging.distilled import load_judge
    from ccpt.stats import pearson

    ds = load_dataset(data_dir)
    pool = training_pairs(ds)
    config = TrainConfig()  # the shipped split: fold 0 of 5, seed 0
    fold_ids = folds(pool, config.folds, config.seed)
    sets = {
        "validation_3rater": [p for p, k in zip(pool, fold_ids, strict=True) if k == 0 and len(p.ratings) > 1],
        "test": heldout_pairs(ds),
    }
    # Raw (uncalibrated) relevances: the approaches are compared on the heads' own outputs.
    judges = {h: load_judge(None if h == "shipped" else Path(h), calibrated=False) for h in heads}
    subsets = [c for k in range(2, len(heads) + 1) for c in combinations(heads, k)]
    result: dict = {"heads": heads, "seconds": {}}
    for name, pairs in sets.items():
        texts = [(p.concept, p.property) for p in pairs]
        scores = {}
        for h, j in judges.items():
            started = time.perf_counter()
            scores[h] = j.score(texts)
            result["seconds"][f"{h} {name}"] = round(time.perf_counter() - started, 1)
        for subset in subsets:
            scores[" + ".join(subset)] = [statistics.fmean(v) for v in zip(*(scores[h] for h in subset), strict=True)]
        if name == "test":
            result[name] = {h: agreement_ci([p.human for p in pairs], s).as_dict() for h, s in scores.items()}
        else:
            targets = [p.target for p in pairs]
            result[name] = {h: round(pearson(targets, s), 4) for h, s in scores.items()}
    return result


# Base, the nine Table-3 Spreading Activation files and Multi-Oracle, by name (never the per-step files).
TABLE3_FILES = (
    *(
        f"{task}_gpt-4o_{method}.csv"
        for task in ("pi_emergent", "pi_canceled", "npc_emergent")
        for method in ("naive", "sa-llm", "sa-conceptnet", "sa-llm&conceptnet")
    ),
    "pi_emergent_gpt-4o_multi.csv",
)


def table3_measures(data_dir: str, reference: str, heads: list[str]) -> dict:
    import math

    from ccpt.judging.distilled import load_judge
    from ccpt.report.cross_judge import cross_judge
    from ccpt.results import load_results, set_scores
    from ccpt.results.paper_scores import pair_key
    from ccpt.scoring import Relevances
    from ccpt.spec import TASK_SPECS

    ds = load_dataset(data_dir)
    stored = load_results([Path(reference) / name for name in TABLE3_FILES], ds)
    rows = stored.to_dict("records")
    wanted: dict[int, list[tuple[str, str]]] = {}
    for i, row in enumerate(rows):
        if row["parse_ok"] and isinstance(row["answer"], str) and row["answer"]:
            modifier = row["answer_modifier"] if isinstance(row["answer_modifier"], str) else None
            concepts, prop = TASK_SPECS[row["task"]].judged_pairs(row, row["answer"], modifier)
            wanted[i] = [pair_key(c, prop) for c in concepts]
    unique = sorted({k for keys in wanted.values() for k in keys})
    judges = [load_judge(None if h == "shipped" else Path(h), calibrated=False) for h in heads]
    started = time.perf_counter()
    raw_by_head = [dict(zip(unique, j.score(unique), strict=True)) for j in judges]
    seconds = time.perf_counter() - started
    raw = {k: statistics.fmean(r[k] for r in raw_by_head) for k in unique}
    variants = {"raw": raw}
    if len(judges) == 1 and judges[0].calibration is not None:
        values = judges[0].calibration.apply([raw[k] for k in unique])
        variants["calibrated"] = dict(zip(unique, values, strict=True))
    result: dict = {
        "heads": heads,
        "files": list(TABLE3_FILES),
        "answers": len(wanted),
        "unique_pairs": len(unique),
        "scoring_seconds": round(seconds, 1),
        "notes": [judges[0].note()] if len(judges) == 1 else [j.note() for j in judges],
    }
    for name, scores in variants.items():
        rejudged, stored_points, new_points = [], [], []
        for i, row in enumerate(rows):
            new = dict(row)
            if i in wanted:
                values = [scores[k] for k in wanted[i]]
                for old, value in zip((row["r_np"], row["r_hp"], row["r_mp"]), values, strict=True):
                    if old is not None and not math.isnan(old):
                        stored_points.append(float(old))
                        new_points.append(value)
                set_scores(new, Relevances(*values))
            else:
                set_scores(new, Relevances(None, None, None))
            rejudged.append(new)
        frame = stored.copy()
        for column in ("r_np", "r_hp", "r_mp", "r_hmp", "score"):
            frame[column] = [r[column] for r in rejudged]
        frame["judge"] = f"distilled ({name})"
        view = cross_judge(stored, frame, "GPT-4o (stored)", f"distilled ({name})")
        base_sa = sorted({c.method for c in view.cells if c.method not in ("multi_oracle", "gold")})
        result[name] = {
            "ood_agreement_with_stored_gpt4o": agreement_ci(stored_points, new_points).as_dict(),
            "mean_abs_difference_base_sa": round(view.mean_absolute_difference(base_sa), 2),
            "mean_abs_difference_all": round(view.mean_absolute_difference(), 2),
            "cells": [
                {
                    "method": c.method,
                    "task": c.task,
                    "metric": c.metric,
                    "gpt4o": round(c.a, 1),
                    "distilled": round(c.b, 1),
                }
                for c in view.cells
            ],
            "kendall_tau": [
                {"task": r.task, "metric": r.metric, "methods": len(r.methods), "tau": r.tau, "same_best": r.same_best}
                for r in view.rankings
            ],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["floor", "frozen-cross", "ood", "cost", "ensemble", "table3"])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--reference", default=None)
    parser.add_argument("--judge", default="distilled")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--encoder", default="all-minilm-l6-v2", help="floor, frozen-cross: the frozen base encoder")
    parser.add_argument("--block", type=int, default=8, help="frozen-cross: the block whose output is pooled")
    parser.add_argument("--cache-dir", default=None, help="frozen-cross: `ccpt judge train --cache-dir`")
    parser.add_argument(
        "--from-block", type=int, default=0, help="frozen-cross: start from this block's cached outputs"
    )
    parser.add_argument("--heads", nargs="+", default=["shipped"], help="ensemble: head files, or 'shipped'")
    args = parser.parse_args()
    if args.what == "floor":
        result = floor(args.data_dir, args.encoder)
    elif args.what == "ensemble":
        result = ensemble(args.data_dir, args.heads)
    elif args.what == "frozen-cross":
        result = frozen_cross(args.data_dir, args.encoder, args.block, args.cache_dir, args.from_block)
    elif args.what == "table3":
        result = table3_measures(args.data_dir, args.reference, args.heads)
    elif args.what == "ood":
        result = ood(args.data_dir, args.reference, args.judge)
    else:
        result = cost(args.data_dir, args.judge, args.n)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
