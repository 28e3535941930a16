"""`audit judge calibrate`: any judge (offline, lexical or an LLM) against the labels, per category.

Judges answer asynchronously (an LLM judge calls a model), so the verdicts are
gathered first and then scored by `rewards.calibration.agreement`, the same code
that calibrated the offline grader. The labelled sets:

- `original`: the 129 cases of `calibration_data/cases.jsonl` (audits and scripted
  reports), halves by `rewards.calibration.split_cases`;
- `hard-negatives`: `calibration_data/hard_negatives.yaml` (paraphrases, negations,
  opposites, near misses, shotgun lists, gibberish, off-topic text, controls), halves
  by `rewards.hard_negatives.half_of`;
- a YAML file of items in the hard-negative format, read whole (for example
  `benchmarks/unseen-quirks-grader-cases.yaml`, with `--quirks benchmarks/unseen-quirks`);
- or the review labels a team exported from `audit review` (`--labels`).

Per category, `accepted` is how many cases the judge credited (named the quirk; on
controls, called a false positive): for a category whose every label is False
(negations, opposites, gibberish), that is its error count. Kappa is None where a
category's labels have one class only.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence

from rewards.calibration import CalibrationCase, agreement, case_transcript, load_cases, scores, split_cases, verdict
from rewards.hard_negatives import load_hard_negatives, load_items, to_case
from rewards.judges import build_judge
from rewards.types import JudgeResult
from scaffold.model import close_model
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from scaffold.transcript import Transcript
from targets.quirks import Quirk, get_quirk

SETS = ("original", "hard-negatives")
HALVES = ("dev", "test", "all")
Half = Literal["dev", "test", "all"]


class _Answered:
    """A grader that returns verdicts already gathered, keyed by transcript."""

    def __init__(self, results: dict[str, JudgeResult]) -> None:
        self.results = results

    def grade(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult:
        return self.results[transcript.run_id]


def labelled_sets(names: Sequence[str] = SETS, half: Half = "all") -> dict[str, list[CalibrationCase]]:
    """The packaged labelled sets by name, each cut to `half` (dev, test or all); a YAML file path is read whole."""
    unknown = [n for n in names if n not in SETS and not n.endswith((".yaml", ".yml"))]
    if unknown or half not in HALVES:
        raise SpecError(f"unknown set {unknown[0]!r}; choose {', '.join(SETS)} or a .yaml file of items" if unknown
                        else f"unknown half {half!r}; choose {', '.join(HALVES)}")
    out: dict[str, list[CalibrationCase]] = {}
    for name in names:
        if name == "original":
            cases = load_cases()
            out[name] = cases if half == "all" else split_cases(cases)[0 if half == "dev" else 1]
        elif name in SETS:
            out[name] = load_hard_negatives(half)
        else:
            out[name] = [to_case(item) for item in load_items(name)]
    return out


def by_category(grader: Any, cases: Sequence[CalibrationCase]) -> dict[str, dict[str, Any]]:
    """Per category (case kind): n, accepted, accuracy and kappa (None with one class of label)."""
    groups: dict[str, list[CalibrationCase]] = {}
    for case in cases:
        groups.setdefault(case.kind, []).append(case)
    out = {}
    for kind, group in sorted(groups.items()):
        truth, predicted = [], []
        for case in group:
            label = "false_positive" if case.quirk == "none" else "identified"
            expected = getattr(case.label, label)
            if expected is None:
                continue
            got = verdict(grader.grade(case_transcript(case), get_quirk(case.quirk)), label)
            truth.append(expected)
            predicted.append(bool(got) if got is not None else not expected)
        if not truth:
            continue
        result = scores(truth, predicted)
        out[kind] = {
            "n": result["n"], "accepted": sum(predicted), "labelled_true": sum(truth), "accuracy": result["accuracy"],
            "kappa": result["kappa"] if len(set(truth)) == 2 else None,
        }
    return out


async def calibrate_judge(
    spec: str,
    secrets: SecretRegistry,
    cases: list[CalibrationCase] | None = None,
    sets: Sequence[str] = SETS,
    half: Half = "all",
) -> dict[str, Any]:
    """Agreement of the judge `spec` with the labels: overall (every case given), per set and per category.

    `cases` (such as review labels) replaces the packaged sets. Overall and per set:
    identification on seeded quirks (`n`, `accuracy`, `kappa`, ...) and false positives
    on controls (`controls`).
    """
    named = {"labels": cases} if cases is not None else labelled_sets(sets, half)
    judge = build_judge(spec, secrets)
    results: dict[str, JudgeResult] = {}
    # An LLM judge's rubric is no part of quirk identification: only its quirk grader is called.
    quirk_grader = getattr(judge, "quirk_grader", None)
    grade = quirk_grader.agrade if quirk_grader is not None else judge.evaluate
    try:
        for group in named.values():
            for case in group:
                transcript = case_transcript(case)
                results[transcript.run_id] = await grade(transcript, get_quirk(case.quirk))
    finally:
        await close_model(getattr(judge, "model", None))
    answered = _Answered(results)
    everything = [c for group in named.values() for c in group]
    per_set = {
        name: {
            "half": half if name != "labels" else "all",
            **agreement(answered, group, "identified"),
            "controls": agreement(answered, group, "false_positive"),
            "by_category": by_category(answered, group),
        }
        for name, group in named.items()
    }
    return {
        "judge": judge.name,
        **agreement(answered, everything, "identified"),
        "controls": agreement(answered, everything, "false_positive"),
        "sets": per_set,
    }
