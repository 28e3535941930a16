"""Run one audit (or resume one) through the audit graph."""

from __future__ import annotations

import logging
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Literal, Protocol

from scaffold.events import AuditorMessageEvent, EndEvent, ErrorEvent, Event
from scaffold.graph import build_audit_graph
from scaffold.messages import GenerateConfig, Message
from scaffold.model import ChatModel
from scaffold.nodes import AuditStepError
from scaffold.state import AuditBudget, AuditContext, AuditState, keep_text
from scaffold.transcript import EventSink, Transcript

log = logging.getLogger(__name__)

INITIAL_EVENTS = 2  # the auditor's system prompt and seed, written before the graph starts


class EventLog(EventSink, Protocol):
    """An event sink that can also be read back and cut (the store)."""

    def read_events(self, run_id: str) -> list[Event]: ...

    def truncate_events(self, run_id: str, keep: int) -> None: ...


class ResumeError(Exception):
    """The run cannot be resumed (unknown, never checkpointed, or already finished)."""


@dataclass
class AuditResult:
    """The outcome of one audit: its transcript and whether it finished cleanly."""

    run_id: str
    transcript: Transcript
    status: Literal["completed", "failed"]
    error: str | None = None


_GRAPHS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_PLAIN_GRAPH: list[Any] = []


def _graph(checkpointer: Any) -> Any:
    # Compiling costs milliseconds; an eval runs thousands of audits on one checkpointer.
    # Weak keys: a closed checkpointer takes its graph with it.
    if checkpointer is None:
        if not _PLAIN_GRAPH:
            _PLAIN_GRAPH.append(build_audit_graph(None))
        return _PLAIN_GRAPH[0]
    try:
        graph = _GRAPHS.get(checkpointer)
        if graph is None:  # not setdefault: that would compile a graph on every call
            graph = _GRAPHS[checkpointer] = build_audit_graph(checkpointer)
        return graph
    except TypeError:  # not weak-referenceable
        return build_audit_graph(checkpointer)


def _config(run_id: str, budget: AuditBudget) -> dict[str, Any]:
    return {"configurable": {"thread_id": run_id}, "recursion_limit": budget.recursion_limit()}


async def _drive(
    graph: Any, state: AuditState, ctx: AuditContext, budget: AuditBudget, checkpointed: bool
) -> AuditResult:
    t = ctx.transcript
    # "sync": every step's checkpoint is on disk before the next step writes events,
    # so a kill at any moment leaves a checkpoint that matches the event log.
    options = {"durability": "sync"} if checkpointed else {}
    try:
        await graph.ainvoke(state, _config(t.run_id, budget), context=ctx, **options)
    except AuditStepError as exc:
        return _failed(ctx, exc.side, str(exc))
    except Exception as exc:  # noqa: BLE001 - an audit in a batch of thousands must not take the rest down
        log.exception("audit %s failed in the graph", t.run_id)
        return _failed(ctx, "scaffold", ctx.redact(f"{type(exc).__name__}: {exc}"))
    return AuditResult(run_id=t.run_id, transcript=t, status="completed")


def _failed(ctx: AuditContext, where: str, error: str) -> AuditResult:
    """Record the failure; never raises, even when the store itself is what failed."""
    t = ctx.transcript
    t.append(ErrorEvent(where=where, error=error))  # type: ignore[arg-type]
    t.append(EndEvent(reason="failed", detail=error))
    try:
        t.flush(ctx.sink)
    except Exception:  # noqa: BLE001 - the failure is already in the result; resume retries the step
        log.exception("audit %s: could not store its failure", t.run_id)
    return AuditResult(run_id=t.run_id, transcript=t, status="failed", error=error)


@dataclass(frozen=True)
class SharedStart:
    """An audit's first turns, played once, that several audits continue (`run_audit(start=...)`).

    A training group's G rollouts can share them: they then differ only in the turns after,
    so their advantages compare what those turns did (training/rollouts.py).
    """

    run_id: str  # the audit that played them; a token-level policy extends its exact ids
    events: tuple[Event, ...]  # from the auditor's system prompt up to where its next turn would begin

    @property
    def turns(self) -> int:
        """The auditor turns it holds."""
        return sum(1 for e in self.events if isinstance(e, AuditorMessageEvent) and e.message.role == "assistant")


async def play_shared_start(
    auditor: ChatModel,
    target: ChatModel,
    seed: str,
    *,
    auditor_prompt: str,
    budget: AuditBudget,
    turns: int,
    run_id: str | None = None,
    auditor_config: GenerateConfig | None = None,
    target_config: GenerateConfig | None = None,
    redact: Callable[[str], str] = keep_text,
    brief_tools: bool = False,
) -> SharedStart | None:
    """Play the first `turns` auditor turns of an audit under `budget`, for audits to continue.

    `auditor_prompt` and `seed` are the whole audit's (they state its full turn budget); the
    audit stops after `turns`, before any last-turn notice. It is neither stored nor
    checkpointed. None when it ended sooner (a report, end_conversation, a failure): there
    is nothing left to continue.
    """
    if not 0 < turns < budget.max_turns:
        raise ValueError(
            f"a shared start plays 1 to {budget.max_turns - 1} of the audit's {budget.max_turns} turns, not {turns}"
        )
    stop = budget.model_copy(update={"stop_after_turns": turns})
    result = await run_audit(
        auditor, target, seed, auditor_prompt=auditor_prompt, budget=stop, run_id=run_id,
        auditor_config=auditor_config, target_config=target_config, redact=redact, brief_tools=brief_tools,
    )
    t = result.transcript
    if result.status != "completed" or t.end is None or t.end.reason != "max_turns" or t.report is not None:
        return None
    return SharedStart(run_id=t.run_id, events=tuple(e for e in t.events if e is not t.end))


async def run_audit(
    auditor: ChatModel,
    target: ChatModel,
    seed: str,
    *,
    auditor_prompt: str,
    budget: AuditBudget | None = None,
    run_id: str | None = None,
    sink: EventSink | None = None,
    checkpointer: Any = None,
    auditor_config: GenerateConfig | None = None,
    target_config: GenerateConfig | None = None,
    redact: Callable[[str], str] = keep_text,
    brief_tools: bool = False,
    start: SharedStart | None = None,
) -> AuditResult:
    """Audit `target` with `auditor`, starting from the seed instruction.

    The auditor sees `auditor_prompt` as its system message and `seed` as the first
    user message; with `brief_tools`, each tool's brief definition (a compact manual).
    Events go to `sink` as each step completes; with a LangGraph
    `checkpointer` the audit can later be resumed by `resume_audit`.
    With `start` (played with the same prompt and seed), the audit begins where that
    shared start ended: its events are copied into this run, which plays the turns after.
    """
    budget = budget or AuditBudget()
    transcript = Transcript(run_id or uuid.uuid4().hex[:12])
    opening = [("system", auditor_prompt), ("user", seed)]
    if start is not None:
        begun = [(e.message.role, e.message.content) for e in start.events[:INITIAL_EVENTS]]  # type: ignore[union-attr]
        if begun != opening:
            raise ValueError(f"shared start {start.run_id} was played with another auditor prompt or seed")
        for event in start.events:
            transcript.append(event.model_copy(deep=True))  # appending numbers the copy in this run
    else:
        for role, text in opening:
            message = Message(id=transcript.new_id("a"), role=role, content=text)  # type: ignore[arg-type]
            transcript.append(AuditorMessageEvent(message=message))
    ctx = AuditContext(
        transcript, auditor, target, budget, sink, auditor_config=auditor_config, target_config=target_config, redact=redact,
        brief_tools=brief_tools, started_from=start.run_id if start is not None else None,
    )
    transcript.flush(sink)
    state: AuditState = {"cursor": {"event_count": len(transcript.events), "call_count": 0, "call_index": 0}}
    return await _drive(_graph(checkpointer), state, ctx, budget, checkpointer is not None)


async def resume_audit(
    auditor: ChatModel,
    target: ChatModel,
    *,
    run_id: str,
    event_log: EventLog,
    checkpointer: Any,
    budget: AuditBudget | None = None,
    auditor_config: GenerateConfig | None = None,
    target_config: GenerateConfig | None = None,
    redact: Callable[[str], str] = keep_text,
    brief_tools: bool = False,
) -> AuditResult:
    """Continue a killed or failed audit from its last completed step.

    Events written after that step (a step cut short by the kill) are dropped and the
    step runs again, so no completed turn is lost and none is duplicated. If the graph
    had already finished, the stored transcript is returned as it is.
    """
    budget = budget or AuditBudget()
    graph = _graph(checkpointer)
    snapshot = await graph.aget_state(_config(run_id, budget))
    cursor = dict(snapshot.values.get("cursor") or {}) if snapshot and snapshot.values else {}
    if not cursor:
        # Killed before the first checkpoint: start over from the prompt and seed.
        if len(event_log.read_events(run_id)[:INITIAL_EVENTS]) < INITIAL_EVENTS:
            raise ResumeError(f"run {run_id} has no checkpoint and no stored start to resume from")
        cursor = {"event_count": INITIAL_EVENTS, "call_count": 0, "call_index": 0}
    keep = int(cursor["event_count"])
    event_log.truncate_events(run_id, keep)
    transcript = Transcript.from_events(run_id, event_log.read_events(run_id))
    if len(transcript.events) != keep:
        raise ResumeError(f"run {run_id}: the store has {len(transcript.events)} events, the checkpoint expects {keep}")
    if cursor.get("done") or transcript.end is not None:
        # The graph finished before the kill (only grading or reporting was cut short).
        return AuditResult(run_id=run_id, transcript=transcript, status="completed")
    ctx = AuditContext(
        transcript, auditor, target, budget, event_log, auditor_config=auditor_config, target_config=target_config, redact=redact,
        brief_tools=brief_tools,
    )
    # Every node passes when the cursor says its work is done, so restarting the graph
    # from START with the saved cursor continues exactly where the last step ended,
    # whichever node LangGraph would have run next.
    return await _drive(graph, {"cursor": cursor}, ctx, budget, checkpointed=True)
