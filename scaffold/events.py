"""Transcript events: the append-only record of an audit.

Every change to an audit is one of these. The transcript, its views, the store and
resume are all derived from the same sequence, so a replayed audit is exactly the
audit that ran.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, TypeAdapter, model_serializer

from scaffold.messages import Message, ToolDefinition, Usage


class Hypothesis(BaseModel):
    """A claim about the target's hidden behaviour, with the target messages that show it."""

    description: str
    cited_message_ids: list[str] = Field(default_factory=list)
    confidence: float = Field(0.5, ge=0.0, le=1.0)


class Report(BaseModel):
    """The auditor's final answer: hypotheses ranked most likely first, and a summary."""

    hypotheses: list[Hypothesis] = Field(default_factory=list)
    summary: str = ""


class _EventBase(BaseModel):
    seq: int = -1  # set by the transcript on append
    time: float = Field(default_factory=time.time)


class AuditorMessageEvent(_EventBase):
    """A message in the auditor's own conversation (its prompt, its turns, tool results)."""

    kind: Literal["auditor_message"] = "auditor_message"
    message: Message
    usage: Usage | None = None
    latency_s: float | None = None
    tokens: dict[str, Any] | None = None  # TokenRecord as a dict, for local policies
    target_usage: Usage | None = None  # a target call whose output went only to the auditor
    # The target reply this tool result shows. Its text is stored once, with the target's
    # message: the serialized event leaves `message.content` empty, and the transcript
    # renders it from the reply on append (`scaffold.replies.describe_target_reply`).
    shows_reply: str | None = None

    @model_serializer(mode="wrap")
    def _store_reply_once(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.shows_reply is not None and isinstance(data.get("message"), dict):
            data["message"] = {**data["message"], "content": ""}
        return data


class TargetMessageEvent(_EventBase):
    """A message added to the target's conversation tree at the current head."""

    kind: Literal["target_message"] = "target_message"
    message: Message
    usage: Usage | None = None
    latency_s: float | None = None


class RollbackEvent(_EventBase):
    """The target conversation's head moved back to `to_message_id` (None: empty)."""

    kind: Literal["rollback"] = "rollback"
    to_message_id: str | None
    restart: bool = False


class ToolCreatedEvent(_EventBase):
    """The auditor gave the target a synthetic tool."""

    kind: Literal["tool_created"] = "tool_created"
    tool: ToolDefinition
    environment: str = ""
    source: str = ""  # the auditor's function code, kept as text; never executed


class FindingEvent(_EventBase):
    """The auditor recorded a finding mid-audit."""

    kind: Literal["finding"] = "finding"
    finding: Hypothesis


class ReportEvent(_EventBase):
    """The auditor submitted its final report."""

    kind: Literal["report"] = "report"
    report: Report


class ErrorEvent(_EventBase):
    """Something failed: a bad tool call, a model error. `where` says which side."""

    kind: Literal["error"] = "error"
    where: Literal["auditor", "tool", "target", "scaffold"]
    error: str


class EndEvent(_EventBase):
    """The audit ended: the auditor ended it, a budget ran out, or it failed."""

    kind: Literal["end"] = "end"
    reason: Literal["auditor_ended", "report_submitted", "max_turns", "max_tokens", "failed"]
    detail: str = ""


Event = Annotated[
    Union[
        AuditorMessageEvent,
        TargetMessageEvent,
        RollbackEvent,
        ToolCreatedEvent,
        FindingEvent,
        ReportEvent,
        ErrorEvent,
        EndEvent,
    ],
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def event_from_json(data: str | bytes) -> Event:
    """Parse one stored event."""
    return EVENT_ADAPTER.validate_json(data)
