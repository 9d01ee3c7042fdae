"""Throughput of the embedded model: ccpt's Inspect provider vs raw llama-cpp-python.

For each model, the same CCPT-like prompts (greedy, same max_tokens and seed) are sent through
  raw-fresh   llama_cpp.Llama.create_chat_completion after Llama.reset() (every prompt from scratch),
  ccpt-off    inspect_ai get_model("gguf/<model>", prefix_cache="off").generate(...)  (the same work through
              the provider: its overhead),
  raw-reuse   create_chat_completion re-using the KV cache of the shared prompt prefix (llama's default;
              the provider's `-M prefix_cache=any`),
  ccpt        the provider's default, `prefix_cache=aligned`: prefix reuse in whole n_batch blocks, with
              outputs identical to ccpt-off,
interleaved prompt by prompt so background load hits all modes alike. Prints wall time per call,
prompt / generation tokens per second from llama.cpp's own counters, and the ratios. A last section times
judge-style calls with top-5 logprobs: ccpt's recorder vs llama-cpp-python's own (logits_all) logprobs.

Run: .venv/bin/python benchmarks/embedded_throughput.py [--models qwen2.5-0.5b qwen2.5-1.5b] [--rounds 2]
     [--logprobs-model qwen2.5-0.5b]   (pass --logprobs-model "" to skip that part)
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass, field

import llama_cpp.llama_cpp as llama_low
from inspect_ai.model import GenerateConfig, get_model
from llama_cpp import Llama

from ccpt.eval.local_model import DEFAULT_N_BATCH, DEFAULT_N_CTX, physical_cores
from ccpt.io.weights import resolve_gguf

SYSTEM = "You are a helpful assistant that reasons about concepts and their properties."
INSTRUCTION = (
    "An emergent property of a noun phrase is a property that the phrase has but that neither its head noun "
    "nor its modifier has on its own. Given the noun phrase below, name one emergent property. "
    'Answer with a JSON object {{"property": "<one or two words>"}} and nothing else.\n\nNoun phrase: {}'
)
PHRASES = (
    "peeled apple",
    "wooden spoon",
    "broken mirror",
    "frozen lake",
    "glass hammer",
    "paper boat",
    "ancient coin",
    "burning candle",
)
MAX_TOKENS = 32


@dataclass
class Tally:
    calls: int = 0
    wall: float = 0.0
    prompt_tokens: int = 0
    prompt_ms: float = 0.0
    gen_tokens: int = 0
    gen_ms: float = 0.0
    texts: list[str] = field(default_factory=list)

    def add(self, llama: Llama, wall: float, text: str) -> None:
        perf = llama_low.llama_perf_context(llama.ctx)
        self.calls += 1
        self.wall += wall
        self.prompt_tokens += perf.n_p_eval
        self.prompt_ms += perf.t_p_eval_ms
        self.gen_tokens += perf.n_eval
        self.gen_ms += perf.t_eval_ms
        self.texts.append(text)

    def row(self, name: str) -> str:
        prompt_rate = 1000 * self.prompt_tokens / max(self.prompt_ms, 1e-9)
        gen_rate = 1000 * self.gen_tokens / max(self.gen_ms, 1e-9)
        return (
            f"  {name:<10} {self.wall / self.calls:7.3f} s/call   "
            f"prompt {self.prompt_tokens / self.calls:6.1f} tok @ {prompt_rate:6.1f} tok/s   "
            f"gen {self.gen_tokens / self.calls:5.1f} tok @ {gen_rate:5.1f} tok/s"
        )


def messages(phrase: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": INSTRUCTION.format(phrase)}]


def raw_call(llama: Llama, phrase: str, *, fresh: bool, tally: Tally) -> None:
    if fresh:
        llama.reset()
    llama_low.llama_perf_context_reset(llama.ctx)
    start = time.perf_counter()
    response = llama.create_chat_completion(messages(phrase), temperature=0.0, max_tokens=MAX_TOKENS, seed=0)
    tally.add(llama, time.perf_counter() - start, response["choices"][0]["message"]["content"] or "")  # type: ignore[index]


async def ccpt_call(model: object, llama: Llama, phrase: str, tally: Tally) -> None:
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser

    config = GenerateConfig(temperature=0.0, max_tokens=MAX_TOKENS, seed=0)
    llama_low.llama_perf_context_reset(llama.ctx)
    start = time.perf_counter()
    out = await model.generate(  # type: ignore[attr-defined]
        [ChatMessageSystem(content=SYSTEM), ChatMessageUser(content=INSTRUCTION.format(phrase))], config=config
    )
    tally.add(llama, time.perf_counter() - start, out.completion)


async def bench(name: str, rounds: int) -> None:
    path = str(resolve_gguf(name))
    threads = physical_cores()
    model_off = get_model(f"gguf/{name}", prefix_cache="off", memoize=False)
    model = get_model(f"gguf/{name}", memoize=False)  # the default: prefix_cache="aligned"
    ours = model.api._model.llama  # type: ignore[attr-defined]
    raw = Llama(
        model_path=path,
        n_ctx=DEFAULT_N_CTX,
        n_batch=DEFAULT_N_BATCH,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    # warm-up (page in the weights, first-call setup) for both instances
    raw_call(raw, PHRASES[0], fresh=True, tally=Tally())
    await ccpt_call(model_off, ours, PHRASES[0], Tally())

    fresh, provider_off, reuse, provider = Tally(), Tally(), Tally(), Tally()
    for _ in range(rounds):
        for phrase in PHRASES:
            raw_call(raw, phrase, fresh=True, tally=fresh)
            await ccpt_call(model_off, ours, phrase, provider_off)
        for phrase in PHRASES:  # consecutive, so each prompt can re-use the previous one's prefix
            raw_call(raw, phrase, fresh=False, tally=reuse)
        for phrase in PHRASES:
            await ccpt_call(model, ours, phrase, provider)
    raw.close()

    print(f"\n{name}  ({len(PHRASES)} prompts x {rounds} rounds, n_threads={threads}, max_tokens={MAX_TOKENS})")
    print(fresh.row("raw-fresh"))
    print(provider_off.row("ccpt-off"))
    print(reuse.row("raw-reuse"))
    print(provider.row("ccpt"))
    same = sum(a == b for a, b in zip(fresh.texts, provider_off.texts, strict=True))
    aligned_same = sum(a == b for a, b in zip(provider_off.texts, provider.texts, strict=True))
    print(f"  identical outputs ccpt-off vs raw-fresh: {same}/{len(fresh.texts)}")
    print(f"  identical outputs ccpt (aligned reuse) vs ccpt-off: {aligned_same}/{len(fresh.texts)}")
    print(f"  ratio ccpt-off / raw-fresh wall time: {provider_off.wall / fresh.wall:.3f}  (provider overhead)")
    print(f"  ratio raw-fresh / raw-reuse wall time: {fresh.wall / reuse.wall:.3f}  (what naive prefix reuse saves)")
    print(f"  ratio ccpt-off / ccpt wall time: {provider_off.wall / provider.wall:.3f}  (what aligned reuse saves)")


SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": list(range(1, 11))}},
    "required": ["score"],
}
JUDGE_PAIRS = (("sour", "lemon"), ("heavy", "anvil"), ("cold", "ice"), ("loud", "drum"))


def bench_logprobs(name: str, rounds: int) -> None:
    """Judge-style calls with top-5 logprobs: ccpt's backend vs llama-cpp-python's logits_all logprobs."""
    from ccpt.eval.llama_backend import ChatRequest, LoadSpec, chat, load_model

    path = str(resolve_gguf(name))
    threads = physical_cores()
    ours = load_model(LoadSpec(path=path, n_ctx=DEFAULT_N_CTX, n_threads=threads))
    ref = Llama(model_path=path, n_ctx=DEFAULT_N_CTX, n_threads=threads, logits_all=True, verbose=False)
    prompts = [f"Rate from 1 to 10 how relevant '{p}' is to '{c}'. Answer in JSON." for p, c in JUDGE_PAIRS]

    def mine(prompt: str) -> str:
        request = ChatRequest(
            messages=({"role": "user", "content": prompt},),
            temperature=0.0,
            max_tokens=20,
            json_schema=SCORE_SCHEMA,
            logprobs=True,
            top_logprobs=5,
        )
        return chat(ours, request).text

    def theirs(prompt: str) -> str:
        ref.reset()
        response = ref.create_chat_completion(
            [{"role": "user", "content": prompt}],
            temperature=0.0,
            max_tokens=20,
            response_format={"type": "json_object", "schema": SCORE_SCHEMA},
            logprobs=True,
            top_logprobs=5,
        )
        return response["choices"][0]["message"]["content"] or ""  # type: ignore[index]

    mine(prompts[0]), theirs(prompts[0])  # warm-up
    seconds = {"ccpt": 0.0, "llama-cpp-python": 0.0}
    same = 0
    for _ in range(rounds):
        for prompt in prompts:
            start = time.perf_counter()
            a = mine(prompt)
            seconds["ccpt"] += time.perf_counter() - start
            start = time.perf_counter()
            b = theirs(prompt)
            seconds["llama-cpp-python"] += time.perf_counter() - start
            same += a == b
    ref.close()
    n = rounds * len(prompts)
    print(f"\n{name}  judge-style call with top-5 logprobs ({n} calls each)")
    for key, value in seconds.items():
        print(f"  {key:<17} {value / n:6.3f} s/call")
    print(f"  identical outputs: {same}/{n}")
    print(f"  ratio llama-cpp-python (logits_all) / ccpt: {seconds['llama-cpp-python'] / seconds['ccpt']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["qwen2.5-0.5b", "qwen2.5-1.5b"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--logprobs-model", default="qwen2.5-0.5b", help="model for the logprobs comparison")
    args = parser.parse_args()
    for name in args.models:
        asyncio.run(bench(name, args.rounds))
    if args.logprobs_model:
        bench_logprobs(args.logprobs_model, args.rounds)


if __name__ == "__main__":
    main()
