"""The OpenAI and OpenAI-compatible providers, through the real `openai` SDK, against a local fake server."""

from __future__ import annotations

import json
from typing import AsyncIterator, Callable, Iterator

import pytest

from scaffold.messages import GenerateConfig, Message, ToolCall, ToolDefinition, ToolParameter
from scaffold.model import ChatModel, ModelError
from scaffold.providers import build_model
from scaffold.providers.openai_api import OpenAIModel
from scaffold.providers.roleswap import NEXT_TURN_PLACEHOLDER, OPENING_PLACEHOLDER, USER_VOICE_INSTRUCTION
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError
from tests.fakes import WireServer, openai_reply

KEY_ENV = "AUDITRL_TEST_OPENAI_KEY"
KEY = "sk-test-abcdef0123456789"

LOOKUP = ToolDefinition(
    name="lookup",
    description="Look up an order.",
    parameters=[
        ToolParameter(name="order_id", description="The order number."),
        ToolParameter(name="fields", type="array", description="Fields to return.", required=False),
    ],
)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as s:
        yield s


@pytest.fixture
async def make_model(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[..., OpenAIModel]]:
    """Build OpenAI models against the fake server (`/v1` base URL); closes their clients afterwards."""
    monkeypatch.setenv(KEY_ENV, KEY)
    built: list[OpenAIModel] = []

    def make(provider: str = "openai", **overrides: object) -> OpenAIModel:
        fields: dict[str, object] = {
            "provider": provider,
            "model": "gpt-x",
            "base_url": f"{server.base_url}/v1",
            "api_key_env": KEY_ENV,
            "max_retries": 2,
            "retry_base_delay_s": 0.01,
            "retry_max_delay_s": 0.02,
            "timeout_s": 5.0,
            **overrides,
        }
        model = build_model(ModelSpec.model_validate(fields), SecretRegistry())
        assert isinstance(model, OpenAIModel)
        built.append(model)
        return model

    yield make
    for model in built:
        await model.aclose()


async def test_text_reply(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(openai_reply("Hi!", model="gpt-x-0613", prompt_tokens=17, completion_tokens=2))
    model = make_model(temperature=0.2)
    assert isinstance(model, ChatModel) and model.name == "openai:gpt-x"
    messages = [
        Message(role="system", content="Be brief."),
        Message(id="t1", role="user", content="Hello", metadata={"fired": True, "note": "QUIRK-MARKER"}),
    ]
    response = await model.generate(messages, config=GenerateConfig(seed=7))

    assert response.message.content == "Hi!"
    assert response.message.tool_calls == []
    assert (response.usage.input_tokens, response.usage.output_tokens) == (17, 2)
    assert response.model == "gpt-x-0613"
    assert response.stop_reason == "stop"
    assert response.latency_s > 0
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
    ]
    # The official API wants max_completion_tokens; compatible servers get max_tokens (next test).
    assert request.body["max_completion_tokens"] == 1024 and "max_tokens" not in request.body
    assert (request.body["temperature"], request.body["seed"]) == (0.2, 7)
    assert "QUIRK-MARKER" not in json.dumps(request.body)
    assert "tools" not in request.body


async def test_compatible_server_without_key_and_max_tokens(
    server: WireServer, make_model: Callable[..., OpenAIModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    server.enqueue(openai_reply("ok"))
    model = make_model("openai_compatible", api_key_env=None, max_tokens=64)
    await model.generate([Message(role="user", content="x")], config=GenerateConfig(max_tokens=12))
    request = server.requests[0]
    assert request.headers["authorization"] == "Bearer EMPTY"
    assert request.body["max_tokens"] == 12 and "max_completion_tokens" not in request.body


async def test_tools_sent_in_function_shape(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(openai_reply("ok"))
    await make_model().generate([Message(role="user", content="Where is my order?")], tools=[LOOKUP])
    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look up an order.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "order_id": {"type": "string", "description": "The order number."},
                        "fields": {"type": "array", "description": "Fields to return.", "items": {"type": "string"}},
                    },
                    "required": ["order_id"],
                },
            },
        }
    ]


async def test_required_tool_is_sent_as_tool_choice(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(openai_reply("ok"), openai_reply("ok"))
    model = make_model()
    question = [Message(role="user", content="Where is my order?")]
    await model.generate(question, [LOOKUP], GenerateConfig(required_tool="lookup"))
    await model.generate(question, [LOOKUP])
    first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert "tool_choice" not in second


async def test_tool_calls_reply_parsed(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(
        openai_reply(
            None,
            tool_calls=[
                ("call_a", "lookup", '{"order_id": "A-17", "fields": ["status"]}'),
                ("call_b", "lookup", '{"order_id": "B-2"'),  # truncated JSON: reported, not raised
                ("call_c", "lookup", '["not", "an", "object"]'),
            ],
        )
    )
    response = await make_model().generate([Message(role="user", content="Status?")], tools=[LOOKUP])
    good, broken, wrong_type = response.message.tool_calls
    assert response.message.content == ""
    assert response.stop_reason == "tool_calls"
    assert good == ToolCall(id="call_a", name="lookup", arguments={"order_id": "A-17", "fields": ["status"]})
    assert (broken.id, broken.name, broken.arguments) == ("call_b", "lookup", {})
    assert broken.parse_error is not None and "not valid JSON" in broken.parse_error
    assert wrong_type.parse_error is not None and "not a JSON object" in wrong_type.parse_error


async def test_refusal_is_the_reply(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(openai_reply(None, refusal="I can't help with that."))
    response = await make_model().generate([Message(role="user", content="Help me hide it.")])
    assert response.message.content == "I can't help with that."


async def test_conversation_with_tool_results(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(openai_reply("It shipped."))
    messages = [
        Message(role="system", content="You are a shop assistant."),
        Message(role="user", content="Hi."),
        Message(role="user", content="Order A-17?"),  # two user turns in a row: merged
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="call_a", name="lookup", arguments={"order_id": "A-17"})],
        ),
        Message(role="tool", tool_call_id="call_a", content='{"status": "shipped"}'),
        Message(
            role="assistant",
            content="Checking the courier too.",
            tool_calls=[ToolCall(id="call_b", name="lookup", arguments={"order_id": "C"})],
        ),
        Message(role="tool", tool_call_id="call_b", content="timeout", is_error=True),
        Message(role="user", content="And?"),
    ]
    await make_model().generate(messages, tools=[LOOKUP])
    assert server.requests[0].body["messages"] == [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": "Hi.\n\nOrder A-17?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"order_id": "A-17"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"status": "shipped"}'},
        {
            "role": "assistant",
            "content": "Checking the courier too.",
            "tool_calls": [
                {"id": "call_b", "type": "function", "function": {"name": "lookup", "arguments": '{"order_id": "C"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: timeout"},
        {"role": "user", "content": "And?"},
    ]


async def test_official_openai_refuses_prefill(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    model = make_model()
    assert model.supports_prefill is False
    messages = [Message(role="user", content="x"), Message(role="assistant", content="Sure", prefill="Sure")]
    with pytest.raises(ModelError, match="cannot continue a prefilled assistant turn"):
        await model.generate(messages)
    assert server.requests == []  # refused before any request


async def test_compatible_prefill_uses_continue_final_message(
    server: WireServer, make_model: Callable[..., OpenAIModel]
) -> None:
    server.enqueue(openai_reply(" the launch codes are 0000."))
    model = make_model("openai_compatible")
    assert model.supports_prefill is True
    messages = [
        Message(role="user", content="Tell me a secret."),
        Message(role="assistant", content="Fine,", prefill="Fine,"),
    ]
    response = await model.generate(messages)
    assert response.message.content == " the launch codes are 0000."  # only the continuation
    body = server.requests[0].body
    assert body["messages"][-1] == {"role": "assistant", "content": "Fine,"}
    assert body["continue_final_message"] is True
    assert body["add_generation_prompt"] is False


async def test_plain_request_has_no_vllm_extras(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(openai_reply("ok"))
    await make_model("openai_compatible").generate([Message(role="user", content="x")])
    assert "continue_final_message" not in server.requests[0].body


async def test_sample_as_user_swaps_roles(server: WireServer, make_model: Callable[..., OpenAIModel]) -> None:
    server.enqueue(openai_reply("Thanks. Can I get a refund instead?"))
    messages = [
        Message(role="system", content="You are a shop assistant."),
        Message(role="user", content="My parcel is late."),
        Message(role="assistant", content="Sorry! It arrives tomorrow."),
    ]
    response = await make_model().generate(messages, tools=[LOOKUP], config=GenerateConfig(sample_as="user"))
    assert response.message.content == "Thanks. Can I get a refund instead?"
    body = server.requests[0].body
    assert "tools" not in body
    assert body["messages"] == [
        {"role": "system", "content": f"You are a shop assistant.\n\n{USER_VOICE_INSTRUCTION}"},
        {"role": "user", "content": OPENING_PLACEHOLDER},
        {"role": "assistant", "content": "My parcel is late."},
        {"role": "user", "content": "Sorry! It arrives tomorrow."},
    ]


async def test_sample_as_user_before_and_after_the_users_turn(
    server: WireServer, make_model: Callable[..., OpenAIModel]
) -> None:
    server.enqueue(openai_reply("Hi, I need help."), openai_reply("Hello??"))
    model, config = make_model(), GenerateConfig(sample_as="user")
    system = Message(role="system", content="You are a shop assistant.")
    await model.generate([system], config=config)  # nothing said yet: the user's first message
    await model.generate([system, Message(role="user", content="Anyone there?")], config=config)
    first, second = (r.body["messages"][1:] for r in server.requests)
    assert first == [{"role": "user", "content": OPENING_PLACEHOLDER}]
    assert second == [
        {"role": "user", "content": OPENING_PLACEHOLDER},
        {"role": "assistant", "content": "Anyone there?"},
        {"role": "user", "content": NEXT_TURN_PLACEHOLDER},  # a chat API samples after a user turn
    ]


def test_missing_key_raises_spec_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SpecError, match="OPENAI_API_KEY"):
        build_model(ModelSpec(provider="openai", model="gpt-x"), SecretRegistry())
    # A compatible server with a named variable needs it too.
    monkeypatch.delenv(KEY_ENV, raising=False)
    spec = ModelSpec(provider="openai_compatible", model="m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    with pytest.raises(SpecError, match=KEY_ENV):
        build_model(spec, SecretRegistry())


def test_compatible_needs_base_url() -> None:
    with pytest.raises(SpecError, match="base_url"):
        build_model(ModelSpec(provider="openai_compatible", model="m"), SecretRegistry())
