"""A per-conversation KV cache for the `hf` decode loop: each turn prefills only what is new.

An auditor's prompt at turn k+1 is its prompt at turn k, the reply it wrote, and the
target's answer: with `rollout_id` set it extends the previous turn's ids exactly
(token_prompts.py). Re-reading the whole conversation every turn made prefill about half
of a CPU rollout: measured on SmolLM2-135M + LoRA, 2 cores, 8 rows, 1,200 new tokens a
row took 34 s to prefill against 0.2 s for one decode step of the batch.

`TurnCache` keeps, per finished generation, the KV of the tokens it read and wrote (batch
1, per layer), and hands a new batch the longest cached prefix of each row's prompt. Rows
reuse prefixes of different lengths, so `padded_cache` lays them out left-padded:
`[padding | row's cached KV]`; the decode loop masks the padding as it masks prompt
padding, and positions count real tokens only, so the numbers are those of a full prefill.

Bounded by bytes (least recently used first out); an entry that a newer one extends (the
same conversation's earlier turn) is dropped when the newer one is stored. Keyed by the
policy version, as the shared-prefix cache: new weights, empty cache.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

Layers = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), each (1, heads, tokens, dim)


@dataclass
class _Entry:
    ids: np.ndarray
    layers: Layers
    nbytes: int


def shared_length(cached: np.ndarray, prompt: np.ndarray) -> int:
    """How many leading ids `cached` and `prompt` share."""
    n = min(len(cached), len(prompt))
    if n == 0:
        return 0
    diff = np.flatnonzero(cached[:n] != prompt[:n])
    return int(diff[0]) if len(diff) else n


class TurnCache:
    """The KV of recent conversations, for one policy version, at most `max_bytes`."""

    def __init__(self, max_bytes: int, min_tokens: int = 32) -> None:
        self.max_bytes, self.min_tokens = max_bytes, min_tokens
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next_key = 0
        self.version: object = None
        self.bytes = 0
        self.hits = 0  # rows served from the cache
        self.reused_tokens = 0  # prompt tokens not prefilled thanks to it

    def _check_version(self, version: object) -> None:
        if version != self.version:
            self._entries.clear()
            self.bytes, self.version = 0, version

    def lookup(self, prompt: Sequence[int], version: object) -> tuple[int, Layers]:
        """(length, layers): the longest cached prefix of `prompt`, leaving it at least one
        token to prefill; (0, []) when none reaches `min_tokens`."""
        self._check_version(version)
        ids = np.asarray(prompt, dtype=np.int64)
        best_key, best = None, 0
        for key, entry in self._entries.items():
            n = min(shared_length(entry.ids, ids), len(ids) - 1)
            if n > best:
                best_key, best = key, n
        if best_key is None or best < self.min_tokens:
            return 0, []
        self._entries.move_to_end(best_key)
        self.hits += 1
        self.reused_tokens += best
        return best, [(k[:, :, :best], v[:, :, :best]) for k, v in self._entries[best_key].layers]

    def store(self, ids: Sequence[int], layers: Layers, version: object) -> None:
        """Keep the KV of `ids` (what one row read and wrote); drop what it extends."""
        self._check_version(version)
        if len(ids) < self.min_tokens:
            return
        new = np.asarray(ids, dtype=np.int64)
        for key in [k for k, e in self._entries.items() if len(e.ids) <= len(new) and shared_length(e.ids, new) == len(e.ids)]:
            self.bytes -= self._entries.pop(key).nbytes
        nbytes = sum(k.nbytes + v.nbytes for k, v in layers)
        if nbytes > self.max_bytes:
            return
        self._entries[self._next_key] = _Entry(new, layers, nbytes)
        self._next_key += 1
        self.bytes += nbytes
        while self.bytes > self.max_bytes:
            self.bytes -= self._entries.popitem(last=False)[1].nbytes


def padded_cache(rows: Sequence[tuple[int, Layers]]) -> tuple[Any, list[int]]:
    """A growing cache holding each row's reused KV, left-padded to the longest; and the
    attention mask of that cached block (0 on padding). Rows with length 0 are all padding."""
    from scaffold.providers.growing_cache import growing_cache  # imports transformers

    width = max(n for n, _ in rows)
    template = next(layers for n, layers in rows if n)
    batch: Layers = []
    for layer, (k0, v0) in enumerate(template):
        keys = k0.new_zeros((len(rows), k0.shape[1], width, k0.shape[3]))
        values = v0.new_zeros((len(rows), v0.shape[1], width, v0.shape[3]))
        for i, (n, layers) in enumerate(rows):
            if n:
                keys[i, :, width - n :] = layers[layer][0][0]
                values[i, :, width - n :] = layers[layer][1][0]
        batch.append((keys, values))
    mask = [[0] * (width - n) + [1] * n for n, _ in rows]
    return growing_cache(batch), mask


def row_layers(cache: Any, row: int, positions: torch.Tensor) -> Layers:
    """One row's KV at `positions` of the batch cache, copied out (index_select copies) as a batch-1 cache."""
    return [
        (layer.keys[row : row + 1].index_select(2, positions), layer.values[row : row + 1].index_select(2, positions))
        for layer in cache.layers
    ]
