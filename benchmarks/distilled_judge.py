"""Measurements of docs/judge.md for the distilled judge (and any other judge).

    .venv/bin/python benchmarks/distilled_judge.py floor --data-dir DIR        # role-only floor, frozen ridge
    .venv/bin/python benchmarks/distilled_judge.py ood --data-dir DIR --reference DIR --judge distilled
    .venv/bin/python benchmarks/distilled_judge.py cost --data-dir DIR --judge distilled [--n 30]
    .venv/bin/python benchmarks/distilled_judge.py ensemble --data-dir DIR --heads A.safetensors B.safetensors

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
from ccpt.judging.measure import agreement_ci
from ccpt.judging.rated_pairs import ROLES, folds, heldout_pairs, training_pairs


def floor(data_dir: str) -> dict:
    import numpy as np
    import torch

    from ccpt.judging.encoder import load_encoder, mean_pool

    ds = load_dataset(data_dir)
    train, test = training_pairs(ds), heldout_pairs(ds)
    role_mean = {r: sum(p.target for p in train if p.role == r) / sum(p.role == r for p in train) for r in ROLES}
    out = {"role_floor": agreement_ci([p.human for p in test], [role_mean[p.role] for p in test]).as_dict()}

    torch.set_num_threads(1)
    encoder = load_encoder()
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


def ood(data_dir: str, reference: str, judge: str) -> dict:
    from ccpt.cli.agreement import live_scores
    from ccpt.eval.distilled_provider import judge_model_name
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

    from ccpt.eval.distilled_provider import judge_model_name
    from ccpt.eval.judge import Judge

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
    judges = {h: load_judge(None if h == "shipped" else Path(h)) for h in heads}
    result: dict = {"heads": heads}
    for name, pairs in sets.items():
        texts = [(p.concept, p.property) for p in pairs]
        scores = {h: j.score(texts) for h, j in judges.items()}
        mean = [sum(values) / len(values) for values in zip(*scores.values(), strict=True)]
        if name == "test":
            result[name] = {
                **{h: agreement_ci([p.human for p in pairs], s).as_dict() for h, s in scores.items()},
                "mean": agreement_ci([p.human for p in pairs], mean).as_dict(),
            }
        else:
            targets = [p.target for p in pairs]
            result[name] = {h: round(pearson(targets, s), 4) for h, s in [*scores.items(), ("mean", mean)]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["floor", "ood", "cost", "ensemble"])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--reference", default=None)
    parser.add_argument("--judge", default="distilled")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--heads", nargs="+", default=["shipped"], help="ensemble: head files, or 'shipped'")
    args = parser.parse_args()
    if args.what == "floor":
        result = floor(args.data_dir)
    elif args.what == "ensemble":
        result = ensemble(args.data_dir, args.heads)
    elif args.what == "ood":
        result = ood(args.data_dir, args.reference, args.judge)
    else:
        result = cost(args.data_dir, args.judge, args.n)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
