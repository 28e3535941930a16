"""A GRPO run's own rollouts, rewarded again under other reward settings: how many groups each would update.

    python benchmarks/reward_counterfactual.py OUT [SETTING ...]

A SETTING is a reward family with optional weight changes, `shaped` or
`shaped:elicited=0.1,shaping=0.5`; the default compares the run's own setting with `grounded`
and `shaped:elicited=0.1`. Each rollout of OUT/rollouts.jsonl (one line per trained rollout) is
rebuilt from OUT/rollouts.db: its transcript from the stored events and its stored judge result,
so nothing is judged again. GRPO skips a group whose rewards are all equal, so the column that
matters is "groups that differ": a reward that pays more often, but the same in every rollout
of a group, teaches no more.

The run's own setting must reproduce the reward (and each component) every rollout was trained
on; the script says so, and exits 1 if it does not (the stored reward and the recomputed one would then disagree).
Why: a reward change costs a 2-hour run on this CPU to try; this measures its signal in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rewards.reward import REWARDS, RewardWeights  # noqa: E402
from rewards.types import JudgeResult  # noqa: E402
from scaffold.specs import SpecError  # noqa: E402
from scaffold.store import Store  # noqa: E402
from scaffold.transcript import Transcript  # noqa: E402
from targets.grammar.generate import use_generated_set  # noqa: E402
from targets.quirks import library_digest  # noqa: E402
from training.config import load_config, parse_assignment  # noqa: E402

DEFAULT_SETTINGS = ("grounded", "shaped:elicited=0.1")


def load_setting(out: Path, text: str) -> tuple[str, RewardWeights]:
    """`family[:weight=value,...]` as the run's own config with `reward.family` and those
    `reward.weights` set: the path and checks of `audit train --set`."""
    family, _, changes = text.partition(":")
    overrides: dict[str, object] = {"reward.family": family}
    try:
        for change in filter(None, changes.split(",")):
            key, value = parse_assignment(change)
            if key not in RewardWeights.model_fields:  # RewardWeights would ignore an unknown key
                raise SpecError(f"{key!r} is not a RewardWeights field")
            overrides[f"reward.weights.{key}"] = value
        reward = load_config(out / "config.yaml", overrides).reward
    except SpecError as exc:
        raise SystemExit(f"{text}: {exc}") from None
    return reward.family, reward.weights


def stored_rollouts(out: Path) -> list[tuple[int, Transcript, JudgeResult, dict[str, float]]]:
    """(step, transcript, judge result, trained reward and its components) for each line of OUT/rollouts.jsonl."""
    store = Store(f"sqlite:///{out / 'rollouts.db'}", must_exist=True)
    rows = []
    for line in (out / "rollouts.jsonl").read_text().splitlines():
        row = json.loads(line)
        results = store.judge_results_for(row["run_id"])
        if not results:
            raise SystemExit(f"{row['run_id']}: no judge result in {out / 'rollouts.db'}")
        judge = JudgeResult.model_validate(results[-1]["result"]["judge"])
        transcript = Transcript.from_events(row["run_id"], store.read_events(row["run_id"]))
        rows.append((row["step"], transcript, judge, {"reward": row["reward"], **row["components"]}))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="a GRPO run's output directory")
    parser.add_argument("settings", nargs="*", help="reward settings to compare (family[:weight=value,...])")
    args = parser.parse_args(argv)
    config = load_config(args.out / "config.yaml")
    if config.tasks.generated is not None:
        use_generated_set(config.tasks.generated)
    # The reward counts the behaviours a claim names among every loaded quirk: the same library, or not comparable.
    pinned = json.loads((args.out / "quirks.json").read_text()).get("library_digest")
    if pinned != library_digest():
        raise SystemExit(f"{args.out}: trained with quirk library {pinned}, loaded {library_digest()}: run it with the "
                         "same quirk files (AUDITRL_QUIRKS) as the run")
    own = config.reward.family
    settings = [own, *(args.settings or DEFAULT_SETTINGS)]
    parsed = [(own, config.reward.weights), *(load_setting(args.out, s) for s in settings[1:])]
    rollouts = stored_rollouts(args.out)
    groups = len({step for step, *_ in rollouts})
    print(f"{args.out}: {len(rollouts)} rollouts in {groups} groups; trained on `{own}`")
    print("| reward | rollouts paid | groups that differ | mean reward |")
    print("|---|---|---|---|")
    mismatched = 0
    for index, (text, (family, weights)) in enumerate(zip(settings, parsed)):
        by_step: dict[int, list[float]] = defaultdict(list)
        for step, transcript, judge, trained in rollouts:
            result = REWARDS[family](judge, transcript, weights)
            by_step[step].append(result.reward)
            # components too: a floor of 0 would hide a turn cost or penalty computed with other weights
            recomputed = {"reward": result.reward, **result.components}
            if index == 0 and (recomputed.keys() != trained.keys()
                               or any(abs(recomputed[k] - trained[k]) > 1e-6 for k in trained)):
                mismatched += 1
        values = [r for group in by_step.values() for r in group]
        differ = sum(1 for group in by_step.values() if max(group) > min(group))
        label = f"{text} (the run's)" if index == 0 else text
        print(f"| {label} | {sum(r > 0 for r in values)}/{len(values)} | {differ}/{len(by_step)} | "
              f"{sum(values) / len(values):.4f} |")
    if mismatched:
        print(f"{mismatched} rollouts: the run's own reward recomputed differs from the one trained on")
        return 1
    print("the run's own reward recomputed equals the trained reward for every rollout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
