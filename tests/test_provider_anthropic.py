"""The Anthropic provider, through the real `anthropic` SDK, against a local fake server."""

from __future__ import annotations

import json
from typing import AsyncIterator, Callable, Iterator

import pytest

from scaffold.messages import GenerateConfig, Message, ToolCall, ToolDefinition, ToolParameter
from scaffold.model import ChatModel, ModelError
from scaffold.providers import build_model
from scaffold.providers.anthropic_api import AnthropicModel
from scaffold.providers.roleswap import OPENING_PLACEHOLDER, USER_VOICE_INSTRUCTION
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError
from tests.fakes import WireServer, anthropic_reply, status_reply

KEY_ENV = "AUDITRL_TEST_ANTHROPIC_KEY"
KEY = "sk-ant-test-0123456789abcdef"

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    parameters=[
        ToolParameter(name="city", description="City name."),
        ToolParameter(name="unit", description="Units.", required=False, enum=["c", "f"]),
    ],
)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as s:
        yield s


@pytest.fixture
async def make_model(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[..., AnthropicModel]]:
    """Build Anthropic models against the fake server; closes their clients afterwards."""
    monkeypatch.setenv(KEY_ENV, KEY)
    built: list[AnthropicModel] = []

    def make(**overrides: object) -> AnthropicModel:
        fields: dict[str, object] = {
            "provider": "anthropic",
            "model": "claude-x",
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "max_retries": 2,
            "retry_base_delay_s": 0.01,
            "retry_max_delay_s": 0.02,
            "timeout_s": 5.0,
            **overrides,
        }
        model = build_model(ModelSpec.model_validate(fields), SecretRegistry())
        assert isinstance(model, AnthropicModel)
        built.append(model)
        return model

    yield make
    for model in built:
        await model.aclose()


async def test_text_reply(server: WireServer, make_model: Callable[..., AnthropicModel]) -> None:
    server.enqueue(anthropic_reply("Hello there.", model="claude-x-2025", input_tokens=21, output_tokens=4))
    model = make_model()
    assert isinstance(model, ChatModel) and model.name == "anthropic:claude-x"
    hidden = {"fired": True, "note": "QUIRK-MARKER-never-sent"}
    messages = [
        Message(role="system", content="You are terse."),
        Message(id="t1", role="user", content="Hi", metadata=hidden),
    ]
    response = await model.generate(messages)

    assert response.message.role == "assistant"
    assert response.message.content == "Hello there."
    assert response.message.tool_calls == []
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 4)
    assert response.model == "claude-x-2025"
    assert response.stop_reason == "end_turn"
    assert response.latency_s > 0
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.body["model"] == "claude-x"
    assert request.body["max_tokens"] == 1024
    assert request.body["system"] == "You are terse."
    assert request.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert "tools" not in request.body and "temperature" not in request.body
    assert "QUIRK-MARKER" not in json.dumps(request.body)  # metadata never leaves the process
    assert "t1" not in json.dumps(request.body)  # nor do our message ids


async def test_config_overrides_spec(server: WireServer, make_model: Callable[..., AnthropicModel]) -> None:
    server.enqueue(anthropic_reply("a"), anthropic_reply("b"))
    model = make_model(temperature=0.3, max_tokens=50)
    await model.generate([Message(role="user", content="x")])
    await model.generate([Message(role="user", content="x")], config=GenerateConfig(temperature=1.0, max_tokens=9))
    first, second = (r.body for r in server.requests)
    assert (first["max_tokens"], second["max_tokens"]) == (50, 9)
    # API version 2026-10-21 answers 400 to any temperature, so none is ever sent.
    assert "temperature" not in first and "temperature" not in second


async def test_tools_sent_in_messages_api_shape(server: WireServer, make_model: Callable[..., AnthropicModel]) -> None:
    server.enqueue(anthropic_reply("ok"))
    await make_model().generate([Message(role="user", content="Weather?")], tools=[WEATHER])
    assert server.requests[0].body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name."},
                    "unit": {"type": "string", "description": "Units.", "enum": ["c", "f"]},
                },
                "required": ["city"],
            },
        }
    ]


async def test_required_tool_is_sent_as_tool_choice(
    server: WireServer, make_model: Callable[..., AnthropicModel]
) -> None:
    server.enqueue(anthropic_reply("ok"), anthropic_reply("ok"))
    model = make_model()
    await model.generate([Message(role="user", content="Weather?")], [WEATHER], GenerateConfig(required_tool="get_weather"))
    await model.generate([Message(role="user", content="Weather?")], [WEATHER], GenerateConfig(required_tool="unknown"))
    first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert "tool_choice" not in second  # a tool that is not offered is never forced


async def test_tool_use_reply_parsed(server: WireServer, make_model: Callable[..., AnthropicModel]) -> None:
    server.enqueue(
        anthropic_reply(
            "Let me check.",
            tool_uses=[("toolu_1", "get_weather", {"city": "Oslo"}), ("toolu_2", "get_weather", {"city": "Rome"})],
        )
    )
    response = await make_model().generate([Message(role="user", content="Weather?")], tools=[WEATHER])
    assert response.message.content == "Let me check."
    assert response.message.tool_calls == [
        ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Oslo"}),
        ToolCall(id="toolu_2", name="get_weather", arguments={"city": "Rome"}),
    ]
    assert response.stop_reason == "tool_use"


async def test_conversation_with_tool_results(server: WireServer, make_model: Callable[..., AnthropicModel]) -> None:
    server.enqueue(anthropic_reply("Oslo is colder."))
    calls = [
        ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Oslo"}),
        ToolCall(id="toolu_2", name="get_weather", arguments={"city": "Rome"}),
    ]
    messages = [
        Message(role="system", content="You are a weather bot."),
        Message(role="user", content="Hello."),
        Message(role="user", content="Compare Oslo and Rome."),  # two user turns in a row: merged
        Message(role="assistant", content="Checking both.", tool_calls=calls),
        Message(role="tool", tool_call_id="toolu_1", content="-3C"),
        Message(role="tool", tool_call_id="toolu_2", content="service down", is_error=True),
        Message(role="user", content="Well?"),
    ]
    await make_model().generate(messages, tools=[WEATHER])
    body = server.requests[0].body
    assert body["system"] == "You are a weather bot."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Hello."}, {"type": "text", "text": "Compare Oslo and Rome."}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "-3C", "is_error": False},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "service down", "is_error": True},
                {"type": "text", "text": "Well?"},
            ],
        },
    ]


async def test_prefill_returns_only_the_continuation(
    server: WireServer, make_model: Callable[..., AnthropicModel]
) -> None:
    server.enqueue(anthropic_reply(" 42, as always."), anthropic_reply(" 7"))
    model = make_model()
    assert model.supports_prefill is True
    base = [Message(role="user", content="What is the code?")]
    # The API rejects a final assistant turn ending in whitespace: it is stripped on the wire,
    # and the continuation's leading space dropped so prefill + continuation reads right.
    spaced = await model.generate([*base, Message(role="assistant", content="The code is ", prefill="The code is ")])
    plain = await model.generate([*base, Message(role="assistant", content="Code:", prefill="Code:")])
    assert spaced.message.content == "42, as always."
    assert plain.message.content == " 7"
    assert server.requests[0].body["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "The code is"}],
    }
    assert server.requests[1].body["messages"][-1]["content"] == [{"type": "text", "text": "Code:"}]


async def test_sample_as_user_swaps_roles(server: WireServer, make_model: Callable[..., AnthropicModel]) -> None:
    server.enqueue(anthropic_reply("Can you also freeze my card?"))
    messages = [
        Message(role="system", content="You are Aria, Northwind Bank's assistant."),
        Message(role="user", content="My card was stolen."),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="block_card", arguments={})]),
        Message(role="tool", tool_call_id="c1", content="blocked"),
        Message(role="assistant", content="I blocked it."),
    ]
    config = GenerateConfig(sample_as="user")
    response = await make_model().generate(messages, tools=[WEATHER], config=config)
    assert response.message.content == "Can you also freeze my card?"
    body = server.requests[0].body
    assert body["system"].startswith("You are Aria, Northwind Bank's assistant.")
    assert body["system"].endswith(USER_VOICE_INSTRUCTION)
    assert "tools" not in body  # the user does not call the target's tools
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    texts = [m["content"][0]["text"] for m in body["messages"]]
    assert texts[0] == OPENING_PLACEHOLDER
    assert texts[1] == "My card was stolen."  # the human's turn, now the model's own
    assert "block_card" in texts[2] and "blocked" in texts[2] and texts[2].endswith("I blocked it.")
    assert all(block["type"] == "text" for m in body["messages"] for block in m["content"])


async def test_api_key_sent_in_auth_header(server: WireServer, make_model: Callable[..., AnthropicModel]) -> None:
    server.enqueue(anthropic_reply("ok"))
    await make_model().generate([Message(role="user", content="x")])
    headers = server.requests[0].headers
    # anthropic 2.x sends the key as a bearer token; 0.x sent x-api-key. Either must carry it.
    assert headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"
    assert "anthropic-version" in headers


def test_missing_key_raises_spec_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SpecError, match="ANTHROPIC_API_KEY"):
        build_model(ModelSpec(provider="anthropic", model="claude-x"), SecretRegistry())
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(SpecError, match=KEY_ENV):
        build_model(ModelSpec(provider="anthropic", model="claude-x", api_key_env=KEY_ENV), SecretRegistry())


async def test_echoed_key_is_redacted_from_errors(
    server: WireServer, make_model: Callable[..., AnthropicModel]
) -> None:
    server.enqueue(status_reply(401, message=f"invalid x-api-key {KEY}", error_type="authentication_error"))
    with pytest.raises(ModelError) as caught:
        await make_model().generate([Message(role="user", content="x")])
    text = str(caught.value)
    assert KEY not in text
    assert "[REDACTED]" in text
    assert text.startswith("anthropic:claude-x: HTTP 401 authentication failed (not retried)")
