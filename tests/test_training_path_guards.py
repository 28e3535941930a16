"""Guards of the training path that a mutation of the code must trip (issue 16, part 5).

- The loss mask is checked against the grammar itself, replayed over the sampled ids:
  0 exactly where the grammar allowed a single token, 1 everywhere else. (A mask built
  from the same `completion_mask` it tests, as before, cannot catch an inverted mask.)
- Constrained output is run through each tool's own argument check (what the scaffold
  runs before any tool), not only through a JSON parse.
- A constrained audit with one turn ends with a valid report.
"""

from __future__ import annotations

import asyncio

from hf_fixtures import tiny_chat

from scaffold.messages import GenerateConfig, Message
from scaffold.providers.scripted import ScriptedModel
from scaffold.run import run_audit
from scaffold.state import AuditBudget
from scaffold.tools import AUDITOR_TOOLS
from tests.conftest import echo_target

TOOLS = [tool.definition for tool in AUDITOR_TOOLS.values()]
MESSAGES = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]


def _grammar_mask(chat, tools, completion_ids: list[int], max_tokens: int) -> list[int]:  # type: ignore[no-untyped-def]
    """What the mask must be: replay the grammar over the sampled ids and ask it at each step."""
    state = chat.grammar_for(tools).start(max_tokens)
    expected = []
    for token in completion_ids:
        allowed = state.allowed()
        expected.append(0 if allowed is not None and len(allowed) == 1 else 1)
        state.advance(token)
    return expected


def test_the_mask_is_zero_exactly_where_the_grammar_allowed_one_token() -> None:
    chat = tiny_chat(max_tokens=300, constrained=True, max_calls_per_turn=2)
    forced = free = 0
    for seed in range(2):
        response = asyncio.run(chat.generate(MESSAGES, TOOLS, GenerateConfig(temperature=1.0, seed=seed)))
        record = response.tokens
        assert record is not None and record.completion_mask is not None
        expected = _grammar_mask(chat, TOOLS, record.completion_ids, 300)
        assert record.completion_mask == expected, seed
        forced += expected.count(0)
        free += expected.count(1)
    assert forced and free  # both kinds occur, so an inverted or constant mask fails


def test_constrained_calls_pass_each_tools_own_argument_check() -> None:
    """Every sampled call fits its tool's argument check (what the scaffold runs before the tool)."""
    chat = tiny_chat(max_tokens=400, constrained=True, max_calls_per_turn=2)
    seen = set()
    for seed in range(6):
        reply = asyncio.run(chat.generate(MESSAGES, TOOLS, GenerateConfig(temperature=1.0, seed=seed))).message
        for call in reply.tool_calls:
            assert not call.parse_error, call
            problem = AUDITOR_TOOLS[call.name].check_arguments(call.arguments)
            assert problem is None, (call.name, call.arguments, problem)
            seen.add(call.name)
    required = GenerateConfig(temperature=1.0, seed=0, required_tool="submit_report")
    for seed in range(2):
        reply = asyncio.run(chat.generate(MESSAGES, TOOLS, required.model_copy(update={"seed": seed}))).message
        (call,) = reply.tool_calls
        assert AUDITOR_TOOLS["submit_report"].check_arguments(call.arguments) is None, call.arguments
        for hypothesis in call.arguments["hypotheses"]:  # the array's item schema was followed
            assert isinstance(hypothesis, dict) and isinstance(hypothesis.get("description"), str), hypothesis
    assert len(seen) > 1


def test_a_one_turn_constrained_audit_ends_with_a_valid_report() -> None:
    chat = tiny_chat(max_tokens=400, constrained=True)
    for seed in range(2):
        result = asyncio.run(
            run_audit(
                chat,
                ScriptedModel(echo_target),
                "Find the quirk.",
                auditor_prompt="You are an auditor.",
                budget=AuditBudget(max_turns=1),
                auditor_config=GenerateConfig(temperature=1.0, seed=seed),
            )
        )
        transcript = result.transcript
        assert result.status == "completed", (result.status, result.error)
        assert transcript.report is not None, [e.kind for e in transcript.events]
        assert all(h.description for h in transcript.report.hypotheses)


def test_a_constrained_report_may_claim_nothing() -> None:
    """`"hypotheses": []` is writable: a walk that takes `]` right after the array opens
    gives a report with no hypothesis, which the tool accepts. (Before, every array held one
    item at least, so a constrained policy named something on every clean target.)"""
    import json

    chat = tiny_chat(max_tokens=200, constrained=True)
    grammar = chat.grammar_for([AUDITOR_TOOLS["submit_report"].definition])
    close, quote = grammar.encode("]"), grammar.encode('"')
    state, written, opened = grammar.start(200), [], False
    while not state.done:
        allowed = state.allowed()
        text = chat.tokenizer.decode(written)
        if allowed is None:  # a free string: end it at once
            token = quote[0]
        elif text.endswith('"hypotheses": [') and close[0] in allowed:
            token, opened = close[0], True
        else:
            token = allowed[0]
        written.append(token)
        state.advance(token)
    assert opened, chat.tokenizer.decode(written)
    call = json.loads(chat.tokenizer.decode(written).split("<tool_call>")[-1].split("</tool_call>")[0])
    assert call["arguments"]["hypotheses"] == []
    assert AUDITOR_TOOLS["submit_report"].check_arguments(call["arguments"]) is None
