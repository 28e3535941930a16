"""Parser fuzz test: 10,000 random and mangled model outputs, zero exceptions escape.

Deterministic (`random.Random(SEED)`), so a failure reproduces. Every output goes
through `parse_tool_calls` and the lower-level functions it relies on (`repair_json`,
the lenient JSON loader `_loads_lenient`, the block parser `_parse_block`); every
exception is collected rather than raised, and so is every invariant violation, so a
failure lists all of them. `parse_tool_calls` swallows exceptions itself (a parser bug
costs a turn), so its catch-all reply ("unreadable reply: ...") counts as an escaped
exception here too.
"""

from __future__ import annotations

import random
import re
import time
from typing import Any, Callable

from scaffold.messages import ToolCall
from scaffold.providers.text_tools import _BLOCK, _loads_lenient, _parse_block, parse_tool_calls, render_tool_call, repair_json

SEED = 20240611
N_OUTPUTS = 10_000
TIME_LIMIT_S = 20.0

_TAG = re.compile(r"<tool_call>", re.IGNORECASE)
PIECES = [
    "<tool_call>", "</tool_call>", "<TOOL_CALL>", "{", "}", "[", "]", '"', "'", ",", ":", "\\", '\\"', "\\u",
    "\\ud800", "name", '"name"', "arguments", '"arguments"', "parameters", "args", "True", "False", "None",
    "null", "true", "\n", " ", "\t", "```", "```json\n", "\n```", "0", "-1.5e3", "\x00", "\ud800", "\udfff", "é",
    "😀", "send_message", '{"name": ', '"arguments": {', "}}", "</tool_response>", "<", ">",
]
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
MANGLE_OPS = ("cut", "delete", "delete_span", "insert_piece", "insert_char", "duplicate", "quote_swap", "swap_all_quotes")


# --- generators ------------------------------------------------------------------
def random_char(rng: random.Random) -> str:
    """Any code point, weighted toward ASCII, with controls, NUL and lone surrogates."""
    r = rng.random()
    if r < 0.5:
        return chr(rng.randint(0x20, 0x7E))
    if r < 0.6:
        return chr(rng.randint(0x00, 0x1F))
    if r < 0.65:
        return chr(rng.randint(0xD800, 0xDFFF))  # lone surrogate
    if r < 0.85:
        return chr(rng.randint(0x80, 0xFFFF))
    return chr(rng.randint(0x10000, 0x10FFFF))


def random_unicode(rng: random.Random, max_len: int = 200) -> str:
    return "".join(random_char(rng) for _ in range(rng.randint(0, max_len)))


def random_pieces(rng: random.Random, max_pieces: int = 60) -> str:
    parts = []
    for _ in range(rng.randint(1, max_pieces)):
        parts.append(rng.choice(PIECES) if rng.random() < 0.85 else random_unicode(rng, 8))
    return "".join(parts)


def random_name(rng: random.Random) -> str:
    if rng.random() < 0.9:
        return "".join(rng.choice(NAME_CHARS) for _ in range(rng.randint(1, 24)))
    return random_unicode(rng, 12) or "x"  # any non-empty string is a name


def random_string(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return "".join(rng.choice(NAME_CHARS + " ") for _ in range(rng.randint(0, 30)))
    if r < 0.7:
        return random_pieces(rng, 10)  # quotes, braces, backslashes, tags inside a string
    return random_unicode(rng, 30)


def random_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth < 4 and r < 0.15:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if depth < 4 and r < 0.3:
        return random_arguments(rng, depth + 1)
    if r < 0.65:
        return random_string(rng)
    if r < 0.75:
        return rng.randint(-(10**20), 10**20)
    if r < 0.83:
        return rng.choice([rng.uniform(-1e6, 1e6), 0.0, -0.0, 1e308, 5e-324, float("inf"), float("-inf")])
    return rng.choice([True, False, None])


def random_arguments(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    return {random_string(rng): random_value(rng, depth) for _ in range(rng.randint(0, 4))}


def random_call(rng: random.Random) -> ToolCall:
    # Through ToolCall, as a model's earlier turns are rendered (lone surrogates scrubbed).
    return ToolCall(id="c", name=random_name(rng), arguments=random_arguments(rng))


def mangle(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 6)):
        op = rng.choice(MANGLE_OPS)
        i = rng.randint(0, len(text))
        j = rng.randint(i, min(len(text), i + 40))
        if op == "cut":
            text = text[:i]
        elif op == "delete":
            text = text[:i] + text[i + 1 :]
        elif op == "delete_span":
            text = text[:i] + text[j:]
        elif op == "insert_piece":
            text = text[:i] + rng.choice(PIECES) + text[i:]
        elif op == "insert_char":
            text = text[:i] + random_char(rng) + text[i:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "quote_swap":
            quotes = [k for k, ch in enumerate(text) if ch in "\"'"]
            if quotes:
                k = rng.choice(quotes)
                text = text[:k] + ("'" if text[k] == '"' else '"') + text[k + 1 :]
        else:
            text = text.replace('"', "'")
    return text


def prose(rng: random.Random) -> str:
    """Text between calls: never a tool-call tag (so the calls in it are exactly the rendered ones)."""
    text = rng.choice([random_string, lambda r: random_unicode(r, 60)])(rng) if rng.random() < 0.8 else ""
    while _TAG.search(text):  # removing one tag can join the pieces of another
        text = _TAG.sub("", text)
    return text


def deep_nesting(rng: random.Random) -> str:
    # 90-1000 covers the argument depth limit and where ToolCall's scrubbing used to overflow the stack.
    n = rng.choice([rng.randint(1, 3000), rng.randint(90, 1000), 5000])
    r = rng.random()
    if r < 0.25:
        body = "[" * n
    elif r < 0.4:
        body = "{" * n
    elif r < 0.55:
        body = '{"a": ' * n
    elif r < 0.7:
        body = "[" * n + "]" * rng.randint(0, n)
    else:  # a well-formed call whose arguments nest n deep
        body = '{"name": "deep", "arguments": {"x": ' + "[" * n + "1" + "]" * n + "}}"
    tag = rng.choice(["<tool_call>", ""])
    return tag + body + rng.choice(["</tool_call>", ""])


def huge(rng: random.Random) -> tuple[str, list[ToolCall] | None]:
    size = 100_000
    r = rng.random()
    if r < 0.3:  # a well-formed call with a 100 KB argument: must parse back
        call = ToolCall(id="c", name=random_name(rng), arguments={"message": "x" * size, "rest": random_arguments(rng)})
        return "Here is a long one:\n" + render_tool_call(call), [call]
    if r < 0.5:
        return "<tool_call>" + '{"name": "a", "arguments": {"m": "' + "y" * size, None  # cut off mid-string
    if r < 0.75:
        chunk = random_pieces(rng, 40)
        return (chunk * (size // max(1, len(chunk)) + 1))[:size], None
    return "".join(rng.choice(PIECES) for _ in range(size // 4)), None


def several_calls(rng: random.Random) -> tuple[str, list[ToolCall], str]:
    calls = [random_call(rng) for _ in range(rng.randint(1, 5))]
    texts = [prose(rng) for _ in range(len(calls) + 1)]
    parts = [texts[0]]
    for call, after in zip(calls, texts[1:]):
        parts += [render_tool_call(call), after]
    separators = [rng.choice(["", "\n", " ", "\n\n"]) for _ in parts]
    text = "".join(sep + part for sep, part in zip(separators, parts))
    expected_content = "\n".join(t.strip() for t in texts if t.strip())
    return text, calls, expected_content


def generate(rng: random.Random) -> list[tuple[str, str, Any]]:
    """N_OUTPUTS (kind, text, expectation) cases. Expectation: (calls, content) for well-formed ones."""
    plan: list[tuple[str, int, Callable[[], tuple[str, Any]]]] = [
        ("unicode", 1500, lambda: (random_unicode(rng), None)),
        ("pieces", 2020, lambda: (random_pieces(rng), None)),
        ("mangled", 2500, lambda: (mangle(rng, "".join(render_tool_call(random_call(rng)) for _ in range(rng.randint(1, 3)))), None)),
        ("truncated", 1200, lambda: (lambda t: (t[: rng.randint(0, len(t))], None))(render_tool_call(random_call(rng)))),
        ("several", 1700, lambda: (lambda s: (s[0], (s[1], s[2])))(several_calls(rng))),
        ("nul_surrogates", 700, lambda: (nul_surrogates(rng), None)),
        ("deep", 340, lambda: (deep_nesting(rng), None)),
        ("huge", 40, lambda: huge(rng)),
    ]
    assert sum(count for _, count, _ in plan) == N_OUTPUTS
    cases = []
    for kind, count, make in plan:
        for _ in range(count):
            text, expected = make()
            if kind == "huge" and expected is not None:
                expected = (expected, "Here is a long one:")
            cases.append((kind, text, expected))
    rng.shuffle(cases)
    return cases


def nul_surrogates(rng: random.Random) -> str:
    text = render_tool_call(random_call(rng))
    for _ in range(rng.randint(1, 5)):
        i = rng.randint(0, len(text))
        text = text[:i] + rng.choice(["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "\\u0000", "\\ud800"]) + text[i:]
    return text


# --- checks ----------------------------------------------------------------------
def check_case(kind: str, text: str, expected: Any, rng: random.Random, problems: list[str], counts: dict[str, int]) -> None:
    where = f"{kind} {text[:80]!r} (len {len(text)})"

    def guarded(label: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except BaseException as exc:  # noqa: BLE001 - collecting every escape is the point
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            problems.append(f"{label} raised {type(exc).__name__}: {str(exc)[:120]} on {where}")
            return None

    offset = rng.randint(0, 50)
    result = guarded("parse_tool_calls", lambda: parse_tool_calls(text, offset=offset))
    if result is not None:
        content, calls = result
        if not isinstance(content, str):
            problems.append(f"content is {type(content).__name__} on {where}")
        if not isinstance(calls, list) or not all(isinstance(c, ToolCall) for c in calls):
            problems.append(f"calls is not a list of ToolCall on {where}")
            calls = []
        if [c.id for c in calls] != [f"call_{offset + i}" for i in range(1, len(calls) + 1)]:
            problems.append(f"ids not sequential from call_{offset + 1}: {[c.id for c in calls]} on {where}")
        if len(calls) != len(_TAG.findall(text)):
            problems.append(f"{len(calls)} calls for {len(_TAG.findall(text))} <tool_call> tags on {where}")
        if not calls and content != text:
            problems.append(f"text without calls was changed on {where}")
        for call in calls:
            if not (isinstance(call.name, str) and call.name):
                problems.append(f"call {call.id} has an empty name on {where}")
            if call.parse_error is None:
                counts["parsed"] += 1
                if not isinstance(call.arguments, dict):
                    problems.append(f"call {call.id} has non-dict arguments on {where}")
            else:
                counts["errors"] += 1
                if not call.parse_error.startswith("could not read the tool call"):
                    problems.append(f"parser fell back to its catch-all ({call.parse_error[:120]}) on {where}")
        if expected is not None:
            want, want_content = expected
            got = [(c.name, c.arguments, c.parse_error) for c in calls]
            if got != [(c.name, c.arguments, None) for c in want]:
                problems.append(f"well-formed calls did not parse back: {got!r:.300} != {want!r:.300} on {where}")
            if content != want_content:
                problems.append(f"content {content!r:.100} != {want_content!r:.100} on {where}")

    # The lower-level functions, on the whole output and on the first few block bodies.
    bodies = [text] + [m.group(1) for m in _BLOCK.finditer(text)][: 1 if len(text) > 10_000 else 3]
    for body in bodies:
        repaired = guarded("repair_json", lambda: repair_json(body))
        if repaired is not None and not isinstance(repaired, str):
            problems.append(f"repair_json returned {type(repaired).__name__} on {where}")
        loaded = guarded("_loads_lenient", lambda: _loads_lenient(body))
        if loaded is not None:
            value, error = loaded
            if error is not None and (value is not None or not isinstance(error, str)):
                problems.append(f"_loads_lenient returned ({type(value).__name__}, {error!r:.60}) on {where}")
    for body in bodies[1:2]:
        call = guarded("_parse_block", lambda: _parse_block(body, "call_x"))
        if call is not None and not (isinstance(call, ToolCall) and call.name):
            problems.append(f"_parse_block returned {call!r:.100} on {where}")


def test_parser_fuzz_10000_outputs_no_exception_escapes() -> None:
    start, cpu_start = time.perf_counter(), time.process_time()
    rng = random.Random(SEED)
    cases = generate(rng)
    assert len(cases) == N_OUTPUTS
    problems: list[str] = []
    counts = {"parsed": 0, "errors": 0}
    kinds: dict[str, int] = {}
    for kind, text, expected in cases:
        kinds[kind] = kinds.get(kind, 0) + 1
        check_case(kind, text, expected, rng, problems, counts)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(f"fuzz: {len(cases)} outputs {kinds}, {counts['parsed']} calls parsed, "
          f"{counts['errors']} parse errors, {elapsed:.1f}s wall, {cpu:.1f}s CPU")
    assert not problems, f"{len(problems)} problems, first ones:\n" + "\n".join(problems[:20])
    assert counts["parsed"] > 0 and counts["errors"] > 0, counts
    # CPU time, not wall time: a loaded CI machine must not make this fail.
    assert cpu < TIME_LIMIT_S, f"fuzz took {cpu:.1f}s of CPU ({elapsed:.1f}s wall)"
