"""The text tool-call protocol, for models without native tool calling.

Used by the local `hf` provider and by local auditor policies, so that a model sees
the same protocol whether it is an audited target or the policy being trained.

What the model sees:

* The tools, listed in its system message by `render_tools_prompt`: each tool's
  name, description and JSON schema, and the instruction to call a tool by writing

      <tool_call>{"name": "send_message", "arguments": {"message": "Hi"}}</tool_call>

* Its own earlier turns, rendered by `render_assistant_text`: the text, then one
  `<tool_call>` block per call, exactly as it would have written them.
* Tool results, rendered by `render_tool_response` as

      <tool_response id="call_1" name="send_message">...</tool_response>

  in a turn of role `tool_role` ("user" for chat templates without a tool role,
  such as SmolLM2's ChatML); consecutive results share one turn.

What comes back: `parse_tool_calls` cuts every `<tool_call>` block out of a reply
(an unterminated last block too) and parses its JSON leniently. It never raises: a
block that cannot be read becomes a ToolCall with `parse_error` set, which the tool
layer answers with an error message (a malformed call costs a turn, not the audit).

Tool-call ids are `call_<n>`, numbered on from the calls already in the
conversation (`count_tool_calls`), so they are deterministic and unique within it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from scaffold.messages import Message, ToolCall, ToolDefinition

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

# A block ends at its closing tag, at the next opening tag (the model forgot to close
# it), or at the end of the text (generation stopped mid-call).
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*|\s*```\s*$")
_NAME = re.compile(r"""["']?name["']?\s*:\s*["']([A-Za-z0-9_.\-]+)""")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_TAG_IN_JSON = re.compile(r"<(?=/?tool_call>)", re.IGNORECASE)
# Deeper arguments are a parse error: ToolCall's scrubbing recurses (RecursionError from
# ~500 levels) and pydantic will not serialise an event past ~250 (the store writes events).
MAX_ARGUMENT_DEPTH = 100


def signature_line(tool: ToolDefinition) -> str:
    """`name {"arg": "type", ...}`: a tool's name and the shape of its arguments, on one line."""
    return f"{tool.name} {json.dumps(signature(tool.json_schema()))}"


def render_tools_prompt(tools: Sequence[ToolDefinition], documented: Iterable[str] = (), signed: Iterable[str] = ()) -> str:
    """The system-prompt section that lists `tools` and teaches the call syntax.

    Tools named in `documented` are already described by the system prompt (the
    auditor's prompt has a manual of its tools): only their argument shapes are listed,
    one line each (`signature_line`), so a small model's context is not spent twice on
    the same text; tools in `signed` have their signature line in the system prompt too,
    and are not listed again.
    """
    documented = set(documented)
    if not tools:
        return ""
    lines = [
        "# Tools",
        "",
        "To call a tool, write a block like this, with its arguments as a JSON object:",
        '<tool_call>{"name": "TOOL_NAME", "arguments": {"ARGUMENT": "VALUE"}}</tool_call>',
        "Text may come before your calls; one block per call. Each result comes back in a <tool_response> block.",
    ]
    signed = set(signed)
    listed = [signature_line(t) for t in tools if t.name in documented and t.name not in signed]
    if listed:
        lines += ["", "Their arguments:", *(f"- {line}" for line in listed)]
    for tool in tools:
        if tool.name in documented:
            continue
        schema = json.dumps(tool.json_schema())
        lines += ["", f"## {tool.name}", tool.description.strip(), f"Arguments (JSON schema): {schema}"]
    return "\n".join(lines)


def signature(schema: dict[str, Any]) -> Any:
    """A JSON schema as a short example of its shape: `{"message": "string", "prefill?": "string"}`.

    Optional keys end with `?`, an enum is its values joined by `|`, an array is a list of
    its item's shape. It carries the names and types of the schema in a third of its tokens,
    for tools whose meaning the system prompt already explains.
    """
    if schema.get("enum"):
        return "|".join(str(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return [signature(schema.get("items") or {"type": "string"})]
    if kind == "object":
        required = set(schema.get("required", []))
        props = schema.get("properties") or {}
        return {name + ("" if name in required else "?"): signature(sub) for name, sub in props.items()}
    return kind or "any"


def render_tool_call(call: ToolCall) -> str:
    """One call as the model writes it: `<tool_call>{"name": ..., "arguments": ...}</tool_call>`."""
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    # A tag inside a string would end or split the block: JSON-escape its "<" (every "<"
    # json.dumps writes is inside a string), so the call parses back as it was.
    body = _TAG_IN_JSON.sub(lambda _: "\\u003c", body)
    return f"{TOOL_CALL_OPEN}{body}{TOOL_CALL_CLOSE}"


def render_assistant_text(message: Message) -> str:
    """An assistant message as text: its content, then one block per tool call."""
    parts = [message.content] if message.content else []
    parts += [render_tool_call(call) for call in message.tool_calls]
    return "\n".join(parts)


def render_tool_response(message: Message, name: str | None = None) -> str:
    """A role "tool" message as a `<tool_response>` block (error results are marked)."""
    attrs = f' id="{message.tool_call_id}"' if message.tool_call_id else ""
    attrs += f' name="{name}"' if name else ""
    attrs += ' error="true"' if message.is_error else ""
    return f"<tool_response{attrs}>\n{message.content}\n</tool_response>"


def render_messages(
    messages: Sequence[Message], tools: Sequence[ToolDefinition] = (), *, tool_role: str = "user"
) -> list[dict[str, str]]:
    """`messages` as plain `{"role", "content"}` dicts for a chat template.

    The tools section goes at the end of the first system message (a system message
    is added when there is none); a tool the system message already describes is listed
    by its schema only. `Message.metadata` is never rendered.
    """
    names = {call.id: call.name for m in messages for call in m.tool_calls}
    out: list[dict[str, str]] = []
    system = next((m.content for m in messages if m.role == "system"), "")
    documented = [t.name for t in tools if t.description.strip() and t.description.strip() in system]
    signed = [t.name for t in tools if signature_line(t) in system]
    tools_text = render_tools_prompt(tools, documented, signed)
    if tools_text and not any(m.role == "system" for m in messages):
        out.append({"role": "system", "content": tools_text})
        tools_text = ""
    previous_was_tool = False
    for m in messages:
        if m.role == "tool":
            block = render_tool_response(m, names.get(m.tool_call_id or ""))
            if previous_was_tool:  # results of one turn's calls share one turn
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": tool_role, "content": block})
            previous_was_tool = True
            continue
        previous_was_tool = False
        if m.role == "system":
            content = f"{m.content}\n\n{tools_text}" if tools_text and m.content else (m.content or tools_text)
            tools_text = ""
            out.append({"role": "system", "content": content})
        elif m.role == "assistant":
            out.append({"role": "assistant", "content": render_assistant_text(m)})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def count_tool_calls(messages: Sequence[Message]) -> int:
    """How many tool calls `messages` already hold: the id offset for the next reply."""
    return sum(len(m.tool_calls) for m in messages)


def parse_tool_calls(text: str, *, id_prefix: str = "call_", offset: int = 0) -> tuple[str, list[ToolCall]]:
    """Split a reply into (text without the call blocks, the calls). Never raises.

    The i-th call (from 1) gets the id `f"{id_prefix}{offset + i}"`.
    """
    try:
        calls: list[ToolCall] = []
        for i, match in enumerate(_BLOCK.finditer(text), start=1):
            calls.append(_parse_block(match.group(1), f"{id_prefix}{offset + i}"))
        if not calls:
            return text, calls
        pieces = (piece.strip() for piece in _BLOCK.split(text)[::2])
        return "\n".join(piece for piece in pieces if piece), calls
    except Exception as exc:  # a parser bug must cost one turn, never the audit
        return text, [ToolCall(id=f"{id_prefix}{offset + 1}", name="unknown", parse_error=f"unreadable reply: {exc}")]


def _parse_block(raw: str, call_id: str) -> ToolCall:
    body = _FENCE.sub("", raw.strip())
    value, error = _loads_lenient(body)
    if isinstance(value, dict):
        name = value.get("name")
        arguments: Any = next((value[k] for k in _ARGUMENT_KEYS if k in value), {})
        if isinstance(arguments, str):  # OpenAI style: arguments as a JSON string
            arguments, error = _loads_lenient(arguments)
        if isinstance(arguments, dict) and _nesting_exceeds(arguments, MAX_ARGUMENT_DEPTH):
            arguments, error = None, f"the arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep"
        if isinstance(name, str) and name and isinstance(arguments, dict):
            return ToolCall(id=call_id, name=name, arguments=arguments)
        if not (isinstance(name, str) and name):
            error = 'the call has no "name" string'
        else:
            error = error or '"arguments" is not a JSON object'
    elif error is None:
        error = "the call is not a JSON object"
    found = _NAME.search(body)
    snippet = body if len(body) <= 200 else body[:200] + "..."
    return ToolCall(
        id=call_id,
        name=found.group(1) if found else "unknown",
        parse_error=f"could not read the tool call ({error}): {snippet!r}; write "
        '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>',
    )


def _nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests lists and dicts more than `limit` deep (iterative: it may be deeper than the stack)."""
    level, depth = [value], 0
    while level:
        level = [v for v in level if isinstance(v, (list, dict))]
        if level:
            depth += 1
            if depth > limit:
                return True
            level = [child for v in level for child in (v.values() if isinstance(v, dict) else v)]
    return False


def _loads_lenient(text: str) -> tuple[Any, str | None]:
    """(value, None) if `text` (or a repaired version of it) is JSON, else (None, the error)."""
    try:
        return json.loads(text), None
    except Exception as exc:  # RecursionError too, for absurdly nested input
        first_error = str(exc)
    start = text.find("{")
    if start > 0:  # prose before the object
        text = text[start:]
    try:  # a valid object followed by junk (prose after the JSON, a stray brace)
        return json.JSONDecoder().raw_decode(text)[0], None
    except Exception:
        pass
    try:
        return json.loads(repair_json(text)), None
    except Exception:
        return None, first_error


def repair_json(text: str) -> str:
    """Best-effort repair of model-written JSON.

    Converts single-quoted strings to double-quoted ones, Python's True/False/None to
    JSON, drops trailing commas, and closes an unterminated string and any open
    brackets (a reply cut off by max_tokens). One pass, string-aware, so apostrophes
    inside double-quoted strings are left alone.
    """
    out: list[str] = []
    stack: list[str] = []
    quote: str | None = None  # the quote character of the string we are in
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and i + 1 < n:
                # \' is not a JSON escape; the apostrophe needs none inside double quotes
                out.append("'" if text[i + 1] == "'" else text[i : i + 2])
                i += 2
                continue
            if ch == quote:
                out.append('"')
                quote = None
            elif ch == '"':  # a double quote inside a single-quoted string
                out.append('\\"')
            elif ch == "\n":
                out.append("\\n")
            else:
                out.append(ch)
            i += 1
            continue
        if ch in "\"'":
            quote = ch
            out.append('"')
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            out.append(ch)
        elif ch in "}]":
            _drop_trailing_comma(out)
            if stack and stack[-1] == ch:
                stack.pop()
                out.append(ch)
            # an unmatched closer is dropped
        elif ch.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_PY_LITERALS.get(word, word))
            i = j
            continue
        else:
            out.append(ch)
        i += 1
    if quote:
        out.append('"')
    _drop_trailing_comma(out)
    while stack:
        _drop_trailing_comma(out)
        out.append(stack.pop())
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    j = len(out) - 1
    while j >= 0 and out[j].isspace():
        j -= 1
    if j >= 0 and out[j] == ",":
        del out[j]
