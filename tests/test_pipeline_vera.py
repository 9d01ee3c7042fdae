"""The VERA plausibility backend, run for real on a tiny randomly initialised T5 encoder saved to disk in the
checkpoint layout of the released VERA (the linear head and calibration temperature stored in rows
32099/32098/32097 of the shared embedding). The real T5-XXL weights cannot be fetched here; everything
else — loading, tokenising, right padding, the head, the temperature, the threshold — is the real path."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from ccpt.errors import CcptError
from ccpt.pipeline.llm import LLMOptions
from ccpt.pipeline.plausibility import VeraScorer, make_scorer

WORDS = [
    "a",
    "an",
    "the",
    "tiger",
    "caged",
    "is",
    "can",
    "pace",
    "restlessly",
    "limpid",
    "pure",
    "crystal",
    "shine",
    "bright",
    "fish",
    "swim",
    "rock",
    "sing",
]
HEAD_WEIGHT, HEAD_BIAS, TEMPERATURE = 32099, 32098, 32097


def _tokenizer(directory: Path) -> None:
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, ".": 3} | {w: i + 4 for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation()])
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    fast.save_pretrained(directory)


@pytest.fixture(scope="module")
def vera_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A VERA-layout checkpoint: T5 encoder (random, seeded) + head rows + temperature 2.0."""
    directory = tmp_path_factory.mktemp("vera-tiny")
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=32100, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_heads=4, pad_token_id=0, eos_token_id=1
    )
    model = transformers.T5EncoderModel(config).eval()
    with torch.no_grad():
        model.shared.weight[HEAD_WEIGHT] = torch.randn(16) * 2.0
        model.shared.weight[HEAD_BIAS, 0] = 0.25
        model.shared.weight[TEMPERATURE, 0] = 2.0
    model.save_pretrained(directory)
    _tokenizer(directory)
    return directory


def _by_hand(directory: Path, text: str) -> float:
    """sigmoid((w·h + b) / T) for one unpadded statement, with h the encoder state at its final </s>."""
    model = transformers.T5EncoderModel.from_pretrained(directory).eval()
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    ids = tok(text, return_tensors="pt").input_ids
    assert ids[0, -1].item() == 1  # the statement ends in </s>
    with torch.no_grad():
        h = model(input_ids=ids).last_hidden_state[0, -1]
    emb = model.shared.weight.detach()
    logit = float(h @ emb[HEAD_WEIGHT]) + float(emb[HEAD_BIAS, 0])
    return 1 / (1 + math.exp(-logit / float(emb[TEMPERATURE, 0])))


def test_vera_scores_are_the_head_on_the_last_token(vera_dir: Path) -> None:
    statements = ["a caged tiger can pace restlessly.", "pure crystal is limpid.", "a rock can sing."]
    # Batched with right padding, out of order, and with a batch boundary: every score still equals the
    # single-statement computation by hand.
    scorer = VeraScorer(str(vera_dir), device="cpu", batch_size=2)
    scores = asyncio.run(scorer.score(statements))
    expected = [_by_hand(vera_dir, s) for s in statements]
    assert scores == pytest.approx(expected, abs=1e-5)
    assert len(set(round(s, 6) for s in scores)) == 3  # the statements really are scored differently
    assert scorer.calibrated and scorer.name == f"vera:{vera_dir}"


def test_vera_in_stage_three_applies_the_threshold(tmp_path: Path, vera_dir: Path) -> None:
    from ccpt.pipeline.mining import COMBINATIONS
    from ccpt.pipeline.properties import PROPERTIES, PlausibilityOptions, extract_properties

    work = tmp_path / "work"
    work.mkdir()
    combo = {"combination": "caged tiger", "head": "tiger", "modifier": "cage", "sentence": "Like a caged tiger."}
    (work / COMBINATIONS).write_text(json.dumps(combo) + "\n")
    llm = LLMOptions(model="ccpt-scripted/pipeline", max_connections=2)
    # The threshold sits between two of the scores, so both sides of it are exercised.
    probe = VeraScorer(str(vera_dir), device="cpu")
    result = extract_properties(
        work, llm, plausibility=PlausibilityOptions(backend="vera", vera_weights=str(vera_dir), threshold=0.5)
    )
    rows = [json.loads(line) for line in (work / PROPERTIES).read_text().splitlines()]
    assert rows, "the scripted model proposes properties"
    from ccpt.pipeline.plausibility import statement

    expected = asyncio.run(probe.score([statement("caged tiger", r["property"]) for r in rows]))
    for row, score in zip(rows, expected, strict=True):
        assert row["plausibility"] == pytest.approx(score, abs=1e-6)
        assert row["plausible"] == (score >= 0.5)
        assert row["scorer_calibrated"] is True and row["scorer"].startswith("vera:")
    assert result.counts["plausible"] == sum(r["plausible"] for r in rows)


def test_vera_without_weights_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CcptError, match="cannot load VERA weights"):
        VeraScorer(str(tmp_path / "missing"))
    with pytest.raises(CcptError, match="needs vera_weights"):
        make_scorer("vera", options=LLMOptions(model="ccpt-scripted/x"))
