"""Prompt token ids for token-level policies (the `hf` and `vllm` providers).

A policy that is trained on its own samples must see, at turn k+1, exactly the ids it
saw and wrote at turn k followed by what the environment added (DESIGN.md, training
data path). Re-rendering and re-tokenizing the whole chat every turn breaks that: the
tool calls in the history are re-serialised from their parsed form, and BPE merges
across the joins differ from what was sampled. So, per rollout id, `PromptBuilder`
keeps the ids of the last turn (prompt + completion) and builds the next prompt as

    previous prompt ids + previous completion ids + ids of the environment's text

where the environment's text is what the chat template puts after the previous
assistant turn: the rest of its closing (after the end-of-turn token the policy
sampled, or the whole closing when it was cut off by max_tokens), then the new
messages and the next assistant header. A rollout this builder never saw (a resumed audit,
or the turn after another model's in a `by_turn` auditor) starts from the ids its
transcript recorded for the last turn (`GenerateConfig.last_turn_ids`).

The extension is used only when it is exact: the conversation must start with the
messages of the previous call and its reply, unchanged, with the same tools, and the
template must render the longer chat as an extension of the shorter one. Otherwise the
prompt is tokenized afresh and the turn starts a new training row (a "prefix break",
counted by training/rows.py).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

from scaffold.messages import GenerateConfig, Message, ModelResponse, TokenRecord, ToolCall, ToolDefinition, Usage
from scaffold.model import ModelError
from scaffold.providers import text_tools

_SENTINEL = "\x00auditrl-sentinel\x00"


def end_of_turn_ids(tokenizer: Any, more_eos: Iterable[int | list[int] | None] = ()) -> set[int]:
    """End-of-turn ids: `<|im_end|>` (or its kin) when the vocabulary has it, and every eos id."""
    ids: set[int] = set()
    for token in ("<|im_end|>", "<|eot_id|>", "<|end|>"):
        tid = tokenizer.convert_tokens_to_ids(token)
        if isinstance(tid, int) and tid != tokenizer.unk_token_id:
            ids.add(tid)
    for eos in (tokenizer.eos_token_id, *more_eos):
        ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if not ids:
        raise ModelError("the tokenizer defines no end-of-turn or eos token")
    return ids


def message_key(message: Message) -> Hashable:
    """What of a message reaches the prompt (ids assigned by the scaffold do not)."""
    calls = tuple((c.id, c.name, repr(sorted(c.arguments.items())), c.parse_error) for c in message.tool_calls)
    return (message.role, message.content, calls, message.tool_call_id, message.is_error, message.prefill)


def tools_key(tools: Sequence[ToolDefinition]) -> Hashable:
    """Identity of a tool list as rendered into the prompt."""
    return tuple(tool.model_dump_json() for tool in tools)


@dataclass(frozen=True)
class _Session:
    keys: tuple[Hashable, ...]  # the messages of the last call, then its reply
    tools: Hashable
    ids: tuple[int, ...]  # its prompt ids + completion ids
    stop_text: str | None  # the decoded end-of-turn token the completion ended with, if any


@dataclass(frozen=True)
class BuiltPrompt:
    """The ids to sample from, and the text they decode to."""

    ids: list[int]
    extended: bool  # built on the previous turn's exact ids


class PromptBuilder:
    """Renders chats with a tokenizer's template and keeps per-rollout token sessions."""

    def __init__(self, tokenizer: Any, *, tool_role: str = "user", max_sessions: int = 4096) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ModelError("the tokenizer has no chat template")
        self.tokenizer, self.tool_role, self.max_sessions = tokenizer, tool_role, max_sessions
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._closing: str | None = None

    # -- rendering ---------------------------------------------------------------------

    def render(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = (), config: GenerateConfig | None = None
    ) -> str:
        """The prompt text for a fresh (not extended) call.

        A trailing assistant message with `prefill` set is not rendered as a turn: the
        prompt ends with the assistant header and the prefill text, left open. With
        `sample_as="user"` the prompt ends with the user header instead (a trailing
        prefill is then dropped).
        """
        config = config or GenerateConfig()
        msgs, prefill = list(messages), None
        if msgs and msgs[-1].role == "assistant" and msgs[-1].prefill is not None:
            prefill = msgs.pop().prefill
        chat = text_tools.render_messages(msgs, tools, tool_role=self.tool_role)
        if config.sample_as == "user":
            return self._user_turn_prompt(chat)
        return self._template(chat, generation_prompt=True) + (prefill or "")

    def render_closed(self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> str:
        """The chat as the template writes it with every turn closed (no generation prompt)."""
        chat = text_tools.render_messages(list(messages), tools, tool_role=self.tool_role)
        return self._template(chat, generation_prompt=False)

    def _template(self, chat: list[dict[str, str]], *, generation_prompt: bool) -> str:
        return str(self.tokenizer.apply_chat_template(chat, add_generation_prompt=generation_prompt, tokenize=False))

    def _user_turn_prompt(self, chat: list[dict[str, str]]) -> str:
        # The template's own user header: render a dummy user turn and cut at its content.
        text = self._template(chat + [{"role": "user", "content": _SENTINEL}], generation_prompt=False)
        cut = text.find(_SENTINEL)
        if cut < 0:
            raise ModelError("cannot find the user header in the chat template")
        return text[:cut]

    def assistant_closing(self) -> str:
        """What the template writes after an assistant message's content (ChatML: `<|im_end|>\\n`)."""
        if self._closing is None:
            chat = [{"role": "user", "content": "x"}, {"role": "assistant", "content": _SENTINEL}]
            text = self._template(chat, generation_prompt=False)
            self._closing = text[text.rindex(_SENTINEL) + len(_SENTINEL) :]
        return self._closing

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; special tokens written in it become their ids."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # -- sessions ----------------------------------------------------------------------

    def build(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        config: GenerateConfig | None = None,
    ) -> BuiltPrompt:
        """The prompt ids for this call: an exact extension of the rollout's last turn when possible."""
        config = config or GenerateConfig()
        session = self._sessions.get(config.rollout_id) if config.rollout_id else None
        if session is None and config.continues:  # a branch's first turn: the shared start's ids
            session = self._sessions.get(config.continues)
        if session is None and config.last_turn_ids:  # a resumed rollout: its transcript's ids
            session = self._session_from_transcript(messages, tools, config.last_turn_ids)
        if session is not None and config.sample_as == "assistant":
            suffix = self._environment_text(session, messages, tools)
            if suffix is not None:
                return BuiltPrompt(list(session.ids) + self.encode(suffix), extended=True)
        return BuiltPrompt(self.encode(self.render(messages, tools, config)), extended=False)

    def _session_from_transcript(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], ids: Sequence[int]
    ) -> _Session | None:
        """The session `remember` would have kept for the turn that ended with the last assistant
        message: its messages, and the exact ids the transcript recorded for it."""
        last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
        if last is None or not ids:
            return None
        keys = tuple(message_key(m) for m in messages[: last + 1])
        # Only an end-of-turn token (a special one) may stand for the start of the closing.
        ended = ids[-1] in set(self.tokenizer.all_special_ids)
        stop_text = self.tokenizer.decode([ids[-1]]) if ended else None
        return _Session(keys, tools_key(tools), tuple(ids), stop_text)

    def _environment_text(
        self,
        session: _Session,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
    ) -> str | None:
        n = len(session.keys)
        if len(messages) <= n or session.tools != tools_key(tools):
            return None
        if tuple(message_key(m) for m in messages[:n]) != session.keys:
            return None
        if messages[-1].role == "assistant" and messages[-1].prefill is not None:
            return None  # the policy's own turns are never prefilled; don't guess
        before = self._template(text_tools.render_messages(messages[:n], tools, tool_role=self.tool_role), generation_prompt=False)
        after = self.render(messages, tools)
        closing = self.assistant_closing()
        if not (after.startswith(before) and before.endswith(closing)):
            return None  # a template that rewrites earlier turns (e.g. strips old reasoning)
        if session.stop_text and closing.startswith(session.stop_text):
            closing = closing[len(session.stop_text) :]  # the policy already wrote it
        # Cut by max_tokens, or stopped on another eos (`<|endoftext|>`): the whole closing follows.
        return closing + after[len(before) :]

    def remember(
        self,
        rollout_id: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        reply: Message,
        ids: Sequence[int],
        *,
        stopped: bool,
    ) -> None:
        """Record a sampled turn (its prompt + completion `ids`) as the rollout's latest."""
        if not rollout_id:
            return
        keys = tuple(message_key(m) for m in messages) + (message_key(reply),)
        stop_text = self.tokenizer.decode([ids[-1]]) if stopped and ids else None
        self._sessions[rollout_id] = _Session(keys, tools_key(tools), tuple(ids), stop_text)
        self._sessions.move_to_end(rollout_id)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

    def forget(self, rollout_id: str) -> None:
        """Drop a finished rollout's session."""
        self._sessions.pop(rollout_id, None)


def token_response(
    builder: PromptBuilder,
    *,
    name: str,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    config: GenerateConfig,
    prompt_ids: list[int],
    completion_ids: list[int],
    logprobs: list[float] | None,
    mask: list[int] | None,
    stopped: bool,
    policy_version: str | None,
    latency_s: float,
) -> ModelResponse:
    """The ModelResponse of a sampled turn: decoded text, parsed tool calls, exact TokenRecord.

    Also records the turn as its rollout's latest, so the next prompt extends it.
    """
    text_ids = completion_ids[:-1] if stopped else completion_ids
    text = builder.tokenizer.decode(text_ids, skip_special_tokens=True)
    role = "user" if config.sample_as == "user" else "assistant"
    calls: list[ToolCall] = []
    if tools and role == "assistant":
        raw = text
        text, calls = text_tools.parse_tool_calls(text, offset=text_tools.count_tool_calls(messages))
        if calls and not stopped and raw.rfind(text_tools.TOOL_CALL_OPEN) > raw.rfind(text_tools.TOOL_CALL_CLOSE):
            # Cut off inside its last call: the lenient parser would close it, but the
            # policy never finished those arguments, so the environment must not run them.
            calls[-1] = calls[-1].model_copy(
                update={"parse_error": "the reply was cut off by max_tokens inside this call; it was not run"}
            )
    message = Message(role=role, content=text, tool_calls=calls)
    if role == "assistant":
        builder.remember(config.rollout_id, messages, tools, message, prompt_ids + completion_ids, stopped=stopped)
    return ModelResponse(
        message=message,
        usage=Usage(input_tokens=len(prompt_ids), output_tokens=len(completion_ids)),
        latency_s=latency_s,
        model=name,
        stop_reason="max_tokens" if not stopped and (not calls or calls[-1].parse_error) else (
            "tool_use" if calls else "end_turn"
        ),
        tokens=TokenRecord(
            prompt_ids=prompt_ids,
            completion_ids=completion_ids,
            completion_logprobs=logprobs,
            completion_mask=mask,
            policy_version=policy_version,
            rollout_id=config.rollout_id,
        ),
    )
