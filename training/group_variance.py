"""How much of a GRPO run's reward variance lies within its groups: what the advantages can see.

    python -m training.group_variance OUT [OUT...] [--from STEP] [--to STEP]

GRPO's advantage is a rollout's reward less its group's mean, so only the spread within a
group moves the policy. The spread between groups (one quirk's organism is easier than
another's, or a shared start reached the trigger and another did not) is invisible to it.
For each run this prints, over its steps: the groups, how many were told apart (rewards not
all equal), the within-group share of the reward's sum of squares about the run's mean, and
the mean within-group standard deviation. Groups are read from OUT/rollouts.jsonl: a step's
rollouts in batch order, `group_size` (OUT/config.yaml) at a time.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from training.config import load_config
from training.metrics import read_rollout_lines


def run_groups(out: Path, first: int = 1, last: int | None = None) -> list[list[float]]:
    """The rewards of each group of OUT's steps in [first, last]; a group with an unscored rollout is left out."""
    size = load_config(out / "config.yaml").group_size
    by_step: dict[int, list[dict[str, Any]]] = {}
    for row in read_rollout_lines(out):
        if row["step"] >= first and (last is None or row["step"] <= last):
            by_step.setdefault(row["step"], []).append(row)
    groups = []
    for rows in by_step.values():
        rows.sort(key=lambda r: int(r["run_id"].split("-")[1]))  # s{step}-{index}-...: the batch order
        for start in range(0, len(rows) - size + 1, size):
            rewards = [r["reward"] for r in rows[start : start + size]]
            if None not in rewards:
                groups.append(rewards)
    return groups


def variance_split(groups: list[list[float]]) -> dict[str, float]:
    """Groups, groups told apart, the within-group share of the sum of squares, the mean within-group std."""
    rewards = [r for g in groups for r in g]
    if not rewards:
        return {"groups": 0, "told_apart": 0, "within_share": 0.0, "within_std": 0.0}
    mean = fmean(rewards)
    total = sum((r - mean) ** 2 for r in rewards)
    within = sum((r - fmean(g)) ** 2 for g in groups for r in g)
    return {
        "groups": len(groups),
        "told_apart": sum(1 for g in groups if max(g) > min(g)),
        "within_share": within / total if total else 0.0,
        "within_std": fmean(pstdev(g) for g in groups),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="GRPO output directories")
    parser.add_argument("--from", dest="first", type=int, default=1, help="first step (default 1)")
    parser.add_argument("--to", dest="last", type=int, default=None, help="last step (default: the last logged)")
    args = parser.parse_args(argv)
    print("| run | steps | groups | told apart | within-group share of the variance | mean within-group std |")
    print("|---|---|---|---|---|---|")
    for out in args.runs:
        if not (out / "rollouts.jsonl").exists() or not (out / "config.yaml").exists():
            parser.error(f"{out}: no rollouts.jsonl and config.yaml (not a GRPO output directory)")
        groups = run_groups(out, args.first, args.last)
        split = variance_split(groups)
        steps = f"{args.first}-{args.last}" if args.last else f"{args.first}-"
        print(f"| {out.name} | {steps} | {split['groups']} | {split['told_apart']} | {split['within_share']:.2f} "
              f"| {split['within_std']:.3f} |")


if __name__ == "__main__":
    main()
