"""The per-conversation KV cache of the hf decode loop: a conversation's next turn
prefills only its new tokens, and gives the same tokens and logprobs as a full prefill,
on the tiny random Llama; mixed batches (continuing, fresh and unrelated rows) too."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hf_fixtures import packaged_tokenizer, tiny_model

from scaffold.providers import decode
from scaffold.providers.decode import DecodeRequest as _Request
from scaffold.providers.hf_local import LocalChatModel
from scaffold.providers.turn_cache import TurnCache, shared_length

SYSTEM = list(range(100, 400))  # a shared system prompt, as every auditor call has
FIRST = [SYSTEM + [5, 6, 7] * 20, SYSTEM + [9] * 45, SYSTEM + list(range(2000, 2070))]
ANSWERS = [[31, 32, 33, 34], list(range(700, 760)), [41]]  # the target's replies: different lengths


def _chat(turn_mb: int, prefix_tokens: int = 256) -> LocalChatModel:
    return LocalChatModel.from_model(
        tiny_model(), packaged_tokenizer(), name="t", max_tokens=12, prefix_cache_tokens=prefix_tokens, turn_cache_mb=turn_mb
    )


def _decode(chat: LocalChatModel, prompts: list[list[int]], temperature: float, seed: int = 7) -> list:
    return chat._run_batch([_Request(p, 12, temperature, seed + i) for i, p in enumerate(prompts)])


def _same(expected: list, got: list) -> None:
    for e, g in zip(expected, got, strict=True):
        assert e.ids == g.ids
        assert max(abs(a - b) for a, b in zip(e.logprobs, g.logprobs, strict=True)) < 1e-4


def _three_turns(chat: LocalChatModel, temperature: float) -> list[list]:
    """Three turns of three conversations; each turn's prompt extends the last one exactly."""
    prompts, turns = [list(p) for p in FIRST], []
    for turn in range(3):
        done = _decode(chat, prompts, temperature, seed=10 * turn)
        turns.append(done)
        prompts = [p + d.ids + a for p, d, a in zip(prompts, done, ANSWERS, strict=True)]
    return turns


def test_later_turns_prefill_only_their_new_tokens_and_decode_the_same() -> None:
    for temperature in (0.0, 1.0):
        full, cached = _chat(0), _chat(64)
        expected, got = _three_turns(full, temperature), _three_turns(cached, temperature)
        for e, g in zip(expected, got, strict=True):
            _same(e, g)
        turns = cached._turns
        assert turns is not None and turns.hits == 6  # every row of turns 2 and 3
        # Turn 2 reuses the first prompt and all but the last sampled token of each reply.
        first = [r.ids for r in got[0]]
        second = [r.ids for r in got[1]]
        expected_reuse = sum(len(p) + len(d) - 1 for p, d in zip(FIRST, first, strict=True))
        expected_reuse += sum(len(p) + len(d1) + len(a) + len(d2) - 1 for p, d1, a, d2 in zip(FIRST, first, ANSWERS, second, strict=True))
        assert turns.reused_tokens == expected_reuse
        assert len(turns._entries) == 3  # each conversation's earlier turn was dropped when it was extended


def test_a_batch_mixing_continuing_fresh_and_unrelated_rows_decodes_the_same() -> None:
    full, cached = _chat(0), _chat(64)
    warm = _decode(cached, FIRST[:1], 0.0)
    _decode(full, FIRST[:1], 0.0)
    batch = [
        FIRST[0] + warm[0].ids + ANSWERS[0],  # continues its conversation (turn cache)
        FIRST[1],  # fresh, starts from the shared system prompt (prefix cache)
        FIRST[2],
        list(range(3000, 3040)),  # shares nothing with anything
    ]
    for temperature in (0.0, 1.0):
        _same(_decode(full, batch, temperature), _decode(cached, batch, temperature))
    assert cached._turns is not None and cached._turns.hits >= 1


def test_rows_that_leave_the_batch_early_keep_their_kv_for_the_next_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row that finished is dropped from the batch mid-decode (its KV copied out first) and
    the others are re-laid without padding: the next turn still continues every conversation
    from its cache, and decodes as a batch that never re-laid and prefilled everything."""
    lengths = [3, 12, 7]  # rows finish at different passes

    def turns(chat: LocalChatModel, compact_below: float) -> list[list]:
        monkeypatch.setattr(decode, "COMPACT_BELOW", compact_below)
        prompts, done_turns = [list(p) for p in FIRST], []
        for turn in range(3):
            requests = [_Request(p, n, 1.0, 10 * turn + i) for i, (p, n) in enumerate(zip(prompts, lengths, strict=True))]
            done = chat._run_batch(requests)
            done_turns.append(done)
            prompts = [p + d.ids + a for p, d, a in zip(prompts, done, ANSWERS, strict=True)]
        return done_turns

    full, cached = _chat(0), _chat(64)
    expected, got = turns(full, 0.0), turns(cached, 0.999)  # never re-lay; re-lay at every chance
    for e, g in zip(expected, got, strict=True):
        _same(e, g)
    assert full.decode_stats.relays == 0 and cached.decode_stats.relays >= 3  # at least once a turn
    # Each later turn reuses its conversation's whole previous prompt and reply but the last
    # id: the early leavers' too (not just the system prompt another row shares).
    first, second = ([d.ids for d in turn] for turn in got[:2])
    expected_reuse = sum(len(p) + len(d) - 1 for p, d in zip(FIRST, first, strict=True))
    expected_reuse += sum(len(p) + len(d1) + len(a) + len(d2) - 1 for p, d1, a, d2 in zip(FIRST, first, ANSWERS, second, strict=True))
    assert cached._turns is not None and cached._turns.hits == 6 and cached._turns.reused_tokens == expected_reuse


def test_new_weights_empty_the_cache() -> None:
    chat = _chat(64)
    done = _decode(chat, FIRST[:1], 0.0)
    chat.policy_version = "step-1"
    hits = chat._turns.hits  # type: ignore[union-attr]
    _decode(chat, [FIRST[0] + done[0].ids + ANSWERS[0]], 0.0)
    assert chat._turns.hits == hits  # type: ignore[union-attr]


def _layers(tokens: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.zeros(1, 2, tokens, 4), torch.zeros(1, 2, tokens, 4))]  # 64 bytes a token


def test_the_cache_holds_its_byte_bound_and_serves_the_longest_prefix() -> None:
    cache = TurnCache(max_bytes=64 * 100, min_tokens=4)
    cache.store(list(range(40)), _layers(40), "v")
    cache.store(list(range(60)), _layers(60), "v")  # extends the first: it replaces it
    assert len(cache._entries) == 1 and cache.bytes == 64 * 60
    length, layers = cache.lookup(list(range(50)) + [999], "v")
    assert length == 50 and layers[0][0].shape[2] == 50
    assert cache.lookup(list(range(60)), "v")[0] == 59  # at least one token is left to prefill
    cache.store([7] * 30, _layers(30), "v")
    cache.store([8] * 30, _layers(30), "v")  # over 100 tokens: the least recently used goes
    assert cache.bytes <= 64 * 100 and cache.lookup([8] * 31, "v")[0] == 30
    assert cache.lookup(list(range(60)) + [1], "v")[0] == 0  # evicted
    assert cache.lookup([8] * 31, "other weights")[0] == 0 and cache.bytes == 0
    assert shared_length(np.array([1, 2, 3]), np.array([1, 2])) == 2 and shared_length(np.array([]), np.array([1])) == 0
