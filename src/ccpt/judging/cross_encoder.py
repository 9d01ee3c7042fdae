"""The distilled judge's model: a sentence encoder as a cross-encoder regressing the mean human rating.

``[CLS] concept [SEP] property [SEP]`` → mean-pooled last hidden state → linear → sigmoid: a relevance in [0, 1]
(with ``aux_weight`` > 0 a second output learns GPT-4o's stored relevance). Only the top ``trainable_layers`` blocks
and the regressor are trained (the shipped *head*); the frozen lower blocks run once per pair, cached. The same data,
seed and thread count give the same weights bit for bit; with a ``cache_dir`` a killed run resumes at its last epoch.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ccpt.io.outputs import atomic_path

if TYPE_CHECKING:
    import torch

    from ccpt.judging.encoder import Encoder


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of one training run (all recorded in the shipped head's metadata)."""

    # Each value's range is declared (``ccpt judge train --set`` is checked by it before any data loads); the upper
    # bounds stop a slip that would run for hours or fail deep inside training.
    epochs: Annotated[int, Field(ge=1, le=100)] = 4  # each epoch is a pass over the whole pool
    batch_size: Annotated[int, Field(ge=1, le=4096)] = 32  # a batch is held in memory at once
    learning_rate: Annotated[float, Field(gt=0, le=1)] = 2e-4
    head_learning_rate: Annotated[float, Field(gt=0, le=1)] = 1e-3
    weight_decay: Annotated[float, Field(ge=0, le=1)] = 0.01
    warmup: Annotated[float, Field(ge=0, le=1)] = 0.06  # fraction of steps with a linear warm-up, then linear decay
    trainable_layers: Annotated[int, Field(ge=1, le=24)] = 4  # the base encoders have 6 and 12 blocks
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.1  # a probability; 1 would drop everything
    # Loss weight of a 1-rater pair vs a 3-rater one; 0: left out (docs/judge.md).
    single_rater_weight: Annotated[float, Field(ge=0, le=10)] = 0.0
    folds: Annotated[int, Field(ge=2, le=100)] = 5  # the pool is split in row-grouped folds; one is held out
    validation_fold: Annotated[int, Field(ge=0, le=99)] | None = 0  # None: train on the whole pool
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    threads: Annotated[int, Field(ge=1, le=1024)] = 1  # one: on a shared 2-core machine two threads ran 3x slower
    encoder: str = "all-minilm-l6-v2"  # a name of ccpt.judging.encoder.BASE_ENCODERS
    # Loss weight of GPT-4o's stored relevance (a second output) vs the human target; 0: unused.
    aux_weight: Annotated[float, Field(ge=0, le=10)] = 0.0
    calibrate: bool = True  # fit a monotone map to GPT-4o's stored scale on the validation fold (judging.calibration)

    @property
    def outputs(self) -> int:
        """Outputs of the linear layer: the human target, plus GPT-4o's relevance when trained on it."""
        return 2 if self.aux_weight > 0 else 1

    def problem(self) -> str | None:
        """Why these settings would not train a head (one phrase), or None: a head of no epoch is untrained, and a
        validation fold must be one of at least two folds (else nothing is held out, or nothing is left to train)."""
        if self.epochs < 1:
            return f"epochs must be ≥ 1, got {self.epochs}"
        if self.validation_fold is not None and self.folds < 2:
            return f"folds must be ≥ 2 to hold one out for validation, got {self.folds} (or set validation_fold=none)"
        if self.validation_fold is not None and not 0 <= self.validation_fold < self.folds:
            held = self.validation_fold
            return f"validation_fold must be one of the {self.folds} folds (0 to {self.folds - 1}), got {held}"
        return None


def build_head(encoder: Encoder, config: TrainConfig) -> Any:
    """A fresh trainable head (``torch.nn.Module``) on top of ``encoder``'s frozen lower blocks."""
    import torch
    from torch import nn

    from ccpt.judging.encoder import mean_pool

    class CrossEncoderHead(nn.Module):
        """The trainable top: the last BERT blocks (copied from the base) and a linear regression head."""

        def __init__(self) -> None:
            super().__init__()
            bert = encoder.model
            self.split = len(bert.layers) - config.trainable_layers
            self.layers = nn.ModuleList(copy.deepcopy(layer) for layer in bert.layers[self.split :])
            for layer in self.layers:
                layer.dropout.p = config.dropout
            self.dropout = nn.Dropout(config.dropout)
            self.regressor = nn.Linear(bert.word_embeddings.embedding_dim, config.outputs)
            # The frozen base's attention bias (padding, and MPNet's relative positions): a plain attribute,
            # so the base's tables stay out of the head's state_dict.
            self.attention_bias = bert.attention_bias

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            """``[batch, outputs]`` sigmoid outputs of the lower blocks' output ``x``; column 0 is the relevance."""
            bias = self.attention_bias(mask, x.dtype)
            for layer in self.layers:
                x = layer(x, bias)
            return torch.sigmoid(self.regressor(self.dropout(mean_pool(x, mask))))

    return CrossEncoderHead()


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:24]


def _atomic_save(obj: Any, path: Path) -> None:
    """Write a nest of dicts, lists, numbers, strings and tensors as safetensors (the nest as JSON metadata), never
    pickle: reading a cache or checkpoint file cannot run code (an unpickler runs whatever a writable cache holds)."""
    import torch
    from safetensors.torch import save_file

    tensors: dict[str, Any] = {}

    def strip(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            name = f"t{len(tensors)}"
            tensors[name] = value.detach().contiguous()
            return {_TENSOR: name}
        if isinstance(value, dict):
            return {"__dict__": [[strip(k), strip(v)] for k, v in value.items()]}  # keys may be ints
        if isinstance(value, list | tuple):
            return [strip(v) for v in value]
        return value

    skeleton = json.dumps(strip(obj))
    with atomic_path(path) as partial:
        save_file(tensors, str(partial), metadata={_SKELETON: skeleton, _CHECKSUM: _checksum(skeleton, tensors)})


class DamagedCache(ValueError):
    """A cache or checkpoint file that is unreadable or does not match the checksum it was written with."""


def _checksum(skeleton: str, tensors: dict[str, Any]) -> str:
    """sha256 of a saved nest: its skeleton and every tensor's name, dtype, shape and bytes."""
    import torch

    digest = hashlib.sha256(skeleton.encode("utf-8"))
    for name in sorted(tensors):
        tensor = tensors[name].detach().contiguous().cpu()
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _load(path: Path) -> Any:
    """What :func:`_atomic_save` wrote (tensors on the CPU); :class:`DamagedCache` when the file is unreadable or
    its content differs from what was written (flipped bytes would change the trained head silently)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            skeleton = metadata[_SKELETON]
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118 (not a dict)
        if metadata.get(_CHECKSUM) != _checksum(skeleton, tensors):
            raise DamagedCache(f"{path}: content differs from its checksum")
        skeleton = json.loads(skeleton)
    except DamagedCache:
        raise
    except Exception as exc:  # a truncated or garbled file: whatever safetensors or JSON makes of it
        raise DamagedCache(f"{path}: unreadable ({type(exc).__name__})") from None

    def build(value: Any) -> Any:
        if isinstance(value, dict) and _TENSOR in value:
            return tensors[value[_TENSOR]]
        if isinstance(value, dict):
            return {build(k): build(v) for k, v in value["__dict__"]}
        if isinstance(value, list):
            return [build(v) for v in value]
        return value

    return build(skeleton)


_TENSOR, _SKELETON, _CHECKSUM = "__tensor__", "ccpt-skeleton", "ccpt-sha256"


def lower_states(
    encoder: Encoder, split: int, texts: Sequence[tuple[str, str]], batch_size: int = 128, cache_dir: Path | None = None
) -> list[Any]:
    """The frozen part's output per pair: a ``[tokens, hidden]`` tensor (no padding), computed once; with
    ``cache_dir``, read from (or written to) a file keyed by encoder, split and pairs."""
    import torch

    cached = cache_dir / f"states-{_digest(encoder.name, split, list(texts))}.safetensors" if cache_dir else None
    if cached is not None and cached.is_file():
        try:
            return list(_load(cached))
        except DamagedCache:  # computed again and rewritten below
            cached.unlink(missing_ok=True)
    out: list[Any] = []
    with torch.inference_mode():
        for mask, hidden in _lower_batches(encoder, split, texts, batch_size):
            out.extend(hidden[i, :n].clone() for i, n in enumerate(mask.sum(1).tolist()))
    if cached is not None:
        _atomic_save(out, cached)
    return out


def _lower_batches(
    encoder: Encoder, split: int, texts: Sequence[tuple[str, str]], batch_size: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Per batch of ``texts``: its attention mask and the output of the frozen blocks below ``split``."""
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        batch = encoder.batch([c for c, _ in chunk], [p for _, p in chunk])
        yield batch["attention_mask"], encoder.model.run(encoder.model.embed(batch), batch["attention_mask"], 0, split)


def _pad(states: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """The states zero-padded into one batch, and its attention mask."""
    import torch

    x = torch.nn.utils.rnn.pad_sequence(list(states), batch_first=True)
    lengths = torch.tensor([s.shape[0] for s in states])
    return x, (torch.arange(x.shape[1])[None, :] < lengths[:, None]).long()


def train(
    encoder: Encoder,
    texts: Sequence[tuple[str, str]],
    targets: Sequence[float],
    weights: Sequence[float],
    config: TrainConfig,
    log: Callable[[str], None] | None = None,
    aux_targets: Sequence[float | None] | None = None,
    cache_dir: Path | None = None,
    init: Any | None = None,
) -> Any:
    """Train a head on (concept, property) → target in [0, 1]; returns it in eval mode. ``init``: a state dict to start
    from; ``aux_targets`` (GPT-4o's relevance, None where unknown) feed the second output; ``cache_dir``: resumable."""
    import torch

    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        head = build_head(encoder, config)
        if init is not None:
            head.load_state_dict(init)
        started = time.monotonic()
        cached = lower_states(encoder, head.split, texts, cache_dir=cache_dir)
        if log:
            log(f"frozen blocks run on {len(texts)} pairs ({time.monotonic() - started:.0f}s)")
        rates = [(head.layers, config.learning_rate), (head.regressor, config.head_learning_rate)]
        groups = [{"params": list(module.parameters()), "lr": lr} for module, lr in rates]
        optimiser = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
        n = len(texts)
        total = -(-n // config.batch_size) * config.epochs
        warm = max(1, int(total * config.warmup))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
        )
        rng, order = random.Random(config.seed), list(range(n))
        y, w = (torch.tensor(list(values), dtype=torch.float32) for values in (targets, weights))
        aux = [None] * n if aux_targets is None else list(aux_targets)
        ya = torch.tensor([0.0 if a is None else a for a in aux], dtype=torch.float32)
        wa = torch.tensor([0.0 if a is None else config.aux_weight for a in aux], dtype=torch.float32) * w
        start_from = [] if init is None else [_state_digest(init)]
        key = _digest(asdict(config), list(texts), list(targets), list(weights), aux, *start_from) if cache_dir else ""
        checkpoint = cache_dir / f"train-{key}.safetensors" if cache_dir else None
        modules = {"head": head, "optimiser": optimiser, "schedule": schedule}
        first_epoch = _resume(checkpoint, modules, rng, order)
        if log and checkpoint is not None and first_epoch:
            log(f"resumed from {checkpoint.name} after epoch {first_epoch}")
        step, running = first_epoch * -(-n // config.batch_size), 0.0
        head.train()
        for epoch in range(first_epoch, config.epochs):
            rng.shuffle(order)
            for start in range(0, n, config.batch_size):
                idx = order[start : start + config.batch_size]
                x, mask = _pad([cached[i] for i in idx])
                pred = head(x, mask)
                loss = (w[idx] * (pred[:, 0] - y[idx]) ** 2).sum() / w[idx].sum()
                if config.outputs > 1:
                    loss = loss + (wa[idx] * (pred[:, 1] - ya[idx]) ** 2).sum() / w[idx].sum()
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                schedule.step()
                step += 1
                running += loss.item()
                if log and step % 100 == 0:
                    log(
                        f"epoch {epoch + 1}/{config.epochs} step {step}/{total} loss {running / 100:.4f} "
                        f"({time.monotonic() - started:.0f}s)"
                    )
                    running = 0.0
            if checkpoint is not None and epoch + 1 < config.epochs:
                _atomic_save(_training_state(epoch + 1, modules, rng, order), checkpoint)
        head.eval()
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
        return head
    finally:
        torch.use_deterministic_algorithms(previous)


def _state_digest(state: dict[str, Any]) -> str:
    """A short digest of a state dict's names and values (keys a fine-tuning checkpoint to its starting point)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        digest.update(name.encode("utf-8"))
        digest.update(state[name].detach().float().contiguous().numpy().tobytes())
    return digest.hexdigest()[:24]


def _training_state(epoch: int, modules: dict[str, Any], rng: random.Random, order: list[int]) -> dict[str, Any]:
    """What a checkpoint holds: the finished epochs, the data order, every module's state and both RNGs' states."""
    import torch

    return {
        "epoch": epoch,
        "order": list(order),  # each epoch shuffles the previous epoch's order
        **{name: module.state_dict() for name, module in modules.items()},
        "rng": [rng.getstate()[0], list(rng.getstate()[1])],
        "torch_rng": torch.get_rng_state(),
    }


def _resume(checkpoint: Path | None, modules: dict[str, Any], rng: random.Random, order: list[int]) -> int:
    """Restore the state saved after the last finished epoch (if any); returns the epoch to start from."""
    import torch

    if checkpoint is None or not checkpoint.is_file():
        return 0
    try:
        state = _load(checkpoint)
    except DamagedCache:  # training starts over rather than from damaged weights
        checkpoint.unlink(missing_ok=True)
        return 0
    for name, module in modules.items():
        module.load_state_dict(state[name])
    version, internal = state["rng"]
    rng.setstate((version, tuple(internal), None))
    torch.set_rng_state(state["torch_rng"])
    order[:] = state["order"]
    return int(state["epoch"])


def predict(encoder: Encoder, head: Any, texts: Sequence[tuple[str, str]], batch_size: int = 128) -> list[float]:
    """Relevance in [0, 1] for every (concept, property) pair (eval mode, no gradients)."""
    import torch

    with torch.inference_mode():
        return [
            float(v)
            for mask, lower in _lower_batches(encoder, head.split, texts, batch_size)
            for v in head(lower, mask)[:, 0]
        ]
