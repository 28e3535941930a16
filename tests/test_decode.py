"""The decode loop reads a grammar's forced tokens in one pass with the next choice
(jump-forward): fewer forward passes than tokens, and the same records as a trainer's
forward pass, alone or in a batch of rows whose forced runs differ."""

from __future__ import annotations

import asyncio

from hf_fixtures import tiny_chat, tiny_model, torch

from scaffold.messages import GenerateConfig, Message
from scaffold.providers.decode import DecodeRequest
from scaffold.tools import AUDITOR_TOOLS

TOOLS = [tool.definition for tool in AUDITOR_TOOLS.values()]


def _messages(text: str) -> list[Message]:
    return [Message(role="system", content="Audit."), Message(role="user", content=text)]


def _forward_logprobs(prompt: list[int], completion: list[int], temperature: float) -> list[float]:
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = tiny_model()(input_ids=ids).logits[0, len(prompt) - 1 : -1].float() / temperature
    return torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(completion)[:, None])[:, 0].tolist()


def test_forced_runs_cost_no_pass_of_their_own_and_keep_exact_logprobs() -> None:
    chat = tiny_chat(max_tokens=300, constrained=True, max_calls_per_turn=2)
    for seed in range(3):
        before = chat.forward_passes
        record = asyncio.run(chat.generate(_messages("Begin."), TOOLS, GenerateConfig(temperature=1.0, seed=seed))).tokens
        assert record is not None and record.completion_mask is not None
        passes, chosen = chat.forward_passes - before, sum(record.completion_mask)
        assert record.completion_mask.count(0) >= 10  # forced structure is there to skip
        assert passes <= chosen + 1 < len(record.completion_ids)  # one pass per choice, plus the closing tail
        expected = _forward_logprobs(record.prompt_ids, record.completion_ids, 1.0)
        assert max(abs(a - b) for a, b in zip(record.completion_logprobs, expected, strict=True)) < 1e-4


async def _together_and_alone(chat_options: dict) -> tuple[list, list, int]:
    configs = [GenerateConfig(temperature=1.0, seed=seed) for seed in range(4)]
    texts = ["Begin.", "Start the audit now, please.", "Go", "The target is ready for you; take your time."]
    chat = tiny_chat(**chat_options)
    together = await asyncio.gather(*(chat.generate(_messages(t), TOOLS, c) for t, c in zip(texts, configs, strict=True)))
    assert chat.batcher.batch_sizes[-1] == 4
    alone = [await tiny_chat(**chat_options).generate(_messages(t), TOOLS, c) for t, c in zip(texts, configs, strict=True)]
    return [r.tokens for r in together], [r.tokens for r in alone], chat.decode_stats.relays


def test_a_batch_of_rows_with_different_forced_runs_decodes_as_each_alone() -> None:
    """Also when rows that finished leave the batch and the padding between the others'
    tokens is squeezed out of the cache on the way (relays)."""
    together, alone, relays = asyncio.run(
        _together_and_alone({"max_tokens": 200, "constrained": True, "max_calls_per_turn": 2}))
    assert relays >= 1
    for t, a in zip(together, alone, strict=True):
        assert t.completion_ids == a.completion_ids and t.completion_mask == a.completion_mask
        assert max(abs(x - y) for x, y in zip(t.completion_logprobs, a.completion_logprobs, strict=True)) < 1e-4
    assert len({tuple(t.completion_ids) for t in together}) > 1


def test_decode_stats_say_where_the_passes_went_and_start_over_when_taken() -> None:
    chat = tiny_chat(max_tokens=200, constrained=True, max_calls_per_turn=2)
    configs = [GenerateConfig(temperature=1.0, seed=seed) for seed in range(4)]

    async def four() -> None:
        await asyncio.gather(*(chat.generate(_messages("Begin" + "!" * i), TOOLS, c) for i, c in enumerate(configs)))

    asyncio.run(four())
    stats = chat.decode_stats.take()
    assert stats["batches"] == 1 and stats["passes"] == chat.forward_passes and stats["relays"] >= 1
    assert 1 <= stats["rows_per_pass"] <= 4 and 0 < stats["padding_share"] < 1  # unequal forced runs pad
    assert stats["first_pass_s"] > 0 and stats["later_passes_s"] > 0
    assert chat.decode_stats.take() == {}  # taken: the next step counts from zero


def test_a_relay_frees_the_cache_the_batch_started_with() -> None:
    """The caller still holds the cache it passed in: a re-lay empties it, or the old
    buffers would live beside the re-laid ones until the batch ends."""
    from scaffold.providers.decode import decode_batch
    from scaffold.providers.growing_cache import growing_cache

    cache = growing_cache()
    requests = [DecodeRequest(list(range(100, 130)), n, 0.0, None) for n in (2, 30)]  # row 0 leaves early
    result = decode_batch(
        tiny_model(), requests, reused=[0, 0], cache=cache, cached_mask=[[], []], cache_arg="cache", pad_id=0,
        stop_ids=frozenset(), record=True, device=torch.device("cpu"), new_generator=lambda seed: None, compact_below=0.999,
    )
    assert result.counts.relays >= 1 and cache.layers == []
    assert [len(row.ids) for row in result.rows] == [2, 30]
