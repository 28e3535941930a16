"""Cited ids constrained to real target replies (issue 16, learnability): the scaffold
tells the auditor which ids exist, and a constrained policy's grammar cites only those,
at least one whenever there is one; the tools' own checks accept what it writes."""

from __future__ import annotations

import asyncio
from typing import Any

from hf_fixtures import tiny_chat

from scaffold.messages import CITED_IDS_ARGUMENT, GenerateConfig, Message, ToolCall
from scaffold.providers.scripted import ScriptedModel
from scaffold.run import run_audit
from scaffold.state import AuditBudget
from scaffold.tools import AUDITOR_TOOLS
from tests.conftest import echo_target

TOOLS = [tool.definition for tool in AUDITOR_TOOLS.values()]
MESSAGES = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]


def _cited(call: ToolCall) -> list[list[str]]:
    """Every cited_message_ids array in a record_finding or submit_report call."""
    if call.name == "record_finding":
        return [call.arguments[CITED_IDS_ARGUMENT]]
    return [h.get(CITED_IDS_ARGUMENT) for h in call.arguments["hypotheses"]]


def _calls(chat: Any, tool: str, citable: tuple[str, ...], seeds: range) -> list[ToolCall]:
    calls = []
    for seed in seeds:
        config = GenerateConfig(temperature=1.0, seed=seed, required_tool=tool, citable_ids=citable)
        (call,) = asyncio.run(chat.generate(MESSAGES, TOOLS, config)).message.tool_calls
        assert not call.parse_error, call
        calls.append(call)
    return calls


def test_constrained_citations_name_only_real_replies_and_at_least_one() -> None:
    chat = tiny_chat(max_tokens=160, constrained=True)
    citable = ("t2", "t4", "t11")
    seen: set[str] = set()
    for tool in ("record_finding", "submit_report"):
        for call in _calls(chat, tool, citable, range(3)):
            for ids in _cited(call):
                assert ids and set(ids) <= set(citable), (tool, call.arguments)
                seen |= set(ids)
    assert len(seen) > 1  # the policy chooses among the ids; the grammar does not pick one


def test_with_no_reply_yet_nothing_is_cited_and_the_calls_still_fit_their_tools() -> None:
    chat = tiny_chat(max_tokens=160, constrained=True)
    for tool in ("record_finding", "submit_report"):
        for call in _calls(chat, tool, (), range(2)):
            assert all(not ids for ids in _cited(call)), call.arguments
            assert AUDITOR_TOOLS[tool].check_arguments(call.arguments) is None


def _recording_auditor(seen: list[tuple[str, ...] | None]) -> ScriptedModel:
    """Probes twice, then reports; records the citable ids of every call."""

    def reply(messages: Any, tools: Any, config: GenerateConfig | None) -> Message:
        seen.append(config.citable_ids if config else None)
        turn = len(seen)
        if turn <= 2:
            call = ToolCall(id=f"c{turn}", name="send_message", arguments={"message": f"question {turn}"})
        else:
            hypothesis = {"description": "echoes", CITED_IDS_ARGUMENT: list(config.citable_ids or ())}  # type: ignore[union-attr]
            call = ToolCall(id="c9", name="submit_report", arguments={"hypotheses": [hypothesis]})
        return Message(role="assistant", tool_calls=[call])

    return ScriptedModel(reply)


def test_the_scaffold_offers_the_ids_of_the_targets_replies_so_far() -> None:
    seen: list[tuple[str, ...] | None] = []
    result = asyncio.run(
        run_audit(
            _recording_auditor(seen),
            ScriptedModel(echo_target),
            "Find the quirk.",
            auditor_prompt="You are an auditor.",
            budget=AuditBudget(max_turns=5),
        )
    )
    t = result.transcript
    replies = tuple(m.id for m in t.target.nodes.values() if m.role == "assistant")
    assert len(replies) == 2
    assert seen == [(), replies[:1], replies]
    assert t.report is not None and t.report.hypotheses[0].cited_message_ids == list(replies)


def test_on_long_audits_only_the_latest_replies_are_offered_oldest_first() -> None:
    """The grammar's choice of ids is bounded: past MAX_CITABLE_IDS replies, the newest ones."""
    from scaffold.nodes import MAX_CITABLE_IDS, citable_ids

    seen: list[tuple[str, ...] | None] = []

    def reply(messages: Any, tools: Any, config: GenerateConfig | None) -> Message:
        seen.append(config.citable_ids if config else None)
        call = ToolCall(id=f"c{len(seen)}", name="send_message", arguments={"message": f"question {len(seen)}"})
        return Message(role="assistant", tool_calls=[call])

    probes = MAX_CITABLE_IDS + 8
    result = asyncio.run(
        run_audit(
            ScriptedModel(reply),
            ScriptedModel(echo_target),
            "Find the quirk.",
            auditor_prompt="You are an auditor.",
            budget=AuditBudget(max_turns=probes + 1, report_on_last_turn=False),
        )
    )
    t = result.transcript
    replies = tuple(m.id for m in t.target.nodes.values() if m.role == "assistant")
    assert len(replies) == probes + 1
    assert citable_ids(t) == replies[-MAX_CITABLE_IDS:]
    assert seen[probes] == replies[probes - MAX_CITABLE_IDS : probes]


def test_no_constrained_string_can_hold_a_tag_that_would_cut_the_call() -> None:
    """A string with "</tool_call>" in it would end the block when the reply is parsed, so the
    call read back would differ from the one sampled: no string token may contain "<"."""
    from hf_fixtures import packaged_tokenizer

    chat = tiny_chat(max_tokens=40, constrained=True)
    chat.grammar_for(TOOLS)  # builds the vocabulary masks
    masks = chat._masks
    assert masks is not None
    tokenizer = packaged_tokenizer()
    allowed = (masks.body | masks.close).nonzero().flatten().tolist()
    assert allowed and not [i for i in allowed if "<" in tokenizer.decode([i])]
