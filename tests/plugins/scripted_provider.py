"""``ccpt-scripted/<name>``: a deterministic, offline stand-in model for dry runs, tests and benchmarks.

It answers every CCPT prompt in the format the prompt asks for, choosing from small vocabularies by a hash
of the prompt and seed — so, like real models, it repeats answers across seeds and instances — and judges
relevance by a hash of (concept, property). Its numbers mean nothing; it exists so a sweep, a resume, a
cache or a report can be exercised end to end through the real Inspect code path with no network.

Model args (``-M name=value``): ``latency`` (seconds per call, default 0), ``calls_file`` (append one
line per call: for counting calls across processes), ``fail_every`` (every Nth call returns unparsable
text, default 0 = never), ``fail_one_in`` (an answer — any call but the judge's — returns unparsable text when a hash
of its prompt and seed is 0 modulo N: the same samples fail whatever the call order; default 0 = never),
``vocabulary`` (how many distinct answers per task, default 6).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from ccpt.spec import TYPE_LABELS

PROPERTIES = ("fragile", "valuable", "dangerous", "unstable", "colourful", "useless", "rare", "noisy", "fresh")
MODIFIERS = ("broken", "golden", "tiny", "frozen", "ancient", "wet", "burning", "hollow", "upside-down")
JUDGE_PROMPT = "evaluate how much the concept has the property"
CONCEPTS = ("water", "fire", "stone", "light", "time", "sound", "colour", "shape", "danger", "value")


def _hash(*parts: object) -> int:
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def _field(prompt: str, label: str) -> str:
    matches = re.findall(rf"^(?:- )?{label}:\s*\"?(.+?)\"?\s*$", prompt, flags=re.MULTILINE)
    return matches[-1] if matches else ""


def scripted_reply(prompt: str, seed: int | None, vocabulary: int = 6) -> str:
    """The scripted model's reply to one prompt (pure function of prompt, seed and vocabulary size)."""
    pick = _hash(prompt, seed)
    if JUDGE_PROMPT in prompt:
        concept, prop = _field(prompt, "Concept"), _field(prompt, "Property")
        return json.dumps({"relevance": 1 + _hash(concept.lower(), prop.lower()) % 10})
    if "predict a type of property" in prompt:
        return json.dumps({"property_type": TYPE_LABELS[pick % len(TYPE_LABELS)]})
    if "generate a conceptual combination" in prompt:
        head = _field(prompt, "Head noun")
        modifier = MODIFIERS[pick % min(vocabulary, len(MODIFIERS))]
        return (
            f"Let me think. So the answer is {json.dumps({'combination': f'{modifier} {head}', 'modifier': modifier})}"
        )
    if "Seed concepts:" in prompt:  # the spreading-activation filter: keep a hashed subset of candidates
        block = prompt.split("Candidate concepts", 1)[-1].split("Select the candidates", 1)[0]
        kept = [c for c in re.findall(r'"([^"\n]+)"', block) if _hash(c) % 3 != 0]
        return json.dumps({"concepts": kept[:8]})
    if "Nodes:" in prompt and "related to both concepts" in prompt:  # the as-run filter: reasoning, then a list
        nodes = json.loads(re.findall(r"^Nodes: (.*)$", prompt, flags=re.MULTILINE)[-1])
        return "Some nodes relate to both concepts. " + json.dumps([c for c in nodes if _hash(c) % 3 != 0])
    if "from various and novel perspectives" in prompt:  # the as-run activation prompt: a bare list
        start = _hash(_field(prompt, "Concept")) % len(CONCEPTS)
        return json.dumps([CONCEPTS[(start + i) % len(CONCEPTS)] for i in range(6)])
    if '{"concepts"' in prompt:  # the spreading-activation activation prompt
        concept = _field(prompt, "Concept")
        start = _hash(concept) % len(CONCEPTS)
        return json.dumps({"concepts": [CONCEPTS[(start + i) % len(CONCEPTS)] for i in range(4)]})
    # Data-construction pipeline prompts (ccpt.pipeline): answers are hashes of the prompt's subject.
    if "properties that the noun phrase" in prompt or "typical properties of" in prompt:
        start = _hash(prompt) % len(PROPERTIES)
        return json.dumps({"properties": [PROPERTIES[(start + i) % len(PROPERTIES)] for i in range(len(PROPERTIES))]})
    if "Is this statement plausible" in prompt:
        return json.dumps({"plausible": "no" if _hash(_field(prompt, "Statement")) % 4 == 0 else "yes"})
    if "Does each concept on its own have the property" in prompt:
        return json.dumps({"head_has_property": pick % 3 == 0, "modifier_has_property": pick % 5 == 0})
    if "Does the noun phrase still have the property" in prompt:
        return json.dumps({"combination_has_property": pick % 3 == 0})
    return json.dumps({"property": PROPERTIES[pick % min(vocabulary, len(PROPERTIES))]})


class ScriptedModel(ModelAPI):
    """Inspect ModelAPI wrapper around :func:`scripted_reply`."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's own signature
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.latency = float(model_args.get("latency", 0))
        self.calls_file = model_args.get("calls_file")
        self.fail_every = int(model_args.get("fail_every", 0))
        self.fail_one_in = int(model_args.get("fail_one_in", 0))
        self.vocabulary = int(model_args.get("vocabulary", 6))
        self.calls = 0

    def max_connections(self) -> int:
        return 64

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        self.calls += 1
        prompt = "\n".join(m.text for m in input)
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.calls_file:  # written when the call completes, i.e. when a real API would have billed it
            with Path(self.calls_file).open("a", encoding="utf-8") as fh:
                fh.write(f"{_hash(prompt, config.seed)}\n")
        chosen = self.fail_one_in and _hash(prompt, config.seed) % self.fail_one_in == 0
        if (self.fail_every and self.calls % self.fail_every == 0) or (chosen and JUDGE_PROMPT not in prompt):
            text = "I am not sure."
        else:
            text = scripted_reply(prompt, config.seed, self.vocabulary)
        output = ModelOutput.from_content(model=self.model_name, content=text)
        output.usage = ModelUsage(input_tokens=len(prompt.split()), output_tokens=len(text.split()), total_tokens=0)
        return output


@modelapi(name="ccpt-scripted")
def ccpt_scripted() -> type[ModelAPI]:
    """Register the scripted provider with Inspect."""
    return ScriptedModel
