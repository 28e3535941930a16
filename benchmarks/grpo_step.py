"""Where a GRPO step's time goes: rollout, reward (judge), update; the scaffold's share.

    python benchmarks/grpo_step.py [--config training/configs/cpu-smoke.yaml] [--steps 2] [--set K=V ...]

Runs the config for a few steps twice in one process, with the hf sampler's shared-
prefix KV cache on and off, and prints each phase's share of the step and the cache's
speed-up of the rollout phase (a ratio of two runs measured here, not a constant).
"Scaffold share" is the rollout wall time with no model call in flight: the graph,
tools, store and checkpoints.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from training.config import load_config, parse_assignment  # noqa: E402
from training.grpo import run_grpo  # noqa: E402
from training.metrics import read_metrics  # noqa: E402

PHASES = ("time/rollout_s", "time/reward_s", "time/update_s", "time/step_s", "time/policy_s", "time/target_s")


def measure(config_path: Path, steps: int, overrides: dict[str, object], prefix_cache: bool) -> dict[str, float]:
    config = load_config(config_path, {**overrides, "steps": steps, "eval.at_end": False, "eval.every": 0, "policy.prefix_cache": prefix_cache})
    with tempfile.TemporaryDirectory() as tmp:
        run_grpo(config, Path(tmp) / "run")
        records = [r for r in read_metrics(Path(tmp) / "run") if r["stage"] == "grpo"]
    # The first step pays one-off costs (model load, grammar build, first prefix): skip it when there are more.
    timed = records[1:] if len(records) > 1 else records
    out = {key: statistics.fmean(r[key] for r in timed) for key in PHASES}
    out["scaffold_share"] = statistics.fmean(r["time/scaffold_share"] for r in timed)
    out["tokens_per_s"] = statistics.fmean(r["tokens_per_s"] for r in timed)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "training" / "configs" / "cpu-smoke.yaml")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--set", dest="assignments", action="append", default=[], help="FIELD=VALUE override")
    args = parser.parse_args()
    overrides = dict(parse_assignment(a) for a in args.assignments)
    results = {flag: measure(args.config, args.steps, overrides, flag) for flag in (True, False)}
    print(f"config {args.config.name}, {args.steps} steps (mean over steps 2..N)")
    print(f"{'':24}{'prefix cache on':>18}{'off':>12}")
    for key in PHASES:
        print(f"{key:24}{results[True][key]:>16.2f} s{results[False][key]:>10.2f} s")
    for flag in (True, False):
        r = results[flag]
        step = r["time/step_s"]
        print(
            f"cache {'on ' if flag else 'off'}: rollout {r['time/rollout_s'] / step:.1%} of the step "
            f"(scaffold {r['scaffold_share']:.1%} of rollout), reward {r['time/reward_s'] / step:.1%}, "
            f"update {r['time/update_s'] / step:.1%}; {r['tokens_per_s']:.1f} sampled tok/s"
        )
    print(f"rollout speed-up from the prefix cache: {results[False]['time/rollout_s'] / results[True]['time/rollout_s']:.2f}x")


if __name__ == "__main__":
    main()
