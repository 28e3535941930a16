"""Reward per rollout with the polarity-aware offline grader: is it under 50 ms on this CPU?

Grades every report of the original calibration set (real heuristic-auditor audits and
scripted reports, up to three hypotheses each) with the offline MiniLM grader and the
lexical grader, then computes the grounded reward, as training does for each rollout.
Prints milliseconds per rollout for both graders and their ratio, measured in one run,
after one warm-up pass (the model load and the reference encodings happen once per
process and are reported apart).

Training grades a GRPO group's G rollouts together: they finish side by side, and the
offline judge (`rewards.grade_batcher`) grades whatever arrives within a few milliseconds
in one call. The last lines measure that path: the cases in groups of `--group` with one
quirk each, as a step's group has, through the judge's `evaluate` on concurrent tasks; a
rollout's cost is its group's time divided by the group's size.

`--weights FILE` also measures the pair reader with another weights file (for example one
member of the committed seeds), side by side in the same run.

    python benchmarks/reward_speed.py [--repeats 3] [--group 8] [--weights FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import defaultdict
from dataclasses import replace

from rewards.calibration import case_transcript, load_cases
from rewards.embedding_grader import DEFAULT_RULE, SIMILARITY_RULE, EmbeddingQuirkGrader
from rewards.judges import OfflineJudge
from rewards.quirk_grader import OfflineQuirkGrader
from rewards.reward import grounded_reward
from targets.quirks import get_quirk

BUDGET_MS = 50.0


def per_rollout_ms(grader, items, repeats: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(median, 95th percentile) milliseconds to grade one transcript and compute its reward."""
    times = []
    for _ in range(repeats):
        for transcript, quirk in items:
            start = time.perf_counter()
            result = grader.grade(transcript, quirk)
            grounded_reward(result, transcript)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), statistics.quantiles(times, n=20)[-1]


def quirk_groups(items, size: int):  # type: ignore[no-untyped-def]
    """The cases in groups of `size` sharing one quirk (a GRPO group audits one organism); the rest dropped."""
    by_quirk = defaultdict(list)
    for transcript, quirk in items:
        by_quirk[quirk.id].append((transcript, quirk))
    return [cases[i : i + size] for cases in by_quirk.values() for i in range(0, len(cases) - size + 1, size)]


def grouped_per_rollout_ms(judge: OfflineJudge, groups, repeats: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(median, 95th percentile) over groups of a group's judge-and-reward time per rollout."""

    async def one_group(group) -> float:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        results = await asyncio.gather(*(judge.evaluate(transcript, quirk) for transcript, quirk in group))
        for result, (transcript, _) in zip(results, group):
            grounded_reward(result, transcript)
        return (time.perf_counter() - start) * 1000 / len(group)

    async def every_group() -> list[float]:
        return [await one_group(group) for _ in range(repeats) for group in groups]

    times = asyncio.run(every_group())
    return statistics.median(times), statistics.quantiles(times, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="Passes over the cases (after one warm-up).")
    parser.add_argument("--group", type=int, default=8, help="Rollouts graded together, as a GRPO group (G).")
    parser.add_argument("--weights", help="Another pair-reader weights file to measure beside the committed one.")
    args = parser.parse_args()
    items = [(case_transcript(c), get_quirk(c.quirk)) for c in load_cases()]
    offline, lexical = EmbeddingQuirkGrader(), OfflineQuirkGrader()
    other_rule = SIMILARITY_RULE if DEFAULT_RULE.reader == "pair" else replace(DEFAULT_RULE, reader="pair")
    other = EmbeddingQuirkGrader(rule=other_rule)
    alternative = EmbeddingQuirkGrader(pair_weights=args.weights) if args.weights else None
    start = time.perf_counter()
    for transcript, quirk in items:  # warm-up: loads MiniLM (and the pair reader) and encodes the references once
        for grader in (offline, other, alternative):
            if grader is not None:
                grader.grade(transcript, quirk)
    warm_s = time.perf_counter() - start
    off_median, off_p95 = per_rollout_ms(offline, items, args.repeats)
    other_median, other_p95 = per_rollout_ms(other, items, args.repeats)
    lex_median, lex_p95 = per_rollout_ms(lexical, items, args.repeats)
    alt_median, alt_p95 = per_rollout_ms(alternative, items, args.repeats) if alternative else (0.0, 0.0)
    groups = quirk_groups(items, args.group)
    judge = OfflineJudge(offline, "offline")
    grouped_per_rollout_ms(judge, groups, 1)  # warm-up of the batched path's shapes and thread
    group_median, group_p95 = grouped_per_rollout_ms(judge, groups, args.repeats)
    sizes = judge.batcher.batch_sizes if judge.batcher else []
    print(f"{len(items)} rollouts x {args.repeats} passes; warm-up (model load + references) {warm_s:.1f} s")
    print(f"offline grader ({DEFAULT_RULE.reader} reader, the default) + reward: median {off_median:.2f} ms, "
          f"p95 {off_p95:.2f} ms per rollout")
    print(f"offline grader ({other.rule.reader} reader) + reward: median {other_median:.2f} ms, "
          f"p95 {other_p95:.2f} ms per rollout")
    if alternative:
        print(f"offline grader (pair reader, {args.weights}) + reward: median {alt_median:.2f} ms, p95 {alt_p95:.2f} ms "
              f"per rollout; committed / this: median {off_median / alt_median:.2f}x")
    print(f"lexical grader + reward: median {lex_median:.2f} ms, p95 {lex_p95:.2f} ms per rollout")
    print(f"offline / lexical: {off_median / lex_median:.1f}x; offline p95 / {BUDGET_MS:.0f} ms budget: "
          f"{off_p95 / BUDGET_MS:.2f} ({'within' if off_p95 < BUDGET_MS else 'OVER'} budget) one rollout at a time")
    print(f"offline judge, groups of {args.group} with one quirk ({len(groups)} groups, batch sizes "
          f"{min(sizes)}-{max(sizes)}) + reward: median {group_median:.2f} ms, p95 {group_p95:.2f} ms per rollout")
    print(f"grouped / one at a time: median {group_median / off_median:.2f}x, p95 {group_p95 / off_p95:.2f}x; "
          f"grouped p95 / {BUDGET_MS:.0f} ms budget: {group_p95 / BUDGET_MS:.2f} "
          f"({'within' if group_p95 < BUDGET_MS else 'OVER'} budget)")


if __name__ == "__main__":
    main()
