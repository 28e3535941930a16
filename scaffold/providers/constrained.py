"""Constrained decoding: a local policy's reply is always well-formed tool calls.

With constrained decoding on, a reply is exactly

    <tool_call>{"name": "<a tool>", "arguments": {<the tool's schema>}}</tool_call><end of turn>

or, with `max_calls` N > 1, up to N such calls separated by a newline: after each call
the model chooses another (`\n`) or the end of its turn.

and the grammar is walked token by token. At each step it allows a set of token ids:
  * structure (`<tool_call>{"name": "`, keys, brackets) allows one id: it is forced;
  * a choice (tool name, enum value, optional key or `}`, `, ` or `]`, a number from a
    fixed grid) allows the next ids of the options still consistent with what was
    written; options are prefix-free, so a choice ends when one option is complete;
  * a string value allows every token whose text has no `"`, backslash, `<` or control
    character, plus the tokens that end with a `"` (which close the string); without
    `<` no string can hold a `</tool_call>` that would cut the call when it is parsed;
  * a `cited_message_ids` array, when the call carries `citable_ids`, allows only those
    ids, and at least one (none when there is no target reply yet);
  * with quotable texts (`copy_quotes`, scaffold/quotable.py), a string token that ends
    with `«` opens a quote, which is a choice among those texts, each closed by `»`; no
    other string token may hold a `«`. Every «quote» a report holds is then real text.
    An object whose strings quoted a sentence some citable replies said, before its
    `cited_message_ids`, cites only those replies; a quote no citable reply said (a
    request, or a reply past the citable window) leaves every citable id. With
    `max_request_quotes` N, an object's quotes after its first N of such text must be
    sentences of citable replies: a claim sets the scene with a request and shows the
    behaviour with what the target said.
The decode loop adds -inf to every other id before sampling (or argmax), so the
distribution sampled from is the model's, renormalised over the allowed set.

For training, a token is the policy's (mask 1) when more than one id was allowed, and
the grammar's (mask 0) when it was forced. The recorded logprob is always the model's
own, unmasked log_softmax(logits / T) of the token: the grammar is part of the
environment, and a trainer recomputing logprobs from the weights gets the same number.

Cost: a forced token takes no forward pass of its own: the decode loop (decode.py)
appends a forced run as soon as `allowed()` names one id and reads it with the row's next
pass. A step where the model chooses builds a vocabulary-sized bias. Strings are capped so that the structure can always close within
`max_tokens` (with a budget under ~64 tokens a long call may still be cut off). A quote
opens only while its longest option still fits both caps; inside it, the policy chooses
only where the texts still consistent with what it wrote differ, and the rest is forced.
Reasoning before the call is not allowed: the auditor thinks with the `think` tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Generator, Mapping, Sequence

import torch

from scaffold.messages import CITED_IDS_ARGUMENT, ToolDefinition
from scaffold.writable_text import writable

NUMBER_OPTIONS = tuple(f"{x / 10:.1f}" for x in range(11))  # confidences: 0.0 ... 1.0
INTEGER_OPTIONS = tuple(str(x) for x in range(10))
MAX_ARRAY_ITEMS = 6
MAX_STRING_TOKENS = 256
# Tokens kept for closing the structure when strings run long (brackets, keys, tags).
CLOSING_RESERVE = 40
QUOTE_OPEN, QUOTE_CLOSE = "«", "»"


@dataclass(frozen=True)
class Force:
    ids: tuple[int, ...]


@dataclass(frozen=True)
class Choice:
    options: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class FreeString:
    quotes: Choice | None = None  # what a `«` opened in this string must copy (None: no quotes)


Segment = Force | Choice | FreeString
Program = Generator[Segment, int | None, None]


class VocabularyMasks:
    """Per-tokenizer masks of the tokens allowed inside and at the end of a JSON string."""

    def __init__(self, tokenizer: Any, special_ids: set[int], logits_size: int | None = None) -> None:
        # Models often pad their output layer past the tokenizer (Qwen2.5: 151936 logits,
        # 151665 tokens); the padding ids are never allowed.
        size = max(len(tokenizer), logits_size or 0)
        body = torch.zeros(size, dtype=torch.bool)
        close = torch.zeros(size, dtype=torch.bool)
        opens = torch.zeros(size, dtype=torch.bool)  # string tokens whose only `«` is their last character
        guillemet = torch.zeros(size, dtype=torch.bool)  # tokens that hold (or may begin) a `«` anywhere
        for i in range(len(tokenizer)):
            if i in special_ids:
                continue
            text = tokenizer.decode([i])
            if _string_safe(text):
                body[i] = True
            elif text.endswith('"') and _string_safe(text[:-1], allow_empty=True):
                close[i] = True
            # A byte-level fragment (decoded as U+FFFD) could spell `«` with the next token, so a
            # string that quotes allows none: it can then hold no character its tokenizer lacks
            # a whole token for (CJK, most emoji), which English audits do not need.
            guillemet[i] = QUOTE_OPEN in text or "\ufffd" in text
            opens[i] = bool(body[i]) and text.endswith(QUOTE_OPEN) and QUOTE_OPEN not in text[:-1]
        self.body, self.close, self.opens = body, close, opens
        # Outside quotes every string token is allowed; in a string that quotes, a `«` only
        # ends a token (and opens a quote), and `sealed` is that string with no room left for one.
        self.string_bias = torch.where(body | close, 0.0, float("-inf"))
        plain = (body | close) & ~guillemet
        self.quoting_bias = torch.where(plain | self.opens, 0.0, float("-inf"))
        self.sealed_bias = torch.where(plain, 0.0, float("-inf"))


def reply_stop_id(tokenizer: Any, stop_ids: set[int]) -> int:
    """The id that ends a constrained reply: `<|im_end|>` when it is an end-of-turn id, else the lowest one."""
    stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
    return stop if stop in stop_ids else min(stop_ids)


def _string_safe(text: str, *, allow_empty: bool = False) -> bool:
    # "<" too: a string holding "</tool_call>" would end the block when the reply is parsed,
    # and the call read back would not be the call the policy sampled (scaffold/writable_text.py).
    if not text:
        return allow_empty
    return writable(text)


class ToolCallGrammar:
    """The grammar of one tool call over a list of tools, for one tokenizer."""

    def __init__(
        self,
        tokenizer: Any,
        tools: Sequence[ToolDefinition],
        *,
        stop_id: int,
        masks: VocabularyMasks,
        max_calls: int = 1,
        citable: Sequence[str] | None = None,
        quotable: Mapping[str, Sequence[str]] | None = None,
        max_request_quotes: int | None = None,
    ) -> None:
        if not tools:
            raise ValueError("constrained decoding needs at least one tool")
        self.tokenizer, self.tools, self.stop_id, self.masks = tokenizer, list(tools), stop_id, masks
        self.max_calls = max_calls  # calls per reply: after each, the model chooses another ("\n") or the end
        # The ids a `cited_message_ids` array may hold (None: any string). With ids, the
        # array is required and holds at least one; with none, it is empty or left out.
        self.citable = tuple(citable) if citable is not None else None
        self._encoded: dict[str, tuple[int, ...]] = {}
        # What a quote in a string may copy, each closed by `»` (options are then prefix-free:
        # no text holds a guillemet), with the ids of the replies that said it (none for a
        # request). None: strings are free and quotes are not checked; no texts (nothing
        # said yet): no `«` can be written at all.
        self.quotes: Choice | None = None
        self.quote_replies: tuple[frozenset[str], ...] = ()  # by option of `quotes`
        # Stop 49's policy filled the reply slot of `asked «…», it replied «…»` with another
        # request in 229 of 320 rollouts: evidence of nothing the target did. With a limit,
        # an object that has quoted that many texts no citable reply said may go on to quote
        # only `reply_quotes` (which sentence remains the policy's choice).
        self.max_request_quotes = max_request_quotes
        self.reply_quotes: Choice | None = None
        self.reply_quote_replies: tuple[frozenset[str], ...] = ()  # by option of `reply_quotes`
        if quotable is not None:
            texts = {
                q: frozenset(ids) for q, ids in quotable.items() if q and QUOTE_OPEN not in q and QUOTE_CLOSE not in q
            }
            self.quotes = Choice(tuple(self.encode(q + QUOTE_CLOSE) for q in texts))
            self.quote_replies = tuple(texts.values())
            said = {q: ids for q, ids in texts.items() if ids}
            self.reply_quotes = Choice(tuple(self.encode(q + QUOTE_CLOSE) for q in said))
            self.reply_quote_replies = tuple(said.values())
        self.longest_quote = max((len(o) for o in self.quotes.options), default=0) if self.quotes else 0

    def encode(self, text: str) -> tuple[int, ...]:
        if text not in self._encoded:
            self._encoded[text] = tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return self._encoded[text]

    def start(self, max_tokens: int) -> GrammarState:
        """A fresh walk of the grammar for one reply of at most `max_tokens` tokens."""
        state = GrammarState(self, max_tokens)
        state.program = self._call(state)
        state.advance_segment(None)
        return state

    def _call(self, state: GrammarState) -> Program:
        for count in range(1, self.max_calls + 1):
            yield Force(self.encode('<tool_call>{"name": "'))
            index = yield Choice(tuple(self.encode(t.name + '"') for t in self.tools))
            tool = self.tools[index or 0]
            yield Force(self.encode(', "arguments": '))
            yield from self._value(tool.json_schema(), state)
            yield Force(self.encode("}</tool_call>"))
            # Another call only with room for it: a cut-off call would be an error, not a call.
            if count == self.max_calls or state.used >= state.max_tokens - 3 * CLOSING_RESERVE:
                break
            more = yield Choice((self.encode("\n"), (self.stop_id,)))
            if more == 1:
                return
        yield Force((self.stop_id,))

    def _value(self, schema: dict[str, Any], state: GrammarState) -> Program:
        kind = schema.get("type")
        if schema.get("enum"):
            yield Choice(tuple(self.encode(json.dumps(v)) for v in schema["enum"]))
        elif kind == "string":
            yield Force(self.encode('"'))
            yield FreeString(self.quotes)
        elif kind in ("number", "integer"):
            yield Choice(tuple(self.encode(o) for o in (NUMBER_OPTIONS if kind == "number" else INTEGER_OPTIONS)))
        elif kind == "boolean":
            yield Choice((self.encode("true"), self.encode("false")))
        elif kind == "array":
            yield from self._array(schema.get("items") or {"type": "string"}, state, minimum=min(1, schema.get("minItems", 0)))
        elif kind == "object":
            yield from self._object(schema, state)
        else:  # a schema we do not constrain: an empty object keeps the JSON valid
            yield Force(self.encode("{}"))

    def _array(
        self, items: dict[str, Any], state: GrammarState, limit: int = MAX_ARRAY_ITEMS, minimum: int = 1
    ) -> Program:
        """`minimum` (0 or 1) to `limit` items of schema `items` (the model chooses how many).

        An empty array is offered only for items that open with a token of their own (objects,
        strings): a report that claims nothing (`"hypotheses": []`) must be writable, or a
        constrained policy names something on every clean target."""
        yield Force(self.encode("["))
        opener = {"object": "{", "string": '"'}.get(items.get("type", ""))
        if minimum == 0 and opener is not None and not items.get("enum"):
            picked = yield Choice((self.encode("]"), self.encode(opener)))
            if picked == 0:
                return
            yield from self._opened_value(items, state)
        else:
            yield from self._value(items, state)
        for _ in range(1, limit):
            if state.low_on_budget():
                break
            more = yield Choice((self.encode(", "), self.encode("]")))
            if more == 1:
                return
            yield from self._value(items, state)
        yield Force(self.encode("]"))

    def _opened_value(self, schema: dict[str, Any], state: GrammarState) -> Program:
        """An object or string value whose opening `{` or `"` was already written."""
        if schema.get("type") == "string":
            yield FreeString(self.quotes)
        else:
            yield from self._object(schema, state, opened=True)

    def _object(self, schema: dict[str, Any], state: GrammarState, opened: bool = False) -> Program:
        properties: dict[str, Any] = schema.get("properties") or {}
        required = [name for name in schema.get("required", []) if name in properties]
        optional = [name for name in properties if name not in required]
        if self.citable is not None and CITED_IDS_ARGUMENT in properties:
            optional = [name for name in optional if name != CITED_IDS_ARGUMENT]
            if self.citable and CITED_IDS_ARGUMENT not in required:
                required.append(CITED_IDS_ARGUMENT)
        if not opened:
            yield Force(self.encode("{"))
        # The replies this object's quotes came from, for its citations, and how many of its
        # quotes no citable reply said; a nested object's quotes are its own, and the
        # parent's are back when it closes.
        outer = state.quoted_replies, state.request_quotes
        state.quoted_replies, state.request_quotes = set(), 0
        try:
            yield from self._members(properties, required, optional, state)
        finally:
            state.quoted_replies, state.request_quotes = outer

    def _members(
        self, properties: dict[str, Any], required: list[str], optional: list[str], state: GrammarState
    ) -> Program:
        """An object's members after its `{`: the required ones in order, then the optional
        ones the model picks, then `}`."""
        first = True
        for name in required:
            yield Force(self.encode(("" if first else ", ") + json.dumps(name) + ": "))
            cites = name == CITED_IDS_ARGUMENT and self.citable is not None
            yield from self._citations(state) if cites else self._value(properties[name], state)
            first = False
        while optional and not state.low_on_budget():
            keys = [("" if first else ", ") + json.dumps(name) + ": " for name in optional]
            picked = yield Choice(tuple(self.encode(k) for k in keys) + (self.encode("}"),))
            if picked is None or picked == len(optional):
                return
            yield from self._value(properties[optional.pop(picked)], state)
            first = False
        yield Force(self.encode("}"))

    def _citations(self, state: GrammarState) -> Program:
        """An array of at least one citable id (`[]` when there is none yet): of the citable
        replies that said a sentence the object quoted, when there are any (`quoted_replies`)."""
        if not self.citable:
            yield Force(self.encode("[]"))
            return
        ids = [i for i in self.citable if i in state.quoted_replies] or list(self.citable)
        yield from self._array({"enum": ids}, state, limit=min(MAX_ARRAY_ITEMS, len(ids)))


@dataclass
class GrammarState:
    """Where one reply is in the grammar; the decode loop asks it for the allowed ids."""

    grammar: ToolCallGrammar
    max_tokens: int
    program: Program | None = None
    segment: Segment | None = None
    written: list[int] = field(default_factory=list)  # ids of the current segment
    used: int = 0
    string_tokens: int = 0
    quoting: Choice | None = None  # inside a quote: the texts it may still be
    quoting_replies: tuple[frozenset[str], ...] = ()  # by option of `quoting`: the replies that said it
    quoted_replies: set[str] = field(default_factory=set)  # replies that said the current object's quotes
    request_quotes: int = 0  # the current object's quotes that no citable reply said
    done: bool = False

    def low_on_budget(self) -> bool:
        return self.used >= self.max_tokens - CLOSING_RESERVE

    def advance_segment(self, result: int | None) -> None:
        assert self.program is not None
        try:
            self.segment = self.program.send(result) if self.segment is not None else next(self.program)
        except StopIteration:
            self.segment, self.done = None, True
        self.written, self.string_tokens = [], 0

    def allowed(self) -> list[int] | None:
        """The allowed ids, or None for "a string token" (see `string_bias`)."""
        seg = self.segment
        if self.quoting is not None:
            k = len(self.written)
            return sorted({o[k] for o in self.quoting.options if len(o) > k and list(o[:k]) == self.written})
        if isinstance(seg, Force):
            return [seg.ids[len(self.written)]]
        if isinstance(seg, Choice):
            k = len(self.written)
            return sorted({o[k] for o in seg.options if len(o) > k and list(o[:k]) == self.written})
        if isinstance(seg, FreeString):
            if self.string_tokens >= MAX_STRING_TOKENS or self.low_on_budget():
                return list(self.grammar.encode('"'))[:1]
            return None
        return [self.grammar.stop_id]

    def quotable_now(self) -> tuple[Choice, tuple[frozenset[str], ...]]:
        """What a quote opened now may copy, and by option the replies that said it: every
        quotable text, or only reply sentences once the object has quoted `max_request_quotes`
        texts no citable reply said."""
        g = self.grammar
        assert g.quotes is not None and g.reply_quotes is not None
        if g.max_request_quotes is not None and self.request_quotes >= g.max_request_quotes:
            return g.reply_quotes, g.reply_quote_replies
        return g.quotes, g.quote_replies

    def string_bias(self) -> torch.Tensor:
        """The mask of a string step: any string token, or (in a string that quotes) a `«` only
        at a token's end, and only while a whole quote still fits the budgets."""
        masks, seg = self.grammar.masks, self.segment
        if not isinstance(seg, FreeString) or seg.quotes is None:
            return masks.string_bias
        longest = self.grammar.longest_quote + 1  # the opening token and the longest quote
        room = self.string_tokens + longest < MAX_STRING_TOKENS and self.used + longest < self.max_tokens - CLOSING_RESERVE
        return masks.quoting_bias if self.quotable_now()[0].options and room else masks.sealed_bias

    def bias_into(self, row: torch.Tensor) -> bool:
        """Write this step's mask into `row` (0 allowed, -inf not); True if the step is forced."""
        ids = self.allowed()
        if ids is None:
            row.copy_(self.string_bias().to(row.device))
            return False
        row.fill_(float("-inf"))
        row[ids] = 0.0
        return len(ids) == 1

    def advance(self, token: int) -> None:
        """Take the sampled (or forced) `token` and move through the grammar."""
        self.used += 1
        seg = self.segment
        if self.quoting is not None:  # a quote's text and `»`; then the string goes on
            self.string_tokens += 1
            self.written.append(token)
            done = next((i for i, o in enumerate(self.quoting.options) if list(o) == self.written), None)
            if done is not None:
                said_by = self.quoting_replies[done]
                self.quoted_replies |= said_by
                self.request_quotes += not said_by
                self.quoting, self.quoting_replies, self.written = None, (), []
            return
        if isinstance(seg, FreeString):
            self.string_tokens += 1
            if self.grammar.masks.close[token]:  # `"` itself is a closing token
                self.advance_segment(None)
            elif seg.quotes is not None and self.grammar.masks.opens[token]:
                (self.quoting, self.quoting_replies), self.written = self.quotable_now(), []
            return
        self.written.append(token)
        if isinstance(seg, Force) and len(self.written) == len(seg.ids):
            self.advance_segment(None)
        elif isinstance(seg, Choice):
            finished = [i for i, o in enumerate(seg.options) if list(o) == self.written]
            if finished:
                self.advance_segment(finished[0])
        elif seg is None:
            self.done = True
