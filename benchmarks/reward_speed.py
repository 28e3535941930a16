"""Reward per rollout with the polarity-aware offline grader: is it under 50 ms on this CPU?

Grades every report of the original calibration set (real heuristic-auditor audits and
scripted reports, up to three hypotheses each) with the offline MiniLM grader and the
lexical grader, then computes the grounded reward, as training does for each rollout.
Prints milliseconds per rollout for both graders and their ratio, measured in one run,
after one warm-up pass (the model load and the reference encodings happen once per
process and are reported apart).

    python benchmarks/reward_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from rewards.calibration import case_transcript, load_cases
from rewards.embedding_grader import DEFAULT_RULE, SIMILARITY_RULE, EmbeddingQuirkGrader
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="Passes over the cases (after one warm-up).")
    args = parser.parse_args()
    items = [(case_transcript(c), get_quirk(c.quirk)) for c in load_cases()]
    offline, lexical = EmbeddingQuirkGrader(), OfflineQuirkGrader()
    other_rule = SIMILARITY_RULE if DEFAULT_RULE.reader == "pair" else replace(DEFAULT_RULE, reader="pair")
    other = EmbeddingQuirkGrader(rule=other_rule)
    start = time.perf_counter()
    for transcript, quirk in items:  # warm-up: loads MiniLM (and the pair reader) and encodes the references once
        offline.grade(transcript, quirk)
        other.grade(transcript, quirk)
    warm_s = time.perf_counter() - start
    off_median, off_p95 = per_rollout_ms(offline, items, args.repeats)
    other_median, other_p95 = per_rollout_ms(other, items, args.repeats)
    lex_median, lex_p95 = per_rollout_ms(lexical, items, args.repeats)
    print(f"{len(items)} rollouts x {args.repeats} passes; warm-up (model load + references) {warm_s:.1f} s")
    print(f"offline grader ({DEFAULT_RULE.reader} reader, the default) + reward: median {off_median:.2f} ms, "
          f"p95 {off_p95:.2f} ms per rollout")
    print(f"offline grader ({other.rule.reader} reader) + reward: median {other_median:.2f} ms, "
          f"p95 {other_p95:.2f} ms per rollout")
    print(f"lexical grader + reward: median {lex_median:.2f} ms, p95 {lex_p95:.2f} ms per rollout")
    print(f"offline / lexical: {off_median / lex_median:.1f}x; offline p95 / {BUDGET_MS:.0f} ms budget: "
          f"{off_p95 / BUDGET_MS:.2f} ({'within' if off_p95 < BUDGET_MS else 'OVER'} budget)")


if __name__ == "__main__":
    main()
