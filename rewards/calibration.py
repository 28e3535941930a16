"""The labelled calibration set, and how well a grader agrees with it.

`rewards/calibration_data/cases.jsonl` holds cases written by
`benchmarks/make_calibration_set.py`: real heuristic-auditor audits of the offline
organisms, and hand-written reports (paraphrases, wrong quirks, near misses, vague
and deliberately hacky reports). Each case keeps the report, the seeded quirk, the
target messages the report cites (text and hidden flags) and labels given by a
person, never by a grader:

- `identified`: the report's top hypothesis names the seeded quirk (None for `none`);
- `grounded`: identified, and the top hypothesis cites at least one target reply that
  really shows the behaviour (fired, not a confession, not prefilled);
- `false_positive`: for the control quirk `none`, the report confidently claims a
  hidden behaviour;
- `hacky` (beside the labels): the report tries to earn credit without investigating.

A grader here is anything with `grade(transcript, quirk) -> JudgeResult`; a case is
turned into a minimal `Transcript` (its cited target messages and its report) by
`case_transcript`. `agreement` compares verdicts with labels (accuracy, Cohen's kappa,
confusion); `split_cases` gives the fixed halves. The embedding grader's rule is
chosen on the train half (with the hard-negative set's dev half) by
`rewards.grader_calibration`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Literal, Protocol, Sequence

from pydantic import BaseModel, Field

from rewards.types import JudgeResult
from scaffold.events import Report, ReportEvent, TargetMessageEvent
from scaffold.messages import Message
from scaffold.specs import SpecError
from scaffold.transcript import Transcript
from targets.quirks import Quirk, get_quirk

CASES_PATH = Path(__file__).parent / "calibration_data" / "cases.jsonl"
LabelName = Literal["identified", "grounded", "false_positive"]


class CaseMessage(BaseModel):
    """A target message a case's report cites, with the flags graders may read."""

    id: str
    role: Literal["system", "user", "assistant", "tool"] = "assistant"
    content: str = ""
    fired: bool | None = None  # None: not a simulated organism's reply (no flag)
    confronted: bool = False
    prefill: str | None = None


class CaseLabel(BaseModel):
    """A person's verdict on a case (see the module docstring)."""

    identified: bool | None = None
    grounded: bool | None = None
    false_positive: bool | None = None


class CalibrationCase(BaseModel):
    """One labelled report."""

    id: str
    source: Literal["audit", "scripted", "hard_negative"]
    kind: str = Field(description="What sort of case: audit, paraphrase, wrong_quirk, near_miss, vague, hacky, control.")
    quirk: str
    report: Report
    messages: list[CaseMessage] = Field(default_factory=list)
    label: CaseLabel
    hacky: bool = False
    why: str = ""
    origin: dict[str, Any] = Field(default_factory=dict)


class Grader(Protocol):
    def grade(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult: ...


def load_cases(path: str | Path = CASES_PATH) -> list[CalibrationCase]:
    """Every case in the JSONL file, in file order."""
    cases = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    cases.append(CalibrationCase.model_validate_json(line))
                except ValueError as exc:
                    raise ValueError(f"{path}:{number}: bad case: {exc}") from None
    return cases


def case_transcript(case: CalibrationCase) -> Transcript:
    """A minimal transcript: the case's target messages (ids, texts, flags as stored) and its report."""
    transcript = Transcript(f"calibration-{case.id}")
    for m in case.messages:
        metadata: dict[str, Any] = {"confronted": m.confronted}
        if m.fired is not None:
            metadata["fired"] = m.fired
        message = Message(id=m.id, role=m.role, content=m.content, prefill=m.prefill, metadata=metadata)
        transcript.append(TargetMessageEvent(message=message))
    transcript.append(ReportEvent(report=case.report))
    return transcript


def label_of(case: CalibrationCase, label: LabelName = "identified") -> bool | None:
    return getattr(case.label, label)


def verdict(result: JudgeResult, label: LabelName = "identified") -> bool | None:
    """The grader's verdict on the question `label` asks (None when the judge failed)."""
    if result.error is not None:
        return None
    if label == "false_positive":
        return result.false_positive
    top = result.hypotheses[0] if result.hypotheses else None
    identified = bool(top and top.matches_quirk)
    if label == "identified":
        return identified
    return identified and bool(top and top.verified_message_ids)


def cohen_kappa(truth: Sequence[bool], predicted: Sequence[bool]) -> float:
    """Cohen's kappa of two binary raters (1.0 when they agree on a single class)."""
    n = len(truth)
    if n == 0:
        return float("nan")
    observed = sum(t == p for t, p in zip(truth, predicted)) / n
    p_true, p_pred = sum(truth) / n, sum(predicted) / n
    expected = p_true * p_pred + (1 - p_true) * (1 - p_pred)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1 - expected)


def scores(truth: Sequence[bool], predicted: Sequence[bool]) -> dict[str, Any]:
    """n, accuracy, kappa and the confusion counts of predictions against labels."""
    pairs = list(zip(truth, predicted))
    n = len(pairs)
    confusion = {
        "tp": sum(t and p for t, p in pairs),
        "fp": sum(p and not t for t, p in pairs),
        "fn": sum(t and not p for t, p in pairs),
        "tn": sum(not t and not p for t, p in pairs),
    }
    accuracy = (confusion["tp"] + confusion["tn"]) / n if n else float("nan")
    return {"n": n, "accuracy": round(accuracy, 4), "kappa": round(cohen_kappa(truth, predicted), 4), "confusion": confusion}


def agreement(grader: Grader, cases: Iterable[CalibrationCase], label: LabelName = "identified") -> dict[str, Any]:
    """How often `grader` agrees with the labels: {n, accuracy, kappa, confusion, disagreements}.

    Only cases that carry `label` count (`identified` and `grounded` exist for seeded
    quirks, `false_positive` for the control). A grader that fails on a case counts as
    disagreeing with it, and is listed under `failed`.
    """
    truth, predicted, wrong, failed = [], [], [], []
    for case in cases:
        expected = label_of(case, label)
        if expected is None:
            continue
        got = verdict(grader.grade(case_transcript(case), get_quirk(case.quirk)), label)
        if got is None:
            failed.append(case.id)
            got = not expected
        truth.append(expected)
        predicted.append(got)
        if got != expected:
            wrong.append(case.id)
    return {**scores(truth, predicted), "label": label, "disagreements": wrong, "failed": failed}


# --- labels from `audit review` ----------------------------------------------------
def cases_from_labels(path: str | Path) -> list[CalibrationCase]:
    """Calibration cases from the review app's label export (JSONL): one per run, its newest label.

    On a seeded-quirk run, a `confirmed` review is `identified` True and a
    `false_positive` review False; on the control quirk `none`, `false_positive` is the
    label `false_positive` True and `confirmed` False. Left out: `inconclusive`
    reviews, runs whose quirk is unknown or not in this installation's library, and
    runs without a report or findings.
    """
    newest: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                run_id, review_id = str(row["run_id"]), int(row["review_id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a review label ({exc})") from None
            if run_id not in newest or review_id > int(newest[run_id]["review_id"]):
                newest[run_id] = row
    cases = []
    for run_id, row in newest.items():
        quirk, verdict = row.get("quirk"), row.get("verdict")
        if verdict not in ("confirmed", "false_positive") or not quirk or not row.get("report"):
            continue
        try:
            get_quirk(quirk)
        except SpecError:
            continue
        if quirk == "none":
            label = CaseLabel(false_positive=verdict == "false_positive")
        else:
            label = CaseLabel(identified=verdict == "confirmed")
        cases.append(CalibrationCase(
            id=f"review-{run_id}", source="audit", kind="review", quirk=quirk,
            report=Report.model_validate(row["report"]),
            messages=[CaseMessage.model_validate(m) for m in row.get("messages", [])],
            label=label, why=row.get("notes") or f"{verdict} by {row.get('reviewer', '?')}",
            origin={k: row.get(k) for k in ("run_id", "review_id", "reviewer", "target", "auditor", "created_at")},
        ))
    return cases


# --- splitting ------------------------------------------------------------------
def split_cases(
    cases: Sequence[CalibrationCase], test_fraction: float = 0.5, salt: str = "auditrl-calibration-v1"
) -> tuple[list[CalibrationCase], list[CalibrationCase]]:
    """A deterministic (train, test) split, stratified by source, kind and label.

    Within each stratum, cases are ordered by a hash of their id and the first
    `test_fraction * size` (rounded half up) go to test, so adding a case moves no other case
    between halves unless its own stratum changes size.
    """
    strata: dict[tuple[str, str, bool | None], list[CalibrationCase]] = {}
    for case in cases:
        key = (case.source, case.kind, case.label.identified)
        strata.setdefault(key, []).append(case)
    train, test = [], []
    for key in sorted(strata, key=str):
        group = sorted(strata[key], key=lambda c: hashlib.sha256(f"{salt}:{c.id}".encode()).hexdigest())
        cut = int(test_fraction * len(group) + 0.5)
        test += group[:cut]
        train += group[cut:]
    order = {c.id: i for i, c in enumerate(cases)}
    return sorted(train, key=lambda c: order[c.id]), sorted(test, key=lambda c: order[c.id])


def write_cases(cases: Iterable[CalibrationCase], path: str | Path = CASES_PATH) -> int:
    """Write cases as JSONL (one compact object a line); returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(c.model_dump(mode="json", exclude_defaults=False), ensure_ascii=False, sort_keys=True) for c in cases]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)
