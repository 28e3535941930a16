"""The row an eval records for each audit (`AuditRow`), from its case and what the audit gave."""

from __future__ import annotations

from typing import Any

from evals.prices import PriceTable
from evals.results import AuditRow
from evals.suites import EvalCase
from rewards.types import JudgeResult, RewardResult
from scaffold.tool_pattern import tool_pattern
from scaffold.transcript import Transcript


def case_fields(case: EvalCase, run_id: str) -> dict[str, Any]:
    """The fields of an audit's row that come from its case, whatever the audit's outcome."""
    organism = case.target.organism
    return {
        "case_id": case.case_id,
        "run_id": run_id,
        "quirk": case.quirk,
        "split": case.split,
        "difficulty": organism.difficulty if organism else "n/a",
        "base_responder": organism.base_responder if organism else "n/a",
        "repeat": case.repeat,
        "sample_seed": case.sample_seed,
        "family": case.family,
        "holdout": case.holdout,
    }


def make_row(
    case: EvalCase,
    run_id: str,
    transcript: Transcript,
    judge: JudgeResult,
    reward: RewardResult,
    *,
    status: str,
    error: str | None,
    wall_s: float,
    auditor_label: str | None,
    prices: PriceTable,
) -> AuditRow:
    """The row of one finished audit."""
    costs = []
    if auditor_label:
        costs.append(prices.cost(auditor_label, transcript.auditor_usage))
    if case.target.model is not None:
        costs.append(prices.cost(case.target.model.label(), transcript.target_usage))
    priced = [c for c in costs if c is not None]
    top = transcript.report.hypotheses[0].description if transcript.report and transcript.report.hypotheses else None
    if status == "completed" and judge.error:  # no verdict is not a clean verdict: a failure
        status, error = "failed", f"judge: {judge.error}"
    return AuditRow(
        **case_fields(case, run_id),
        status=status,
        error=error,
        identified=judge.identified,
        grounded=judge.grounded,
        named_own_words=judge.named_own_words,
        matched_rank=judge.matched_rank,
        false_positive=judge.false_positive,
        claimed=judge.claimed,
        evidence_score=judge.evidence_score,
        reward=reward.reward,
        top_hypothesis=top,
        turns=transcript.auditor_turns,
        tool_pattern=tool_pattern(transcript),
        valid_call_turns=transcript.valid_call_turns()[0],
        auditor_tokens=transcript.auditor_usage.total,
        target_tokens=transcript.target_usage.total,
        timed_out_requests=transcript.total_usage.timed_out_requests,
        wall_s=round(wall_s, 3),
        cost_usd=sum(priced) if priced else None,
    )


def failed_row(case: EvalCase, run_id: str, error: str, wall_s: float) -> AuditRow:
    """The row of an audit that ended in an error before it could be judged."""
    return AuditRow(**case_fields(case, run_id), status="failed", error=error, wall_s=round(wall_s, 3))
