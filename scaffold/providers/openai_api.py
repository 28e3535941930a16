"""OpenAI Chat Completions as a ChatModel: the official API and any compatible server (vLLM).

Translation rules (ours -> Chat Completions):
- assistant tool calls become `tool_calls` with JSON-string arguments; role "tool"
  messages become `{"role": "tool", "tool_call_id", "content"}` (an error result is
  marked in its text, the API has no flag for it);
- consecutive user (or assistant) turns are merged: many open-model chat templates
  served by vLLM raise on two user turns in a row;
- prefill exists only on compatible servers, through vLLM's `continue_final_message`;
  the official API cannot continue an assistant turn, so `supports_prefill` is False;
- tool call arguments that are not valid JSON come back as a ToolCall with
  `parse_error` set, never as an exception: the auditor is told, the audit goes on.
"""

from __future__ import annotations

import json
import time
from typing import Any, Sequence

import openai

from scaffold.messages import GenerateConfig, Message, ModelResponse, ToolCall, ToolDefinition, Usage
from scaffold.model import ModelError
from scaffold.providers.limits import CallFailure, ProviderRuntime, ProviderUsage, sdk_call, sdk_timeout_s
from scaffold.providers.roleswap import role_swapped
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError

# vLLM's chat-completions extensions: continue the final assistant message instead of opening a new one.
VLLM_CONTINUE = {"continue_final_message": True, "add_generation_prompt": False}
NO_KEY = "EMPTY"  # what vLLM and most compatible servers expect when they check no key


def build(spec: ModelSpec, secrets: SecretRegistry) -> OpenAIModel:
    """An OpenAIModel for `spec` (provider `openai` or `openai_compatible`).

    Raises SpecError when the key is missing (naming its variable) or when an
    `openai_compatible` spec has no base_url.
    """
    compatible = spec.provider == "openai_compatible"
    if compatible and not spec.base_url:
        raise SpecError(
            f"{spec.label()}: field 'base_url' is required for openai_compatible, e.g. http://127.0.0.1:8000/v1"
        )
    api_key = secrets.api_key(spec) or NO_KEY  # api_key() raises for openai when the key is missing
    client = openai.AsyncOpenAI(api_key=api_key, base_url=spec.base_url, max_retries=0, timeout=sdk_timeout_s(spec))
    return OpenAIModel(spec, client, ProviderRuntime(spec, redact=secrets.redact), compatible=compatible)


class OpenAIModel:
    """A ChatModel over `client.chat.completions.create`, with our retries and concurrency limit."""

    def __init__(
        self, spec: ModelSpec, client: openai.AsyncOpenAI, runtime: ProviderRuntime, *, compatible: bool
    ) -> None:
        self.spec = spec
        self.name = spec.label()
        self.client = client
        self.runtime = runtime
        self.compatible = compatible
        self.supports_prefill = compatible

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
        """One reply (or, with `sample_as="user"`, the user's next turn) from the server.

        `latency_s` is the wall time of the whole call, retries and queueing included.
        Raises ModelError when the call fails for good, or when asked to prefill a
        model that cannot.
        """
        config = config or GenerateConfig()
        request = self._request(messages, tools, config)
        started = time.monotonic()

        async def attempt() -> ModelResponse:
            raw = await sdk_call(lambda: self.client.chat.completions.create(**request), openai)
            return parse_response(raw, self.spec.model)

        outcome = await self.runtime.call(attempt)
        response = outcome.value.model_copy(
            update={"usage": self.runtime.settle(outcome.value.usage, outcome.timed_out)}
        )
        return response.model_copy(update={"latency_s": time.monotonic() - started})

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self.client.close()

    def _request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], config: GenerateConfig
    ) -> dict[str, Any]:
        extra_body: dict[str, Any] = dict(self.spec.extra)
        if config.sample_as == "user":
            system, turns = role_swapped(messages)
            wire, tools = [{"role": "system", "content": system}, *to_wire_messages(turns)], ()
        else:
            wire = to_wire_messages(messages)
            if messages and messages[-1].role == "assistant" and messages[-1].prefill:
                if not self.supports_prefill:
                    raise ModelError(f"{self.name}: this provider cannot continue a prefilled assistant turn")
                extra_body.update(VLLM_CONTINUE)
        request: dict[str, Any] = {"model": self.spec.model, "messages": wire}
        # The official API rejects max_tokens for its newer models; vLLM knows max_tokens everywhere.
        tokens_field = "max_tokens" if self.compatible else "max_completion_tokens"
        request[tokens_field] = config.max_tokens or self.spec.max_tokens
        temperature = config.temperature if config.temperature is not None else self.spec.temperature
        if temperature is not None:
            request["temperature"] = temperature
        if config.seed is not None:
            request["seed"] = config.seed
        if tools:
            request["tools"] = [to_wire_tool(t) for t in tools]
            required = config.required_among(tools)
            if required is not None:
                request["tool_choice"] = {"type": "function", "function": {"name": required.name}}
        if extra_body:
            request["extra_body"] = extra_body
        return request


def to_wire_tool(tool: ToolDefinition) -> dict[str, Any]:
    """A ToolDefinition in Chat Completions' function-tool shape."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.json_schema()},
    }


def to_wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as Chat Completions messages, consecutive user/assistant turns merged."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            content = message.content
            if message.is_error and not content.lower().startswith("error"):
                content = f"Error: {content}"
            wire.append({"role": "tool", "tool_call_id": message.tool_call_id or "", "content": content})
            continue
        # A finished reply keeps `prefill` as a record; its content is the whole reply. The
        # trailing prefill turn's content is the prefill itself.
        text = message.content
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
            }
            for c in message.tool_calls
        ]
        previous = wire[-1] if wire else None
        if previous and previous["role"] == message.role and message.role in ("user", "assistant"):
            joined = [t for t in (previous.get("content"), text) if t]
            previous["content"] = "\n\n".join(joined) or None
            if calls:
                previous.setdefault("tool_calls", []).extend(calls)
            continue
        entry: dict[str, Any] = {"role": message.role, "content": text or (None if calls else "")}
        if calls:
            entry["tool_calls"] = calls
        wire.append(entry)
    return wire


def parse_response(raw: Any, default_model: str) -> ModelResponse:
    """A chat completion as a ModelResponse. Raises a retryable CallFailure if malformed."""
    choices = getattr(raw, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise CallFailure("malformed response", retryable=True, detail="the reply has no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise CallFailure("malformed response", retryable=True, detail="the first choice has no message")
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise CallFailure("malformed response", retryable=True, detail="the message content is not text")
    if not content and isinstance(getattr(message, "refusal", None), str):
        content = message.refusal  # a refusal is the target's reply, and evidence for the auditor
    calls = [_tool_call(index, call) for index, call in enumerate(getattr(message, "tool_calls", None) or [])]
    usage = getattr(raw, "usage", None)
    return ModelResponse(
        message=Message(role="assistant", content=content or "", tool_calls=calls),
        usage=Usage(
            input_tokens=getattr(usage, "prompt_tokens", None) or 0,
            output_tokens=getattr(usage, "completion_tokens", None) or 0,
        ),
        model=getattr(raw, "model", None) or default_model,
        stop_reason=getattr(choice, "finish_reason", None),
    )


def _tool_call(index: int, call: Any) -> ToolCall:
    # Some compatible servers omit ids; the scaffold needs one to route the result back.
    call_id = getattr(call, "id", None) or f"call_{index}"
    function = getattr(call, "function", None)
    name = getattr(function, "name", None)
    if not isinstance(name, str) or not name:
        kind = getattr(call, "type", "unknown")
        return ToolCall(id=call_id, name="(unnamed)", parse_error=f"unsupported tool call of type {kind!r}")
    text = getattr(function, "arguments", None) or "{}"
    try:
        arguments = json.loads(text)
    except (TypeError, ValueError) as exc:
        return ToolCall(id=call_id, name=name, parse_error=f"the arguments are not valid JSON ({exc}): {text[:200]}")
    if not isinstance(arguments, dict):
        return ToolCall(id=call_id, name=name, parse_error=f"the arguments are not a JSON object: {text[:200]}")
    return ToolCall(id=call_id, name=name, arguments=arguments)
