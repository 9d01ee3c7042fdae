"""Leave-one-model-out experiments for the distilled judge (issue #29; docs/judge.md, "Teacher pairs").

    python scripts/judge_lomo.py features --work DIR     # shipped heads' raw scores + pooled states, every pair
    python scripts/judge_lomo.py evaluate --work DIR     # LOMO table of every approach that has its scores

Every pair any approach needs is scored once by each shipped head (raw relevance and the mean-pooled last hidden
state the head's linear layer reads), cached in DIR/features-<encoder>.npz; approaches that train on top of frozen
features then cost seconds per fold. Fine-tuned approaches (their own forward passes) write their scores to
DIR/scores-<approach>-<heldout>.json and are picked up by ``evaluate``.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from pathlib import Path

import numpy as np

SHARED = Path("/work/shared/data")


def author_files(shared: Path) -> list[Path]:
    out = sorted(glob.glob(str(shared / "reference-results" / "*.csv")))
    out += sorted(glob.glob(str(shared / "reference-results" / "more-models" / "*.csv")))
    return [Path(p) for p in out if not Path(p).name.startswith("tp_")]


def load_all(shared: Path, work: Path):
    """(dataset, frames, teacher pairs, Table-3 runs per model), the frames cached as pickle in ``work``."""
    import pickle

    from ccpt.dataset import load_dataset
    from ccpt.judging.lomo import table3_runs
    from ccpt.judging.teacher_pairs import read_frames, teacher_pairs

    ds = load_dataset(shared / "ccpt")
    cache = work / "frames.pkl"
    if cache.is_file():
        frames = pickle.loads(cache.read_bytes())
    else:
        skipped: list[str] = []
        frames = read_frames(author_files(shared), ds, skipped=skipped)
        for s in skipped:
            print("skipped", s, file=sys.stderr)
        cache.write_bytes(pickle.dumps(frames))
    pairs = teacher_pairs(frames)
    return ds, frames, pairs, table3_runs(frames)


def all_texts(ds, frames, pairs) -> list[tuple[str, str]]:
    """Every pair to score: teacher pairs, the re-judge's pairs, the human test pairs and 3-rater training pairs."""
    from ccpt.judging.lomo import needed_pairs
    from ccpt.judging.rated_pairs import heldout_pairs, pair_key, training_pairs

    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for c, p in [(t.concept, t.property) for t in pairs] + needed_pairs(frames):
        seen.setdefault(pair_key(c, p), (" ".join(c.split()), " ".join(p.split())))
    for r in heldout_pairs(ds) + [r for r in training_pairs(ds) if len(r.ratings) > 1]:
        seen.setdefault(pair_key(r.concept, r.property), (" ".join(r.concept.split()), " ".join(r.property.split())))
    return list(seen.values())


def reduced_texts(ds, frames) -> list[tuple[str, str]]:
    """The Table-3 runs' pairs and the human test and validation pairs."""
    from ccpt.judging.lomo import needed_pairs, table3_runs
    from ccpt.judging.rated_pairs import pair_key

    _, validation, _, _ = human_sets(ds)
    test = human_sets(ds)[0]
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for c, p in needed_pairs(list(table3_runs(frames).values())) + [(r.concept, r.property) for r in test + validation]:
        seen.setdefault(pair_key(c, p), (" ".join(c.split()), " ".join(p.split())))
    return list(seen.values())


def features(args) -> None:
    import torch

    from ccpt.judging.distilled import load_judge
    from ccpt.judging.encoder import mean_pool
    from ccpt.judging.rated_pairs import pair_key

    torch.set_num_threads(args.threads)
    ds, frames, pairs, _ = load_all(args.shared, args.work)
    everything = all_texts(ds, frames, pairs)
    judge = load_judge(calibrated=False)
    for trained in judge.heads:
        if "init_sha256" in trained.metadata:
            continue  # the shipped teacher-tuned head: what the experiments build, not a feature source
        name = trained.config.encoder
        out = args.work / f"features-{name}.npz"
        if out.is_file():
            continue
        # MPNet is ~8x MiniLM's cost: on a shared 2-core machine it scores only what the shipped judge's LOMO
        # figures and human agreement need (the Table-3 runs' pairs, the human test and validation pairs).
        texts = everything if name == "all-minilm-l6-v2" else reduced_texts(ds, frames)
        # Sorted by length: padding is per batch, so similar lengths together cost less.
        texts.sort(key=lambda t: len(t[0]) + len(t[1]))
        print(f"{name}: {len(texts)} distinct pairs", flush=True)
        enc, head = trained.encoder, trained.head
        raw, pooled = [], []
        started = time.monotonic()
        with torch.inference_mode():
            for start in range(0, len(texts), 128):
                chunk = texts[start : start + 128]
                batch = enc.batch([c for c, _ in chunk], [p for _, p in chunk])
                mask = batch["attention_mask"]
                x = enc.model.run(enc.model.embed(batch), mask, 0, head.split)
                bias = head.attention_bias(mask, x.dtype)
                for layer in head.layers:
                    x = layer(x, bias)
                v = mean_pool(x, mask)
                raw.extend(torch.sigmoid(head.regressor(v))[:, 0].tolist())
                pooled.append(v.to(torch.float16).numpy())
                if start % 2560 == 0:
                    print(f"{name}: {start}/{len(texts)} ({time.monotonic() - started:.0f}s)", flush=True)
        keys = np.array(["\t".join(pair_key(c, p)) for c, p in texts])
        np.savez(out, keys=keys, raw=np.array(raw, dtype=np.float32), pooled=np.concatenate(pooled))
        print(f"{name}: {len(texts)} pairs in {time.monotonic() - started:.0f}s → {out}", flush=True)


# ----------------------------------------------------------------------------------------------- fine-tuning

FINETUNE = {
    # name: (encoder, human weight, canceled weight, max teacher pairs, epochs)
    "ft-minilm": ("all-minilm-l6-v2", 0.0, 1.0, 12000, 1),
    "ft-minilm+human": ("all-minilm-l6-v2", 1.0, 1.0, 12000, 1),
    "ft-mpnet": ("all-mpnet-base-v2", 0.0, 1.0, 8000, 1),
}


def finetune_training_set(pairs, train_models, test_keys, exclude, human_train, human_weight, canceled_weight, cap):
    """(texts, targets, weights) for fine-tuning on ``train_models``' teacher pairs (+ human pairs), seeded sample."""
    import random

    from ccpt.judging.rated_pairs import pair_key

    target: dict = {}
    text: dict = {}
    weight: dict = {}
    for p in pairs:
        if p.model not in train_models or p.key in test_keys or p.key in exclude:
            continue
        target.setdefault(p.key, []).extend(p.values)
        text.setdefault(p.key, (p.concept, p.property))
        w = canceled_weight if p.task == "pi_canceled" else 1.0
        weight[p.key] = max(weight.get(p.key, 0.0), w)
    keys = sorted(target)
    random.Random(0).shuffle(keys)
    keys = keys[:cap]
    texts = [text[k] for k in keys]
    ys = [float(np.mean(target[k])) for k in keys]
    ws = [weight[k] for k in keys]
    if human_weight > 0:
        taken = set(keys)
        for r in human_train:
            k = pair_key(r.concept, r.property)
            if k in test_keys or k in exclude or k in taken:
                continue
            taken.add(k)
            texts.append((r.concept, r.property))
            ys.append(r.target)
            ws.append(human_weight)
    return texts, ys, ws


def finetune(args) -> None:
    from dataclasses import replace

    import torch

    from ccpt.judging.cross_encoder import predict, train
    from ccpt.judging.distilled import load_judge
    from ccpt.judging.lomo import needed_pairs
    from ccpt.judging.rated_pairs import pair_key

    ds, _frames, pairs, runs = load_all(args.shared, args.work)
    test, validation, human_train, test_keys = human_sets(ds)
    models = sorted(runs)
    by_model = {m: {p.key for p in pairs if p.model == m} for m in models}
    judge = load_judge(calibrated=False)
    for name in args.finetune:
        encoder_name, human_weight, canceled_weight, cap, epochs = FINETUNE[name]
        shipped = next(h for h in judge.heads if h.config.encoder == encoder_name and "init_sha256" not in h.metadata)
        config = replace(shipped.config, epochs=epochs, learning_rate=1e-4, warmup=0.06, threads=args.threads)
        for held in args.heldout or models:
            out = args.work / f"scores-{name}{'-withtrain' if args.score_training else ''}-{held}.json"
            if out.is_file():
                continue
            started = time.monotonic()
            train_models = [m for m in models if m != held]
            texts, ys, ws = finetune_training_set(
                pairs, train_models, test_keys, by_model[held], human_train, human_weight, canceled_weight, cap
            )
            print(f"{name} / {held}: {len(texts)} training pairs", flush=True)
            head = train(
                shipped.encoder,
                texts,
                ys,
                ws,
                config,
                log=lambda line: print(line, flush=True),
                cache_dir=args.work / "cache",
                init={k: v.clone() for k, v in shipped.head.state_dict().items()},
            )
            trained = time.monotonic() - started
            # Score what evaluation needs: the held-out model's pairs, the human test and validation pairs.
            wanted = [(p.concept, p.property) for p in pairs if p.model == held]
            wanted += needed_pairs([runs[held]])
            wanted += [(p.concept, p.property) for p in test + validation]
            if args.score_training:  # the training models' Table-3 pairs too: a map fitted on their runs
                wanted += needed_pairs([runs[m] for m in train_models])
            unique = {pair_key(c, p): (" ".join(c.split()), " ".join(p.split())) for c, p in wanted}
            keys = list(unique)
            with torch.inference_mode():
                values = predict(shipped.encoder, head, [unique[k] for k in keys])
            out.write_text(json.dumps({"\t".join(k): v for k, v in zip(keys, values, strict=True)}))
            print(
                f"{name} / {held}: trained {trained:.0f}s, scored {len(keys)} pairs in "
                f"{time.monotonic() - started - trained:.0f}s → {out}",
                flush=True,
            )
            del head


# ----------------------------------------------------------------------------------------------- approaches


class Features:
    """The cached features of every pair: the MiniLM head's raw relevance and pooled state; MPNet's raw relevance
    where it was scored (the shipped ensemble's pairs)."""

    def __init__(self, work: Path, previous: Path | None = None) -> None:
        from ccpt.judging.calibration import Calibration

        a = np.load(work / "features-all-minilm-l6-v2.npz")
        mpnet = work / "features-all-mpnet-base-v2.npz"
        b = np.load(mpnet) if mpnet.is_file() else {"keys": np.array([]), "raw": np.array([])}
        self.index = {tuple(k.split("\t")): i for i, k in enumerate(a["keys"].tolist())}
        self.raw = a["raw"].astype(np.float64)
        self.pooled = a["pooled"].astype(np.float32)
        self.mpnet = {tuple(k.split("\t")): float(v) for k, v in zip(b["keys"].tolist(), b["raw"], strict=True)}
        # The two-head judge shipped before the teacher head (manifest 813ec7b5…): its map, for "shipped".
        manifest = json.loads(previous.read_text()) if previous else None
        self.shipped_map = Calibration.from_json(json.dumps(manifest["calibration"])) if manifest else None

    def rows(self, keys) -> np.ndarray:
        return np.array([self.index[k] for k in keys])

    def ensemble_raw(self) -> dict:
        return {k: (float(self.raw[self.index[k]]) + v) / 2 for k, v in self.mpnet.items()}

    def shipped(self) -> dict:
        raw = self.ensemble_raw()
        keys = list(raw)
        return dict(zip(keys, self.shipped_map.apply([raw[k] for k in keys]), strict=True))

    def raw_mean(self) -> dict:
        return self.ensemble_raw()


def calibration_rows(frames, models, scores, limit: int = 6000, seed: int = 0):
    """CalibrationRows (kind, judge N/H/M, GPT-4o N/H/M) of the sample rows of ``models``' runs (no per-step)."""
    import random

    from ccpt.judging.calibration import CalibrationRow
    from ccpt.judging.lomo import _judged
    from ccpt.judging.rated_pairs import pair_key
    from ccpt.spec import TASK_SPECS

    rows = []
    for frame in frames:
        if frame.empty:
            continue
        part = frame[frame["model"].isin(models) & frame["sa_iteration"].isna()]
        for row in part.to_dict("records"):
            judged = _judged(row)
            ref = (row.get("r_np"), row.get("r_hp"), row.get("r_mp"))
            if judged is None or any(v is None or v != v for v in ref):
                continue
            concepts, prop = judged
            j = [scores.get(pair_key(c, prop)) for c in concepts]
            if any(v is None for v in j):
                continue
            rows.append(CalibrationRow(TASK_SPECS[row["task"]].kind, tuple(j), tuple(float(v) for v in ref)))
    random.Random(seed).shuffle(rows)
    return rows[:limit]


def fit_map(frames, models, raw_scores):
    """The calibration map chosen and fitted (ccpt.judging.calibration.choose_calibration) on ``models``' rows."""
    from ccpt.judging.calibration import choose_calibration

    rows = calibration_rows(frames, models, raw_scores)
    where = f"{len(rows)} sample rows of {', '.join(models)}' stored runs"
    return choose_calibration(rows, "GPT-4o's relevance stored in the authors' runs", where)


def train_stack(X, y, w, seed=0, hidden=0, epochs=200, lr=1e-2, decay=1e-4):
    """A linear (or one-hidden-layer) sigmoid regressor on frozen features, full-batch Adam, weighted MSE."""
    import torch

    torch.manual_seed(seed)
    Xt, yt, wt = torch.tensor(X), torch.tensor(y, dtype=torch.float32), torch.tensor(w, dtype=torch.float32)
    mu, sd = Xt.mean(0), Xt.std(0) + 1e-6
    layers = (
        [torch.nn.Linear(X.shape[1], hidden), torch.nn.GELU(), torch.nn.Linear(hidden, 1)]
        if hidden
        else [torch.nn.Linear(X.shape[1], 1)]
    )
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=decay)
    Z = (Xt - mu) / sd
    for _ in range(epochs):
        pred = torch.sigmoid(net(Z))[:, 0]
        loss = (wt * (pred - yt) ** 2).sum() / wt.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()

    def predict(Xn):
        with torch.no_grad():
            return torch.sigmoid(net((torch.tensor(Xn) - mu) / sd))[:, 0].numpy().astype(np.float64)

    return predict


def human_sets(ds):
    from ccpt.judging.rated_pairs import folds, heldout_pairs, pair_key, training_pairs

    test = heldout_pairs(ds)
    pool = training_pairs(ds)
    fold_ids = folds(pool, 5, 0)
    validation = [p for p, k in zip(pool, fold_ids, strict=True) if k == 0 and len(p.ratings) > 1]
    train = [p for p, k in zip(pool, fold_ids, strict=True) if k != 0 and len(p.ratings) > 1]
    test_keys = {pair_key(p.concept, p.property) for p in test}
    return test, validation, train, test_keys


def stacked_scores(feat, pairs, train_models, test_keys, exclude_keys, ds_train, variant):
    """Scores of every pair from a stacker trained on ``train_models``' teacher pairs (variant: options)."""
    from ccpt.judging.rated_pairs import pair_key

    chosen = [p for p in pairs if p.model in train_models and p.key not in test_keys and p.key not in exclude_keys]
    # One target per distinct pair: the mean over the training models' occurrences.
    target: dict = {}
    weight: dict = {}
    for p in chosen:
        target.setdefault(p.key, []).extend(p.values)
        w = variant.get("canceled_weight", 1.0) if p.task == "pi_canceled" else 1.0
        weight[p.key] = max(weight.get(p.key, 0.0), w)
    keys = list(target)
    y = [float(np.mean(target[k])) for k in keys]
    w = [weight[k] for k in keys]
    if variant.get("human_weight", 0.0) > 0:
        for r in ds_train:
            k = pair_key(r.concept, r.property)
            if k in test_keys or k in exclude_keys or k in target:
                continue
            keys.append(k)
            y.append(r.target)
            w.append(variant["human_weight"])
    idx = feat.rows(keys)
    X = feature_matrix(feat, idx, variant)
    predict = train_stack(X, np.array(y), np.array(w), hidden=variant.get("hidden", 0))
    allX = feature_matrix(feat, np.arange(len(feat.index)), variant)
    out = predict(allX)
    return {k: float(out[i]) for k, i in feat.index.items()}


def feature_matrix(feat, idx, variant):
    raw = np.clip(feat.raw[idx], 1e-4, 1 - 1e-4)
    logits = np.log(raw / (1 - raw)).astype(np.float32)[:, None]
    if variant.get("features") == "raw":
        return logits
    return np.concatenate([feat.pooled[idx], logits], 1)


APPROACHES = {
    "shipped": {},  # the previous two-head judge: needs --previous-manifest (git show 6edd2f7:src/ccpt/data/…)
    "installed": {"kind": "installed"},  # the judge installed now, every pair scored through ccpt (in-sample)
    # GPT-4o's own stored verdicts on the held-out model's pairs (their mean), served back as a judge: the ceiling.
    "gpt-4o-own": {"kind": "oracle"},
    "recal": {"kind": "recal"},
    "stack": {"kind": "stack"},
    "stack+human": {"kind": "stack", "human_weight": 1.0},
    "stack-canceled3": {"kind": "stack", "canceled_weight": 3.0},
    "mlp": {"kind": "stack", "hidden": 128, "map": False},
    "mlp-canceled3": {"kind": "stack", "hidden": 128, "map": False, "canceled_weight": 3.0},
    "mlp+human": {"kind": "stack", "hidden": 128, "map": False, "human_weight": 1.0},
    "mlp-map": {"kind": "stack", "hidden": 128},
    "mlp-valmap": {"kind": "stack", "hidden": 128, "map": "validation"},
    "ft-minilm": {"kind": "file", "map": False},
    "ft-minilm-valmap": {"kind": "file", "map": "validation", "file": "ft-minilm"},
    "ft-minilm+human": {"kind": "file", "map": False},
    # The shipped ensemble's two heads plus the fine-tuned MiniLM head: mean raw, validation-fold map.
    "ens+ft-valmap": {"kind": "file", "map": "validation", "file": "ft-minilm", "with_shipped": True},
    # The same, the map fitted on the training models' runs (in-sample scores of the fine-tuned head there).
    "ens+ft-runmap": {"kind": "file", "map": "runs", "file": "ft-minilm-withtrain", "with_shipped": True},
}


def validation_map(ds, validation, scores):
    """The map chosen and fitted as the shipped judge's: on validation fold 0 of the human training pool (rows
    never answered by any model), against the dataset's stored GPT-4o relevance."""
    from ccpt.judging.calibration import CalibrationRow, choose_calibration
    from ccpt.judging.rated_pairs import pair_key, stored_gpt4o

    reference = stored_gpt4o(ds, validation)
    by_row: dict = {}
    for pair, ref in zip(validation, reference, strict=True):
        score = scores.get(pair_key(pair.concept, pair.property))
        by_row.setdefault(pair.source, {})[pair.role] = (score, ref, pair.kind)
    rows = []
    for parts in by_row.values():
        if set(parts) != {"combination", "head", "modifier"} or any(
            s is None or r is None for s, r, _ in parts.values()
        ):
            continue
        ordered = [parts[r] for r in ("combination", "head", "modifier")]
        rows.append(CalibrationRow(ordered[0][2], tuple(x[0] for x in ordered), tuple(float(x[1]) for x in ordered)))
    return choose_calibration(rows, "GPT-4o (dataset)", f"{len(rows)} validation rows")


def installed_scores(work: Path, ds, frames) -> dict:
    """The installed judge's calibrated score of every Table-3 and human pair, cached per manifest sha256."""
    from ccpt.judging.distilled import load_judge
    from ccpt.judging.rated_pairs import pair_key

    judge = load_judge()
    cache = work / f"scores-installed-{judge.sha256[:12]}.json"
    if not cache.is_file():
        texts = reduced_texts(ds, frames)
        texts.sort(key=lambda t: len(t[0]) + len(t[1]))
        started = time.monotonic()
        values = judge.score(texts)
        print(f"installed judge: {len(texts)} pairs in {time.monotonic() - started:.0f}s", flush=True)
        cache.write_text(json.dumps({"\t".join(pair_key(*t)): v for t, v in zip(texts, values, strict=True)}))
    return {tuple(k.split("\t")): v for k, v in json.loads(cache.read_text()).items()}


def record(results, table, name, held, f, scores, test, validation, note, started) -> None:
    from ccpt.judging.agreement import agreement_ci
    from ccpt.judging.rated_pairs import pair_key
    from ccpt.stats import pearson

    ht = agreement_ci([p.target for p in test], [scores.get(pair_key(p.concept, p.property)) for p in test])
    val = [(p.target, scores.get(pair_key(p.concept, p.property))) for p in validation]
    hval = pearson([a for a, b in val if b is not None], [b for a, b in val if b is not None])
    results.setdefault(name, {})[held] = f.as_dict() | {
        "human_test_pearson": round(ht.pearson, 3),
        "human_test_ci": [round(v, 3) for v in (ht.pearson_ci or (float("nan"),) * 2)],
        "human_test_spearman": round(ht.spearman, 3),
        "human_test_spearman_ci": [round(v, 3) for v in (ht.spearman_ci or (float("nan"),) * 2)],
        "human_test_n": ht.n,
        "human_validation_pearson": round(hval, 3),
        "map": note,
        "seconds": round(time.monotonic() - started, 1),
    }
    table.append((name, f))
    print(
        f"{name} / {held}: MAD {f.mad:.2f} canceled C {f.canceled_c:+.1f} best {f.best_kept}/{f.columns} "
        f"pair r {f.pair_pearson:.3f} human test r {ht.pearson:.3f} (n {ht.n}) val r {hval:.3f} [{note}]",
        flush=True,
    )


def evaluate(args) -> None:
    from ccpt.judging.lomo import figures, markdown

    ds, frames, pairs, runs = load_all(args.shared, args.work)
    feat = Features(args.work, args.previous_manifest)
    test, validation, human_train, test_keys = human_sets(ds)
    models = sorted(runs)
    by_model = {m: {p.key for p in pairs if p.model == m} for m in models}
    table = []
    results = {}
    chosen = args.approach or list(APPROACHES)
    for name in chosen:
        variant = APPROACHES[name]
        for held in models:
            started = time.monotonic()
            train_models = [m for m in models if m != held]
            if name == "shipped":
                scores = feat.shipped()
                note = "shipped map"
            elif name == "installed":
                scores = installed_scores(args.work, ds, frames)
                note = "the installed judge as it scores (its head and map saw every model's answers: in-sample)"
            elif variant.get("kind") == "oracle":
                scores = {p.key: p.relevance for p in pairs if p.model == held}
                note = "GPT-4o's stored relevance (pair mean)"
            else:
                # Never train on a pair of the held-out model's answers (not even one another model also gave).
                exclude = by_model[held]
                if variant["kind"] == "file":
                    path = args.work / f"scores-{variant.get('file', name)}-{held}.json"
                    if not path.is_file():
                        print(f"{name} / {held}: no {path.name} yet", flush=True)
                        continue
                    raw = {tuple(k.split("\t")): v for k, v in json.loads(path.read_text()).items()}
                    if variant.get("with_shipped"):
                        ens = feat.ensemble_raw()
                        raw = {k: (v + ens[k]) / 2 for k, v in raw.items() if k in ens}
                elif variant["kind"] == "recal":
                    raw = feat.raw_mean()
                else:
                    raw = stacked_scores(feat, pairs, train_models, test_keys, exclude, human_train, variant)
                # The map: chosen and fitted on the training models' rows, with out-of-model scores for each of
                # them (stacker trained on the other training model only), so it sees out-of-sample scores; or
                # the shipped judge's way, on the human validation fold.
                if variant.get("map") in ("runs", "validation"):
                    if variant["map"] == "runs":
                        cal, choice = fit_map(frames, train_models, raw)
                    else:
                        cal, choice = validation_map(ds, validation, raw)
                    keys = list(raw)
                    scores = dict(zip(keys, cal.apply([raw[k] for k in keys]), strict=True))
                    note = cal.fitted_on.split(" fit,")[0] + f" {json.dumps(choice)}"
                    f = figures(held, runs[held], scores, pairs, name)
                    record(results, table, name, held, f, scores, test, validation, note, started)
                    continue
                if variant.get("map") is False:
                    # Trained on GPT-4o's relevance itself: its scores are on GPT-4o's scale, no map.
                    scores = raw
                    note = "no map (trained on GPT-4o's scale)"
                    f = figures(held, runs[held], scores, pairs, name)
                    record(results, table, name, held, f, scores, test, validation, note, started)
                    continue
                if variant["kind"] == "recal":
                    map_scores = raw
                else:
                    map_scores = {}
                    for m in train_models:
                        other = [t for t in train_models if t != m]
                        inner = stacked_scores(
                            feat, pairs, other, test_keys, exclude | by_model[m], human_train, variant
                        )
                        map_scores[m] = inner
                if variant["kind"] == "recal":
                    cal, choice = fit_map(frames, train_models, raw)
                else:
                    from ccpt.judging.calibration import CalibrationRow, choose_calibration

                    rows: list[CalibrationRow] = []
                    for m in train_models:
                        rows += calibration_rows(frames, [m], map_scores[m], limit=3000)
                    cal, choice = choose_calibration(rows, "GPT-4o", f"{len(rows)} rows")
                    # no map if it does not help on the training models' rows
                methods = [v for k, v in choice.items() if k in ("isotonic", "quantile", "sharpened")]
                if args.no_map or choice["uncalibrated"] <= min(methods):
                    mapped = raw
                    note = f"no map {json.dumps(choice)}"
                else:
                    keys = list(raw)
                    values = cal.apply([raw[k] for k in keys])
                    mapped = dict(zip(keys, values, strict=True))
                    note = cal.fitted_on.split(" fit,")[0] + f" {json.dumps(choice)}"
                scores = mapped
            f = figures(held, runs[held], scores, pairs, name)
            record(results, table, name, held, f, scores, test, validation, note, started)
    print(markdown(table))
    out = args.work / f"lomo-{'-'.join(chosen)}{'-nomap' if args.no_map else ''}.json"
    out.write_text(json.dumps(results, indent=1))
    print("→", out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["features", "evaluate", "finetune"])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--approach", action="append", choices=list(APPROACHES))
    parser.add_argument("--no-map", action="store_true")
    parser.add_argument("--finetune", action="append", choices=list(FINETUNE))
    parser.add_argument("--heldout", action="append")
    parser.add_argument("--score-training", action="store_true")
    parser.add_argument("--previous-manifest", type=Path, help="the two-head manifest 813ec7b5…, for 'shipped'")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    import torch

    torch.set_num_threads(args.threads)
    {"features": features, "evaluate": evaluate, "finetune": finetune}[args.step](args)


if __name__ == "__main__":
    main()
