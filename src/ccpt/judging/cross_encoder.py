"""The distilled judge's model: all-MiniLM-L6-v2 as a cross-encoder regressing the mean human rating.

Input: ``[CLS] concept [SEP] property [SEP]``; output: mean-pooled last hidden state → linear → sigmoid, a
relevance in [0, 1], trained with weighted squared error against the mean human rating rescaled to [0, 1].

Only the top ``trainable_layers`` BERT blocks and the regression head are trained; the embeddings and the
lower blocks stay as shipped on PyPI. That keeps the trained part — the *head* file shipped inside ccpt — a
few MB, and makes training affordable on two CPU cores: the frozen lower blocks run once per pair (cached),
and each epoch runs only the top blocks forward and backward.

Determinism: one seed drives initialisation, data order and dropout; ``torch.use_deterministic_algorithms``
is on during training and the thread count is fixed, so the same data, seed and thread count give the same
weights bit for bit (a test checks it).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from ccpt.judging.encoder import Encoder


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of one training run (all recorded in the shipped head's metadata)."""

    epochs: int = 4
    batch_size: int = 32
    learning_rate: float = 2e-4
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.06  # fraction of steps with a linear learning-rate warm-up, then linear decay
    trainable_layers: int = 4
    dropout: float = 0.1
    # Loss weight of a single-rater (component) pair relative to a 3-rater pair; 0 leaves them out (docs/judge.md).
    single_rater_weight: float = 0.0
    folds: int = 5  # the pool is split in row-grouped folds; fold 0 is held out for validation
    validation_fold: int | None = 0  # None: train on the whole pool
    seed: int = 0
    threads: int = 1  # one thread: on a shared 2-core machine two OpenMP threads ran 3x slower


def _head_class() -> type:
    import torch
    from torch import nn

    from ccpt.judging.encoder import mean_pool

    class CrossEncoderHead(nn.Module):
        """The trainable top: the last BERT blocks (copied from the base) and a linear regression head."""

        def __init__(self, encoder: Encoder, trainable_layers: int, dropout: float) -> None:
            super().__init__()
            import copy

            bert = encoder.model
            self.split = len(bert.layers) - trainable_layers
            self.layers = nn.ModuleList(copy.deepcopy(layer) for layer in bert.layers[self.split :])
            for layer in self.layers:
                layer.dropout.p = dropout
            self.dropout = nn.Dropout(dropout)
            self.regressor = nn.Linear(bert.word_embeddings.embedding_dim, 1)

        def forward(self, lower: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            bias = (1.0 - mask[:, None, None, :].to(lower.dtype)) * torch.finfo(lower.dtype).min
            x = lower
            for layer in self.layers:
                x = layer(x, bias)
            return torch.sigmoid(self.regressor(self.dropout(mean_pool(x, mask)))).squeeze(-1)

    return CrossEncoderHead


def build_head(encoder: Encoder, config: TrainConfig) -> Any:
    """A fresh trainable head (``torch.nn.Module``) on top of ``encoder``'s frozen lower blocks."""
    return _head_class()(encoder, config.trainable_layers, config.dropout)


def lower_states(encoder: Encoder, split: int, texts: Sequence[tuple[str, str]], batch_size: int = 128) -> list[Any]:
    """The frozen part's output per pair: a ``[tokens, hidden]`` tensor (no padding), computed once."""
    import torch

    out: list[Any] = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            chunk = texts[start : start + batch_size]
            batch = encoder.batch([c for c, _ in chunk], [p for _, p in chunk])
            hidden = encoder.model.run(encoder.model.embed(batch), batch["attention_mask"], 0, split)
            lengths = batch["attention_mask"].sum(1).tolist()
            out.extend(hidden[i, : lengths[i]].clone() for i in range(len(chunk)))
    return out


def _pad(states: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    width = max(s.shape[0] for s in states)
    x = torch.zeros((len(states), width, states[0].shape[1]))
    mask = torch.zeros((len(states), width), dtype=torch.long)
    for i, s in enumerate(states):
        x[i, : s.shape[0]] = s
        mask[i, : s.shape[0]] = 1
    return x, mask


def train(
    encoder: Encoder,
    texts: Sequence[tuple[str, str]],
    targets: Sequence[float],
    weights: Sequence[float],
    config: TrainConfig,
    log: Callable[[str], None] | None = None,
) -> Any:
    """Train a head on (concept, property) → target in [0, 1]; returns it in eval mode."""
    import torch

    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        head = build_head(encoder, config)
        started = time.monotonic()
        cached = lower_states(encoder, head.split, texts)
        if log:
            log(f"frozen blocks run on {len(texts)} pairs ({time.monotonic() - started:.0f}s)")
        optimiser = torch.optim.AdamW(
            [
                {"params": list(head.layers.parameters()), "lr": config.learning_rate},
                {"params": list(head.regressor.parameters()), "lr": config.head_learning_rate},
            ],
            weight_decay=config.weight_decay,
        )
        n = len(texts)
        total = -(-n // config.batch_size) * config.epochs
        warm = max(1, int(total * config.warmup))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
        )
        rng = random.Random(config.seed)
        order = list(range(n))
        y = torch.tensor(list(targets), dtype=torch.float32)
        w = torch.tensor(list(weights), dtype=torch.float32)
        step, running = 0, 0.0
        head.train()
        for epoch in range(config.epochs):
            rng.shuffle(order)
            for start in range(0, n, config.batch_size):
                idx = order[start : start + config.batch_size]
                x, mask = _pad([cached[i] for i in idx])
                pred = head(x, mask)
                loss = (w[idx] * (pred - y[idx]) ** 2).sum() / w[idx].sum()
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
        head.eval()
        return head
    finally:
        torch.use_deterministic_algorithms(previous)


def predict(encoder: Encoder, head: Any, texts: Sequence[tuple[str, str]], batch_size: int = 128) -> list[float]:
    """Relevance in [0, 1] for every (concept, property) pair (eval mode, no gradients)."""
    import torch

    out: list[float] = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            chunk = texts[start : start + batch_size]
            batch = encoder.batch([c for c, _ in chunk], [p for _, p in chunk])
            lower = encoder.model.run(encoder.model.embed(batch), batch["attention_mask"], 0, head.split)
            out.extend(float(v) for v in head(lower, batch["attention_mask"]))
    return out


def config_dict(config: TrainConfig) -> dict[str, Any]:
    """The config as plain JSON values."""
    return asdict(config)
