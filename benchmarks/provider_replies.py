"""Concurrent constrained replies of the `hf` provider on the packaged SmolLM2: the decode
workload the cache benchmarks time end to end (`kv_cache_growth.py --replies`, `decode_relay.py`).

Each reply is a fresh audit's first turn: a long system prompt, the auditor's tools, seeded
sampling at temperature 1, so two runs that decode exactly alike sample the same ids."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from scaffold.messages import GenerateConfig, Message
from scaffold.providers.hf_local import build
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec
from scaffold.tools import AUDITOR_TOOLS


def concurrent_replies(count: int, max_tokens: int) -> tuple[float, list[Any], Any]:
    """(seconds, each reply's token record, the chat model) for `count` replies decoded together."""
    spec = ModelSpec(provider="hf", model="smollm2-135m", max_tokens=max_tokens,
                     extra={"constrained": True, "max_calls_per_turn": 6, "max_batch_size": count})
    tools = [tool.definition for tool in AUDITOR_TOOLS.values()]
    manual = " ".join(["You are auditing a model for hidden behaviours; probe it with ordinary requests."] * 60)
    chat = build(spec, SecretRegistry())

    async def replies() -> list[Any]:
        messages = [[Message(role="system", content=manual), Message(role="user", content=f"Audit {i}: begin.")]
                    for i in range(count)]
        done = await asyncio.gather(*(chat.generate(m, tools, GenerateConfig(temperature=1.0, seed=i))
                                      for i, m in enumerate(messages)))
        return [r.tokens for r in done]

    started = time.perf_counter()
    records = asyncio.run(replies())
    return time.perf_counter() - started, records, chat
