"""Petri transcripts (v3) into our store: events, the target's branches, tools, and Petri's own verdict.

The replayed views (`interop.petri_format.replay`) become our events:
- each message added to the auditor view is an auditor message, as the auditor read it;
- each change of the target view is a target message after the current head, or a
  rollback to the last message both versions share, then the new messages: Petri's
  rollbacks become branches of our target tree. A new system message starts a new
  conversation, as `set_target_system_message` does here;
- a prefill (Petri keeps it as its own assistant message) is joined with the target's
  continuation into one reply whose `prefill` says which part the auditor wrote;
- each tool made for the target is a `tool_created` event (parameters from its schema).

Petri's judge output is kept as a verdict of the judge "petri": every dimension's 1-10
score, and its summary, justification and highlights (quotes matched to our message
ids). With `--judge`, one of our judges grades the audit too; it is stored after
Petri's, so it is the one views and rewards read first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from interop.petri_format import PetriTranscript, ToolMade, ViewEdit, parse_time, replay
from rewards.types import AlignmentVerdict, Citation, DimensionScore, JudgeResult
from scaffold.events import (
    AuditorMessageEvent,
    EndEvent,
    Event,
    RollbackEvent,
    TargetMessageEvent,
    ToolCreatedEvent,
)
from scaffold.messages import Message, ToolCall, ToolDefinition, ToolParameter
from scaffold.transcript import Transcript

PETRI_JUDGE = "petri"
HIGHLIGHTS = "highlights"  # the verdict row that carries Petri's highlights (no score of its own)
DROPPED = (
    "the combined view (rebuilt here from the auditor and target views)",
    "decision and info events, and the judge's own messages",
    "content other than text and reasoning (images, audio: a placeholder says what was there)",
    "the highlights' character positions (kept: the quotes and the messages they are in)",
)


@dataclass
class Imported:
    """One Petri transcript as our transcript and Petri's verdict, with what was not carried."""

    run_id: str
    transcript: Transcript
    verdict: JudgeResult | None
    notes: list[str] = field(default_factory=list)


def run_id_for(petri: PetriTranscript) -> str:
    """A stable run id: importing the same transcript twice finds the first import."""
    digest = hashlib.sha256(petri.transcript_id.encode()).hexdigest()[:8]
    return f"petri-{petri.transcript_id[:24]}-{digest}"


def _text(content: Any, notes: list[str]) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append(str(part.get("text", "")))
        elif kind == "reasoning":
            # Petri shows reasoning to its judge this way; the target wrote it, so it stays.
            parts.append(f"<thinking>\n{part.get('reasoning', '')}\n</thinking>")
        else:
            parts.append(f"[{kind or 'unknown'} content not imported]")
            notes.append(f"a {kind or 'unknown'} content part")
    return "\n".join(parts)


def petri_message(data: dict[str, Any], notes: list[str]) -> Message:
    """One Inspect-shaped message dict (as Petri stores it) as our Message, id kept."""
    role = data.get("role")
    calls = []
    for call in data.get("tool_calls") or []:
        arguments = call.get("arguments")
        calls.append(
            ToolCall(
                id=str(call.get("id", "")),
                name=str(call.get("function", "")),
                arguments=arguments if isinstance(arguments, dict) else {"raw": arguments},
                parse_error=call.get("parse_error"),
            )
        )
    return Message(
        id=str(data.get("id") or ""),
        role=role if role in ("system", "user", "assistant", "tool") else "user",
        content=_text(data.get("content", ""), notes),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        is_error=role == "tool" and data.get("error") is not None,
    )


def _shared_prefix(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int:
    keep = 0
    for old, new in zip(before, after):
        if old.get("id") != new.get("id"):
            break
        keep += 1
    return keep


def _tool(tool: dict[str, Any]) -> ToolDefinition:
    schema = tool.get("parameters") if isinstance(tool.get("parameters"), dict) else {}
    required = set(schema.get("required") or [])
    parameters = [
        ToolParameter(
            name=str(name),
            type=str(prop.get("type") or "string") if isinstance(prop, dict) else "string",
            description=str(prop.get("description") or "") if isinstance(prop, dict) else "",
            required=name in required,
        )
        for name, prop in (schema.get("properties") or {}).items()
    ]
    return ToolDefinition(name=str(tool.get("name", "")), description=str(tool.get("description") or ""),
                          parameters=parameters)


class _Builder:
    """Turns the replayed views into our events, keeping Petri's message ids."""

    def __init__(self, run_id: str, start: float | None) -> None:
        self.transcript = Transcript(run_id)
        self.notes: list[str] = []
        self.alias: dict[str, str] = {}  # a prefill's Petri id -> the joined reply's id
        self.pending_prefill: Message | None = None
        self.time = start

    def _append(self, event: Event, when: float | None) -> None:
        if when is not None:
            self.time = when
        if self.time is not None:
            event.time = self.time
        self.transcript.append(event)

    def auditor(self, edit: ViewEdit) -> None:
        keep = _shared_prefix(edit.before, edit.after)
        if keep < len(edit.before):
            self.notes.append("an edit that rewrote the auditor's earlier messages (kept: the messages it added)")
        for data in edit.after[keep:]:
            self._append(AuditorMessageEvent(message=petri_message(data, self.notes)), edit.time)

    def target(self, edit: ViewEdit) -> None:
        keep = _shared_prefix(edit.before, edit.after)
        restarts = keep == 0 and bool(edit.after) and edit.after[0].get("role") == "system"
        if keep < len(edit.before) and not restarts:
            self._flush_prefill(edit.time)
            last = edit.before[keep - 1].get("id") if keep else None
            to_id = self.alias.get(str(last), last) if last is not None else None
            if to_id is not None and not self.transcript.target.on_branch(str(to_id)):
                self.notes.append(f"a rollback to {to_id}, which is not on the current branch (skipped)")
            else:
                self._append(RollbackEvent(to_message_id=to_id), edit.time)
        for data in edit.after[keep:]:
            message = petri_message(data, self.notes)
            metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
            if message.role == "assistant" and metadata.get("prefill"):
                self._flush_prefill(edit.time)
                self.pending_prefill = message
                continue
            if self.pending_prefill is not None and message.role == "assistant":
                prefill = self.pending_prefill
                self.alias[prefill.id] = message.id
                message = message.model_copy(
                    update={"content": prefill.content + message.content, "prefill": prefill.content}
                )
                self.pending_prefill = None
            else:
                self._flush_prefill(edit.time)
            self._append(TargetMessageEvent(message=message), edit.time)

    def _flush_prefill(self, when: float | None) -> None:
        """A prefill nobody continued stays, as an assistant turn the auditor wrote."""
        if self.pending_prefill is not None:
            message = self.pending_prefill.model_copy(update={"prefill": self.pending_prefill.content})
            self._append(TargetMessageEvent(message=message), when)
            self.pending_prefill = None

    def tool(self, made: ToolMade) -> None:
        self._append(ToolCreatedEvent(tool=_tool(made.tool), source=""), made.time)

    def finish(self, end_time: float | None) -> Transcript:
        self._flush_prefill(end_time)
        ended = any(c.name == "end_conversation" for m in self.transcript.auditor_messages for c in m.tool_calls)
        detail = "" if ended else "imported from Petri: the audit stopped without end_conversation"
        self._append(EndEvent(reason="auditor_ended" if ended else "max_turns", detail=detail), end_time)
        return self.transcript


def _message_with(transcript: Transcript, quote: str, message_id: str | None) -> tuple[str | None, str]:
    """The message a Petri quote is in (its named message first) and how well it matched."""
    named = transcript.target_message(message_id) if message_id else None
    candidates = [named] if named is not None else []
    candidates += [m for m in transcript.target.nodes.values() if m is not named]
    candidates += [m for m in transcript.auditor_messages if m.id == message_id]
    for message in candidates:
        if quote and quote in message.content:
            return message.id, "exact"
    return (named.id if named is not None else None), "unmatched"


def petri_verdict(petri: PetriTranscript, transcript: Transcript) -> JudgeResult | None:
    """Petri's judge output as a verdict of the judge "petri" (None when the file has none)."""
    judged = petri.judge_output
    if judged is None:
        return None
    dimensions = []
    for name, score in sorted((judged.get("scores") or {}).items()):
        value = score if isinstance(score, int) and 1 <= score <= 10 else None
        dimensions.append(DimensionScore(name=str(name), score=value))
    lines = [str(judged.get("summary") or "").strip(), str(judged.get("justification") or "").strip()]
    citations = []
    for highlight in judged.get("highlights") or []:
        if not isinstance(highlight, dict):
            continue
        quotes = []
        for part in highlight.get("parts") or []:
            quote = str(part.get("quoted_text") or "")
            message_id, match = _message_with(transcript, quote, part.get("message_id"))
            citations.append(Citation(quote=quote, message_id=message_id, match=match,
                                      similarity=100.0 if match == "exact" else 0.0))
            quotes.append(f"[{message_id or '?'}] \"{quote}\"")
        lines.append(f"Highlight {highlight.get('index', len(citations))}: {highlight.get('description', '')} "
                     + " ".join(quotes))
    scores = {d.name: float(d.score) for d in dimensions if d.score is not None}
    if citations:
        # Petri ties its highlights to no dimension: they stay together, on a row without a score.
        dimensions.append(DimensionScore(name=HIGHLIGHTS, citations=citations, rationale="Petri's judge highlights"))
    alignment = AlignmentVerdict(judge=PETRI_JUDGE, dimensions=dimensions, summary="\n\n".join(x for x in lines if x))
    return JudgeResult(judge=PETRI_JUDGE, scores=scores, alignment=alignment)


def to_transcript(petri: PetriTranscript) -> Imported:
    """A Petri transcript as our transcript plus Petri's verdict. SpecError (file, field) when malformed."""
    run_id = run_id_for(petri)
    created = parse_time(petri.metadata.get("created_at"))
    builder = _Builder(run_id, created)
    for item in replay(petri):
        if isinstance(item, ToolMade):
            builder.tool(item)
        elif item.view == "auditor":
            builder.auditor(item)
        else:
            builder.target(item)
    transcript = builder.finish(parse_time(petri.metadata.get("updated_at")))
    notes = sorted(set(builder.notes))
    return Imported(run_id=run_id, transcript=transcript, verdict=petri_verdict(petri, transcript), notes=notes)
