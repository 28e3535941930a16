"""Grouped key/value heads in CPU attention: the decode pass and the update, with and without copying heads.

transformers repeats each key/value head n_rep times before SDPA (`repeat_kv`) unless
TRANSFORMERS_SDPA_FORCE_GQA is set; `load_model_and_tokenizer` sets it on CPU
(scaffold/providers/local_weights.py). This prints, in one run on the packaged SmolLM2 (9 query
heads, 3 key/value heads):
  * a decode pass over a batch of cached rows (as in a GRPO group), for chunks of 1 to 10 ids
    (a chunk is a sampled id plus the forced ids the grammar appends after it);
  * a forward+backward over one long row (the update);
with medians, the ratio copy/grouped, and the largest logit difference between the two.

    python benchmarks/cpu_attention.py [--batch 8] [--context 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.interleaved import interleaved_medians  # noqa: E402
from scaffold.providers.local_weights import GQA_ENV, load_model_and_tokenizer, resolve_local_model  # noqa: E402


def timed(run: Callable[[], Any], gqa: bool) -> tuple[float, Any]:
    """`run` returns (seconds, output): it times only the part that attention touches."""
    os.environ[GQA_ENV] = "1" if gqa else "0"
    return run()


def compare(name: str, run: Callable[[], Any], repeats: int) -> None:
    medians, outputs = interleaved_medians({"copy": lambda: timed(run, False), "grouped": lambda: timed(run, True)}, repeats)
    copy_s, grouped_s = medians["copy"], medians["grouped"]
    diff = (outputs["copy"] - outputs["grouped"]).abs().max().item()
    print(f"{name:<34} copy {copy_s * 1000:8.0f} ms   grouped {grouped_s * 1000:8.0f} ms   "
          f"ratio {copy_s / grouped_s:5.2f}x   max |logit diff| {diff:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--context", type=int, default=2000, help="cached tokens per row")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--update-length", type=int, default=1536)
    args = parser.parse_args()
    model, _ = load_model_and_tokenizer(resolve_local_model("smollm2-135m"))
    config = model.config
    print(f"SmolLM2: {config.num_attention_heads} query heads, {config.num_key_value_heads} key/value heads; "
          f"{torch.get_num_threads()} threads; batch {args.batch}, {args.context} cached tokens a row")
    generator = torch.Generator().manual_seed(0)
    batch, context = args.batch, args.context
    with torch.inference_mode():
        prompt = torch.randint(0, 5000, (batch, context), generator=generator)
        cache = model(input_ids=prompt, use_cache=True, logits_to_keep=1).past_key_values
        for span in (1, 2, 4, 10):
            ids = torch.randint(0, 5000, (batch, span), generator=generator)
            mask = torch.ones(batch, context + span, dtype=torch.long)
            mask[0, : context // 4] = 0  # left padding, as a batch of unequal prompts has
            positions = (mask.cumsum(-1) - 1)[:, context:]

            def decode_pass(ids: torch.Tensor = ids, mask: torch.Tensor = mask, positions: torch.Tensor = positions) -> Any:
                fresh = copy.deepcopy(cache)  # a pass appends to the cache: each timing starts from the same one
                started = time.perf_counter()
                out = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                            past_key_values=fresh, use_cache=True, logits_to_keep=span)
                return time.perf_counter() - started, out.logits

            compare(f"decode pass, chunk of {span}", decode_pass, args.repeats)
    row = torch.randint(0, 5000, (1, args.update_length), generator=generator)

    def update() -> Any:
        model.zero_grad(set_to_none=True)
        started = time.perf_counter()
        logits = model(input_ids=row).logits
        logits.float().logsumexp(-1).mean().backward()
        return time.perf_counter() - started, logits.detach()

    compare(f"forward+backward, {args.update_length} tokens", update, max(2, args.repeats // 2))


if __name__ == "__main__":
    main()
