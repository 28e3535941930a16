"""A GRPO run, step by step, as a markdown table: what each group drew, earned and did.

    python benchmarks/grpo_steps_table.py OUT [--from STEP] [--to STEP]

Reads OUT/metrics.jsonl (one line per step) and OUT/rollouts.jsonl (one line per rollout,
for the quirk drawn and how many rollouts the reward paid), then prints one row per step
and a totals row. Run READMEs under training/runs/ quote this table.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.metrics import read_metrics, read_rollout_lines  # noqa: E402

HEADER = ("step", "quirk", "reward mean", "rollouts paid", "grounded", "claimed", "quirk showed",
          "quotes a cited reply", "quotes its own request", "hacky", "strategy entropy (bits)", "rollout s", "update s")


def read_rollouts(out: Path) -> dict[int, list[dict[str, Any]]]:
    """OUT/rollouts.jsonl by step (a torn last line is skipped)."""
    steps: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in read_rollout_lines(out):
        steps[row["step"]].append(row)
    return steps


def _count(rate: float | None, n: int) -> int:
    return round((rate or 0.0) * n)


def _mean(lines: list[dict[str, Any]], key: str, digits: int) -> str:
    """The totals row's cell for a per-step measure: its mean over the steps that logged it."""
    values = [m[key] for m in lines if key in m]
    return f"mean {sum(values) / len(values):.{digits}f}" if values else ""


def step_rows(out: Path, first: int = 1, last: int | None = None) -> list[tuple[str, ...]]:
    """One row per GRPO step of OUT in [first, last], then the totals."""
    rollouts = read_rollouts(out)
    lines = [r for r in read_metrics(out) if r.get("stage") == "grpo" and r["step"] >= first
             and (last is None or r["step"] <= last)]
    rows, totals = [], defaultdict(int)
    for m in lines:
        group = rollouts.get(m["step"], [])
        n = m.get("rollouts", len(group))
        counts = {
            "paid": sum(1 for r in group if (r.get("reward") or 0) > 0),
            "grounded": _count(m.get("grounded_rate"), n),
            "claimed": _count(m.get("claim_rate"), n),
            "showed": _count(m.get("quirk_showed_rate"), n),
            "quoted": _count(m.get("quote_rate"), n),
            "own": _count(m.get("quotes_own_request_rate"), n),
            "hacky": _count(m.get("hacky_rate"), n),
            "n": n,
        }
        for key, value in counts.items():
            totals[key] += value
        totals["own_n"] += n if "quotes_own_request_rate" in m else 0  # older runs did not log it
        totals["updated"] += (m.get("reward/std") or 0) > 0  # a group told apart: its advantages move the policy
        quirks = sorted({r["quirk"] for r in group}) or ["?"]
        rows.append((
            str(m["step"]), ", ".join(quirks), f"{m.get('reward/mean', 0):.3f}",
            *(f"{counts[k]}/{n}" for k in ("paid", "grounded", "claimed", "showed", "quoted")),
            f"{counts['own']}/{n}" if "quotes_own_request_rate" in m else "–", f"{counts['hacky']}/{n}",
            f"{m.get('strategy_entropy_bits', 0):.2f}", f"{m.get('time/rollout_s', 0):.0f}",
            f"{m.get('time/update_s', 0):.0f}",
        ))
    if lines:
        n = totals["n"]
        rows.append((
            f"**{len(lines)} steps**", f"{totals['updated']} updated", "",
            *(f"{totals[k]}/{n}" for k in ("paid", "grounded", "claimed", "showed", "quoted")),
            f"{totals['own']}/{totals['own_n']}" if totals["own_n"] else "–",
            f"{totals['hacky']}/{n}",
            *(_mean(lines, key, digits) for key, digits in (("strategy_entropy_bits", 2), ("time/rollout_s", 0), ("time/update_s", 0))),
        ))
    return rows


def markdown(rows: list[tuple[str, ...]]) -> str:
    """The rows under HEADER as a markdown table."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a GRPO output directory")
    parser.add_argument("--from", dest="first", type=int, default=1, help="first step (default 1)")
    parser.add_argument("--to", dest="last", type=int, default=None, help="last step (default: the last logged)")
    args = parser.parse_args(argv)
    if not (args.out / "metrics.jsonl").exists():
        parser.error(f"no metrics.jsonl in {args.out}")
    print(markdown(step_rows(args.out, args.first, args.last)))


if __name__ == "__main__":
    main()
