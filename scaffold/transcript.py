"""The append-only transcript of one audit and the views derived from it.

`Transcript.append` is the only way state changes. Live audits and replays from the
store go through the same `_apply`, so a resumed audit rebuilds exactly the state it
had. Appending is O(1); the auditor's and the target's views are maintained as the
events arrive, so no turn walks the whole history.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Protocol

from scaffold.conversation import TargetConversation
from scaffold.events import (
    AuditorMessageEvent,
    EndEvent,
    ErrorEvent,
    Event,
    FindingEvent,
    Hypothesis,
    Report,
    ReportEvent,
    RollbackEvent,
    TargetMessageEvent,
    ToolCreatedEvent,
)
from scaffold.messages import Message, ToolDefinition, Usage
from scaffold.replies import describe_target_reply


class EventSink(Protocol):
    """Where appended events go as they happen (the store, in production)."""

    def write_events(self, run_id: str, events: list[Event]) -> None: ...


class Transcript:
    """Events of one audit, plus the live views the nodes need."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.events: list[Event] = []
        self.auditor_messages: list[Message] = []
        self.target = TargetConversation()
        self.target_tools: dict[str, ToolDefinition] = {}
        self.findings: list[Hypothesis] = []
        self.report: Report | None = None
        self.end: EndEvent | None = None
        self.last_auditor_turn: Message | None = None
        self.auditor_turns = 0  # how many times the auditor has spoken
        self.auditor_usage = Usage()
        self.target_usage = Usage()
        self._unflushed: list[Event] = []
        self._counters = {"a": 0, "t": 0}

    # --- writing -------------------------------------------------------------
    def new_id(self, side: str) -> str:
        """A fresh message id: `a<n>` for the auditor's side, `t<n>` for the target's."""
        self._counters[side] += 1
        return f"{side}{self._counters[side]}"

    def append(self, event: Event) -> Event:
        """Record `event` and update the views. Returns the event with its seq set."""
        event.seq = len(self.events)
        self._apply(event)
        self.events.append(event)
        self._unflushed.append(event)
        return event

    def flush(self, sink: EventSink | None) -> None:
        """Hand events appended since the last flush to `sink`."""
        if sink is not None and self._unflushed:
            sink.write_events(self.run_id, self._unflushed)
        self._unflushed = []

    def _apply(self, event: Event) -> None:
        if isinstance(event, AuditorMessageEvent):
            self._track_id(event.message.id)
            reply = self.target_message(event.shows_reply) if event.shows_reply else None
            if reply is not None:
                event.message = event.message.model_copy(update={"content": describe_target_reply(reply)})
            self.auditor_messages.append(event.message)
            if event.message.role == "assistant":
                self.last_auditor_turn = event.message
                self.auditor_turns += 1
            if event.usage:
                self.auditor_usage = self.auditor_usage + event.usage
            if event.target_usage:
                self.target_usage = self.target_usage + event.target_usage
        elif isinstance(event, TargetMessageEvent):
            self._track_id(event.message.id)
            event.message = self.target.append(event.message)
            if event.usage:
                self.target_usage = self.target_usage + event.usage
        elif isinstance(event, RollbackEvent):
            self.target.rollback_to(event.to_message_id)
        elif isinstance(event, ToolCreatedEvent):
            self.target_tools[event.tool.name] = event.tool
        elif isinstance(event, FindingEvent):
            self.findings.append(event.finding)
        elif isinstance(event, ReportEvent):
            self.report = event.report
        elif isinstance(event, EndEvent):
            self.end = event

    def _track_id(self, message_id: str) -> None:
        side, number = message_id[:1], message_id[1:]
        if side in self._counters and number.isdigit():
            self._counters[side] = max(self._counters[side], int(number))

    @classmethod
    def from_events(cls, run_id: str, events: Iterable[Event]) -> Transcript:
        """Rebuild a transcript by replaying stored events in order."""
        transcript = cls(run_id)
        for event in events:
            transcript.append(event)
        transcript._unflushed = []
        return transcript

    # --- reading -------------------------------------------------------------
    @property
    def total_usage(self) -> Usage:
        return self.auditor_usage + self.target_usage

    def target_view(self) -> list[Message]:
        """What the target sees now: the current branch, root first."""
        return self.target.current_branch()

    def valid_call_turns(self) -> tuple[int, int]:
        """(auditor turns whose reply was at least one well-formed tool call, auditor turns)."""
        turns = [m for m in self.auditor_messages if m.role == "assistant"]
        valid = sum(1 for m in turns if m.tool_calls and not any(c.parse_error for c in m.tool_calls))
        return valid, len(turns)

    def auditor_view(self) -> list[Message]:
        """What the auditor has seen and said, in order."""
        return list(self.auditor_messages)

    def target_message(self, message_id: str) -> Message | None:
        """Any target message ever written, on any branch."""
        return self.target.nodes.get(message_id)

    def combined_view(self) -> list[dict[str, Any]]:
        """Every event in order, as plain dicts with a `side` field, for people to read."""
        rows: list[dict[str, Any]] = []
        for event in self.events:
            row = event.model_dump(mode="json")
            row["side"] = {
                "auditor_message": "auditor",
                "target_message": "target",
            }.get(event.kind, "scaffold")
            rows.append(row)
        return rows

    def errors(self) -> list[ErrorEvent]:
        return [e for e in self.events if isinstance(e, ErrorEvent)]

    def to_dict(self) -> dict[str, Any]:
        """The whole transcript: events plus the branch structure, JSON-ready."""
        return {
            "run_id": self.run_id,
            "events": [e.model_dump(mode="json") for e in self.events],
            "target_branches": self.target.branches(),
            "current_branch": [m.id for m in self.target.current_branch()],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
