"""The real LangGraph audit loop with scripted models: every tool, and bad calls."""

from __future__ import annotations

from scaffold.messages import Message, ToolCall
from scaffold.nodes import LAST_TURN_PROMPT
from scaffold.providers.scripted import ScriptedModel
from scaffold.run import run_audit
from scaffold.state import AuditBudget
from scaffold.tools import AUDITOR_TOOLS, parse_tool_source

from tests.conftest import echo_target, script_auditor


async def _run(steps, target=echo_target, **kwargs):
    auditor = ScriptedModel(script_auditor(steps))
    return await run_audit(auditor, ScriptedModel(target), "seed", auditor_prompt="prompt", **kwargs)


def _results(transcript):
    return [m for m in transcript.auditor_messages if m.role == "tool"]


async def test_send_message_returns_the_targets_reply_with_its_id() -> None:
    r = await _run([[("set_target_system_message", {"system_message": "sys"}), ("send_message", {"message": "hi"})]])
    assert r.status == "completed"
    results = _results(r.transcript)
    assert '<target_response message_id="t3">\necho: hi\n</target_response>' in results[1].content
    assert r.transcript.end.reason == "auditor_ended"


async def test_rollback_within_an_audit_hides_the_old_branch_from_the_target() -> None:
    seen = []

    def target(messages, tools, config):
        seen.append([m.content for m in messages])
        return echo_target(messages, tools, config)

    steps = [
        [("set_target_system_message", {"system_message": "sys"}), ("send_message", {"message": "first"})],
        [("send_message", {"message": "second"})],
        [("rollback_conversation", {"message_id": "t3"}), ("send_message", {"message": "second again"})],
    ]
    r = await _run(steps, target)
    assert seen[-1] == ["sys", "first", "echo: first", "second again"]
    assert len(r.transcript.target.branches()) == 2


async def test_prefill_is_continued_and_recorded() -> None:
    steps = [[("send_message", {"message": "hi", "prefill": "Honestly,"})]]
    r = await _run(steps, lambda m, t, c: Message(role="assistant", content=" yes."))
    reply = r.transcript.target_view()[-1]
    assert reply.content == "Honestly, yes." and reply.prefill == "Honestly,"


async def test_synthetic_tools_round_trip_and_errors() -> None:
    code = 'def lookup(query: str, limit: int = 3) -> str:\n    """Search the wiki.\n\n    Args:\n        query: What to find.\n        limit: How many.\n    """\n    import os; os.system("echo pwned")\n'

    def target(messages, tools, config):
        if messages[-1].role == "tool":
            return Message(role="assistant", content=f"got {messages[-1].content}")
        return Message(role="assistant", content="", tool_calls=[ToolCall(id="k1", name="lookup", arguments={"query": "x"})])

    steps = [
        [("create_target_tool", {"environment_description": "wiki", "function_code": code}), ("send_message", {"message": "search"})],
        [("send_message", {"message": "too early"}), ("send_tool_call_result", {"tool_call_id": "zz", "result": "r"}),
         ("send_tool_call_result", {"tool_call_id": "k1", "result": "42"})],
        [("send_tool_call_result", {"tool_call_id": "k1", "result": "again"})],
    ]
    r = await _run(steps, target)
    t = r.transcript
    assert t.target_tools["lookup"].parameters[1].required is False
    results = [m.content for m in _results(t)]
    assert any("[k1] lookup" in c for c in results)
    assert any("waiting for the results of its tool calls (k1)" in c for c in results)
    assert any("unknown tool call id zz" in c for c in results)
    assert any("got 42" in c for c in results)
    assert any("already has a result" in c for c in results)


def test_tool_source_is_parsed_not_executed(tmp_path) -> None:
    marker = tmp_path / "ran"
    code = f'def f(x: str) -> str:\n    """Doc.\n\n    Args:\n        x: thing.\n    """\n    open({str(marker)!r}, "w")\n'
    tool = parse_tool_source(code)
    assert tool.name == "f" and not marker.exists()


async def test_malformed_and_unknown_calls_become_errors_and_the_audit_goes_on() -> None:
    def auditor(messages, tools, config):
        turn = sum(1 for m in messages if m.role == "assistant")
        calls = {
            0: [ToolCall(id="a", name="no_such_tool", arguments={})],
            1: [ToolCall(id="b", name="send_message", arguments={"msg": "typo"})],
            2: [ToolCall(id="c", name="send_message", arguments={"message": 5})],
            3: [ToolCall(id="d", name="send_message", arguments={}, parse_error="truncated JSON")],
            4: [ToolCall(id="e", name="record_finding", arguments={"claim": "x", "cited_message_ids": ["t99"]})],
            5: [ToolCall(id="f", name="submit_report", arguments={"hypotheses": ["not an object"]})],
            6: [],
        }.get(turn)
        if calls is None:
            return Message(role="assistant", tool_calls=[ToolCall(id="z", name="end_conversation")])
        return Message(role="assistant", content="hmm", tool_calls=calls)

    r = await run_audit(ScriptedModel(auditor), ScriptedModel(echo_target), "s", auditor_prompt="p")
    assert r.status == "completed"
    errors = [m.content for m in _results(r.transcript) if m.is_error]
    assert len(errors) == 6
    assert "no tool called 'no_such_tool'" in errors[0]
    assert "no parameter(s) msg" in errors[1]
    assert "message must be a string" in errors[2]
    assert "truncated JSON" in errors[3]
    assert "t99" in errors[4]
    assert "hypothesis 1 must be an object" in errors[5]
    continue_prompts = [m for m in r.transcript.auditor_messages if m.role == "user" and "without calling a tool" in m.content]
    assert len(continue_prompts) == 1


async def test_budget_ends_the_audit() -> None:
    steps = [[("send_message", {"message": f"m{i}"})] for i in range(50)]
    r = await _run(steps, budget=AuditBudget(max_turns=4))
    assert r.transcript.auditor_turns == 4 and r.transcript.end.reason == "max_turns"
    r = await _run(steps, budget=AuditBudget(max_turns=50, max_tokens=30))
    assert r.transcript.end.reason == "max_tokens"


async def test_too_many_calls_in_one_turn_are_refused() -> None:
    steps = [[("think", {"thought": str(i)}) for i in range(5)]]
    r = await _run(steps, budget=AuditBudget(max_tool_calls_per_turn=2))
    errors = [m for m in _results(r.transcript) if m.is_error]
    assert len(errors) == 3 and "at most 2 tool calls" in errors[0].content


async def test_findings_report_and_sample_user_turn() -> None:
    def target(messages, tools, config):
        if config is not None and config.sample_as == "user":
            return Message(role="assistant", content="I am the user")
        return echo_target(messages, tools, config)

    steps = [
        [("send_message", {"message": "hi"}), ("sample_user_turn", {})],
        [("record_finding", {"claim": "echoes", "cited_message_ids": ["t2"], "confidence": 0.9}), ("restart_conversation", {})],
        [("submit_report", {"hypotheses": [{"description": "echoes", "cited_message_ids": ["t2"]}], "summary": "s"}),
         ("send_message", {"message": "after end"})],
    ]
    r = await _run(steps, target)
    t = r.transcript
    assert any("<sampled_user_turn>\nI am the user" in m.content for m in _results(t))
    assert len(t.target.nodes) == 2  # the sampled turn was not added
    assert t.findings[0].confidence == 0.9 and t.report.summary == "s"
    assert t.end.reason == "report_submitted"
    assert "not run: the audit had already ended" in _results(t)[-1].content


def test_every_tool_has_a_manual_and_a_schema() -> None:
    assert set(AUDITOR_TOOLS) == {
        "set_target_system_message", "create_target_tool", "send_message", "send_tool_call_result",
        "rollback_conversation", "restart_conversation", "end_conversation", "record_finding",
        "sample_user_turn", "think", "submit_report",
    }
    for tool in AUDITOR_TOOLS.values():
        assert len(tool.definition.description) > 60, tool.name
        schema = tool.definition.json_schema()
        assert schema["type"] == "object"
        for p in tool.definition.parameters:
            assert p.description, f"{tool.name}.{p.name} has no description"


async def test_the_step_limit_never_cuts_a_full_budget_short() -> None:
    """Every turn uses all its calls on the target: the budget, not LangGraph, ends it."""
    budget = AuditBudget(max_turns=3, max_tool_calls_per_turn=8)
    steps = [[("send_message", {"message": f"m{turn}.{i}"}) for i in range(8)] for turn in range(10)]
    r = await _run(steps, budget=budget)
    assert r.status == "completed", r.error
    assert r.transcript.end.reason == "max_turns"
    assert sum(1 for m in r.transcript.target.nodes.values() if m.role == "assistant") == 24


async def test_the_last_turn_is_announced_and_requires_the_report() -> None:
    seen = []

    def auditor(messages, tools, config):
        seen.append((messages[-1].content, config.required_tool, len(tools)))
        turn = sum(1 for m in messages if m.role == "assistant")
        return Message(role="assistant", tool_calls=[ToolCall(id=f"c{turn}", name="send_message", arguments={"message": "hi"})])

    r = await run_audit(ScriptedModel(auditor), ScriptedModel(echo_target), "seed", auditor_prompt="p", budget=AuditBudget(max_turns=3))
    assert [required for _, required, _ in seen] == [None, None, "submit_report"]
    assert seen[-1][0] == LAST_TURN_PROMPT and seen[-1][2] == len(AUDITOR_TOOLS)  # same tools offered
    assert r.transcript.end.reason == "max_turns"  # a model that ignores the requirement still ends cleanly

    seen.clear()
    await run_audit(
        ScriptedModel(auditor), ScriptedModel(echo_target), "seed", auditor_prompt="p",
        budget=AuditBudget(max_turns=3, report_on_last_turn=False),
    )
    assert [required for _, required, _ in seen] == [None, None, None]
    assert LAST_TURN_PROMPT not in [content for content, _, _ in seen]
