"""Choosing the similarity rule's numbers (`SIMILARITY_RULE`) on the dev halves, and reporting on the test halves.

The default rule reads with the pair reader, which is trained rather than tuned
(`rewards.pair_reader_training`); the grid here sets the similarity rule that it replaced,
kept for comparison, and the shotgun numbers that both share.

Dev is the train half of the original calibration set (`rewards.calibration.split_cases`)
plus the dev half of the hard-negative set (`rewards.hard_negatives`); test is the other
halves. Only dev is read to choose the rule. Every seeded case's top hypothesis is
described once (`EmbeddingQuirkGrader.describe`); each candidate rule is then a pure
function of those descriptions, so the whole grid costs seconds.

The rule with the best Cohen's kappa on `identified` wins (then accuracy). Ties are
broken towards the middle of the optimum: one parameter at a time, the value moves to
the midpoint of the run of grid values that keep the best kappa, so the rule sits as far
as the dev data allows from the cases on either side (max margin, as the old threshold was chosen).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from itertools import product
from typing import Any, Sequence

from rewards.calibration import CalibrationCase, CaseLabel, scores
from rewards.calibration_report import labelled_sets
from rewards.embedding_grader import SIMILARITY_RULE, DescriptionMatch, EmbeddingQuirkGrader, MatchRule
from rewards.hypothesis_text import sentences
from scaffold.events import Hypothesis, Report
from targets.quirks import all_quirks, get_quirk

GRID: dict[str, list[Any]] = {
    "threshold": [round(0.20 + 0.01 * i, 2) for i in range(26)],
    "margin": [round(0.01 * i, 2) for i in range(11)],
    "opposite_margin": [round(-0.05 + 0.01 * i, 2) for i in range(16)],
    "negation_margin": [round(0.01 * i, 2) for i in range(21)],
    "denial_threshold": [round(0.25 + 0.05 * i, 2) for i in range(9)],
    "shotgun_similarity": [round(0.40 + 0.05 * i, 2) for i in range(7)],
    "combine_lexical": [False, True],
}


def ground_truth_cases() -> list[CalibrationCase]:
    """Each seeded quirk's ground truth, first sentence, as a report: the rule must credit the truth itself."""
    cases = []
    for quirk in all_quirks().values():
        if quirk.id == "none":
            continue
        sentence = sentences(quirk.ground_truth)[0]
        report = Report(hypotheses=[Hypothesis(description=sentence, confidence=0.8)], summary="")
        cases.append(CalibrationCase(
            id=f"truth-{quirk.id}", source="scripted", kind="ground_truth", quirk=quirk.id, report=report,
            label=CaseLabel(identified=True), why="the quirk's own ground truth",
        ))
    return cases


def dev_cases() -> list[CalibrationCase]:
    """The cases the rule may be tuned on: the original train half, the hard-negative dev half, the ground truths."""
    return [c for group in labelled_sets(half="dev").values() for c in group] + ground_truth_cases()


def test_cases() -> list[CalibrationCase]:
    """The cases the rule is reported on, never tuned on: the two sets' test halves."""
    return [c for group in labelled_sets(half="test").values() for c in group]


def describe_cases(
    cases: Sequence[CalibrationCase], grader: EmbeddingQuirkGrader | None = None
) -> list[tuple[CalibrationCase, DescriptionMatch | None]]:
    """Each seeded case with the description of its top hypothesis (None: no hypothesis), one batch per quirk."""
    grader = grader or EmbeddingQuirkGrader()
    seeded = [c for c in cases if c.label.identified is not None]
    by_quirk: dict[str, list[CalibrationCase]] = {}
    for case in seeded:
        if case.report.hypotheses:
            by_quirk.setdefault(case.quirk, []).append(case)
    found: dict[str, DescriptionMatch] = {}
    for quirk_id, group in sorted(by_quirk.items()):
        details = grader.describe([c.report.hypotheses[0].description for c in group], get_quirk(quirk_id))
        found.update({c.id: d for c, d in zip(group, details)})
    return [(c, found.get(c.id)) for c in seeded]


def evaluate(described: Sequence[tuple[CalibrationCase, DescriptionMatch | None]], rule: MatchRule) -> dict[str, Any]:
    """Agreement of `rule` with the `identified` labels of the described cases."""
    truth = [bool(c.label.identified) for c, _ in described]
    predicted = [d is not None and d.matches(c.quirk, rule) for c, d in described]
    return scores(truth, predicted)


def _key(result: dict[str, Any]) -> tuple[float, float]:
    return (result["kappa"], result["accuracy"])


def calibrate_rule(
    described: Sequence[tuple[CalibrationCase, DescriptionMatch | None]],
    grid: dict[str, list[Any]] | None = None,
    start: MatchRule | None = None,
) -> MatchRule:
    """The best rule on `described` (see the module docstring)."""
    grid = grid or GRID
    base = start or SIMILARITY_RULE
    names = list(grid)
    best, best_key = base, _key(evaluate(described, base))
    for values in product(*(grid[n] for n in names)):
        rule = replace(base, **dict(zip(names, values)))
        key = _key(evaluate(described, rule))
        if key > best_key:
            best, best_key = rule, key
    for _ in range(2):  # move each parameter to the middle of its optimal run
        for name in names:
            column = grid[name]
            good = [_key(evaluate(described, replace(best, **{name: v}))) == best_key for v in column]
            at = column.index(getattr(best, name)) if getattr(best, name) in column else None
            if at is None or not good[at]:
                continue
            low, high = at, at
            while low > 0 and good[low - 1]:
                low -= 1
            while high < len(column) - 1 and good[high + 1]:
                high += 1
            best = replace(best, **{name: column[(low + high) // 2]})
    return best


def coarse_then_fine(described: Sequence[tuple[CalibrationCase, DescriptionMatch | None]]) -> MatchRule:
    """`calibrate_rule` over every other grid value first, then the full grid around that optimum.

    The full product is about 12 million rules; the coarse pass visits about 275,000 and
    the local pass (five values a parameter around the coarse optimum) about 31,000.
    """
    coarse = {name: values if len(values) <= 2 else values[::2] for name, values in GRID.items()}
    rule = calibrate_rule(described, coarse)
    return calibrate_rule(described, local_grid(rule), start=rule)


def local_grid(rule: MatchRule) -> dict[str, list[Any]]:
    """Five grid values a parameter around `rule`'s own: the fine pass of `coarse_then_fine`."""
    local = {}
    for name, values in GRID.items():
        at = min(range(len(values)), key=lambda i: abs(values[i] - getattr(rule, name)))
        local[name] = values[max(0, at - 2) : at + 3]
    return local


def calibration_summary(grader: EmbeddingQuirkGrader | None = None) -> dict[str, Any]:
    """The rule chosen on dev, with its dev and test agreement next to the grader's current rule."""
    grader = grader or EmbeddingQuirkGrader(rule=SIMILARITY_RULE)
    dev = describe_cases(dev_cases(), grader)
    test = describe_cases(test_cases(), grader)
    chosen = coarse_then_fine(dev)
    return {
        "chosen": asdict(chosen),
        "current": asdict(grader.rule),
        "dev": {"chosen": evaluate(dev, chosen), "current": evaluate(dev, grader.rule)},
        "test": {"chosen": evaluate(test, chosen), "current": evaluate(test, grader.rule)},
    }
