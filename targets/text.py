"""Text helpers shared by every trigger and rewrite: the visible conversation, and choices.

Triggers read the conversation (the latest and all user turns, quoted spans removed,
sentences, `near` for "intent near topic" patterns); rewrites vary their wording only
through `pick`, `keyed_index` and `choose`, keyed by the conversation's text, so the
same conversation always gets the same reply (replayed and resumed audits match exactly).
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

from scaffold.messages import Message

# --- the visible conversation ---------------------------------------------------------


def last_user_text(messages: Sequence[Message]) -> str:
    """The latest user message's text, or '' when there is none."""
    for message in reversed(messages):
        if message.role == "user":
            return message.content
    return ""


def user_texts(messages: Sequence[Message]) -> list[str]:
    """Every visible user message's text, oldest first."""
    return [m.content for m in messages if m.role == "user"]


def user_turns(messages: Sequence[Message]) -> int:
    """How many user turns the conversation has so far."""
    return sum(1 for m in messages if m.role == "user")


_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|`[^`]*`|(?<![A-Za-z])'[^'\n]+'(?![A-Za-z])")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def unquoted(text: str) -> str:
    """`text` without quoted spans, so that "translate 'I feel sad'" is not a feeling."""
    return _QUOTED.sub(" ", text)


def sentences(text: str) -> list[str]:
    """`text` split into sentences (and lines)."""
    return [s for s in _SENTENCE.split(text) if s.strip()]


def near(first: str, second: str, gap: int = 6) -> str:
    """A regex: `first`, then at most `gap` words, then `second`."""
    return rf"(?:{first})(?:\W+\w+){{0,{gap}}}?\W+(?:{second})"


# --- deterministic choices ------------------------------------------------------------


def pick(options: Sequence[str], text: str) -> str:
    """A deterministic choice keyed by `text`, so organisms are reproducible."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=4).digest()
    return options[int.from_bytes(digest, "big") % len(options)]


def keyed_index(text: str, n: int, salt: str = "") -> int:
    """An index in `range(n)` keyed by `text`; a different `salt` gives an independent choice."""
    digest = hashlib.blake2b(f"{salt}|{text}".encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % n


def choose(options: Sequence[str], text: str, k: int) -> list[str]:
    """`k` distinct options, chosen deterministically from `text`."""
    start = keyed_index(text, len(options), "choose")
    return [options[(start + i) % len(options)] for i in range(min(k, len(options)))]
