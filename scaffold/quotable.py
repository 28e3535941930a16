"""What a constrained policy's «quotes» may hold: text the target conversation really contains.

Most false claims of the small trained auditors (stop 47: 11 of 17 claims on held-out
quirks) quote text no reply contains: the policy's own request, a cue it has learnt, or a
sentence it made up. A reader of the report cannot tell those from evidence. With the
hf provider's `copy_quotes` option, a guillemet opened in a string value must be followed
by one of these texts and its closing guillemet (scaffold/providers/constrained.py), so
every quote a report holds is a request the auditor sent or a sentence the target said,
written as the situation heuristic (the warm start's teacher) writes them.
"""

from __future__ import annotations

import re

from scaffold.transcript import Transcript
from scaffold.writable_text import quoted

# Sentences end after . ! ? or ), or at a line break; not at colons ("ref: CODE" is one sentence).
SENTENCE_BREAK = re.compile(r"(?<=[.!?)])\s+|\n+")
QUOTE_CHARS = 200  # a quote is cut here, with an ellipsis
# The newest texts a grammar offers: bounds the choice (and its cost) on long audits.
MAX_QUOTABLE = 64
GUILLEMETS = "«»"


def sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, empty ones left out."""
    return [s.strip() for s in SENTENCE_BREAK.split(text) if s.strip()]


def quotable_texts(t: Transcript) -> tuple[str, ...]:
    """The requests sent to the target (whole) and the sentences of its replies, as a report
    quotes them (`quoted`, QUOTE_CHARS), on any branch, newest MAX_QUOTABLE, oldest first.

    Texts holding a guillemet are left out: a quote could not be told from its end."""
    found: dict[str, None] = {}
    for message in reversed(t.target.nodes.values()):  # newest first; stops at the cap
        if message.role == "user":
            pieces = [message.content]
        elif message.role == "assistant":
            pieces = list(reversed(sentences(message.content)))
        else:
            continue
        for piece in pieces:
            text = quoted(piece, QUOTE_CHARS)
            if text and not any(g in text for g in GUILLEMETS):
                found.setdefault(text)
        if len(found) >= MAX_QUOTABLE:
            break
    return tuple(reversed(list(found)[:MAX_QUOTABLE]))
