"""Constrained decoding with several calls per reply (`+calls:N`): every reply is 1..N
well-formed calls, and the policy itself chooses how many (the tiny random Llama)."""

from __future__ import annotations

import asyncio

from hf_fixtures import tiny_chat

from scaffold.messages import GenerateConfig, Message
from scaffold.specs import parse_model_string
from scaffold.tools import AUDITOR_TOOLS

TOOLS = [tool.definition for tool in AUDITOR_TOOLS.values()]


def test_replies_hold_one_to_n_well_formed_calls() -> None:
    chat = tiny_chat(max_tokens=400, constrained=True, max_calls_per_turn=3)
    messages = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]
    counts = []
    for seed in range(12):
        reply = asyncio.run(chat.generate(messages, TOOLS, GenerateConfig(temperature=1.0, seed=seed))).message
        assert 1 <= len(reply.tool_calls) <= 3
        assert not any(call.parse_error for call in reply.tool_calls), reply.tool_calls
        assert {call.name for call in reply.tool_calls} <= {t.name for t in TOOLS}
        counts.append(len(reply.tool_calls))
    assert len(set(counts)) > 1, counts  # the model chose, not the grammar


def test_one_call_is_still_the_default() -> None:
    chat = tiny_chat(max_tokens=200, constrained=True)
    messages = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]
    for seed in range(4):
        reply = asyncio.run(chat.generate(messages, TOOLS, GenerateConfig(temperature=1.0, seed=seed))).message
        assert len(reply.tool_calls) == 1 and not reply.tool_calls[0].parse_error


def test_a_required_tool_narrows_the_grammar_but_not_the_prompt() -> None:
    chat = tiny_chat(max_tokens=400, constrained=True, max_calls_per_turn=3)
    messages = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]
    free = GenerateConfig(temperature=1.0, seed=0)
    forced = free.model_copy(update={"required_tool": "submit_report"})
    names = set()
    for seed in range(6):
        config = forced.model_copy(update={"seed": seed})
        response = asyncio.run(chat.generate(messages, TOOLS, config))
        calls = response.message.tool_calls
        assert [c.name for c in calls] == ["submit_report"] and not calls[0].parse_error, calls
        assert isinstance(calls[0].arguments["hypotheses"], list)
        assert response.tokens.prompt_ids == chat.prompts.build(messages, TOOLS, free).ids
        names |= {c.name for c in asyncio.run(chat.generate(messages, TOOLS, free.model_copy(update={"seed": seed}))).message.tool_calls}
    assert names != {"submit_report"}  # without the requirement the policy picks among all tools


def test_the_calls_modifier() -> None:
    spec = parse_model_string("hf:smollm2-135m+constrained+calls:3")
    assert spec.extra == {"constrained": True, "max_calls_per_turn": 3}
