"""Where a GRPO step's time goes, for each speed lever, side by side in one run.

    python benchmarks/grpo_step.py [--config training/configs/cpu-smoke.yaml] [--steps 2]
        [--variants fp32/full,fp32/compact,fp32/compact/noturns,bf16/compact] [--force-bf16]
        [--probe-tokens 256] [--decode-steps 32] [--keep DIR] [--set K=V ...]

A variant is `PRECISION/MANUAL[/nocache|/noturns|/unmerged]`: fp32, bf16 autocast or auto
(policy.precision; on a CPU with native bf16, auto is bf16 for the update only), the
full or compact auditor manual (policy.manual); `noturns` turns the hf sampler's
per-rollout turn cache off (each turn prefills the whole conversation again), `nocache`
turns it and the shared-prefix KV cache off, `unmerged` samples through peft's LoRA layers
instead of a merged copy (policy.merge_lora). Each variant runs the config for `--steps` steps
in this process and reports rollout, reward and update seconds (mean over steps 2..N:
the first pays one-off costs), then each variant's step time as a ratio of the first
variant's, measured here, in this run.

bf16 variants run only where the device computes bf16 natively (precision.bf16_is_native)
unless --force-bf16: on a CPU without avx512_bf16 or AMX autocast is emulated and a
step takes many times longer. The precision probe (one forward+backward of the config's
base model with a LoRA over `--probe-tokens` tokens, fp32 then bf16 autocast) shows
that ratio in seconds rather than hours; 0 skips it. The decode probe times one decode
step of 8 rows after a 600-token prefill, fp32 then bf16 autocast, over the same fed
tokens, and fp32 with the LoRA merged into the base as rollouts sample (training.policy.
sampling_mode): the rollout rows cannot compare precisions like for like, since a precision's
sampled trajectories (the `sampled` column: tokens the policy chose, not the grammar)
differ from another's.

"Scaffold share" is the rollout wall time with no model call in flight: the graph,
tools, store and checkpoints.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from scaffold.providers.precision import autocast, bf16_is_native  # noqa: E402
from training.config import TrainConfig, load_config, parse_assignment  # noqa: E402
from training.grpo import run_grpo  # noqa: E402
from training.metrics import read_metrics  # noqa: E402
from training.policy import load_base, lora_config, sampling_mode  # noqa: E402

PHASES = ("time/rollout_s", "time/reward_s", "time/update_s", "time/step_s", "time/policy_s", "time/target_s")


def variant_overrides(variant: str) -> dict[str, object]:
    """`fp32/compact/nocache` -> the config fields it sets."""
    parts = variant.split("/")
    if len(parts) not in (2, 3) or parts[0] not in ("fp32", "bf16", "auto") or parts[1] not in ("full", "compact"):
        raise SystemExit(f"--variants: {variant!r} is not PRECISION/MANUAL[/nocache|/noturns|/unmerged] (fp32|bf16|auto, full|compact)")
    if len(parts) == 3 and parts[2] not in ("nocache", "noturns", "unmerged"):
        raise SystemExit(f"--variants: {variant!r}: the third part can only be nocache, noturns or unmerged")
    lever = parts[2] if len(parts) == 3 else ""
    return {
        "policy.precision": parts[0],
        "policy.manual": parts[1],
        "policy.prefix_cache": lever != "nocache",
        "policy.turn_cache": lever not in ("nocache", "noturns"),
        "policy.merge_lora": lever != "unmerged",
    }


def measure(config_path: Path, steps: int, overrides: dict[str, object], keep: Path | None) -> dict[str, float]:
    """Run `steps` GRPO steps with `overrides`; the phase means over steps 2..N.

    With `keep`, the run directory (metrics, rollouts) is kept there, not in a temporary one."""
    config = load_config(config_path, {**overrides, "steps": steps, "eval.at_end": False, "eval.every": 0})
    with tempfile.TemporaryDirectory() as tmp:
        out = keep or Path(tmp) / "run"
        run_grpo(config, out)
        records = [r for r in read_metrics(out) if r["stage"] == "grpo"]
    # The first step pays one-off costs (model load, grammar build, first prefix): skip it when there are more.
    timed = records[1:] if len(records) > 1 else records
    out = {key: statistics.fmean(r[key] for r in timed) for key in PHASES}
    out["scaffold_share"] = statistics.fmean(r["time/scaffold_share"] for r in timed)
    out["tokens_per_s"] = statistics.fmean(r["tokens_per_s"] for r in timed)
    out["sampled"] = statistics.fmean(r.get("tokens/sampled", 0) for r in timed)
    out["reward_mean"] = statistics.fmean(r.get("reward/mean", 0.0) for r in timed)
    out["valid"] = statistics.fmean(r.get("valid_tool_call_rate", 0.0) for r in timed)
    return out


def precision_probe(config: TrainConfig, tokens: int) -> dict[str, float]:
    """Seconds of one forward+backward over `tokens` tokens (LoRA on the base), fp32 and bf16 autocast."""
    from peft import get_peft_model

    model, _ = load_base(config)
    model = get_peft_model(model, lora_config(config, model))
    ids = torch.randint(0, model.config.vocab_size, (1, tokens))
    out = {}
    for name, bf16 in (("fp32", False), ("bf16", True), ("fp32_again", False)):
        started = time.perf_counter()
        with autocast(ids.device, bf16):
            logits = model(input_ids=ids, logits_to_keep=min(tokens, 256)).logits
        torch.log_softmax(logits.float(), -1).mean().backward()
        model.zero_grad(set_to_none=True)
        out[name] = time.perf_counter() - started
    return out


def decode_probe(config: TrainConfig, prefix: int, steps: int, batch: int = 8) -> dict[str, float]:
    """Seconds per decode step of `batch` rows after a `prefix`-token prefill, fp32 and bf16 autocast.

    The same fed tokens in both, so unlike the table's rollout rows (whose sampled
    trajectories differ with the precision) this is like for like."""
    from peft import get_peft_model

    model, _ = load_base(config)
    model = get_peft_model(model, lora_config(config, model)).eval()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, prefix), generator=generator)
    fed = torch.randint(0, model.config.vocab_size, (batch, steps), generator=generator)
    out = {}
    for name, bf16, merge in (
        ("fp32", False, False), ("bf16", True, False), ("fp32_again", False, False), ("fp32_merged", False, True)
    ):
        with sampling_mode(model, merge=merge), torch.inference_mode(), autocast(ids.device, bf16):
            cache = model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values
            started = time.perf_counter()
            for i in range(steps):
                cache = model(input_ids=fed[:, i : i + 1], past_key_values=cache, use_cache=True).past_key_values
            out[name] = (time.perf_counter() - started) / steps
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "training" / "configs" / "cpu-smoke.yaml")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--variants", default="fp32/full,fp32/compact,bf16/full,bf16/compact")
    parser.add_argument("--force-bf16", action="store_true", help="run bf16 variants even where bf16 is emulated")
    parser.add_argument("--probe-tokens", type=int, default=256, help="precision probe length (0: skip)")
    parser.add_argument(
        "--decode-steps", type=int, default=32, help="decode probe steps after a 600-token prefill (0: skip)"
    )
    parser.add_argument("--set", dest="assignments", action="append", default=[], help="FIELD=VALUE override")
    parser.add_argument("--keep", type=Path, help="keep each variant's run directory under this one")
    args = parser.parse_args()
    overrides = dict(parse_assignment(a) for a in args.assignments)
    base_config = load_config(args.config, overrides)
    native = bf16_is_native("cuda" if torch.cuda.is_available() else "cpu")
    print(f"config {args.config.name} {' '.join(args.assignments)}; bf16 native here: {native}")

    if args.probe_tokens:
        probe = precision_probe(base_config, args.probe_tokens)
        print(
            f"precision probe, {base_config.policy.base} + LoRA, {args.probe_tokens} tokens, forward+backward: "
            f"fp32 {probe['fp32']:.2f} s (again {probe['fp32_again']:.2f} s), bf16 autocast {probe['bf16']:.2f} s, "
            f"bf16/fp32 = {probe['bf16'] / probe['fp32_again']:.2f}x"
        )

    if args.decode_steps:
        decode = decode_probe(base_config, 600, args.decode_steps)
        print(
            f"decode probe, 8 rows after a 600-token prefill, {args.decode_steps} steps: fp32 "
            f"{decode['fp32'] * 1000:.0f} ms a step (again {decode['fp32_again'] * 1000:.0f} ms), bf16 autocast "
            f"{decode['bf16'] * 1000:.0f} ms, bf16/fp32 = {decode['bf16'] / decode['fp32_again']:.2f}x; fp32 with the "
            f"LoRA merged (as rollouts sample) {decode['fp32_merged'] * 1000:.0f} ms, "
            f"merged/unmerged = {decode['fp32_merged'] / decode['fp32_again']:.2f}x",
            flush=True,
        )

    variants = [v for v in args.variants.split(",") if v]
    fields = {v: variant_overrides(v) for v in variants}  # every name is checked before anything runs
    results: dict[str, dict[str, float]] = {}
    print(f"\n{args.steps} steps per variant, mean over steps 2..N (seconds); each row as soon as it is measured")
    print(f"{'variant':22}{'rollout':>9}{'reward':>9}{'update':>9}{'step':>9}{'tok/s':>8}{'sampled':>9}{'scaffold':>10}{'valid':>7}{'vs first':>10}")
    for variant in variants:
        if fields[variant]["policy.precision"] == "bf16" and not native and not args.force_bf16:
            print(f"{variant:22}skipped: bf16 is emulated on this device (see the probe; --force-bf16 runs it)")
            continue
        keep = args.keep / variant.replace("/", "-") if args.keep else None
        results[variant] = r = measure(args.config, args.steps, {**overrides, **fields[variant]}, keep)
        first = results[next(iter(results))]
        print(
            f"{variant:22}{r['time/rollout_s']:>9.1f}{r['time/reward_s']:>9.2f}{r['time/update_s']:>9.1f}"
            f"{r['time/step_s']:>9.1f}{r['tokens_per_s']:>8.1f}{r['sampled']:>9.0f}{r['scaffold_share']:>10.1%}{r['valid']:>7.2f}"
            f"{r['time/step_s'] / first['time/step_s']:>9.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
