"""A constrained warm start taught in the grammar's own tokens.

A constrained policy never writes free text: every reply is tool calls walked through the
grammar (scaffold/providers/constrained.py). `GrammarAligner` turns a teacher's audit into
that form, turn by turn:
  * the text before its calls is dropped (the grammar opens every reply with `<tool_call>`);
  * each call is put in the grammar's key order and number grid, with the ids that were
    citable at that turn (they decide whether `cited_message_ids` is required) and, with
    `copy_quotes`, the texts that were quotable (every «quote» must be one of them);
  * each reply's ids are the grammar's walk over the call text (scaffold/providers/grammar_walk.py),
    not its natural tokenization, which merges tokens across the grammar's choice points.
An audit with a call the grammar cannot write (a `"`, a seventh list item, a string past
the cap, a citation of an id that was not citable, a «quote» of text the conversation does
not hold, a citation of a reply other than the ones its claim quoted) is left out whole.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from scaffold.events import AuditorMessageEvent
from scaffold.messages import Message, ToolCall, ToolDefinition
from scaffold.nodes import citable_ids
from scaffold.providers.constrained import ToolCallGrammar, VocabularyMasks, reply_stop_id
from scaffold.providers.grammar_walk import canonical_arguments, grammar_ids
from scaffold.providers.text_tools import render_assistant_text
from scaffold.providers.token_prompts import end_of_turn_ids
from scaffold.quotable import quotable_replies
from scaffold.transcript import Transcript


class AlignedAudit(NamedTuple):
    """The auditor's messages as a constrained policy writes them, and each reply's ids."""

    messages: list[Message]
    reply_ids: dict[str, list[int]]  # assistant message id -> the grammar's ids, stop id last


class TurnContext(NamedTuple):
    """What the scaffold told the grammar when an auditor reply was written."""

    citable: tuple[str, ...]
    quotable: dict[str, tuple[str, ...]]  # text -> the replies that said it


def context_by_turn(transcript: Transcript) -> dict[str, TurnContext]:
    """For each auditor reply, the ids it could cite and the texts it could quote when it was
    written (as scaffold.nodes computes them)."""
    replay = Transcript(transcript.run_id)
    context: dict[str, TurnContext] = {}
    for event in transcript.events:
        if isinstance(event, AuditorMessageEvent) and event.message.role == "assistant":
            cites = citable_ids(replay)
            context[event.message.id] = TurnContext(cites, quotable_replies(replay, cites))
        replay.append(event.model_copy())
    return context


class GrammarAligner:
    """Aligns teacher audits to one tokenizer's grammar over `tools`."""

    def __init__(
        self,
        tokenizer: Any,
        tools: Sequence[ToolDefinition],
        *,
        max_calls: int,
        max_tokens: int,
        copy_quotes: bool = False,
        max_request_quotes: int | None = None,
    ) -> None:
        stop_ids = end_of_turn_ids(tokenizer)
        self.tokenizer, self.tools, self.max_calls, self.max_tokens = tokenizer, list(tools), max_calls, max_tokens
        self.copy_quotes, self.max_request_quotes = copy_quotes, max_request_quotes
        self.masks = VocabularyMasks(tokenizer, stop_ids | set(tokenizer.all_special_ids))
        self.stop_id = reply_stop_id(tokenizer, stop_ids)
        self.schemas = {tool.name: tool.json_schema() for tool in self.tools}

    def grammar(self, context: TurnContext) -> ToolCallGrammar:
        return ToolCallGrammar(
            self.tokenizer, self.tools, stop_id=self.stop_id, masks=self.masks, max_calls=self.max_calls,
            citable=context.citable, quotable=context.quotable if self.copy_quotes else None,
            max_request_quotes=self.max_request_quotes,
        )

    def align(self, transcript: Transcript) -> AlignedAudit | None:
        """The audit as the grammar writes it, or None when one of its replies cannot be written."""
        context = context_by_turn(transcript)
        messages: list[Message] = []
        reply_ids: dict[str, list[int]] = {}
        for message in transcript.auditor_messages:
            if message.role != "assistant":
                messages.append(message)
                continue
            now = context.get(message.id, TurnContext((), {}))
            calls = [self._canonical(call, now.citable) for call in message.tool_calls]
            if not calls or any(call is None for call in calls):
                return None
            written = message.model_copy(update={"content": "", "tool_calls": [c for c in calls if c is not None]})
            ids = grammar_ids(self.grammar(now), render_assistant_text(written), self.max_tokens)
            if ids is None:
                return None
            messages.append(written)
            reply_ids[message.id] = ids
        return AlignedAudit(messages, reply_ids)

    def _canonical(self, call: ToolCall, citable: tuple[str, ...]) -> ToolCall | None:
        schema = self.schemas.get(call.name)
        if schema is None or call.parse_error:
            return None
        return call.model_copy(update={"arguments": canonical_arguments(call.arguments, schema, citable)})
