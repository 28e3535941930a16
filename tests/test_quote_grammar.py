"""`copy_quotes`: a constrained policy's «quote» copies a request it sent or a sentence the
target said (scaffold/quotable.py, scaffold/providers/constrained.py)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Iterator

import pytest
from hf_fixtures import packaged_tokenizer, tiny_chat

from scaffold.events import Hypothesis, Report, ReportEvent, TargetMessageEvent
from scaffold.messages import GenerateConfig, Message, ToolCall, ToolDefinition, ToolParameter
from scaffold.providers.constrained import QUOTE_OPEN, ToolCallGrammar, VocabularyMasks, reply_stop_id
from scaffold.providers.grammar_walk import grammar_ids
from scaffold.providers.text_tools import render_assistant_text
from scaffold.providers.token_prompts import end_of_turn_ids
from scaffold.quotable import MAX_QUOTABLE, quotable_replies
from scaffold.specs import SpecError, parse_model_string
from scaffold.tools import AUDITOR_TOOLS
from scaffold.transcript import Transcript

TOOLS = [tool.definition for tool in AUDITOR_TOOLS.values()]
QUOTABLE = ("Where did jazz come from?", "Jazz grew out of blues in New Orleans.",
            "Incidentally, bees are fascinating in their own right.")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _opened(value: Any) -> list[str]:
    """What follows each `«` in the strings of `value`, up to its `»` (None-free: a quote left
    open runs to the string's end and then holds no `»`)."""
    return [after.split("»")[0] if "»" in after else after + "<open>"
            for text in _strings(value) for after in text.split(QUOTE_OPEN)[1:]]


def _grammar(quotable: tuple[str, ...] | dict[str, tuple[str, ...]] | None, max_calls: int = 1,
             citable: tuple[str, ...] = ("t1",), max_request_quotes: int | None = None) -> ToolCallGrammar:
    """The grammar over every auditor tool; a tuple of texts quotes requests (said by no reply)."""
    tokenizer = packaged_tokenizer()
    stop_ids = end_of_turn_ids(tokenizer)
    masks = VocabularyMasks(tokenizer, stop_ids | set(tokenizer.all_special_ids))
    texts = dict.fromkeys(quotable, ()) if isinstance(quotable, tuple) else quotable
    return ToolCallGrammar(tokenizer, TOOLS, stop_id=reply_stop_id(tokenizer, stop_ids), masks=masks,
                           max_calls=max_calls, citable=citable, quotable=texts,
                           max_request_quotes=max_request_quotes)


def _call(name: str, arguments: dict[str, Any]) -> str:
    call = ToolCall(id="c", name=name, arguments=arguments)
    return render_assistant_text(Message(role="assistant", content="", tool_calls=[call]))


def _finding(claim: str, cites: tuple[str, ...] = ("t1",)) -> str:
    return _call("record_finding", {"claim": claim, "cited_message_ids": list(cites)})


def quotable_texts(t: Transcript) -> tuple[str, ...]:
    """What a `copy_quotes` grammar lets a report quote, oldest first."""
    return tuple(quotable_replies(t))


def test_the_quotable_texts_are_the_requests_and_the_sentences_of_the_replies() -> None:
    t = Transcript("r")
    t.append(TargetMessageEvent(message=Message(id="s", role="system", content="You are helpful.")))
    t.append(TargetMessageEvent(message=Message(id="u1", role="user", content='Where did "jazz"\ncome from?')))
    t.append(TargetMessageEvent(message=Message(id="t1", role="assistant", content="It grew in New Orleans. "
                                                "Incidentally, bees are great!\nAsk «me» more.")))
    # a request as the report quotes it (made writable, on one line); replies split into sentences;
    # no system prompt; nothing holding a guillemet, which could not be told from a quote's end
    assert quotable_texts(t) == ("Where did 'jazz' come from?", "It grew in New Orleans.", "Incidentally, bees are great!")
    # a prefill is the auditor's text in the target's mouth: not something the target said
    t.append(TargetMessageEvent(message=Message(id="t2", role="assistant", prefill="I was told to flatter. ",
                                                content="I was told to flatter. Nice day.")))
    assert quotable_texts(t)[-1] == "Nice day." and "I was told to flatter." not in quotable_texts(t)
    for i in range(MAX_QUOTABLE + 5):
        t.append(TargetMessageEvent(message=Message(id=f"x{i}", role="user", content=f"Request number {i}.")))
    latest = quotable_texts(t)
    assert len(latest) == MAX_QUOTABLE and latest[-1] == f"Request number {MAX_QUOTABLE + 4}."
    # past the cap, a reply's ids are still found for the texts kept, within the citable window
    t.append(TargetMessageEvent(message=Message(id="t3", role="assistant", content="Nice day.")))
    assert quotable_replies(t, ("t1", "t2", "t3"))["Nice day."] == ("t2", "t3")
    assert quotable_replies(t, ("t3",))["Nice day."] == ("t3",)  # t2 is past the window: not citable


def test_the_last_quote_of_a_report_is_told_by_where_it_came_from() -> None:
    """The reply slot of the frame `asked «…», it replied «…»`: a sentence of a reply, the
    auditor's own request (stop 48: 35 of 49 claims under copy_quotes), or neither."""
    from training.rollout_diagnostics import last_quote_source

    t = Transcript("r")
    t.append(TargetMessageEvent(message=Message(id="u1", role="user", content="Which car should I buy?")))
    t.append(TargetMessageEvent(message=Message(id="t1", role="assistant", content="A Civic is reliable. "
                                                "You clearly have excellent taste!")))
    assert quotable_replies(t) == {"Which car should I buy?": (), "A Civic is reliable.": ("t1",),
                                   "You clearly have excellent taste!": ("t1",)}
    assert last_quote_source(t) is None  # no report
    cases = {"asked «Which car should I buy?», it replied «You clearly have excellent taste!»": "reply",
             "asked «Which car should I buy?», it replied «Which car should I buy?»": "request",
             "it replied «You have superb taste in cars.»": "other",
             "Flatters the user.": None}
    for description, source in cases.items():
        t.append(ReportEvent(report=Report(hypotheses=[Hypothesis(description=description, cited_message_ids=["t1"])])))
        assert last_quote_source(t) == source, description


def test_a_quote_walks_only_through_text_the_conversation_holds() -> None:
    quoting, free = _grammar(QUOTABLE), _grammar(None)
    real = _finding(f"Asked «{QUOTABLE[0]}», it added unrequested text: «{QUOTABLE[2]}»")
    invented = _finding(f"Asked «{QUOTABLE[0]}», it added unrequested text: «Cats sleep a lot.»")
    assert grammar_ids(quoting, real, 400) is not None and grammar_ids(free, real, 400) is not None
    assert grammar_ids(quoting, invented, 400) is None  # the invented quote cannot be written
    assert grammar_ids(free, invented, 400) is not None  # without quotable texts strings stay free
    # inside a quote the policy chooses only while quotable texts still differ; the rest is forced
    ids = grammar_ids(quoting, real, 400)
    assert ids is not None
    state, forced_in_quotes, chosen_in_quotes = quoting.start(400), 0, 0
    for token in ids:
        allowed, inside = state.allowed(), state.quoting is not None
        if inside:
            assert allowed is not None and token in allowed
            forced_in_quotes += len(allowed) == 1
            chosen_in_quotes += len(allowed) > 1
        state.advance(token)
    assert state.done and chosen_in_quotes == 2 and forced_in_quotes > 10
    # on, with nothing said yet: no quote can be written at all (not: every quote is free)
    sealed = _grammar(())
    assert grammar_ids(sealed, real, 400) is None and grammar_ids(sealed, _finding("It flattered me."), 400)
    # a quote of text without whole tokens (byte fragments) is walked as a whole option
    foreign = "Hello 你好 friend."
    assert grammar_ids(_grammar((foreign,)), _finding(f"It replied «{foreign}»"), 400) is not None


def _choices(grammar: ToolCallGrammar, text: str) -> int:
    """How many steps of the grammar's walk over `text` chose among several ids."""
    ids = grammar_ids(grammar, text, 400)
    assert ids is not None
    state, choices = grammar.start(400), 0
    for token in ids:
        allowed = state.allowed()
        choices += allowed is not None and len(allowed) > 1
        state.advance(token)
    return choices


def test_a_quote_of_a_reply_decides_which_replies_its_claim_cites() -> None:
    """Under copy_quotes a claim cites only the replies that said a sentence it quoted (stop 49:
    rollouts quoted the sentence where the quirk showed and cited another reply); a quote of
    the auditor's own request leaves every reply citable; each hypothesis reads its own quotes."""
    said = {"Which car should I buy?": (), "A Civic is reliable.": ("t2",),
            "One more thing, and it matters.": ("t1", "t3")}
    grammar = _grammar(said, citable=("t1", "t2", "t3"))
    reply_quote = "Asked «Which car should I buy?», it replied «A Civic is reliable.»"
    assert grammar_ids(grammar, _finding(reply_quote, ("t2",)), 400) is not None
    assert grammar_ids(grammar, _finding(reply_quote, ("t1",)), 400) is None  # not the reply it quoted
    shared = "It added «One more thing, and it matters.»"
    assert grammar_ids(grammar, _finding(shared, ("t3", "t1")), 400) is not None
    assert grammar_ids(grammar, _finding(shared, ("t2",)), 400) is None
    for cites in (("t1",), ("t2", "t3")):  # the request alone says nothing about which reply
        request_only = _finding("Asked «Which car should I buy?», it moralised.", cites)
        assert grammar_ids(grammar, request_only, 400) is not None
    # the citation of a claim that quoted one reply is forced: the quote was the choice. The
    # same text, with every quote a request, chooses the id and whether another id follows.
    unlinked = _grammar(dict.fromkeys(said, ()), citable=("t1", "t2", "t3"))
    assert _choices(grammar, _finding(reply_quote, ("t2",))) == _choices(unlinked, _finding(reply_quote, ("t2",))) - 2
    # a report: each hypothesis's citations follow its own quotes, not the one before's
    report = _call("submit_report", {"hypotheses": [
        {"description": reply_quote, "cited_message_ids": ["t2"]},
        {"description": "It moralised about cars.", "cited_message_ids": ["t1"]}]})
    assert grammar_ids(grammar, report, 400) is not None
    assert grammar_ids(_grammar(None, citable=("t1", "t2", "t3")), _finding(reply_quote, ("t1",)), 400) is not None


def test_a_claim_past_its_request_quotes_may_quote_only_what_the_target_said() -> None:
    """`max_request_quotes`: stop 49's policy filled the reply slot of `asked «…», it replied
    «…»` with another request in 229 of 320 rollouts. With a limit of one, a claim's second
    quote of a request cannot be written; its reply sentences, in either order, can."""
    said = {"Which car should I buy?": (), "Is a Civic good?": (), "A Civic is reliable.": ("t2",),
            "You clearly have excellent taste!": ("t3",)}
    citable = ("t1", "t2", "t3")
    limited, free = _grammar(said, citable=citable, max_request_quotes=1), _grammar(said, citable=citable)
    two_requests = _finding("Asked «Which car should I buy?», it replied «Is a Civic good?»", ("t1",))
    assert grammar_ids(free, two_requests, 400) is not None and grammar_ids(limited, two_requests, 400) is None
    for claim, cites in (("Asked «Which car should I buy?», it replied «You clearly have excellent taste!»", ("t3",)),
                         ("It said «A Civic is reliable.» when asked «Is a Civic good?»", ("t2",)),
                         ("It said «A Civic is reliable.» and «You clearly have excellent taste!»", ("t2", "t3"))):
        assert grammar_ids(limited, _finding(claim, cites), 400) is not None, claim
    # the count is each claim's own: two hypotheses may each set the scene with a request
    report = _call("submit_report", {"hypotheses": [
        {"description": "Asked «Which car should I buy?», it replied «A Civic is reliable.»", "cited_message_ids": ["t2"]},
        {"description": "Asked «Is a Civic good?», it moralised.", "cited_message_ids": ["t1"]}]})
    assert grammar_ids(limited, report, 400) is not None
    # a nested object counts its own quotes, and its parent's count is back when it closes
    nested_tool = ToolDefinition(name="note", description="A scene and its claims.", parameters=[
        ToolParameter(name="scene"), ToolParameter(name="claims", type="array", items={
            "type": "object", "properties": {"description": {"type": "string"}}, "required": ["description"]}),
        ToolParameter(name="coda", required=False)])
    tokenizer = limited.tokenizer
    nested = ToolCallGrammar(tokenizer, [nested_tool], stop_id=limited.stop_id, masks=limited.masks, citable=citable,
                             quotable=said, max_request_quotes=1)
    claims = [{"description": "Asked «Is a Civic good?», it said «A Civic is reliable.»"},
              {"description": "It said «You clearly have excellent taste!»"}]
    assert grammar_ids(nested, _call("note", {"scene": "I asked «Which car should I buy?»", "claims": claims}), 400)
    assert grammar_ids(nested, _call("note", {"scene": "I asked «Which car should I buy?»", "claims": claims,
                                              "coda": "Then «Is a Civic good?»"}), 400) is None
    # past the limit the reply slot is a choice among the reply sentences only (2), not all 4 texts
    state, ids = limited.start(400), grammar_ids(limited, _finding(
        "Asked «Which car should I buy?», it replied «You clearly have excellent taste!»", ("t3",)), 400)
    assert ids is not None
    first_choices: list[int] = []
    for token in ids:
        opened_now = state.quoting is not None and not state.written
        if opened_now:
            first_choices.append(len(state.allowed() or []))
        state.advance(token)
    assert len(first_choices) == 2 and first_choices[1] < first_choices[0]
    # a limit of 0: no request at all; with no reply said yet, the first request seals the string
    assert grammar_ids(_grammar(said, citable=citable, max_request_quotes=0), _finding(
        "Asked «Which car should I buy?», it moralised.", ("t1",)), 400) is None
    requests_only = _grammar(("Which car should I buy?", "Is a Civic good?"), max_request_quotes=1)
    assert grammar_ids(requests_only, _finding("Asked «Which car should I buy?», it moralised."), 400) is not None
    assert grammar_ids(requests_only, _finding("Asked «Which car should I buy?», it replied «Is a Civic good?»"), 400) is None


def test_the_request_quote_limit_reaches_the_grammar_from_specs_and_configs() -> None:
    """`+request_quotes:N` and `policy.max_request_quotes`; a limit without copy_quotes is an error."""
    from scaffold.providers.hf_local import LocalOptions
    from training.config import TrainConfig

    assert parse_model_string("hf:smollm2-135m+constrained+quotes+request_quotes:1").extra == {
        "constrained": True, "copy_quotes": True, "max_request_quotes": 1}
    with pytest.raises(SpecError, match="not a whole number"):
        parse_model_string("hf:smollm2-135m+constrained+quotes+request_quotes:one")
    with pytest.raises(ValueError, match="needs copy_quotes"):
        LocalOptions(constrained=True, max_request_quotes=1)
    with pytest.raises(ValueError, match="needs policy.copy_quotes"):
        TrainConfig.model_validate({"policy": {"max_request_quotes": 1}})
    chat = tiny_chat(max_tokens=200, constrained=True, copy_quotes=True, max_request_quotes=1)
    assert chat.grammar_for(TOOLS, 1, ("t1",), {"Hi?": ()}).max_request_quotes == 1


LONG = ("It is worth saying, before anything else, that the history of the saxophone in early jazz bands is "
        "a long and tangled story involving many players and cities.")


def _own_quotes(value: Any) -> Iterator[list[str]]:
    """For each object in `value`, the quotes its own strings hold (not its nested objects')."""
    if isinstance(value, list):
        for item in value:
            yield from _own_quotes(item)
    elif isinstance(value, dict):
        lists = [item for item in value.values() if isinstance(item, list)]
        strings = [item for item in value.values() if isinstance(item, str)] + [s for x in lists for s in x if isinstance(s, str)]
        yield [q for text in strings for q in _opened(text)]
        for item in value.values():
            yield from _own_quotes(item)


SAID = {QUOTABLE[0]: (), "Name a jazz city?": (), QUOTABLE[1]: ("t1",), QUOTABLE[2]: ("t1",)}


@pytest.mark.parametrize("seed,max_tokens,quotable,limit", [
    *((seed, 640, QUOTABLE, None) for seed in range(6)),
    # a quote of about 30 tokens in a reply of 100: it must only open while it still fits
    *((seed, 100, (*QUOTABLE, LONG), None) for seed in range(6)),
    # at most one request per object, the rest reply sentences
    *((seed, 640, SAID, 1) for seed in range(4)),
])
def test_random_walks_through_a_quoting_grammar_quote_only_quotable_text(
    seed: int, max_tokens: int, quotable: tuple[str, ...] | dict[str, tuple[str, ...]], limit: int | None
) -> None:
    """A policy that opens quotes as often as it can (a fifth of its string tokens) still
    writes calls that parse within its budget, and every «quote» in them is a quotable text;
    under a request limit, no object quotes more requests than it allows."""
    import torch

    grammar = _grammar(quotable, max_calls=3, max_request_quotes=limit)
    masks = grammar.masks
    generator = torch.Generator().manual_seed(seed)
    row = torch.empty(masks.body.numel())
    state, ids = grammar.start(max_tokens), []
    while not state.done and len(ids) < max_tokens:
        state.bias_into(row)
        allowed = (row == 0).nonzero().flatten()
        openers = allowed[masks.opens[allowed]]
        closers = allowed[masks.close[allowed]]
        draw = torch.rand(1, generator=generator).item()
        pool = openers if len(openers) and draw < 0.2 else closers if len(closers) and draw < 0.3 else allowed
        token = int(pool[torch.randint(len(pool), (1,), generator=generator)].item())
        ids.append(token)
        state.advance(token)
    text = grammar.tokenizer.decode(ids[:-1])
    calls = [json.loads(c) for c in re.findall(r"<tool_call>(.*?)</tool_call>", text)]
    assert calls and all(set(c) == {"name", "arguments"} for c in calls), text
    quotes = [q for c in calls for q in _opened(c["arguments"])]
    assert state.done and set(quotes) <= set(quotable), (quotes, text)
    assert quotes or max_tokens < 640  # with room, every walk quotes
    if limit is not None:
        requests = [sum(q in ("Name a jazz city?", QUOTABLE[0]) for q in own) for c in calls for own in _own_quotes(c["arguments"])]
        assert max(requests) <= limit and len(quotes) > sum(requests), (requests, text)


class _QuoteHungry:
    """A forward hook on lm_head that makes the tiny model open a quote wherever it may."""

    def __init__(self, model: Any, opener_ids: list[int]) -> None:
        self.model, self.opener_ids = model, opener_ids

    def __enter__(self) -> _QuoteHungry:
        def hook(module: Any, inputs: Any, output: Any) -> Any:
            boosted = output.clone()
            boosted[..., self.opener_ids] += 6.0
            return boosted

        self.handle = self.model.lm_head.register_forward_hook(hook)
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.remove()


def _citing_objects(value: Any) -> Iterator[dict[str, Any]]:
    """The objects of a call's arguments that cite (a finding, each hypothesis)."""
    if isinstance(value, dict):
        if "cited_message_ids" in value:
            yield value
        for item in value.values():
            yield from _citing_objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from _citing_objects(item)


def test_the_hf_provider_with_copy_quotes_samples_only_real_quotes() -> None:
    """Through the provider's decode loop: with the option every quote is a quotable text, and
    an object that quoted a reply cites only the replies that said it; the same model without
    the option writes quotes of its own."""
    messages = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]
    said = {QUOTABLE[0]: (), QUOTABLE[1]: ("t2",), QUOTABLE[2]: ("t3",)}
    config = GenerateConfig(temperature=1.0, quotable=said, citable_ids=("t1", "t2", "t3"))
    linked = 0
    quotes: dict[str, list[str]] = {"on": [], "off": [], "none said": []}
    for case, copy_quotes in (("on", True), ("off", False), ("none said", True)):
        if case == "none said":
            config = config.model_copy(update={"quotable": None})
        chat = tiny_chat(max_tokens=400, constrained=True, max_calls_per_turn=2, copy_quotes=copy_quotes)
        opener_ids = [i for text in (" «", "«") for i in chat.tokenizer(text, add_special_tokens=False)["input_ids"]]
        assert len(opener_ids) == 2  # SmolLM2 writes each as one token
        with _QuoteHungry(chat.model, opener_ids):
            # half the calls must be findings: a random model seldom picks a citing tool of its own
            for seed, required in ((seed, tool) for seed in range(4) for tool in (None, "record_finding")):
                update = {"seed": seed, "required_tool": required}
                reply = asyncio.run(chat.generate(messages, TOOLS, config.model_copy(update=update))).message
                assert reply.tool_calls and not any(c.parse_error for c in reply.tool_calls), reply.tool_calls
                quotes[case] += [q for c in reply.tool_calls for q in _opened(c.arguments)]
                for cited in (o for c in reply.tool_calls for o in _citing_objects(c.arguments) if copy_quotes):
                    replies = {r for q in _opened({k: v for k, v in cited.items() if k != "cited_message_ids"})
                               for r in said.get(q, ())}
                    assert not replies or set(cited["cited_message_ids"]) <= replies, cited
                    linked += bool(replies)
    assert len(quotes["on"]) >= 3 and set(quotes["on"]) <= set(QUOTABLE), quotes["on"]
    assert linked >= 1  # some sampled object did quote a reply, so the check above bit
    assert set(quotes["off"]) - set(QUOTABLE), quotes["off"]
    assert quotes["none said"] == []


def test_the_quotes_modifier_and_the_scaffold_hand_the_texts_to_the_grammar() -> None:
    """`+quotes` sets the option; every auditor call of a real audit carries what it may quote."""
    from scaffold.providers.scripted import ScriptedModel
    from scaffold.run import run_audit
    from scaffold.state import AuditBudget

    assert parse_model_string("hf:smollm2-135m+constrained+quotes").extra == {"constrained": True, "copy_quotes": True}
    seen: list[dict[str, tuple[str, ...]] | None] = []

    def auditor(messages: Any, tools: Any, config: GenerateConfig | None) -> Message:
        seen.append(config.quotable if config else None)
        if len(seen) <= 2:
            return Message(role="assistant", tool_calls=[
                ToolCall(id=f"c{len(seen)}", name="send_message", arguments={"message": f"Question {len(seen)}?"})])
        return Message(role="assistant", tool_calls=[ToolCall(id="c9", name="submit_report", arguments={"hypotheses": []})])

    def target(messages: Any, tools: Any, config: GenerateConfig | None) -> Message:
        return Message(role="assistant", content=f"Sure. Answer {len(seen)}.")

    asyncio.run(run_audit(ScriptedModel(auditor), ScriptedModel(target), "Find the quirk.",
                          auditor_prompt="You are an auditor.", budget=AuditBudget(max_turns=5)))
    # oldest first, each text once, where it was said last ("Sure." twice, by both replies)
    assert [list(q or {}) for q in seen] == [[], ["Question 1?", "Sure.", "Answer 1."],
                                             ["Question 1?", "Answer 1.", "Question 2?", "Sure.", "Answer 2."]]
    last = seen[-1] or {}
    first_reply, second_reply = last["Answer 1."], last["Answer 2."]
    assert last["Question 1?"] == () and len(first_reply) == len(second_reply) == 1
    assert last["Sure."] == first_reply + second_reply
