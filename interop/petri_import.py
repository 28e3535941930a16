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
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

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
from scaffold.specs import SpecError, describe_validation_error
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
    """A run id from the transcript's id and its content: importing the same file twice finds the first
    import, and two different transcripts that share an id (or have none) stay two runs."""
    content = json.dumps([petri.metadata, petri.events], sort_keys=True, default=str, ensure_ascii=True)
    digest = hashlib.sha256(content.encode()).hexdigest()[:12]
    safe = "".join(c for c in petri.transcript_id if c.isalnum() or c in "-_")[:24] or "transcript"
    return f"petri-{safe}-{digest}"


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


def _clean_id(value: Any, field: str) -> str:
    """A message or call id as text: strings and integers only, and encodable (no lone surrogates)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{field} {value!r} is not a string")
    text = str(value)
    text.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate
    return text


def petri_message(data: dict[str, Any], notes: list[str]) -> Message:
    """One Inspect-shaped message dict (as Petri stores it) as our Message, id kept (empty when absent).

    ValueError (or TypeError) for a message whose parts are not the shapes Petri writes.
    """
    role = data.get("role")
    calls = []
    raw_calls = data.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ValueError("tool_calls is not a list")
    for call in raw_calls:
        if not isinstance(call, dict):
            raise ValueError("a tool call is not an object")
        arguments = call.get("arguments")
        error = call.get("parse_error")
        calls.append(
            ToolCall(
                id=_clean_id(call.get("id", ""), "a tool call id"),
                name=str(call.get("function", "")),
                arguments=arguments if isinstance(arguments, dict) else {"raw": arguments},
                parse_error=error if isinstance(error, str) else None,
            )
        )
    call_id = data.get("tool_call_id")
    return Message(
        id=_clean_id(data.get("id") or "", "a message id"),
        role=role if role in ("system", "user", "assistant", "tool") else "user",
        content=_text(data.get("content", ""), notes),
        tool_calls=calls,
        tool_call_id=_clean_id(call_id, "tool_call_id") if call_id is not None else None,
        is_error=role == "tool" and data.get("error") is not None,
    )


def _tool(tool: dict[str, Any]) -> ToolDefinition:
    schema = tool.get("parameters") if isinstance(tool.get("parameters"), dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    parameters = [
        ToolParameter(
            name=str(name),
            type=str(prop.get("type") or "string") if isinstance(prop, dict) else "string",
            description=str(prop.get("description") or "") if isinstance(prop, dict) else "",
            required=name in required,
        )
        for name, prop in properties.items()
    ]
    return ToolDefinition(name=str(tool.get("name", "")), description=str(tool.get("description") or ""),
                          parameters=parameters)


@dataclass
class _Slot:
    """One message of Petri's target view, as it stands here: the node that holds it (None while a
    prefill waits for its continuation) and, for a prefill, the prefill itself."""

    node: str | None
    prefill: Message | None = None


class _Builder:
    """Turns the replayed views into our events.

    `slots` mirrors Petri's current target view position for position, so that a view cut
    back to its first k messages is a rollback to the node of message k. Petri's ids are
    kept where they are unique in our tree; a message Petri adds again under an id the
    tree already holds (a view rewritten from the middle, a restart) gets `id~N`, and
    `latest` maps each Petri id to the node that now stands for it.
    """

    def __init__(self, run_id: str, start: float | None) -> None:
        self.transcript = Transcript(run_id)
        self.notes: list[str] = []
        self.slots: list[_Slot] = []
        self.pending: Message | None = None  # a prefill waiting for the target's continuation
        self.latest: dict[str, str] = {}
        self.used: set[str] = set()
        self.time = start

    def _append(self, event: Event, when: float | None) -> None:
        if when is not None:
            self.time = when
        if self.time is not None:
            event.time = self.time
        self.transcript.append(event)

    def _unique(self, message: Message, side: str) -> Message:
        base = message.id or f"{side}-{len(self.used) + 1}"
        ident, n = base, 1
        while ident in self.used:
            n += 1
            ident = f"{base}~{n}"
        self.used.add(ident)
        if message.id:
            self.latest[message.id] = ident
        return message if ident == message.id else message.model_copy(update={"id": ident})

    def auditor(self, edit: ViewEdit) -> None:
        if edit.dropped:
            self.notes.append("an edit that rewrote the auditor's earlier messages (kept: the messages it added)")
        for data in edit.added:
            self._append(AuditorMessageEvent(message=self._unique(petri_message(data, self.notes), "a")), edit.time)

    def _node(self, message: Message, when: float | None) -> str:
        self._append(TargetMessageEvent(message=message), when)
        return message.id

    def _flush_pending(self, when: float | None) -> None:
        """A prefill nobody continued stays, as an assistant turn the auditor wrote."""
        if self.pending is not None:
            prefill, self.pending = self.pending, None
            node = self._node(prefill.model_copy(update={"prefill": prefill.content}), when)
            self.slots[-1].node = node

    def _cut_back(self, kept: int, restarts: bool, when: float | None) -> None:
        """The view now holds only its first `kept` messages: move our head to match."""
        self.pending = None
        del self.slots[kept:]
        if restarts:
            return  # the new system message starts a fresh conversation by itself
        if kept and self.slots[-1].prefill is not None:
            # The kept message is a prefill whose continuation was cut: back to before their
            # joined reply, and the prefill waits again for a continuation.
            self.pending = self.slots[-1].prefill
            self.slots[-1].node = None
            to_id = self.slots[-2].node if kept >= 2 else None
        else:
            to_id = self.slots[-1].node if kept else None
        self._append(RollbackEvent(to_message_id=to_id), when)

    def target(self, edit: ViewEdit) -> None:
        if edit.dropped:
            restarts = edit.kept == 0 and bool(edit.added) and edit.added[0].get("role") == "system"
            self._cut_back(edit.kept, restarts, edit.time)
        for data in edit.added:
            message = petri_message(data, self.notes)
            metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
            if message.role == "assistant" and metadata.get("prefill"):
                self._flush_pending(edit.time)
                self.pending = self._unique(message, "t")
                self.slots.append(_Slot(None, self.pending))
                continue
            message = self._unique(message, "t")
            if self.pending is not None and message.role == "assistant":
                prefill, self.pending = self.pending, None
                joined = message.model_copy(
                    update={"content": prefill.content + message.content, "prefill": prefill.content}
                )
                node = self._node(joined, edit.time)
                self.latest[prefill.id] = node
                self.slots[-1].node = node
            else:
                self._flush_pending(edit.time)
                node = self._node(message, edit.time)
            self.slots.append(_Slot(node))

    def tool(self, made: ToolMade) -> None:
        self._append(ToolCreatedEvent(tool=_tool(made.tool), source=""), made.time)

    def finish(self, end_time: float | None) -> Transcript:
        self._flush_pending(end_time)
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


def _as_dict(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"judge_output.{field} is not an object")
    return value


def _as_list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"judge_output.{field} is not a list")
    return value


def petri_verdict(petri: PetriTranscript, transcript: Transcript, latest: dict[str, str]) -> JudgeResult | None:
    """Petri's judge output as a verdict of the judge "petri" (None when the file has none).

    `latest` maps Petri's message ids to the nodes that stand for them here.
    """
    judged = petri.judge_output
    if judged is None:
        return None
    dimensions = []
    for name, score in sorted(_as_dict(judged.get("scores"), "scores").items()):
        ok = isinstance(score, int) and not isinstance(score, bool) and 1 <= score <= 10
        dimensions.append(DimensionScore(name=str(name), score=score if ok else None))
    lines = [str(judged.get("summary") or "").strip(), str(judged.get("justification") or "").strip()]
    citations = []
    for highlight in _as_list(judged.get("highlights"), "highlights"):
        if not isinstance(highlight, dict):
            raise ValueError("judge_output.highlights holds something that is not an object")
        quotes = []
        for part in _as_list(highlight.get("parts"), "highlights[].parts"):
            if not isinstance(part, dict):
                raise ValueError("judge_output.highlights[].parts holds something that is not an object")
            quote = str(part.get("quoted_text") or "")
            named = part.get("message_id")
            named = latest.get(named, named) if isinstance(named, str) else None
            message_id, match = _message_with(transcript, quote, named)
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


# What malformed content raises while it is converted (beyond SpecError, which already names the field).
_MALFORMED = (ValueError, TypeError, AttributeError, KeyError, RecursionError)


def to_transcript(petri: PetriTranscript) -> Imported:
    """A Petri transcript as our transcript plus Petri's verdict, checked in full: every event
    serialises as the store will write it. SpecError (the file and the field) when it is malformed."""
    run_id = run_id_for(petri)
    builder = _Builder(run_id, parse_time(petri.metadata.get("created_at")))
    where = "events"
    try:
        for item in replay(petri):
            where = f"events[{item.index}]"
            if isinstance(item, ToolMade):
                builder.tool(item)
            elif item.view == "auditor":
                builder.auditor(item)
            else:
                builder.target(item)
        where = "metadata"
        transcript = builder.finish(parse_time(petri.metadata.get("updated_at")))
        where = "metadata.judge_output"
        verdict = petri_verdict(petri, transcript, builder.latest)
        where = "events"
        for event in transcript.events:
            event.model_dump_json()
        if verdict is not None:
            verdict.model_dump_json()
    except SpecError:
        raise
    except (*_MALFORMED, ValidationError, PydanticSerializationError) as exc:
        why = describe_validation_error(exc, "") if isinstance(exc, ValidationError) else str(exc)
        raise SpecError(f"{petri.path}: field '{where}': {type(exc).__name__}: {why}"[:400]) from None
    return Imported(run_id=run_id, transcript=transcript, verdict=verdict, notes=sorted(set(builder.notes)))
