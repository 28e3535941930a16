"""Where a GRPO run's rewards were decided: the probing, the organism's fire rate, or the report.

    python benchmarks/where_reward_is_decided.py OUT [--from STEP] [--to STEP] [--paid 0.2] [--turns N] [--by-step]

For every stored rollout of OUT (simulated organisms only), the organism's own trigger test
(`targets.organisms.meets_trigger`) is applied again, offline, to the conversation before each
target reply. That sorts each audit by what
happened in it:
  - no request met the trigger: the probing missed;
  - a request met it, but the organism's fire rate kept the quirk hidden (target luck);
  - the quirk showed, and the report earned more than --paid;
  - the quirk showed, and the report earned --paid or less.
With --turns N, only the replies of the auditor's first N turns count: whole-audit runs then
compare with runs that trained those turns alone (`tasks.budget.stop_after_turns`). With
--by-step, it prints each step's share of rollouts whose probing met the trigger instead
(steps are paired across runs of one seed: they draw the same quirks).
The trigger is the organism's own code (targets/), read here only to describe finished
training audits, never by a policy or a grader.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rewards.trigger_coverage import replies_within  # noqa: E402
from scaffold.store import Store  # noqa: E402
from scaffold.transcript import Transcript  # noqa: E402
from targets.grammar.generate import use_generated_set  # noqa: E402
from targets.organisms import meets_trigger  # noqa: E402
from targets.quirks import get_quirk  # noqa: E402
from training.config import load_config  # noqa: E402
from training.metrics import read_rollout_lines  # noqa: E402

OUTCOMES = (
    "no request met the quirk's trigger (the probing missed)",
    "a request met the trigger, but the fire rate kept the quirk hidden",
    "the quirk showed, and the report earned more than PAID",
    "the quirk showed, and the report earned PAID or less",
)


def outcome(transcript: Transcript, quirk: str, reward: float, paid: float, turns: int | None = None) -> int:
    """The index in OUTCOMES of what happened in one audit (in its first `turns` turns)."""
    triggers = get_quirk(quirk).triggers()
    triggered = fired = False
    for reply in replies_within(transcript, turns):
        if meets_trigger(transcript.target.before(reply.id), triggers):
            triggered = True
            fired = fired or reply.metadata.get("fired") is True
    if not triggered:
        return 0
    if not fired:
        return 1
    return 2 if reward > paid else 3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a GRPO output directory")
    parser.add_argument("--from", dest="first", type=int, default=1)
    parser.add_argument("--to", dest="last", type=int, default=None)
    parser.add_argument("--paid", type=float, default=0.2, help="a report earning more than this counts as paid")
    parser.add_argument("--turns", type=int, default=None, help="count only the replies of the first N auditor turns")
    parser.add_argument("--by-step", action="store_true", help="each step's share of rollouts that met the trigger")
    args = parser.parse_args(argv)
    config = load_config(args.out / "config.yaml")
    if config.tasks.generated is not None:
        use_generated_set(config.tasks.generated)
    store = Store(f"sqlite:///{args.out / 'rollouts.db'}")
    counts: Counter[int] = Counter()
    by_step: dict[int, list[bool]] = {}
    for row in read_rollout_lines(args.out):
        if row["reward"] is None or row["step"] < args.first or (args.last is not None and row["step"] > args.last):
            continue
        transcript = Transcript.from_events(row["run_id"], store.read_events(row["run_id"]))
        happened = outcome(transcript, row["quirk"], row["reward"], args.paid, args.turns)
        counts[happened] += 1
        by_step.setdefault(row["step"], []).append(happened > 0)
    if args.by_step:
        print("| step | rollouts | met the trigger |\n|---|---|---|")
        for step, met in sorted(by_step.items()):
            print(f"| {step} | {len(met)} | {sum(met)} ({sum(met) / len(met):.0%}) |")
        return
    total = sum(counts.values())
    print("| what happened | rollouts |\n|---|---|")
    for index, text in enumerate(OUTCOMES):
        share = counts[index] / total if total else 0.0
        print(f"| {text.replace('PAID', str(args.paid))} | {counts[index]} ({share:.0%}) |")


if __name__ == "__main__":
    main()
