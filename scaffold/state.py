"""The LangGraph state of an audit, and the per-audit context its nodes are handed.

The checkpointed state is deliberately tiny (counters and ids): the transcript lives
in the event log, so a checkpoint costs the same at turn 1,000 as at turn 1, and no
model-written text (which could carry a leaked secret) is ever checkpointed. On
resume, the event log is cut back to `event_count` and replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, TypedDict

from pydantic import BaseModel, Field, model_validator

from scaffold.messages import GenerateConfig
from scaffold.model import ChatModel
from scaffold.tools import AUDITOR_TOOLS, AuditorTool
from scaffold.transcript import EventSink, Transcript


class AuditCursor(TypedDict, total=False):
    """Where the audit stands: what LangGraph checkpoints after every step."""

    event_count: int  # events in the log when this step ended
    call_count: int  # tool calls of the latest auditor turn to run (the calls live in the transcript)
    call_index: int  # how many of them are done
    awaiting_target: dict[str, Any] | None  # {call_id, mode}: the call whose result the target is producing
    done: bool


class AuditState(TypedDict):
    """The graph state: one channel, because LangGraph's per-step cost grows with channels."""

    cursor: AuditCursor


# The most auditor turns one audit may take: every place that accepts a turn budget (the CLI,
# suites, audit jobs) checks against this one number.
MAX_TURNS = 100_000


class AuditBudget(BaseModel):
    """Limits of one audit. The audit ends cleanly when one is reached."""

    max_turns: int = Field(20, ge=1, le=MAX_TURNS, description="Auditor turns before the audit ends.")
    max_tokens: int | None = Field(None, ge=1, description="Total auditor + target tokens before the audit ends.")
    max_tool_calls_per_turn: int = Field(
        8, ge=1, le=64, description="Tool calls honoured per auditor turn; further calls get an error."
    )
    max_reply_chars: int = Field(
        65_536,
        ge=256,
        description="Longest target reply kept, in characters; the rest is cut with a visible marker, so a "
        "hostile or runaway target cannot fill the store, the transcript and the auditor's context.",
    )
    report_on_last_turn: bool = Field(
        True,
        description="On the auditor's last turn, tell it so and require submit_report: an audit that runs out of "
        "turns still ends with a report to judge.",
    )
    stop_after_turns: int | None = Field(
        None,
        ge=1,
        description="End the audit after this many auditor turns, below max_turns, with no last-turn notice; its "
        "prompts still state max_turns. A probe of an audit's first turns, played exactly as a whole audit plays "
        "them: a shared start (tasks.shared_turns), or training the probing alone (reward.family elicitation or "
        "trigger_coverage).",
    )

    @model_validator(mode="after")
    def _stop_before_the_end(self) -> AuditBudget:
        if self.stop_after_turns is not None and self.stop_after_turns >= self.max_turns:
            raise ValueError(f"stop_after_turns ({self.stop_after_turns}) must be below max_turns ({self.max_turns}): "
                             "an audit that plays every turn needs no stop")
        return self

    @property
    def turn_limit(self) -> int:
        """The auditor turns this audit plays (`stop_after_turns`, or `max_turns`)."""
        return self.stop_after_turns or self.max_turns

    def recursion_limit(self) -> int:
        """A LangGraph step limit that the budget itself always reaches first."""
        # per turn: the auditor, then tools -> target -> auditor (passing) for each call
        return self.max_turns * (3 * self.max_tool_calls_per_turn + 2) + 10


class BudgetShorthands(BaseModel):
    """Mixed into a model that embeds an AuditBudget as its `budget` field.

    The model also reads `max_turns:` and `max_tokens:` at its top level (suite files,
    configs and stored jobs written before it embedded one): they are moved into
    `budget`, which stays the one source, and `max_turns` reads it back.
    `default_turns` is the model's default turn budget.
    """

    default_turns: ClassVar[int] = 20

    @model_validator(mode="before")
    @classmethod
    def _budget_shorthands(cls, data: Any) -> Any:
        shorthands = ("max_turns", "max_tokens")
        if not isinstance(data, dict) or not any(key in data for key in shorthands):
            return data
        data = dict(data)
        budget = dict(data.get("budget") or {"max_turns": cls.default_turns})
        for key in shorthands:
            if key in data:
                budget[key] = data.pop(key)
        return {**data, "budget": budget}

    @property
    def max_turns(self) -> int:
        """The budget's turn limit."""
        return self.budget.max_turns  # type: ignore[attr-defined, no-any-return]


def keep_text(text: str) -> str:
    """The identity redaction, for audits that hold no secrets."""
    return text


@dataclass
class AuditContext:
    """Everything the nodes of one audit may use. Handed in; never looked up."""

    transcript: Transcript
    auditor: ChatModel
    target: ChatModel
    budget: AuditBudget
    sink: EventSink | None = None
    tools: dict[str, AuditorTool] = field(default_factory=lambda: dict(AUDITOR_TOOLS))
    # Show the auditor each tool's brief definition (ToolDefinition.brief): the compact
    # manual of small local policies. The tools themselves are the same.
    brief_tools: bool = False
    auditor_config: GenerateConfig | None = None
    target_config: GenerateConfig | None = None
    # The run whose first turns this audit copied and continues (scaffold.run.SharedStart).
    started_from: str | None = None
    # Applied to every error text before LangGraph or the store can keep it.
    redact: Callable[[str], str] = keep_text
