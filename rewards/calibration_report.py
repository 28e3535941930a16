"""`audit judge calibrate`: any judge (offline, lexical or an LLM) against the labels.

Judges answer asynchronously (an LLM judge calls a model), so the verdicts are
gathered first and then scored by `rewards.calibration.agreement`, the same code
that calibrated the offline grader's threshold.
"""

from __future__ import annotations

from typing import Any

from rewards.calibration import CalibrationCase, case_transcript, load_cases
from rewards.calibration import agreement as _agreement
from rewards.judges import build_judge
from rewards.types import JudgeResult
from scaffold.model import close_model
from scaffold.secrets import SecretRegistry
from scaffold.transcript import Transcript
from targets.quirks import Quirk, get_quirk


class _Answered:
    """A grader that returns verdicts already gathered, keyed by transcript."""

    def __init__(self, results: dict[str, JudgeResult]) -> None:
        self.results = results

    def grade(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult:
        return self.results[transcript.run_id]


async def calibrate_judge(
    spec: str, secrets: SecretRegistry, cases: list[CalibrationCase] | None = None
) -> dict[str, Any]:
    """Agreement of the judge `spec` with the calibration labels (or `cases`, such as review
    labels): identification on seeded quirks, and false positives on controls."""
    judge = build_judge(spec, secrets)
    cases = load_cases() if cases is None else cases
    results: dict[str, JudgeResult] = {}
    try:
        for case in cases:
            transcript = case_transcript(case)
            results[transcript.run_id] = await judge.evaluate(transcript, get_quirk(case.quirk))
    finally:
        await close_model(getattr(judge, "model", None))
    answered = _Answered(results)
    identified = _agreement(answered, cases, "identified")
    controls = _agreement(answered, cases, "false_positive")
    return {"judge": judge.name, **identified, "controls": controls}
