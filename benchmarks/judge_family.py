"""A new judge family measured against today's judge (issue 41; docs/judge.md, *A decoder as the encoder*).

    .venv/bin/python benchmarks/judge_family.py features --data-dir DIR --reference DIR --work W   # slow, once
    .venv/bin/python benchmarks/judge_family.py evaluate --data-dir DIR --reference DIR --work W   # the table
    .venv/bin/python benchmarks/judge_family.py cost --work W [--n 30]                              # s per pair

The family: the embedded Qwen2.5-Coder-0.5B (the solver's GGUF, installed from PyPI) as a frozen scoring model.
``features`` runs its first ``--depth`` blocks (``ccpt.judging.qwen_features``) on every pair of the measured set
and caches, per pair, the mean-pooled and last-token states after blocks ``--layers`` in W/qwen-features.npz
(written every chunk, so a stopped run keeps what it did and a rerun continues). ``evaluate`` trains a ridge head
per held-out model (leave-one-model-out: the other two models' teacher pairs, GPT-4o's stored verdicts, plus
three-rater human training pairs), maps it onto GPT-4o's scale as today's judge is mapped (``fit_runs_map`` on the
training models' runs), and prints ``ccpt.judging.lomo``'s figures beside today's installed judge on the same
answers, with human agreement on the test concepts and on validation rows no model answered (new concepts).

The measured set is a seeded subset (the 2-core machine cannot run the 0.5B model on every pair in the time):
``--fraction`` of each task's test instances (the held-out model's Table-3 runs restricted to them; GPT-4o's
cells recomputed on the same instances), ``--validation-rows`` rows of validation fold 0 and ``--train-rows``
rows of the three-rater human training pool; all 1,305 test-concept pairs.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import pickle
import random
import statistics
import time
from pathlib import Path

import numpy as np


def _author_files(reference: Path) -> list[Path]:
    files = sorted(glob.glob(str(reference / "*.csv"))) + sorted(glob.glob(str(reference / "more-models" / "*.csv")))
    return [Path(p) for p in files]


def _sets(args):
    """(dataset, frames, teacher pairs, Table-3 runs per model on the sampled instances, human test-concept /
    validation / training pairs)."""
    from ccpt.dataset import load_dataset
    from ccpt.judging.lomo import table3_runs
    from ccpt.judging.rated_pairs import folds, pair_set, training_pairs
    from ccpt.judging.teacher_pairs import read_frames, teacher_pairs

    ds = load_dataset(args.data_dir)
    work, fraction = args.work, args.fraction
    cache = work / "frames.pkl"
    if cache.is_file():
        frames = pickle.loads(cache.read_bytes())  # the benchmark's own cache of the authors' files, in W
    else:
        frames = read_frames(_author_files(args.reference), ds, skipped=[])
        cache.write_bytes(pickle.dumps(frames))
    runs = table3_runs(frames)
    instances = sorted({(t, str(i)) for r in runs.values() for t, i in zip(r["task"], r["instance"], strict=True)})
    chosen = set(random.Random(0).sample(instances, round(len(instances) * fraction)))
    runs = {
        m: r[[(t, str(i)) in chosen for t, i in zip(r["task"], r["instance"], strict=True)]].reset_index(drop=True)
        for m, r in runs.items()
    }
    pool = training_pairs(ds)
    fold_ids = folds(pool, 5, 0)  # the shipped split: validation fold 0

    def rows(pairs, n, seed):
        sources = sorted({p.source for p in pairs})
        keep = set(random.Random(seed).sample(sources, min(n, len(sources))))
        return [p for p in pairs if p.source in keep]

    three = [(p, k) for p, k in zip(pool, fold_ids, strict=True) if len(p.ratings) > 1]
    validation = rows([p for p, k in three if k == 0], args.validation_rows, 1)
    train = rows([p for p, k in three if k != 0], args.train_rows, 2)
    return ds, frames, teacher_pairs(frames), runs, pair_set(ds, args.test_set), validation, train


def _texts(runs, test, validation, train) -> list[tuple[str, str]]:
    """Every distinct pair to embed: test concepts, validation, the runs' pairs, training."""
    from ccpt.judging.lomo import needed_pairs
    from ccpt.judging.rated_pairs import pair_key

    seen: dict[tuple[str, str], tuple[str, str]] = {}
    ordered = [(p.concept, p.property) for p in test + validation] + needed_pairs(list(runs.values()))
    ordered += [(p.concept, p.property) for p in train]
    for c, p in ordered:
        seen.setdefault(pair_key(c, p), (" ".join(c.split()), " ".join(p.split())))
    return list(seen.values())


def _load_features(work: Path) -> dict[tuple[str, str], np.ndarray]:
    path = work / "qwen-features.npz"
    if not path.is_file():
        return {}
    data = np.load(path)
    return {tuple(k.split("\t")): v for k, v in zip(data["keys"].tolist(), data["features"], strict=True)}


def features(args) -> None:
    """Embed every pair of the measured set not yet in W/qwen-features.npz (chunks of ``--chunk``, saved each)."""
    import torch

    from ccpt.io.weights import DEFAULT_SOLVER, resolve_gguf
    from ccpt.judging.qwen_features import QwenStates, pair_text
    from ccpt.judging.rated_pairs import pair_key

    torch.set_num_threads(args.threads)
    _, _, _, runs, test, validation, train = _sets(args)
    texts = _texts(runs, test, validation, train)
    done = _load_features(args.work)
    todo = [t for t in texts if pair_key(*t) not in done]
    print(f"{len(texts)} pairs in the measured set, {len(todo)} to embed", flush=True)
    if not todo:
        return
    started = time.monotonic()
    qwen = QwenStates(resolve_gguf(DEFAULT_SOLVER), max(args.layers))
    print(f"weights dequantised in {time.monotonic() - started:.0f}s", flush=True)
    started = time.monotonic()
    for start in range(0, len(todo), args.chunk):
        chunk = todo[start : start + args.chunk]
        # Sorted by length within the chunk: padding is per batch.
        chunk.sort(key=lambda t: len(qwen.tokens(pair_text(*t))))
        for i in range(0, len(chunk), 64):
            batch = chunk[i : i + 64]
            pooled = qwen.pooled([pair_text(*t) for t in batch], args.layers)
            stacked = np.concatenate([np.concatenate(pooled[layer], 1) for layer in args.layers], 1)
            for t, v in zip(batch, stacked, strict=True):
                done[pair_key(*t)] = v.astype(np.float16)
        keys = np.array(["\t".join(k) for k in done])
        tmp = args.work / "qwen-features.tmp.npz"
        np.savez(tmp, keys=keys, features=np.stack(list(done.values())), layers=np.array(args.layers))
        tmp.replace(args.work / "qwen-features.npz")
        elapsed = time.monotonic() - started
        print(f"{start + len(chunk)}/{len(todo)} in {elapsed:.0f}s ({elapsed / (start + len(chunk)):.3f}s/pair)",
              flush=True)  # fmt: skip


def today(args) -> None:
    """Each head of today's installed judge: its raw relevance of every pair the evaluation needs, cached in
    W/today-raw-<manifest sha256>.json (the map is applied in ``evaluate``)."""
    import torch

    from ccpt.judging.distilled import load_judge
    from ccpt.judging.rated_pairs import pair_key

    torch.set_num_threads(args.threads)
    judge = load_judge()
    out = args.work / f"today-raw-{judge.sha256[:12]}.json"
    if out.is_file():
        return
    _, _, _, runs, test, validation, _ = _sets(args)
    texts = _texts(runs, test, validation, [])
    texts.sort(key=lambda t: len(t[0]) + len(t[1]))
    started = time.monotonic()
    per_head = [h.raw(texts) for h in judge.heads]
    print(f"today's judge: {len(texts)} pairs, {len(judge.heads)} heads in {time.monotonic() - started:.0f}s")
    out.write_text(json.dumps({"\t".join(pair_key(*t)): list(v) for t, *v in zip(texts, *per_head, strict=True)}))


def _ridge_fit(x: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Ridge coefficients (intercept last, not penalised) on already standardised ``x``."""
    a = np.hstack([x, np.ones((len(x), 1))])
    reg = alpha * np.eye(a.shape[1])
    reg[-1, -1] = 0.0
    return np.linalg.solve(a.T @ a + reg, a.T @ y)


def _ridge_head(x: np.ndarray, y: np.ndarray, views: dict[str, slice]) -> tuple[str, float, float, object]:
    """The (view, alpha) with the best 5-fold CV Pearson on the training set alone, refitted on all of it; returns
    (view, alpha, CV Pearson, predict) where ``predict`` maps feature rows to relevances clipped to [0, 1]."""
    fold = np.random.default_rng(0).integers(0, 5, len(y))
    best: tuple[float, str, float] | None = None
    for name, cols in views.items():
        xv = x[:, cols]
        mean, std = xv.mean(0), xv.std(0) + 1e-6
        z = (xv - mean) / std
        for alpha in (10.0, 100.0, 1000.0, 10000.0):
            cv = np.zeros(len(y))
            for k in range(5):
                beta = _ridge_fit(z[fold != k], y[fold != k], alpha)
                cv[fold == k] = np.hstack([z[fold == k], np.ones(((fold == k).sum(), 1))]) @ beta
            r = float(np.corrcoef(y, cv)[0, 1])
            if best is None or r > best[0]:
                best = (r, name, alpha)
    assert best is not None
    r, name, alpha = best
    cols = views[name]
    mean, std = x[:, cols].mean(0), x[:, cols].std(0) + 1e-6
    beta = _ridge_fit((x[:, cols] - mean) / std, y, alpha)

    def predict(rows: np.ndarray) -> np.ndarray:
        z = (rows[:, cols] - mean) / std
        return np.clip(np.hstack([z, np.ones((len(z), 1))]) @ beta, 0.0, 1.0)

    return name, alpha, r, predict


def _ci(figures: dict) -> str:
    low, high = figures.get("pearson_ci") or (math.nan, math.nan)
    return f"[{low:.2f}, {high:.2f}]"


def evaluate(args) -> None:
    """The leave-one-model-out table: the Qwen heads and today's judge on the same sampled answers and pairs."""
    from ccpt.judging.agreement import agreement_ci
    from ccpt.judging.distilled import load_judge
    from ccpt.judging.lomo import figures, fit_runs_map, markdown, needed_pairs
    from ccpt.judging.rated_pairs import folds, heldout_pairs, pair_key, training_pairs

    ds, _, teacher, runs, test, validation, train = _sets(args)
    feats = _load_features(args.work)
    wanted = {pair_key(*t) for t in _texts(runs, test, validation, [])}
    if missing := len(wanted - feats.keys()):
        raise SystemExit(f"{missing} pairs of the measured set have no Qwen features yet: run `features` first")
    judge = load_judge()
    raw_path = args.work / f"today-raw-{judge.sha256[:12]}.json"
    if not raw_path.is_file():
        raise SystemExit(f"no {raw_path.name}: run `today` first")
    per_head = {tuple(k.split("\t")): v for k, v in json.loads(raw_path.read_text()).items()}
    weights = judge.head_weights
    installed_raw = {k: sum(w * x for w, x in zip(weights, v, strict=True)) for k, v in per_head.items()}
    keys = list(installed_raw)
    installed = dict(zip(keys, judge.calibration.apply([installed_raw[k] for k in keys]), strict=True))  # type: ignore[union-attr]
    human_heads = [i for i, h in enumerate(judge.heads) if "init_sha256" not in h.metadata]  # no teacher data
    human_raw = {k: statistics.fmean(v[i] for i in human_heads) for k, v in per_head.items()}

    # Every test-concept pair stays out of training, not only the measured ones (NPC's (H, P) teacher pairs are some).
    test_keys = {pair_key(p.concept, p.property) for p in heldout_pairs(ds)}
    # New concepts: validation pairs whose concept is in no teacher pair and no human training or test pair.
    pool = training_pairs(ds)
    trained_on = [p for p, k in zip(pool, folds(pool, 5, 0), strict=True) if k != 0]  # today's human training pool
    seen_concepts = {p.key[0] for p in teacher} | {pair_key(p.concept, p.property)[0] for p in trained_on}
    seen_concepts |= {k[0] for k in test_keys}
    new = [p for p in validation if pair_key(p.concept, p.property)[0] not in seen_concepts]
    layers = list(np.load(args.work / "qwen-features.npz")["layers"])
    hidden = next(iter(feats.values())).shape[0] // (2 * len(layers))
    views = {f"L{layer} mean": slice(2 * i * hidden, (2 * i + 1) * hidden) for i, layer in enumerate(layers)}
    views |= {f"L{layer} last": slice((2 * i + 1) * hidden, (2 * i + 2) * hidden) for i, layer in enumerate(layers)}
    views |= {f"L{layer} mean+last": slice(2 * i * hidden, (2 * i + 2) * hidden) for i, layer in enumerate(layers)}
    all_keys = list(feats)
    all_x = np.stack([feats[k] for k in all_keys]).astype(np.float32)

    def human(scores: dict, pairs) -> dict:
        return agreement_ci([p.target for p in pairs], [scores.get(pair_key(p.concept, p.property)) for p in pairs])

    table, results = [], {}
    for held in sorted(runs):
        others = [m for m in runs if m != held]
        exclude = {p.key for p in teacher if p.model == held}  # no pair of the held-out model's answers, ever
        target: dict[tuple[str, str], list[float]] = {}
        for p in teacher:
            if p.model in others and p.key in feats and p.key not in exclude and p.key not in test_keys:
                target.setdefault(p.key, []).extend(p.values)
        n_teacher = len(target)
        for p in train:
            k = pair_key(p.concept, p.property)
            if k in feats and k not in exclude and k not in test_keys and k not in target:
                target[k] = [p.target]
        tk = list(target)
        x = np.stack([feats[k] for k in tk]).astype(np.float32)
        y = np.array([statistics.fmean(target[k]) for k in tk])
        started = time.monotonic()
        view, alpha, cv, predict = _ridge_head(x, y, views)
        qwen_raw = dict(zip(all_keys, (float(v) for v in predict(all_x)), strict=True))  # type: ignore[operator]
        trained = time.monotonic() - started

        def lookup(scores):
            return lambda pairs: [scores[pair_key(c, p)] for c, p in pairs]

        train_runs = {m: runs[m] for m in others}
        qwen_map, qwen_choice = fit_runs_map(train_runs, lookup(qwen_raw))
        qwen_mapped = dict(zip(all_keys, qwen_map.apply([qwen_raw[k] for k in all_keys]), strict=True))
        recal_map, recal_choice = fit_runs_map(train_runs, lookup(human_raw))
        recal = dict(zip(keys, recal_map.apply([human_raw[k] for k in keys]), strict=True))
        approaches = {
            "today (installed, in-sample)": (installed, "shipped manifest: teacher head and map saw every model"),
            "today's human heads, map per fold": (recal, json.dumps(recal_choice)),
            "qwen ridge, map per fold": (qwen_mapped, json.dumps(qwen_choice)),
            "qwen ridge, no map": (qwen_raw, "none"),
        }
        for name, (scores, note) in approaches.items():
            f = figures(held, runs[held], scores, teacher, name)
            table.append((name, f))
            results.setdefault(name, {})[held] = f.as_dict() | {
                "human_test": human(scores, test).as_dict(),
                "human_validation": human(scores, validation).as_dict(),
                "human_new_concepts": human(scores, new).as_dict(),
                "map": note,
            }
        results.setdefault("qwen head", {})[held] = {
            "teacher_pairs": n_teacher,
            "human_pairs": len(tk) - n_teacher,
            "view": view,
            "alpha": alpha,
            "cv_pearson": round(cv, 4),
            "seconds": round(trained, 1),
        }
        print(f"{held}: {results['qwen head'][held]}", flush=True)
    print(markdown(table))
    lines = [
        "| approach / held-out model | test concepts r [95% CI] | validation rows r [95% CI] | "
        "new concepts r [95% CI] (n) |",
        "|---|---|---|---|",
    ]
    for name in approaches:
        for held, r in results[name].items():
            t, v, n = r["human_test"], r["human_validation"], r["human_new_concepts"]
            lines.append(
                f"| {name} / {held} | {t['pearson']:.3f} {_ci(t)} | {v['pearson']:.3f} {_ci(v)} | "
                f"{n['pearson']:.3f} {_ci(n)} ({n['n']}) |"
            )
    print("\n".join(lines))
    summary = {}
    for name in approaches:
        fs = [f for a, f in table if a == name]
        summary[name] = {
            "mean_mad": round(statistics.fmean(f.mad for f in fs), 2),
            "best_kept": sum(f.best_kept for f in fs),
            "columns": sum(f.columns for f in fs),
            # Per fold for a head trained per fold; the same figure thrice for today's judge.
            "new_concepts_pearson": round(
                statistics.fmean(r["human_new_concepts"]["pearson"] for r in results[name].values()), 3
            ),
            "test_concepts_pearson": round(
                statistics.fmean(r["human_test"]["pearson"] for r in results[name].values()), 3
            ),
        }
    results["summary"] = summary
    results["measured_set"] = {
        "fraction": args.fraction,
        "rows": {m: len(r) for m, r in runs.items()},
        "pairs": len(wanted),
        "test_pairs": len(test),
        "validation_pairs": len(validation),
        "new_concept_pairs": len(new),
        "human_train_pairs": len(train),
        "runs_pairs": len(needed_pairs(list(runs.values()))),
    }
    print(json.dumps(summary, indent=1))
    out = args.work / "judge-family.json"
    out.write_text(json.dumps(results, indent=1, default=str))
    print("→", out)


def cost(args) -> None:
    """Seconds per pair, one pair at a time, of the Qwen features (+ a ridge head: one dot product) and of today's
    judge, in the same process (same load); weights loaded and one warm-up call before timing."""
    import os

    import torch

    from ccpt.dataset import load_dataset
    from ccpt.io.weights import DEFAULT_SOLVER, resolve_gguf
    from ccpt.judging.distilled import load_judge
    from ccpt.judging.qwen_features import QwenStates, pair_text
    from ccpt.judging.rated_pairs import heldout_pairs

    torch.set_num_threads(args.threads)
    pairs = [(p.concept, p.property) for p in heldout_pairs(load_dataset(args.data_dir))[: args.n]]
    started = time.monotonic()
    qwen = QwenStates(resolve_gguf(DEFAULT_SOLVER), max(args.layers))
    qwen_load = time.monotonic() - started
    started = time.monotonic()
    judge = load_judge()
    judge_load = time.monotonic() - started
    timings: dict[str, list[float]] = {"qwen": [], "today": []}
    calls = {
        "qwen": lambda pair: qwen.pooled([pair_text(*pair)], args.layers),
        "today": lambda pair: judge.score([pair]),
    }
    for name, call in calls.items():
        call(("warm-up concept", "warm-up property"))
        for pair in pairs:
            t = time.perf_counter()
            call(pair)
            timings[name].append(time.perf_counter() - t)
    result = {
        "n": len(pairs),
        "threads": args.threads,
        "load_average": os.getloadavg(),
        "load_seconds": {"qwen": round(qwen_load, 1), "today": round(judge_load, 1)},
        **{f"{k}_median_s": round(statistics.median(v), 4) for k, v in timings.items()},
        **{f"{k}_mean_s": round(statistics.fmean(v), 4) for k, v in timings.items()},
    }
    print(json.dumps(result, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["features", "today", "evaluate", "cost"])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/ccpt"))
    parser.add_argument("--reference", type=Path, default=Path("../shared/data/reference-results"))
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--fraction", type=float, default=0.1, help="share of the test instances")
    parser.add_argument("--test-set", default="paper300", choices=["test", "paper300"], help="test-concept pairs")
    parser.add_argument("--validation-rows", type=int, default=200)
    parser.add_argument("--train-rows", type=int, default=250)
    parser.add_argument("--layers", type=int, nargs="+", default=[6, 8], help="blocks whose states are kept")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--n", type=int, default=30, help="cost: pairs timed")
    parser.add_argument("--count", action="store_true", help="features: only count the pairs")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.what == "features" and args.count:
        _, _, _, runs, test, validation, train = _sets(args)
        print({m: len(r) for m, r in runs.items()}, len(test), len(validation), len(train))
        print(len(_texts(runs, test, validation, train)), "pairs")
        return
    {"features": features, "today": today, "evaluate": evaluate, "cost": cost}[args.what](args)


if __name__ == "__main__":
    main()
