"""What a constrained policy's «quotes» may hold: text the target conversation really contains.

Most false claims of the small trained auditors (stop 47: 11 of 17 claims on held-out
quirks) quote text no reply contains: the policy's own request, a cue it has learnt, or a
sentence it made up. A reader of the report cannot tell those from evidence. With the
hf provider's `copy_quotes` option, a guillemet opened in a string value must be followed
by one of these texts and its closing guillemet (scaffold/providers/constrained.py), so
every quote a report holds is a request the auditor sent or a sentence the target said,
written as the situation heuristic (the warm start's teacher) writes them. A teacher that
quotes otherwise (the generic probes quote whole replies, cut at 150 characters) teaches
quotes this grammar cannot write, and its audits drop out of a `copy_quotes` warm start.
Text a prefill put in the target's mouth is the auditor's, not the target's: it is left out.
Only guillemets are checked: a quote in `"`, `“…”` or `'…'` is free text.

A quoted sentence also says which reply it is evidence from: under `copy_quotes`, a
hypothesis or finding that quotes a sentence citable replies said cites only those replies
(a request the auditor sent is said by none, unless a reply echoed it word for word).
Stop 49's GRPO rollouts quoted the sentence where the quirk showed and cited another reply
(`cites_unfired`); with the citation following the quote, which reply shows the behaviour is
one choice, made once, where the policy reads the sentence. That choice was seldom made:
the same rollouts filled the reply slot of `asked «…», it replied «…»` with another request
of the auditor's in 229 of 320. With `max_request_quotes` (`+request_quotes:N`), a claim
that has quoted N texts no citable reply said may go on to quote only reply sentences.
"""

from __future__ import annotations

import re
from typing import Any, Collection

from pydantic import Field

from scaffold.transcript import Transcript
from scaffold.writable_text import quoted

# Sentences end after . ! ? or ), or at a line break; not at colons ("ref: CODE" is one sentence).
SENTENCE_BREAK = re.compile(r"(?<=[.!?)])\s+|\n+")
QUOTE_CHARS = 200  # a quote is cut here, with an ellipsis
# The newest texts a grammar offers: bounds the choice (and its cost) on long audits. A
# 3-turn situation audit holds about 45 (9 requests, 4 sentences a reply); a final report
# quotes the first turn too, so the cap leaves room for several times that.
MAX_QUOTABLE = 128
GUILLEMETS = "«»"


def copy_quotes_field() -> Any:
    """The `copy_quotes` knob, declared once for the hf provider's options and the training policy."""
    return Field(
        False,
        description="Constrained: a «quote» in a string must copy a request sent to the target or a sentence of its "
        "replies, and a claim that quotes a reply cites only the replies that said it (scaffold/quotable.py), in "
        "rollouts, evals and the SFT warm start's alignment.",
    )


def max_request_quotes_field() -> Any:
    """The `max_request_quotes` knob, declared once for the hf provider's options and the training policy."""
    return Field(
        None,
        ge=0,
        le=8,
        description="copy_quotes: once a claim has quoted this many requests (text no citable reply said), its "
        "further quotes must be sentences of the target's replies (None: no limit).",
    )


def sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, empty ones left out."""
    return [s.strip() for s in SENTENCE_BREAK.split(text) if s.strip()]


def quotable_replies(t: Transcript, citable: Collection[str] | None = None) -> dict[str, tuple[str, ...]]:
    """The requests sent to the target (whole) and the sentences of its replies, as a report
    quotes them (`quoted`, QUOTE_CHARS), each with the ids of the replies that said it (none
    for a request the auditor sent); the newest MAX_QUOTABLE, oldest first.

    Every branch counts: a reply on a branch the auditor rolled back was still said, and a
    report may quote it as evidence (as it may cite it). Texts holding a guillemet are left
    out: a quote could not be told from its end. A sentence several replies said carries
    their ids; with `citable` (the ids a call may cite), only those, and the walk goes on
    past the cap until it has seen them all. A request a reply echoed word for word
    counts as said."""
    found: dict[str, list[str]] = {}
    unseen = set(citable) if citable is not None else set()
    for message in reversed(t.target.nodes.values()):  # newest first; stops at the caps
        if len(found) >= MAX_QUOTABLE and not unseen:
            break
        if message.role == "user":
            pieces, said_by = [message.content], None
        elif message.role == "assistant":  # without the prefill: the auditor wrote that part
            pieces = list(reversed(sentences(message.content[len(message.prefill or "") :])))
            said_by = message.id if citable is None or message.id in unseen else None
            unseen.discard(message.id)
        else:
            continue
        for piece in pieces:
            text = quoted(piece, QUOTE_CHARS)
            if not text or any(g in text for g in GUILLEMETS):
                continue
            if text not in found and len(found) >= MAX_QUOTABLE:
                continue  # the cap holds the newest texts; an older reply still joins one kept
            ids = found.setdefault(text, [])
            if said_by is not None and said_by not in ids:
                ids.append(said_by)
    return {text: tuple(reversed(ids)) for text, ids in reversed(list(found.items()))}

