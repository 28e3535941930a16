"""A shared-prefix KV cache for the `hf` decode loop.

Every auditor call starts with the same ~3k tokens (system prompt, tool schemas,
seed), and on a CPU re-reading them is most of a turn's cost. This keeps the KV of
the longest prefix shared by the prompts it sees, for one set of weights, and hands
each batch a copy; only the rows' own suffixes are prefilled. The cache converges on
the prefix every call shares: a batch that shares less with it crops it.

Keyed by the policy version: whoever changes the weights (a trainer, a LoRA swap)
changes `policy_version`, and the next batch recomputes the prefix.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids `a` and `b` share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _room(prompts: Sequence[Sequence[int]]) -> int:
    """The longest prefix the batch can reuse: every row keeps at least one token to prefill."""
    return min(len(p) for p in prompts) - 1


class PrefixCache:
    """The KV tensors (batch 1) of one token prefix, for one policy version."""

    def __init__(self, min_tokens: int = 256) -> None:
        self.min_tokens = min_tokens
        self.ids: list[int] = []
        self.version: object = None
        self.layers: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.hits = 0
        self.misses = 0

    def usable_length(self, prompts: Sequence[Sequence[int]], version: object) -> int:
        """How many cached tokens every prompt starts with (leaving each at least one token to prefill)."""
        if not self.layers or version != self.version:
            return 0
        return min(min(common_prefix_length(self.ids, p) for p in prompts), _room(prompts))

    def crop(self, length: int) -> None:
        self.ids = self.ids[:length]
        self.layers = [(k[:, :, :length], v[:, :, :length]) for k, v in self.layers]

    def store(self, ids: Sequence[int], version: object, cache: Any) -> None:
        """Keep the KV of `ids` (a batch-1 cache the model just filled)."""
        self.ids, self.version = list(ids), version
        self.layers = [(layer.keys, layer.values) for layer in cache.layers]

    def for_batch(self, batch: int) -> Any:
        """A fresh cache holding the prefix for `batch` rows (the model appends to it)."""
        from scaffold.providers.growing_cache import growing_cache  # imports transformers

        return growing_cache([(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in self.layers])

    def prefix_for(self, prompts: Sequence[Sequence[int]], version: object, fill: Any) -> int:
        """The prefix length to reuse for this batch: the cached one (cropped to what the
        batch shares), or a new one filled by `fill(ids) -> cache` when the batch shares at
        least `min_tokens`; 0 for none."""
        usable = self.usable_length(prompts, version)
        if usable >= self.min_tokens:
            if usable < len(self.ids):
                self.crop(usable)
            self.hits += 1
            return usable
        shared = min(min(common_prefix_length(prompts[0], p) for p in prompts), _room(prompts))
        if shared < self.min_tokens:
            return 0
        self.misses += 1
        ids = list(prompts[0][:shared])
        self.store(ids, version, fill(ids))
        return shared
