"""Property tests: a local policy's rollout merges into exact training rows.

For random conversations (environment texts, temperatures, seeds, reply lengths, with
and without constrained decoding) the tiny random Llama plays several turns of one
rollout; its turns merge into one row whose ids are exactly what the policy saw and
wrote, whose mask-1 tokens are exactly the sampled ones, and whose logprobs match a
fresh full forward pass of the same fp32 model within 1e-4.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from hf_fixtures import packaged_tokenizer, tiny_chat, tiny_model, torch
from scaffold.messages import GenerateConfig, Message, ToolDefinition, ToolParameter
from scaffold.providers.scripted import ScriptedModel
from scaffold.run import run_audit
from tests.conftest import echo_target
from training.rows import merge_turns, rows_from_transcript

TOOLS = [
    ToolDefinition(
        name="send_message",
        description="Send a message to the target.",
        parameters=[ToolParameter(name="message", description="The message.")],
    ),
    ToolDefinition(name="end_conversation", description="End the audit."),
]

# Control characters and some astral ones (the GGUF vocabulary lacks a few byte tokens) do
# not survive decode(encode(text)) in this tokenizer; the ids are still exact, but the text
# comparisons below would fail for the wrong reason.
_TEXT = st.text(alphabet=st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs", "Cc")), max_size=40)


@st.composite
def environment_turn(draw: st.DrawFn) -> list[Message]:
    """What the environment adds after a policy turn: tool results and/or a user message."""
    kinds = draw(st.lists(st.sampled_from(["user", "tool"]), min_size=1, max_size=3))
    out: list[Message] = []
    for i, kind in enumerate(kinds):
        if kind == "tool":
            out.append(Message(role="tool", content=draw(_TEXT), tool_call_id=f"call_{i}", is_error=draw(st.booleans())))
        else:
            out.append(Message(role="user", content=draw(_TEXT)))
    return out


async def _play(model: Any, opening: list[Message], env: list[list[Message]], *, temperature: float, seed: int, tools):
    messages = list(opening)
    responses = []
    for k in range(len(env) + 1):
        config = GenerateConfig(temperature=temperature, seed=seed + k, rollout_id="rollout-1")
        response = await model.generate(messages, tools, config)
        responses.append((list(messages), response))
        if k < len(env):
            messages += [response.message.model_copy(update={"id": f"a{k}"}), *env[k]]
    return responses


def _fresh_logprobs(ids: list[int], temperature: float) -> torch.Tensor:
    with torch.inference_mode():
        logits = tiny_model()(input_ids=torch.tensor([ids])).logits[0].float()
    scaled = logits / temperature if temperature > 0 else logits
    # position i predicts token i + 1
    return torch.log_softmax(scaled[:-1], dim=-1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]


# No shrinking phase: each example plays a whole rollout, and shrinking one took minutes.
@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    env=st.lists(environment_turn(), min_size=1, max_size=3),
    temperature=st.sampled_from([0.0, 0.7, 1.0, 1.5]),
    seed=st.integers(0, 2**31),
    max_tokens=st.integers(1, 10),
    constrained=st.booleans(),
    system=_TEXT,
)
def test_rollout_rows_are_exact(env, temperature, seed, max_tokens, constrained, system) -> None:
    model = tiny_chat(max_tokens=max_tokens if not constrained else max_tokens + 40, constrained=constrained)
    opening = [Message(role="system", content=system or "Audit."), Message(role="user", content="Begin.")]
    played = asyncio.run(_play(model, opening, env, temperature=temperature, seed=seed, tools=TOOLS))
    records = [response.tokens for _, response in played]
    merged = merge_turns("rollout-1", records)

    # Every prompt extends the previous turn exactly: one row, no prefix break.
    assert merged.prefix_breaks == 0 and len(merged.rows) == 1 and merged.turns == len(played)
    row = merged.rows[0]
    last = records[-1]
    assert row.input_ids == last.prompt_ids + last.completion_ids
    tokenizer = packaged_tokenizer()
    # The first prompt is the fresh rendering; each later prompt decodes to what the policy
    # saw: its previous turns verbatim, then the environment's messages.
    assert tokenizer.decode(records[0].prompt_ids) == model.render_prompt(opening, TOOLS)
    for (seen, response), record in zip(played, records, strict=True):
        assert record.rollout_id == "rollout-1"
        start = len(record.prompt_ids)
        assert row.input_ids[:start] == record.prompt_ids  # what the policy saw
        assert row.input_ids[start : start + len(record.completion_ids)] == record.completion_ids  # what it wrote
        prompt_text = tokenizer.decode(record.prompt_ids)
        for message in seen[2:]:
            if message.role in ("user", "tool"):
                assert message.content in prompt_text
        if not response.message.tool_calls:
            text_ids = record.completion_ids[:-1] if response.stop_reason == "end_turn" else record.completion_ids
            assert tokenizer.decode(text_ids, skip_special_tokens=True) == response.message.content

    # Mask-1 tokens are exactly the sampled (not grammar-forced) ones, in order.
    sampled = [
        token
        for r in records
        for token, m in zip(r.completion_ids, r.completion_mask or [1] * len(r.completion_ids), strict=True)
        if m
    ]
    assert [t for t, m in zip(row.input_ids, row.loss_mask, strict=True) if m] == sampled
    assert sum(row.loss_mask[: row.prompt_length]) == 0
    if constrained:
        assert all(r.completion_mask is not None and 0 in r.completion_mask for r in records)

    # Their recorded logprobs match a fresh forward pass of the whole row.
    fresh = _fresh_logprobs(row.input_ids, temperature)
    positions = [i for i, m in enumerate(row.loss_mask) if m]
    recorded = torch.tensor([row.logprobs[i] for i in positions])
    assert torch.allclose(recorded, fresh[[i - 1 for i in positions]], atol=1e-4, rtol=0)


async def test_a_changed_history_breaks_the_prefix_and_starts_a_new_row() -> None:
    model = tiny_chat(max_tokens=4)
    opening = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]
    first = await model.generate(opening, TOOLS, GenerateConfig(rollout_id="r"))
    rewritten = [opening[0], Message(role="user", content="Begin again."), first.message, Message(role="user", content="Go")]
    second = await model.generate(rewritten, TOOLS, GenerateConfig(rollout_id="r"))
    merged = merge_turns("r", [first.tokens, second.tokens])
    assert merged.prefix_breaks == 1 and len(merged.rows) == 2
    assert merged.rows[1].input_ids == second.tokens.prompt_ids + second.tokens.completion_ids


async def test_rollouts_do_not_share_sessions() -> None:
    model = tiny_chat(max_tokens=3)
    opening = [Message(role="system", content="Audit."), Message(role="user", content="Begin.")]
    a = await model.generate(opening, TOOLS, GenerateConfig(rollout_id="a"))
    follow = [*opening, a.message, Message(role="user", content="next")]
    other = await model.generate(follow, TOOLS, GenerateConfig(rollout_id="b"))  # b never saw turn a
    same = await model.generate(follow, TOOLS, GenerateConfig(rollout_id="a"))
    assert same.tokens.prompt_ids[: len(a.tokens.prompt_ids) + len(a.tokens.completion_ids)] == (
        a.tokens.prompt_ids + a.tokens.completion_ids
    )
    assert other.tokens.prompt_ids == model.prompts.encode(model.render_prompt(follow, TOOLS))


async def test_a_whole_audit_with_the_tiny_policy_gives_one_exact_row() -> None:
    """The production graph passes the run id as rollout id; the transcript holds the records."""
    policy = tiny_chat(max_tokens=60, constrained=True)
    result = await run_audit(
        policy, ScriptedModel(echo_target), "Find the quirk.", auditor_prompt="You are an auditor.",
    )
    assert result.status == "completed", result.error
    merged = rows_from_transcript(result.transcript)
    assert merged.turns >= 1 and merged.prefix_breaks == 0 and len(merged.rows) == 1
    row = merged.rows[0]
    assert row.rollout_id == result.run_id
    assert len(row.input_ids) == len(row.loss_mask) == len(row.logprobs)
    assert all(call.parse_error is None for m in result.transcript.auditor_messages for call in m.tool_calls)


async def test_a_reply_cut_inside_a_tool_call_is_not_run() -> None:
    """max_tokens mid-call: the lenient parser could close it, but the policy never finished it."""
    from hf_fixtures import ScriptedLogits

    model = tiny_chat()
    text = '<tool_call>{"name": "send_message", "arguments": {"message": "Hel'
    ids = packaged_tokenizer()(text, add_special_tokens=False)["input_ids"]
    chat = tiny_chat(max_tokens=len(ids))
    with ScriptedLogits(model.model, ids):
        reply = await chat.generate([Message(role="user", content="go")], TOOLS, GenerateConfig(rollout_id="cut"))
    assert reply.stop_reason == "max_tokens"
    (call,) = reply.message.tool_calls
    assert call.name == "send_message" and "cut off by max_tokens" in (call.parse_error or "")


def test_constrained_masks_cover_a_padded_output_layer() -> None:
    from scaffold.providers.constrained import VocabularyMasks

    tokenizer = packaged_tokenizer()
    masks = VocabularyMasks(tokenizer, {0, 1, 2}, logits_size=len(tokenizer) + 64)
    assert masks.string_bias.shape[0] == len(tokenizer) + 64
    assert torch.isinf(masks.string_bias[len(tokenizer):]).all()  # padding ids are never allowed
