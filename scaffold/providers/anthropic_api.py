"""The Anthropic Messages API as a ChatModel.

Translation rules (ours -> the Messages API):
- system messages go to `system=`, never into `messages`;
- assistant tool calls become `tool_use` blocks; role "tool" messages become
  `tool_result` blocks in a user turn (the API has no tool role);
- consecutive turns of one role are merged, since the API wants alternation;
- a trailing assistant message with `prefill` is sent as the final assistant turn,
  and only the model's continuation comes back (the scaffold prepends the prefill);
- `Message.metadata` and ids never leave the process;
- no sampling temperature is sent: the API version that anthropic 2.x speaks
  (anthropic-version 2026-10-21) rejects `temperature`, `top_p` and `top_k` with a
  400 even at their defaults, and the SDK no longer accepts them.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Sequence

import anthropic

from scaffold.messages import GenerateConfig, Message, ModelResponse, ToolCall, ToolDefinition, Usage
from scaffold.providers.limits import CallFailure, ProviderRuntime, ProviderUsage, sdk_call, sdk_timeout_s
from scaffold.providers.roleswap import role_swapped
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec

log = logging.getLogger(__name__)


def build(spec: ModelSpec, secrets: SecretRegistry) -> AnthropicModel:
    """An AnthropicModel for `spec`. Raises SpecError (naming the variable) when the key is missing."""
    api_key = secrets.api_key(spec)  # before any request: a missing key is a spec problem
    if spec.temperature is not None:
        log.warning("%s: temperature is ignored; the Anthropic API no longer accepts it", spec.label())
    client = anthropic.AsyncAnthropic(
        api_key=api_key, base_url=spec.base_url, max_retries=0, timeout=sdk_timeout_s(spec)
    )
    return AnthropicModel(spec, client, ProviderRuntime(spec, redact=secrets.redact))


class AnthropicModel:
    """A ChatModel over `client.messages.create`, with our retries and concurrency limit."""

    supports_prefill = True

    def __init__(self, spec: ModelSpec, client: anthropic.AsyncAnthropic, runtime: ProviderRuntime) -> None:
        self.spec = spec
        self.name = spec.label()
        self.client = client
        self.runtime = runtime

    @property
    def usage(self) -> ProviderUsage:
        """Token and request totals of every call made through this model."""
        return self.runtime.usage

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition] = (),
        config: GenerateConfig | None = None,
    ) -> ModelResponse:
        """One reply (or, with `sample_as="user"`, the user's next turn) from the API.

        `latency_s` is the wall time of the whole call, retries and queueing included.
        Raises ModelError when the call fails for good.
        """
        config = config or GenerateConfig()
        request, prefill = self._request(messages, tools, config)
        started = time.monotonic()

        async def attempt() -> ModelResponse:
            raw = await sdk_call(lambda: self.client.messages.create(**request), anthropic)
            return parse_response(raw, self.spec.model)

        outcome = await self.runtime.call(attempt)
        response = outcome.value.model_copy(
            update={"usage": self.runtime.settle(outcome.value.usage, outcome.timed_out)}
        )
        message = response.message
        if prefill is not None:
            message = message.model_copy(update={"content": continuation(prefill, message.content)})
        return response.model_copy(update={"message": message, "latency_s": time.monotonic() - started})

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self.client.close()

    def _request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], config: GenerateConfig
    ) -> tuple[dict[str, Any], str | None]:
        prefill: str | None = None
        if config.sample_as == "user":
            # The user does not call the target's tools, so none are offered.
            system, turns = role_swapped(messages)
            wire, tools = to_wire_messages(turns), ()
        else:
            system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content.strip())
            if messages and messages[-1].role == "assistant" and messages[-1].prefill:
                prefill = messages[-1].prefill
            wire = to_wire_messages(messages)
        request: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": config.max_tokens or self.spec.max_tokens,
            "messages": wire,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [to_wire_tool(t) for t in tools]
            required = config.required_among(tools)
            if required is not None:
                request["tool_choice"] = {"type": "tool", "name": required.name}
        if self.spec.extra:
            request["extra_body"] = dict(self.spec.extra)
        return request, prefill


def to_wire_tool(tool: ToolDefinition) -> dict[str, Any]:
    """A ToolDefinition in the Messages API's shape."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.json_schema()}


def to_wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages (system ones skipped) as Messages API turns, merged to alternate."""
    turns: list[dict[str, Any]] = []
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        if message.role == "tool":
            role, blocks = "user", [_tool_result_block(message)]
        elif message.role == "assistant" and index == last and message.prefill:
            # The API rejects a final assistant turn that ends in whitespace.
            role, blocks = "assistant", _text_blocks(message.prefill.rstrip())
        elif message.role == "assistant":
            role = "assistant"
            blocks = _text_blocks(message.content) + [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls
            ]
        else:
            role, blocks = "user", _text_blocks(message.content)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            # tool_result blocks must open a user turn; sorted() is stable, so order is otherwise kept.
            turn["content"] = sorted(turn["content"], key=lambda b: b["type"] != "tool_result")
    return turns


def _text_blocks(text: str) -> list[dict[str, Any]]:
    # The API rejects empty text blocks.
    return [{"type": "text", "text": text}] if text.strip() else []


def _tool_result_block(message: Message) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id or "",
        "content": message.content,
        "is_error": message.is_error,
    }


def continuation(prefill: str, text: str) -> str:
    """The model's continuation, adjusted for the whitespace we had to strip from the prefill."""
    if prefill != prefill.rstrip() and text[:1].isspace():
        return text.lstrip()
    return text


def parse_response(raw: Any, default_model: str) -> ModelResponse:
    """A Messages API response as a ModelResponse. Raises a retryable CallFailure if malformed."""
    content = getattr(raw, "content", None)
    if not isinstance(content, list):
        raise CallFailure("malformed response", retryable=True, detail="no content blocks in the reply")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            text = getattr(block, "text", None)
            if not isinstance(text, str):
                raise CallFailure("malformed response", retryable=True, detail="a text block has no text")
            texts.append(text)
        elif kind == "tool_use":
            calls.append(_tool_call(block))
        # Other block types (thinking, server tools) carry nothing the scaffold uses.
    usage = getattr(raw, "usage", None)
    tokens_in = sum(
        getattr(usage, field, None) or 0
        for field in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return ModelResponse(
        message=Message(role="assistant", content="".join(texts), tool_calls=calls),
        usage=Usage(input_tokens=tokens_in, output_tokens=getattr(usage, "output_tokens", None) or 0),
        model=getattr(raw, "model", None) or default_model,
        stop_reason=getattr(raw, "stop_reason", None),
    )


def _tool_call(block: Any) -> ToolCall:
    call_id, name = getattr(block, "id", None), getattr(block, "name", None)
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise CallFailure("malformed response", retryable=True, detail="a tool_use block lacks its id or name")
    arguments = getattr(block, "input", None)
    if not isinstance(arguments, dict):
        return ToolCall(id=call_id, name=name, parse_error=f"the arguments are not an object: {arguments!r}"[:200])
    return ToolCall(id=call_id, name=name, arguments=arguments)
