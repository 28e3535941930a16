"""Text a constrained local policy can write inside a JSON string.

The constrained grammar (scaffold/providers/constrained.py) lets a string hold no `"`,
backslash, `<` or control character: no escapes to get wrong, and no `</tool_call>` that
would cut the call when it is parsed. A warm start must only teach text of that kind: a
teacher whose report quotes with `"` (JSON `\\"`) teaches a policy to write what the
grammar forbids, and the policy's string closes where the teacher's quote opened.
"""

from __future__ import annotations

UNWRITABLE_CHARACTERS = '"\\<'
# Stand-ins that keep a quoted sentence readable: a quote inside a quote becomes a single
# quote, a backslash a slash, and `<` its single guillemet.
_STAND_INS = str.maketrans({'"': "'", "\\": "/", "<": "‹"})


def writable(text: str) -> bool:
    """Whether a constrained policy can write `text` as (part of) a string value."""
    return not any(ch in UNWRITABLE_CHARACTERS or ord(ch) < 32 or ord(ch) == 127 for ch in text)


def make_writable(text: str) -> str:
    """`text` on one line with every character the grammar forbids replaced by a stand-in."""
    flat = " ".join(text.split())
    return "".join(ch for ch in flat.translate(_STAND_INS) if writable(ch))  # what is left: control characters


def quoted(text: str, most: int) -> str:
    """`text` made writable and cut to `most` characters with an ellipsis: how a report quotes
    a message, and so what a constrained policy's «quotes» may copy (scaffold/quotable.py).

    The heuristics that teach the warm start quote this way, because a policy can only learn
    to write what its grammar allows; for the same reason reports mark quotes with
    guillemets («...»), not with `"`."""
    flat = make_writable(text)
    return flat if len(flat) <= most else flat[: most - 3] + "..."
