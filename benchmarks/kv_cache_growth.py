"""A run of decode passes with transformers' concatenating cache and with `growing_cache`.

Every pass of a batched decode appends a few ids per row to the KV cache. transformers'
`DynamicLayer` does that with `torch.cat`, copying each layer's whole cache on every pass;
`scaffold.providers.growing_cache` writes into spare room. This prints, in one run on the
packaged SmolLM2, the seconds for `--passes` consecutive passes of `--chunk` ids over a
batch of rows that start from `--context` cached tokens (left-padded, as a batch of unequal
prompts is), the ratio concat/growing, and the largest logit difference between the two.

With `--replies N` it also times the provider end to end: N concurrent constrained replies of
the `hf` provider (SmolLM2, the auditor's tools, a long system prompt, seeded sampling), once
with each cache, and checks that both sampled the same ids.

    python benchmarks/kv_cache_growth.py [--batch 16] [--context 2000] [--passes 100] [--chunk 2] [--repeats 3]
    python benchmarks/kv_cache_growth.py --passes 0 --replies 16
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch
from transformers import DynamicCache

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.interleaved import interleaved_medians  # noqa: E402
from benchmarks.provider_replies import concurrent_replies  # noqa: E402
from scaffold.providers import decode  # noqa: E402
from scaffold.providers import growing_cache as growing_module  # noqa: E402
from scaffold.providers.growing_cache import growing_cache  # noqa: E402
from scaffold.providers.local_weights import load_model_and_tokenizer, resolve_local_model  # noqa: E402


def run_passes(model: Any, prefix: list[tuple[torch.Tensor, torch.Tensor]], make_cache: Callable[[Any], Any],
               mask: torch.Tensor, chunks: list[torch.Tensor]) -> tuple[float, torch.Tensor]:
    """Seconds for the passes (cache building excluded), and the last pass's logits."""
    cache = make_cache([(k.clone(), v.clone()) for k, v in prefix])
    attention = mask
    logits = torch.empty(0)
    started = time.perf_counter()
    for ids in chunks:
        attention = torch.cat([attention, torch.ones_like(ids)], dim=1)
        positions = (attention.cumsum(-1) - 1)[:, -ids.shape[1]:]
        out = model(input_ids=ids, attention_mask=attention, position_ids=positions,
                    past_key_values=cache, use_cache=True, logits_to_keep=1)
        cache, logits = out.past_key_values, out.logits
    return time.perf_counter() - started, logits


def concat_cache(layers: Any = ()) -> DynamicCache:
    """transformers' own cache, built the way `growing_cache` is called."""
    layers = list(layers)
    return DynamicCache(ddp_cache_data=layers) if layers else DynamicCache()


def provider_replies(count: int, max_tokens: int) -> None:
    """`count` concurrent constrained replies with each cache: seconds and whether the ids agree."""
    results: dict[str, tuple[float, list[list[int]]]] = {}
    relay = decode.COMPACT_BELOW
    decode.COMPACT_BELOW = 0.0  # only a growing cache can be re-laid: compare the caches alone
    for name, maker in (("concat", concat_cache), ("growing", growing_cache)):
        growing_module.growing_cache = maker  # hf_local imports it by name at each decode
        seconds, records, _ = concurrent_replies(count, max_tokens)
        results[name] = (seconds, [r.completion_ids for r in records])
    growing_module.growing_cache = growing_cache
    decode.COMPACT_BELOW = relay
    (concat_s, concat_ids), (growing_s, growing_ids) = results["concat"], results["growing"]
    tokens = sum(len(i) for i in growing_ids)
    print(f"provider, {count} concurrent replies ({tokens} ids): concat {concat_s:.1f} s, growing {growing_s:.1f} s, "
          f"ratio {concat_s / growing_s:.2f}x; same ids: {concat_ids == growing_ids}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=2000, help="cached tokens per row before the passes")
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=2, help="ids per row per pass (a sampled id and forced ones)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replies", type=int, default=0, help="also time N concurrent provider replies (0: skip)")
    parser.add_argument("--max-tokens", type=int, default=640, help="per provider reply")
    args = parser.parse_args()
    if args.replies:
        provider_replies(args.replies, args.max_tokens)
    if not args.passes:
        return
    model, _ = load_model_and_tokenizer(resolve_local_model("smollm2-135m"))
    print(f"SmolLM2, {torch.get_num_threads()} threads; batch {args.batch}, {args.context} cached tokens a row, "
          f"{args.passes} passes of {args.chunk} ids")
    generator = torch.Generator().manual_seed(0)
    batch, context = args.batch, args.context
    makers: dict[str, Callable[[Any], Any]] = {
        "concat": concat_cache,
        "growing": growing_cache,
    }
    with torch.inference_mode():
        prompt = torch.randint(0, 5000, (batch, context), generator=generator)
        mask = torch.ones(batch, context, dtype=torch.long)
        mask[0, : context // 4] = 0
        filled = model(input_ids=prompt, attention_mask=mask, use_cache=True, logits_to_keep=1).past_key_values
        prefix = [(layer.keys, layer.values) for layer in filled.layers]
        chunks = [torch.randint(0, 5000, (batch, args.chunk), generator=generator) for _ in range(args.passes)]
        runs = {name: (lambda make=make: run_passes(model, prefix, make, mask, chunks)) for name, make in makers.items()}
        medians, logits = interleaved_medians(runs, args.repeats)
    concat, growing = medians["concat"], medians["growing"]
    diff = (logits["concat"] - logits["growing"]).abs().max().item()
    print(f"concat  {concat:7.2f} s  ({concat / args.passes * 1000:6.0f} ms a pass)")
    print(f"growing {growing:7.2f} s  ({growing / args.passes * 1000:6.0f} ms a pass)")
    print(f"ratio concat/growing {concat / growing:5.2f}x   max |logit diff| {diff:.2e}")


if __name__ == "__main__":
    main()
