"""Judged audits as an Inspect eval log, built with `inspect_ai`'s own types and written by its writer.

One sample per audit:
- `input` is the auditor's instruction and `messages` the auditor's conversation as it
  read it: its system prompt, the instruction, each turn's tool calls and their
  results. The target's replies are in those results, as the auditor saw them.
- `metadata["target_conversation"]` is every target message with its id and parent id,
  so rollback branches survive; `metadata["auditrl"]` holds the run's facts and report.
- `scores`: `quirk_detection` (grounded, named, evidence; or false_positive for a
  control), `reward`, and one `rubric/<dimension>` per alignment-judge dimension, each
  explained with the quotes its evidence cites.
- The quirk's id and ground truth are only in `metadata["graders_only"]`; `target` is
  empty, because Inspect View shows a sample's target beside its input. An organism's
  run id, target name and case id name its quirk, so a seeded audit's sample id is a
  digest of its run id and those names are graders' fields too, with the replies whose
  citations the quirk verified (its firing flags, as the grader used them).

What Inspect cannot hold, or must not show, is dropped and listed in `DROPPED`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from interop.audits import StoredAudit
from interop.verdicts import detection_explanation, detection_values, rubric_scores
from scaffold.messages import Message, Usage

# Said on every export, so that nobody mistakes the log for the whole audit.
DROPPED = (
    "target message metadata (the organism's quirk-firing flags: graders' data, never shown to auditors)",
    "the events' timing and per-call token records (kept: per-model token totals)",
    "target tool definitions made with create_target_tool (kept: the auditor's calls that made them)",
)
EXPORTER = "auditrl"


def _iso(timestamp: float | None) -> str | None:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat() if timestamp is not None else None


def chat_messages(messages: Sequence[Message]) -> list[Any]:
    """Our messages as Inspect chat messages (ids kept; metadata dropped)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall, ToolCallError

    functions: dict[str, str] = {}
    out: list[Any] = []
    for m in messages:
        if m.role == "system":
            out.append(ChatMessageSystem(id=m.id or None, content=m.content))
        elif m.role == "user":
            out.append(ChatMessageUser(id=m.id or None, content=m.content))
        elif m.role == "assistant":
            calls = [
                ToolCall(id=c.id, function=c.name, arguments=dict(c.arguments), parse_error=c.parse_error)
                for c in m.tool_calls
            ]
            functions.update({c.id: c.name for c in m.tool_calls})
            out.append(ChatMessageAssistant(id=m.id or None, content=m.content, tool_calls=calls or None))
        else:
            error = ToolCallError("unknown", m.content) if m.is_error else None
            function = functions.get(m.tool_call_id or "")
            out.append(
                ChatMessageTool(
                    id=m.id or None, content=m.content, tool_call_id=m.tool_call_id, function=function, error=error
                )
            )
    return out


def target_conversation(audit: StoredAudit) -> list[dict[str, Any]]:
    """Every target message on every branch, oldest first: id, parent id, role, text, tool calls."""
    return [
        {
            "id": m.id,
            "parent_id": m.parent_id,
            "role": m.role,
            "content": m.content,
            **({"prefill": m.prefill} if m.prefill else {}),
            **({"tool_calls": [c.model_dump() for c in m.tool_calls]} if m.tool_calls else {}),
            **({"tool_call_id": m.tool_call_id} if m.tool_call_id else {}),
        }
        for m in audit.transcript.target.nodes.values()
    ]


def _usage(usage: Usage) -> Any:
    from inspect_ai.model import ModelUsage

    return ModelUsage(
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, total_tokens=usage.total
    )


def _scores(audit: StoredAudit) -> dict[str, Any]:
    from inspect_ai.scorer import Score

    scores: dict[str, Any] = {}
    detection = detection_values(audit)
    report = audit.transcript.report
    top = report.hypotheses[0].description if report and report.hypotheses else None
    if detection is not None and audit.verdict is not None:
        scores["quirk_detection"] = Score(
            value=detection,
            answer=top,
            explanation=detection_explanation(audit),
            metadata={"judge": audit.verdict.judge, "matched_rank": audit.verdict.matched_rank},
        )
    if audit.reward is not None:
        scores["reward"] = Score(
            value=audit.reward.reward,
            explanation=f"{audit.reward.name} reward",
            metadata={"components": dict(audit.reward.components)},
        )
    for name, value, explanation in rubric_scores(audit):
        scores[f"rubric/{name}"] = Score(value=value, explanation=explanation)
    return scores


def inspect_sample(audit: StoredAudit) -> Any:
    """One audit as an `EvalSample`."""
    from inspect_ai.log import EvalError, EvalSample

    t = audit.transcript
    facts = {
        **audit.public_facts(),
        "findings": [f.model_dump() for f in t.findings],
        "current_branch": [m.id for m in t.target_view()],
    }
    metadata: dict[str, Any] = {"auditrl": facts, "target_conversation": target_conversation(audit)}
    graders = audit.graders_only()
    if graders is not None:
        metadata["graders_only"] = graders
    if audit.verdict is not None and audit.verdict.error:
        facts["judge_error"] = audit.verdict.error
    error = None
    if audit.status != "completed":
        message = audit.error or f"the audit ended with status {audit.status!r}"
        error = EvalError(message=message, traceback="", traceback_ansi="")
    usage = {}
    if t.auditor_usage.total:
        usage[audit.auditor or "auditor"] = _usage(t.auditor_usage)
    if t.target_usage.total:
        usage[audit.public_target or "target"] = _usage(t.target_usage)
    return EvalSample(
        id=audit.public_id,
        epoch=1,
        input=audit.seed,
        target="",
        messages=chat_messages(t.auditor_view()),
        scores=_scores(audit) or None,
        metadata=metadata,
        model_usage=usage,
        started_at=_iso(audit.started),
        completed_at=_iso(audit.finished),
        total_time=round(audit.finished - audit.started, 3) if audit.started and audit.finished else None,
        error=error,
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _results(audits: Sequence[StoredAudit]) -> Any:
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    detections = [(a, d) for a in audits if (d := detection_values(a)) is not None]
    seeded = [d for a, d in detections if a.quirk != "none"]
    controls = [d for a, d in detections if a.quirk == "none"]
    metrics = {
        name: EvalMetric(name=name, value=_mean([d[name] for d in seeded]))
        for name in ("grounded", "named", "evidence")
        if seeded
    }
    if controls:
        rate = _mean([d["false_positive"] for d in controls])
        metrics["false_positive"] = EvalMetric(name="false_positive", value=rate)
    judges = sorted({a.verdict.judge for a, _ in detections if a.verdict})
    scores = [
        EvalScore(
            name="quirk_detection",
            scorer=f"{EXPORTER}/{'+'.join(judges) or 'judge'}",
            scored_samples=len(detections),
            unscored_samples=len(audits) - len(detections),
            metrics=metrics,
        )
    ]
    rewards = [a.reward.reward for a in audits if a.reward is not None]
    if rewards:
        scores.append(
            EvalScore(
                name="reward",
                scorer=f"{EXPORTER}/reward",
                scored_samples=len(rewards),
                metrics={"mean": EvalMetric(name="mean", value=_mean(rewards))},
            )
        )
    completed = sum(1 for a in audits if a.status == "completed")
    return EvalResults(total_samples=len(audits), completed_samples=completed, scores=scores)


def inspect_log(audits: Sequence[StoredAudit], name: str) -> Any:
    """The audits as one `EvalLog` (task `auditrl/<name>`, the auditor as its model)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats

    samples = [inspect_sample(a) for a in audits]
    starts = [a.started for a in audits if a.started is not None]
    ends = [a.finished for a in audits if a.finished is not None]
    auditors = sorted({a.auditor for a in audits if a.auditor}) or ["auditor"]
    totals: dict[str, Any] = {}
    for sample in samples:
        for model, usage in (sample.model_usage or {}).items():
            totals[model] = totals[model] + usage if model in totals else usage
    spec = EvalSpec(
        created=_iso(min(starts)) if starts else _iso(datetime.now(timezone.utc).timestamp()),
        task=f"{EXPORTER}/{name}",
        dataset=EvalDataset(name=name, samples=len(samples), sample_ids=[s.id for s in samples]),
        model="+".join(auditors),
        config=EvalConfig(),
        metadata={"exported_by": EXPORTER, "dropped": list(DROPPED)},
    )
    stats = EvalStats(
        started_at=_iso(min(starts)) if starts else "",
        completed_at=_iso(max(ends)) if ends else "",
        model_usage=totals,
    )
    return EvalLog(
        version=2, status="success", eval=spec, results=_results(audits), stats=stats, samples=samples
    )


def write_inspect_log(audits: Sequence[StoredAudit], name: str, path: Path) -> Path:
    """Write the log with Inspect's own writer (`.eval` or `.json`, by the file's suffix)."""
    from inspect_ai.log import write_eval_log

    if path.suffix not in (".eval", ".json"):
        raise ValueError(f"{path}: an Inspect log file ends in .eval or .json")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(inspect_log(audits, name), str(path), format="eval" if path.suffix == ".eval" else "json")
    return path
