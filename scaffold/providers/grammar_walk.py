"""The tokens a constrained policy would write for a given call: a teacher's call walked through the grammar.

Teacher forcing tokenizes text naturally, but the grammar (constrained.py) writes a call in
segments: structure it forces, choices between whole options, and free strings closed by a
token that ends with `"`. The two disagree where a natural token spans a segment boundary:
SmolLM2 writes the end of `send_message` as `?"` + `}}`, while the grammar closes the string
and then offers `, "prefill": ` or `}`. A warm start taught `}}` finds it masked, and the
choice renormalises onto whatever is left (stop 45: a `prefill` in 89 of 163 held-out calls,
against 0 of 1,800 for the teacher). Walking the teacher's call through the grammar gives the
ids the policy must learn to pick.

Two pieces:
  * `canonical_arguments` puts a call into the only form the grammar can write: required keys
    first in the schema's order (`cited_message_ids` among them when there are ids to cite),
    then the others in the teacher's order; numbers on the grammar's grid; no citation key
    when nothing is citable.
  * `grammar_ids` walks `ToolCallGrammar` over the call text: forced ids as they are, at a
    choice the option that matches the text, a free string as the natural tokens of its
    content and closing `"` (in a string that quotes, up to each `«`; the quote is a choice).
    None when the grammar cannot write the text.
"""

from __future__ import annotations

from typing import Any, Sequence

from scaffold.messages import CITED_IDS_ARGUMENT
from scaffold.providers.constrained import (
    INTEGER_OPTIONS,
    NUMBER_OPTIONS,
    QUOTE_OPEN,
    FreeString,
    GrammarState,
    ToolCallGrammar,
)

_GRID = tuple(float(o) for o in NUMBER_OPTIONS)
_INTEGERS = tuple(int(o) for o in INTEGER_OPTIONS)


def canonical_arguments(arguments: dict[str, Any], schema: dict[str, Any], citable: Sequence[str] | None) -> dict[str, Any]:
    """`arguments` in the key order and number grid the grammar writes (values of keys the
    schema does not know are left as they are, and the walk then refuses them)."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required = [name for name in schema.get("required", []) if name in properties]
    if citable is not None and CITED_IDS_ARGUMENT in properties and CITED_IDS_ARGUMENT not in required:
        if citable:
            required.append(CITED_IDS_ARGUMENT)
        elif arguments.get(CITED_IDS_ARGUMENT) == []:
            arguments = {k: v for k, v in arguments.items() if k != CITED_IDS_ARGUMENT}
    order = [k for k in required if k in arguments] + [k for k in arguments if k not in required]
    return {key: _canonical_value(arguments[key], properties.get(key), citable) for key in order}


def _canonical_value(value: Any, schema: dict[str, Any] | None, citable: Sequence[str] | None) -> Any:
    kind = (schema or {}).get("type")
    if schema is None or schema.get("enum"):
        return value
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return min(_GRID, key=lambda g: abs(g - value))
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, _INTEGERS[0]), _INTEGERS[-1])
    if kind == "array" and isinstance(value, list):
        items = schema.get("items") or {"type": "string"}
        return [_canonical_value(v, items, citable) for v in value]
    if kind == "object" and isinstance(value, dict):
        return canonical_arguments(value, schema, citable)
    return value


def grammar_ids(grammar: ToolCallGrammar, text: str, max_tokens: int) -> list[int] | None:
    """The ids the grammar writes for `text` (calls joined by newlines), ending with its stop
    id; None when the grammar cannot write exactly `text` within `max_tokens`."""
    tokenizer = grammar.tokenizer
    state = grammar.start(max_tokens)
    ids: list[int] = []
    pending: list[int] = []  # the natural tokens of the free string being written
    at = 0
    while not state.done:
        if state.quoting is not None:  # a quote is written whole: the option its text copies
            option = _quoted_option(state, text, at)
            if option is None:
                return None
            for token in option:
                ids.append(token)
                state.advance(token)
            at += len(tokenizer.decode(list(option)))
            continue
        allowed = state.allowed()
        if allowed is None or pending:
            if not pending:
                pending, at = _string_piece(grammar, state, text, at)
                if not pending:
                    return None
            token = pending.pop(0)
            if (allowed is not None and token not in allowed) or not _string_token_fits(state, token, not pending):
                return None  # over the string cap, or a token the string mask refuses
        else:
            token = _matching(tokenizer, allowed, text, at, grammar.stop_id)
            if token is None:
                return None
            if token != grammar.stop_id:
                at += len(tokenizer.decode([token]))
        ids.append(token)
        state.advance(token)
    return ids if at == len(text) and ids and ids[-1] == grammar.stop_id else None


def _string_piece(grammar: ToolCallGrammar, state: GrammarState, text: str, at: int) -> tuple[list[int], int]:
    """The natural tokens of a string's text from `at` to its closing `"` or, in a string that
    quotes, to the next `«` (the quote is then a choice); and where the text goes on."""
    end, opening = text.find('"', at), text.find(QUOTE_OPEN, at)
    if isinstance(state.segment, FreeString) and state.segment.quotes is not None and 0 <= opening < end:
        end = opening
    if end < 0:
        return [], at
    return list(grammar.encode(text[at : end + 1])), end + 1


def _quoted_option(state: GrammarState, text: str, at: int) -> tuple[int, ...] | None:
    """The ids of the quotable text (with its `»`) that `text` copies at `at`, or None.

    Whole options, not token by token: a byte-level fragment decodes to U+FFFD on its own,
    so a quote of text without whole tokens (CJK, emoji) is matched only as a whole."""
    assert state.quoting is not None
    decode = state.grammar.tokenizer.decode
    for option in state.quoting.options:
        quoted = decode(list(option))
        if text.startswith(quoted, at):
            return option
    return None


def _string_token_fits(state: GrammarState, token: int, last: bool) -> bool:
    """Whether the string mask allows `token`, and it ends the piece exactly when it is `last`."""
    masks, segment = state.grammar.masks, state.segment
    if state.string_bias()[token] != 0:
        return False
    quotes = isinstance(segment, FreeString) and segment.quotes is not None
    ends = bool(masks.close[token]) or (quotes and bool(masks.opens[token]))
    return ends == last


def _matching(tokenizer: Any, allowed: list[int], text: str, at: int, stop_id: int) -> int | None:
    """The allowed id whose text continues `text` at `at` (the longest), or the stop id at its end."""
    if at == len(text):
        return stop_id if stop_id in allowed else None
    best, best_length = None, 0
    for token in allowed:
        if token == stop_id:
            continue
        piece = tokenizer.decode([token])
        if piece and len(piece) > best_length and text.startswith(piece, at):
            best, best_length = token, len(piece)
    return best
