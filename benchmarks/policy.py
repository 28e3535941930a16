"""Tokens per second of the local policy, single and batched, and what recording costs.

    python benchmarks/policy.py [--tiny] [--new-tokens 64] [--batch 8] [--repeats 3]

Every measurement runs in this process, on the same prompts, and the printed ratios
compare numbers measured here and now:
  * recording overhead: our decode loop recording every sampled id and its logprob
    (the default) against the same loop with recording off, i.e. plain generation
    (goal: under 5%);
  * our loop against transformers' `model.generate` (greedy, KV cache), as a check that
    the hand-written loop is not slow;
  * batched (`--batch` concurrent requests through the dynamic batcher) against single;
  * constrained decoding: seconds per reply and tokens per second against free decoding
    with the same token budget.
Greedy decoding with the end-of-turn token masked out (ignore_eos), so every variant
writes exactly `--new-tokens` tokens and the comparisons are like for like.
`--tiny` uses a tiny random Llama (fast, for a smoke run) instead of the packaged SmolLM2.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from scaffold.messages import GenerateConfig, Message  # noqa: E402
from scaffold.providers.hf_local import LocalChatModel, _load  # noqa: E402
from scaffold.providers.local_weights import load_packaged_tokenizer, resolve_local_model  # noqa: E402
from scaffold.tools import AUDITOR_TOOLS  # noqa: E402

TOPICS = ["the seasons", "sourdough bread", "tidal power", "chess openings", "bird migration", "compilers",
          "volcanoes", "jazz harmony", "the printing press", "coral reefs", "quantum dots", "glaciers",
          "the Silk Road", "vaccines", "origami", "black holes"]


def load(tiny: bool) -> tuple[Any, Any]:
    if not tiny:
        return _load(str(resolve_local_model("smollm2-135m")), "float32", "cpu")
    import transformers

    tokenizer = load_packaged_tokenizer()
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=8192, tie_word_embeddings=True)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval(), tokenizer


class IgnoreEos:
    """A forward hook that makes end-of-turn ids unsampleable, so every reply has full length."""

    def __init__(self, model: Any, stop_ids: set[int]) -> None:
        self.model, self.stop = model, sorted(stop_ids)

    def __enter__(self) -> IgnoreEos:
        def hook(module: Any, inputs: Any, output: torch.Tensor) -> torch.Tensor:
            output = output.clone()
            output[..., self.stop] = float("-inf")
            return output

        self.handle = self.model.get_output_embeddings().register_forward_hook(hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.handle.remove()


def conversation(i: int) -> list[Message]:
    return [Message(role="system", content="You are a helpful assistant."),
            Message(role="user", content=f"Explain {TOPICS[i % len(TOPICS)]} to a curious teenager, in detail.")]


def timed(fn: Callable[[], Any], repeats: int) -> float:
    return interleaved([fn], repeats)[0]


def interleaved(fns: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Median seconds of each function, run in turn (A, B, A, B, ...) so that drift in
    the machine's load falls on all of them alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            started = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="a tiny random Llama instead of SmolLM2")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    model, tokenizer = load(args.tiny)
    n = args.new_tokens
    greedy = GenerateConfig(temperature=0.0, max_tokens=n)

    def policy(record: bool, constrained: bool = False) -> LocalChatModel:
        return LocalChatModel(model, tokenizer, name="bench", max_tokens=n, record_logprobs=record,
                              constrained=constrained, max_batch_size=max(args.batch, 1))

    recording, plain = policy(True), policy(False)

    def run(chat: LocalChatModel, count: int, tools: list = ()) -> int:  # type: ignore[assignment]
        async def go() -> int:
            replies = await asyncio.gather(*(chat.generate(conversation(i), tools, greedy) for i in range(count)))
            return sum(len(r.tokens.completion_ids) for r in replies)

        return asyncio.run(go())

    with IgnoreEos(model, recording.stop_ids):
        for chat in (recording, plain):  # warm-up: first-call allocations and thread start
            run(chat, 1)
        assert run(recording, 1) == run(plain, 1) == n
        rows = []
        for label, count in (("single", 1), (f"batch {args.batch}", args.batch)):
            t_record, t_plain = interleaved(
                [lambda: run(recording, count), lambda: run(plain, count)], args.repeats  # noqa: B023
            )
            rows.append((label, count * n / t_record, count * n / t_plain, t_record / t_plain))
        ids = recording.prompts.encode(recording.render_prompt(conversation(0)))

        def hf_generate() -> None:
            model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                           max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=recording.pad_id)

        t_hf = timed(hf_generate, args.repeats)

    tools = [t.definition for t in AUDITOR_TOOLS.values()]
    constrained = policy(True, constrained=True)
    run(constrained, 1, tools)  # warm-up builds the vocabulary masks once
    free_tools = policy(True)
    replies = []

    def constrained_run() -> None:
        async def go() -> None:
            replies.append(await constrained.generate(conversation(0), tools, greedy))

        asyncio.run(go())

    with IgnoreEos(model, recording.stop_ids):
        t_free_tools = timed(lambda: run(free_tools, 1, tools), args.repeats)
    t_constrained = timed(constrained_run, args.repeats)
    reply = replies[-1]
    forced = len(reply.tokens.completion_ids) - sum(reply.tokens.completion_mask or [])

    print(f"model: {'tiny random Llama' if args.tiny else 'SmolLM2-135M (fp32, CPU)'}, {n} new tokens, greedy, "
          f"median of {args.repeats}, torch threads {torch.get_num_threads()}")
    print(f"{'':<10} {'recording tok/s':>16} {'plain tok/s':>12} {'recording / plain time':>24}")
    for label, rec, pl, ratio in rows:
        print(f"{label:<10} {rec:>16.1f} {pl:>12.1f} {ratio:>23.3f}x")
    single_record = rows[0][1]
    print(f"batched / single throughput: {rows[1][1] / single_record:.2f}x")
    print(f"transformers generate (single): {n / t_hf:.1f} tok/s; our recording loop / generate time: "
          f"{(n / single_record) / t_hf:.3f}x")
    print(f"constrained tool call: {len(reply.tokens.completion_ids)} tokens ({forced} forced by the grammar) in "
          f"{t_constrained:.2f} s = {len(reply.tokens.completion_ids) / t_constrained:.1f} tok/s; free decoding "
          f"with the same prompt: {n / t_free_tools:.1f} tok/s; valid call: "
          f"{bool(reply.message.tool_calls) and all(c.parse_error is None for c in reply.message.tool_calls)}")


if __name__ == "__main__":
    main()
