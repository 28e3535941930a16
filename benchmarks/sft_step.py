"""What an SFT warm-start step costs with each speed lever, side by side in one run.

    python benchmarks/sft_step.py [--config training/configs/cpu-smollm2-situations.yaml]
        [--data DIR] [--rows 3] [--repeats 2] [--top-layers 15,10] [--tokens 2150]

Each variant runs training.sft.sft_loss and its backward on the same rows:
  all-logits     every layer adapted, the vocabulary projection at every position (the
                 warm start before stop 44)
  kept-logits    every layer adapted, logits only where a token carries loss (now the default)
  top-N          kept logits, only the top N decoder layers adapted (lora.top_layers=N):
                 backward stops below them
The rows are real transcripts from `--data` (an `audit eval --out` directory, read as the
config's sft stage reads it); without `--data`, one random row of `--tokens` tokens with
loss on every third token. Seconds are the minimum over `--repeats` after one warm-up
pass; ratios are to `all-logits`, measured here, in this run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from scaffold.providers.precision import autocast  # noqa: E402
from training.config import load_config  # noqa: E402
from training.policy import load_base, lora_config  # noqa: E402
from training.sft import SftRow, load_sft_data, sft_loss  # noqa: E402


def all_logits_loss(model: Any, row: SftRow, device: torch.device) -> torch.Tensor:
    """The loss as the warm start computed it before `logits_to_keep`: every position projected."""
    ids = torch.tensor([row.input_ids], device=device)
    mask = torch.tensor(row.loss_mask[1:], device=device, dtype=torch.bool)
    with autocast(device, False):
        logits = model(input_ids=ids).logits[0, :-1]
    return torch.nn.functional.cross_entropy(logits[mask].float(), ids[0, 1:][mask])


def time_variant(model: Any, rows: list[SftRow], loss_fn: Any, repeats: int) -> float:
    """Minimum over `repeats` of the seconds a forward+backward over every row takes (after a warm-up)."""
    device = next(model.parameters()).device
    best = float("inf")
    for attempt in range(repeats + 1):
        started = time.perf_counter()
        for row in rows:
            loss_fn(model, row, device).backward()
            model.zero_grad(set_to_none=True)
        if attempt:
            best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "training" / "configs" / "cpu-smollm2-situations.yaml")
    parser.add_argument("--data", type=Path, help="an `audit eval --out` directory to take rows from")
    parser.add_argument("--rows", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--top-layers", default="15,10", help="comma-separated lora.top_layers values to time")
    parser.add_argument("--tokens", type=int, default=2150, help="the random row's length, without --data")
    args = parser.parse_args()

    from peft import get_peft_model

    overrides: dict[str, object] = {"sft.data": [str(args.data)]} if args.data else {}
    config = load_config(args.config, overrides)
    if config.threads:
        torch.set_num_threads(config.threads)
    base, tokenizer = load_base(config)
    if args.data:
        rows = load_sft_data(config, tokenizer).rows[: args.rows]
    else:
        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(100, base.config.vocab_size, (args.tokens,), generator=generator).tolist()
        rows = [SftRow(run_id="random", input_ids=ids, loss_mask=[int(i % 3 == 0) for i in range(args.tokens)], turns=1)]
    tokens = sum(len(r.input_ids) for r in rows)
    print(f"{config.policy.base}: {len(rows)} rows, {tokens} tokens "
          f"({sum(sum(r.loss_mask) for r in rows)} with loss), {torch.get_num_threads()} threads, fp32")

    variants: list[tuple[str, int | None, Any]] = [("all-logits", None, all_logits_loss), ("kept-logits", None, sft_loss)]
    variants += [(f"top-{n}", int(n), sft_loss) for n in args.top_layers.split(",") if n]
    results: list[tuple[str, float]] = []
    for name, top, loss_fn in variants:
        varied = config.model_copy(update={"lora": config.lora.model_copy(update={"top_layers": top})})
        model = get_peft_model(base, lora_config(varied, base))
        model.train()
        results.append((name, time_variant(model, rows, loss_fn, args.repeats)))
        base = model.unload()  # the same base weights for the next variant
    reference = results[0][1]
    print(f"{'variant':<12} {'s/row':>8} {'tokens/s':>9} {'ratio':>6}")
    for name, seconds in results:
        print(f"{name:<12} {seconds / len(rows):8.2f} {tokens / seconds:9.0f} {seconds / reference:6.2f}")


if __name__ == "__main__":
    main()
