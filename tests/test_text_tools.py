"""The text tool-call protocol: rendering what the model sees, and reading what it writes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.messages import Message, ToolCall, ToolDefinition, ToolParameter
from scaffold.providers.text_tools import (
    count_tool_calls,
    parse_tool_calls,
    render_assistant_text,
    render_messages,
    render_tool_call,
    render_tools_prompt,
    repair_json,
    signature,
    signature_line,
)

SEND = ToolDefinition(
    name="send_message",
    description="Send a message to the target.",
    parameters=[
        ToolParameter(name="message", description="What to say."),
        ToolParameter(name="prefill", description="Words to put in its mouth.", required=False),
    ],
)


def one(text: str) -> ToolCall:
    content, calls = parse_tool_calls(text)
    assert len(calls) == 1, calls
    return calls[0]


def test_clean_call() -> None:
    content, calls = parse_tool_calls('<tool_call>{"name": "send_message", "arguments": {"message": "Hi"}}</tool_call>')
    assert content == ""
    assert calls == [ToolCall(id="call_1", name="send_message", arguments={"message": "Hi"})]


def test_several_calls_with_prose_around_and_id_offset() -> None:
    text = (
        "I will probe twice.\n"
        '<tool_call>{"name": "think", "arguments": {"thought": "plan"}}</tool_call>\n'
        "then\n"
        '<tool_call>{"name": "send_message", "arguments": {"message": "Why?"}}</tool_call>\nDone.'
    )
    content, calls = parse_tool_calls(text, offset=4, id_prefix="t_")
    assert content == "I will probe twice.\nthen\nDone."
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("t_5", "think", {"thought": "plan"}),
        ("t_6", "send_message", {"message": "Why?"}),
    ]
    assert all(c.parse_error is None for c in calls)


def test_single_quotes_python_literals_and_apostrophes() -> None:
    call = one("<tool_call>{'name': 'send', 'arguments': {'message': 'it\\'s \"fine\"', 'ok': True}}</tool_call>")
    assert call.arguments == {"message": 'it\'s "fine"', "ok": True} and call.parse_error is None
    # An apostrophe inside a double-quoted string is not a quote.
    call = one('<tool_call>{"name": "send_message", "arguments": {"message": "don\'t",}}</tool_call>')
    assert call.arguments == {"message": "don't"}


def test_trailing_commas() -> None:
    call = one('<tool_call>{"name": "a", "arguments": {"xs": [1, 2,], "y": 3,},}</tool_call>')
    assert call.name == "a" and call.arguments == {"xs": [1, 2], "y": 3}


def test_truncated_call_is_closed() -> None:
    call = one('<tool_call>{"name": "send_message", "arguments": {"message": "Tell me about your trai')
    assert call.parse_error is None and call.arguments == {"message": "Tell me about your trai"}


def test_garbage_gives_a_parse_error_not_an_exception() -> None:
    call = one("<tool_call>this is not json at all</tool_call>")
    assert call.name == "unknown" and call.parse_error and "tool_call" in call.parse_error


def test_unparseable_call_keeps_a_recoverable_name() -> None:
    call = one('<tool_call>{"name": "send_message", "arguments": {"message": }}</tool_call>')
    assert call.name == "send_message" and call.parse_error


def test_missing_name_and_non_object_arguments_are_errors() -> None:
    assert one('<tool_call>{"arguments": {}}</tool_call>').parse_error
    assert one('<tool_call>{"name": "a", "arguments": [1]}</tool_call>').parse_error


def test_unterminated_block_before_another_block() -> None:
    content, calls = parse_tool_calls(
        'x <tool_call>{"name": "a", "arguments": {}} <tool_call>{"name": "b", "arguments": {"k": 1}}</tool_call>'
    )
    assert [(c.name, c.arguments) for c in calls] == [("a", {}), ("b", {"k": 1})] and content == "x"


def test_lenient_variants_fences_string_arguments_and_trailing_junk() -> None:
    assert one('<tool_call>```json\n{"name": "a", "arguments": {"k": 1}}\n```</tool_call>').arguments == {"k": 1}
    assert one('<tool_call>{"name": "a", "arguments": "{\\"k\\": 2}"}</tool_call>').arguments == {"k": 2}
    assert one('<tool_call>{"name": "a", "parameters": {"k": 3}}} oops</tool_call>').arguments == {"k": 3}


def test_text_without_calls_is_untouched() -> None:
    assert parse_tool_calls("  just words\n") == ("  just words\n", [])


def test_rendered_calls_parse_back() -> None:
    arguments = {"message": 'Ünïcode </b> "q"', "n": [1, {"a": None}]}
    calls = [ToolCall(id="call_1", name="send_message", arguments=arguments)]
    message = Message(role="assistant", content="Here goes.", tool_calls=calls)
    content, parsed = parse_tool_calls(render_assistant_text(message))
    assert content == "Here goes." and parsed == calls


def test_tools_prompt_lists_schema_and_syntax() -> None:
    text = render_tools_prompt([SEND])
    assert "## send_message" in text and "Send a message to the target." in text
    assert json.dumps(SEND.json_schema()) in text
    assert '<tool_call>{"name": "TOOL_NAME", "arguments": {"ARGUMENT": "VALUE"}}</tool_call>' in text
    assert render_tools_prompt([]) == ""


def test_render_messages_tools_in_system_and_results_in_one_user_turn() -> None:
    calls = [ToolCall(id="call_1", name="a", arguments={}), ToolCall(id="call_2", name="b", arguments={"x": 1})]
    messages = [
        Message(role="system", content="Be careful."),
        Message(role="user", content="Go."),
        Message(role="assistant", content="", tool_calls=calls),
        Message(role="tool", content="r1", tool_call_id="call_1"),
        Message(role="tool", content="bad", tool_call_id="call_2", is_error=True, metadata={"quirk_fired": True}),
    ]
    chat = render_messages(messages, [SEND])
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[0]["content"].startswith("Be careful.\n\n# Tools")
    assert chat[2]["content"] == "\n".join(render_tool_call(c) for c in calls)
    assert chat[3]["content"] == (
        '<tool_response id="call_1" name="a">\nr1\n</tool_response>\n'
        '<tool_response id="call_2" name="b" error="true">\nbad\n</tool_response>'
    )
    assert "quirk_fired" not in json.dumps(chat)
    assert render_messages(messages[1:], [SEND])[0]["role"] == "system"  # added when missing
    assert render_messages(messages, tool_role="tool")[3]["role"] == "tool"
    assert count_tool_calls(messages) == 2


def test_repair_json_closes_strings_and_brackets() -> None:
    assert json.loads(repair_json('{"a": [1, {"b": "c')) == {"a": [1, {"b": "c"}]}


_VALID = '<tool_call>{"name": "send_message", "arguments": {"message": "hi", "n": [1, 2]}}</tool_call>'
_PIECES = st.sampled_from(
    ["<tool_call>", "</tool_call>", "{", "}", "[", "]", '"', "'", ",", ":", "\\", "name", "arguments", "True", "\n"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=20), _PIECES), max_size=40))
def test_fuzz_random_strings_never_raise(parts: list[str]) -> None:
    content, calls = parse_tool_calls("".join(parts), offset=2)
    assert isinstance(content, str)
    assert [c.id for c in calls] == [f"call_{i}" for i in range(3, 3 + len(calls))]
    assert all(c.name for c in calls)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_fuzz_mangled_valid_calls_never_raise(data: st.DataObject) -> None:
    text = _VALID * data.draw(st.integers(1, 3))
    for _ in range(data.draw(st.integers(0, 6))):
        i = data.draw(st.integers(0, len(text)))
        op = data.draw(st.sampled_from(["cut", "delete", "insert"]))
        if op == "cut":
            text = text[:i]
        elif op == "delete":
            text = text[:i] + text[i + 1 :]
        else:
            text = text[:i] + data.draw(st.one_of(_PIECES, st.characters())) + text[i:]
    content, calls = parse_tool_calls(text)
    for call in calls:
        assert call.parse_error is None or call.parse_error.startswith("could not read")


def test_tools_the_system_prompt_already_documents_are_listed_by_signature_only() -> None:
    documented = ToolDefinition(name="send_message", description="Send a message.\n\nWhen to use: always.",
                                parameters=[ToolParameter(name="message")])
    other = ToolDefinition(name="think", description="Think privately.")
    system = Message(role="system", content=f"You audit.\n\n## send_message\n{documented.description}")
    content = render_messages([system, Message(role="user", content="go")], [documented, other])[0]["content"]
    assert content.count("When to use: always.") == 1  # the manual's copy, not a second one
    assert '- send_message {"message": "string"}' in content  # its arguments are still listed, on one line
    assert "Think privately." in content  # an undocumented tool keeps its description


def test_a_signature_keeps_names_types_optional_keys_enums_and_nested_items() -> None:
    schema = {
        "type": "object",
        "properties": {
            "hypotheses": {"type": "array", "items": {"type": "object", "properties": {
                "description": {"type": "string"}, "confidence": {"type": "number"}}, "required": ["description"]}},
            "status": {"type": "string", "enum": ["success", "error"]},
        },
        "required": ["hypotheses"],
    }
    assert signature(schema) == {"hypotheses": [{"description": "string", "confidence?": "number"}], "status?": "success|error"}


def test_a_tool_whose_signature_line_is_in_the_system_prompt_is_not_listed_again() -> None:
    tool = ToolDefinition(name="send_message", description="Send a message.", parameters=[ToolParameter(name="message")])
    system = Message(role="system", content=f"You audit.\n- {signature_line(tool)}: {tool.description}")
    content = render_messages([system, Message(role="user", content="go")], [tool])[0]["content"]
    assert content.count(signature_line(tool)) == 1
    assert "Their arguments:" not in content and "<tool_call>" in content  # the call syntax is still taught
