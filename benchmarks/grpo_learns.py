"""Does the GRPO loop climb the reward it is given? A sanity check of sign and plumbing.

    python benchmarks/grpo_learns.py [--steps 20]

The tiny random Llama (constrained decoding) is trained for a few steps on a reward it
can move: the share of its turns that call `send_message`, one tool of ~15, so the
untrained rate is low. Prints the per-step mean reward and the ratio of the last
quarter's mean to the first quarter's (measured in this run). A ratio near 1 means the
update does not follow the advantages.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewards.reward import REWARDS  # noqa: E402
from rewards.types import RewardResult  # noqa: E402
from training.config import load_config  # noqa: E402
from training.grpo import run_grpo  # noqa: E402
from training.metrics import read_metrics  # noqa: E402


def probe_rate(judge, transcript, weights=None) -> RewardResult:  # noqa: ANN001
    turns = [m for m in transcript.auditor_messages if m.role == "assistant"]
    probes = sum(1 for m in turns if any(c.name == "send_message" for c in m.tool_calls))
    value = probes / len(turns) if turns else 0.0
    return RewardResult(name="probe_rate", reward=value, components={"probe_rate": value})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=5e-3)
    args = parser.parse_args()
    REWARDS["probe_rate"] = probe_rate
    config = load_config(
        ROOT / "training" / "configs" / "cpu-smoke.yaml",
        {"reward.family": "probe_rate", "steps": args.steps, "lr": args.lr, "eval.at_end": False, "save_every": args.steps,
         "tasks.max_turns": 3, "group_size": 8, "micro_batch_size": 4, "prompts_per_step": 1},
    )
    with tempfile.TemporaryDirectory() as tmp:
        run_grpo(config, Path(tmp) / "run")
        rewards = [r["reward/mean"] for r in read_metrics(Path(tmp) / "run") if r["stage"] == "grpo"]
    quarter = max(1, len(rewards) // 4)
    first, last = statistics.fmean(rewards[:quarter]), statistics.fmean(rewards[-quarter:])
    print("reward/mean by step:", " ".join(f"{r:.2f}" for r in rewards))
    print(f"first {quarter} steps {first:.3f} -> last {quarter} steps {last:.3f}: ratio {last / first if first else float('inf'):.2f}x")


if __name__ == "__main__":
    main()
