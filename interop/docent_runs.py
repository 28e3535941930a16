"""Judged audits as Docent agent runs, built and validated with `docent-python`'s own models.

One `AgentRun` per audit, holding:
- an `auditor` transcript: the auditor's conversation as it read it (tool calls and
  results, the target's replies inside them);
- one `target` transcript per branch of the target's conversation: every rollback
  leaves a branch, and Docent shows each as its own transcript, the current one first.

The run's metadata carries the scores, the reward, the explanation with the cited
quotes, and the run's facts. The quirk's id and ground truth sit only under
`graders_only`. Nothing is uploaded: `write_docent_runs` writes JSON lines, and the
README shows the one call that uploads them with a Docent key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from interop.audits import StoredAudit
from interop.verdicts import detection_explanation, detection_values, rubric_scores
from scaffold.messages import Message

DROPPED = (
    "target message metadata (the organism's quirk-firing flags: graders' data, never shown to auditors)",
    "the run id as Docent's id (Docent assigns its own; ours is metadata.run_id, or graders_only.run_id "
    "for an organism, whose run id names its quirk)",
    "the events' timing and token records",
)


def docent_messages(messages: Sequence[Message], model: str | None = None) -> list[Any]:
    """Our messages as Docent chat messages (ids kept, metadata dropped)."""
    from docent.data_models.chat import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage

    functions: dict[str, str] = {}
    out: list[Any] = []
    for m in messages:
        ident = m.id or None
        if m.role == "system":
            out.append(SystemMessage(id=ident, content=m.content))
        elif m.role == "user":
            out.append(UserMessage(id=ident, content=m.content))
        elif m.role == "assistant":
            calls = [
                ToolCall(
                    id=c.id, function=c.name, arguments=dict(c.arguments), type="function", parse_error=c.parse_error
                )
                for c in m.tool_calls
            ]
            functions.update({c.id: c.name for c in m.tool_calls})
            # A prefilled reply's content already starts with the auditor's prefill.
            out.append(AssistantMessage(id=ident, content=m.content, tool_calls=calls or None, model=model))
        else:
            error = {"type": "unknown", "message": m.content} if m.is_error else None
            out.append(
                ToolMessage(
                    id=ident, content=m.content, tool_call_id=m.tool_call_id,
                    function=functions.get(m.tool_call_id or ""), error=error,
                )
            )
    return out


def _metadata(audit: StoredAudit) -> dict[str, Any]:
    scores: dict[str, Any] = dict(detection_values(audit) or {})
    scores.update({f"rubric/{name}": value for name, value, _ in rubric_scores(audit)})
    if audit.reward is not None:
        scores["reward"] = audit.reward.reward
    metadata: dict[str, Any] = {
        **audit.public_facts(),
        "scores": scores,
        "explanation": detection_explanation(audit),
    }
    if audit.error:
        metadata["error"] = audit.error
    if audit.reward is not None:
        metadata["reward_components"] = dict(audit.reward.components)
    graders = audit.graders_only()
    if graders is not None:
        metadata["graders_only"] = graders
    return metadata


def docent_run(audit: StoredAudit) -> Any:
    """One audit as a validated `AgentRun`."""
    from docent.data_models import AgentRun, Transcript

    t = audit.transcript
    transcripts = [
        Transcript(name="auditor", messages=docent_messages(t.auditor_view(), audit.auditor or None),
                   metadata={"side": "auditor"})
    ]
    current = [m.id for m in t.target_view()]
    branches = t.target.branches()
    branches.sort(key=lambda ids: ids != current)  # the current branch first, the rest in creation order
    for index, ids in enumerate(branches):
        messages = [t.target.nodes[i] for i in ids]
        name = "target" if ids == current else f"target, branch {index + 1}"
        transcripts.append(
            Transcript(name=name, messages=docent_messages(messages, audit.public_target or None),
                       metadata={"side": "target", "current_branch": ids == current, "message_ids": ids})
        )
    return AgentRun(name=audit.public_id, transcripts=transcripts, metadata=_metadata(audit))


def docent_runs(audits: Sequence[StoredAudit]) -> tuple[list[Any], int]:
    """(agent runs, warnings) for the audits: each run is validated by Docent's models and its checks."""
    from docent.data_models.chat import check_agent_run

    runs = [docent_run(a) for a in audits]
    warnings = sum(check_agent_run(r).warning_count for r in runs)
    return runs, warnings


def write_docent_runs(audits: Sequence[StoredAudit], path: Path) -> tuple[Path, int]:
    """Write the agent runs as JSON lines (one `AgentRun` each); returns the path and Docent's warning count."""
    runs, warnings = docent_runs(audits)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for run in runs:
            handle.write(json.dumps(run.model_dump(mode="json"), ensure_ascii=False) + "\n")
    return path, warnings


def read_docent_runs(path: Path) -> list[Any]:
    """Agent runs back from a file `write_docent_runs` wrote, validated by Docent's models."""
    from docent.data_models import AgentRun

    return [AgentRun.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
