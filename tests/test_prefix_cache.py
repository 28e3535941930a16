"""The shared-prefix KV cache of the hf decode loop: same tokens and logprobs as a full
prefill, on the tiny random Llama; invalidated when the policy version changes."""

from __future__ import annotations

from hf_fixtures import packaged_tokenizer, tiny_model

from scaffold.providers.decode import DecodeRequest as _Request
from scaffold.providers.hf_local import LocalChatModel
from scaffold.providers.prefix_cache import PrefixCache, common_prefix_length

SHARED = list(range(100, 700))  # a long shared prefix, as the auditor's system prompt is
PROMPTS = [SHARED + [5, 6, 7], SHARED + [9] * 30, SHARED + [11, 12]]


def _chat(prefix_tokens: int) -> LocalChatModel:
    return LocalChatModel.from_model(
        tiny_model(), packaged_tokenizer(), name="t", max_tokens=8, prefix_cache_tokens=prefix_tokens, turn_cache_mb=0
    )


def _decode(chat: LocalChatModel, prompts: list[list[int]], temperature: float = 0.0) -> list:
    return chat._run_batch([_Request(p, 8, temperature, 7) for p in prompts])


def test_cached_prefix_gives_the_same_tokens_and_logprobs() -> None:
    full, cached = _chat(0), _chat(256)
    for batch in (PROMPTS, PROMPTS[1:2], PROMPTS[::-1]):
        for temperature in (0.0, 1.0):
            expected, got = _decode(full, batch, temperature), _decode(cached, batch, temperature)
            for e, g in zip(expected, got, strict=True):
                assert e.ids == g.ids
                assert max(abs(a - b) for a, b in zip(e.logprobs, g.logprobs)) < 1e-4
    assert cached._prefix is not None and cached._prefix.hits >= 4 and cached._prefix.ids == SHARED


def test_a_new_policy_version_recomputes_the_prefix() -> None:
    chat = _chat(256)
    _decode(chat, PROMPTS)
    misses = chat._prefix.misses
    _decode(chat, PROMPTS)
    assert chat._prefix.misses == misses  # same weights: reused
    chat.policy_version = "step-1"
    _decode(chat, PROMPTS)
    assert chat._prefix.misses == misses + 1


def test_short_or_unshared_prompts_are_not_cached() -> None:
    cache = PrefixCache(min_tokens=256)
    calls = []
    assert cache.prefix_for([[1, 2, 3], [1, 2, 4]], "v", calls.append) == 0
    assert cache.prefix_for([list(range(300)), [7] + list(range(300))], "v", calls.append) == 0
    assert not calls
    assert common_prefix_length([1, 2, 3], [1, 2]) == 2 and common_prefix_length([], [1]) == 0
