"""How much a GRPO run's probing could elicit: each rollout's first turns scored against every quirk.

    python benchmarks/probe_value.py OUT [OUT ...] [--turns 1] [--block 5]

A step's reward depends on which four quirks it drew, so a curve of rewards mixes the policy's
progress with the draw. This removes the draw: for each stored rollout, the target conversation
of its first --turns auditor turns is tested against the trigger of **every** quirk of a split
(the run's train quirks, the generated set's held-out combinations, its held-out families).
A rollout's value on a split is the share of the split's quirks that some reply of those turns
would have been triggered by (`rewards.trigger_coverage.quirks_met_by`, the organisms' own
test; the fire rate is left out). On the train split it is the `trigger_coverage` reward, but
over the run's own train quirks (its `tasks.families`), not every train quirk of the set. The mean
over a step's rollouts is what the policy's probing at that step was worth, on every quirk at once.
It prints one row per block of steps, and a run's top
first-turn requests in its first and last block (the first 40 characters, lowercased), each
with its share of the block's requests and what one reply to it was worth on the train split.

The replies tested are the ones the audited organism wrote; the trigger tests read the user's
turns. The triggers are the organisms' own code (targets/), read here only to describe finished
training audits, never by a policy, a reward or a grader.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals.suites import split_quirk_ids  # noqa: E402
from rewards.trigger_coverage import quirks_met_by, replies_within  # noqa: E402
from scaffold.store import Store  # noqa: E402
from scaffold.transcript import Transcript  # noqa: E402
from targets.grammar.generate import use_generated_set  # noqa: E402
from targets.quirks import get_quirk  # noqa: E402
from training.config import TrainConfig, load_config  # noqa: E402
from training.metrics import read_rollout_lines  # noqa: E402
from training.rollouts import training_tasks  # noqa: E402


def quirk_splits(config: TrainConfig) -> dict[str, list[str]]:
    """The run's train quirks, and the generated set's held-out combinations and families."""
    splits = {"train": sorted({t.quirk for t in training_tasks(config)})}
    for holdout in ("combination", "family"):
        held = [q for q in split_quirk_ids(["heldout"], generated=True)
                if (origin := get_quirk(q).generated) is not None and origin.holdout == holdout]
        splits["held-out " + ("families" if holdout == "family" else "combinations")] = sorted(held)
    return splits


def run_values(
    out: Path, turns: int
) -> tuple[dict[str, dict[int, list[float]]], dict[int, Counter[str]], dict[str, list[float]]]:
    """Per split and step, each rollout's value; per step, the first turn's requests; per request,
    what each of its replies was worth on the train split."""
    config = load_config(out / "config.yaml")
    if config.tasks.generated is None:
        raise SystemExit(f"{out}: probe values need a run on generated quirks (tasks.generated)")
    use_generated_set(config.tasks.generated)
    splits = quirk_splits(config)
    every = sorted({q for quirks in splits.values() for q in quirks})
    store = Store(f"sqlite:///{out / 'rollouts.db'}")
    values: dict[str, dict[int, list[float]]] = {name: {} for name in splits}
    requests: dict[int, Counter[str]] = {}
    worth: dict[str, list[float]] = {}
    for row in read_rollout_lines(out):
        if row["reward"] is None:
            continue
        transcript = Transcript.from_events(row["run_id"], store.read_events(row["run_id"]))
        # Each reply's conversation is tested once against every quirk; the first turn's replies
        # come first, and each carries the request it answered.
        replies = replies_within(transcript, turns)
        conversations = [transcript.target.before(reply.id) for reply in replies]
        met = [quirks_met_by(conversation, every) for conversation in conversations]
        for conversation, hit in zip(conversations[: len(replies_within(transcript, 1))], met):
            if conversation and conversation[-1].role == "user":
                request = conversation[-1].content[:40].lower()
                requests.setdefault(row["step"], Counter())[request] += 1
                worth.setdefault(request, []).append(len(hit & set(splits["train"])) / len(splits["train"]))
        reached = set().union(*met)
        for name, quirks in splits.items():
            values[name].setdefault(row["step"], []).append(len(reached & set(quirks)) / len(quirks))
    return values, requests, worth


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outs", type=Path, nargs="+", help="GRPO output directories on generated quirks")
    parser.add_argument("--turns", type=int, default=1, help="the auditor turns whose replies count (default 1)")
    parser.add_argument("--block", type=int, default=5, help="steps per row")
    args = parser.parse_args(argv)
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    for out in args.outs:
        values, requests, worth = run_values(out, args.turns)
        steps = sorted(next(iter(values.values())))
        blocks = [steps[i : i + args.block] for i in range(0, len(steps), args.block)]
        names = list(values)
        print(f"\n{out} (first {args.turns} turn(s); a value is the share of a split's quirks a rollout's probing met)")
        print("| steps | rollouts | " + " | ".join(names) + " |\n|---|---|" + "---|" * len(names))
        for block in blocks:
            cells = [mean(v for s in block for v in values[n][s]) for n in names]
            count = sum(len(values[names[0]][s]) for s in block)
            print(f"| {block[0]}-{block[-1]} | {count} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
        for label, block in (("first", blocks[0]), ("last", blocks[-1])):
            top = sum((requests[s] for s in block), Counter()).most_common(3)
            total = sum(sum(requests[s].values()) for s in block)
            print(f"{label} block's top requests (share of its requests; one reply's train value): "
                  + "; ".join(f"{text!r} {n / total:.0%}, {mean(worth[text]):.3f}" for text, n in top))


if __name__ == "__main__":
    main()
