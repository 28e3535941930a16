"""A KV cache whose layers grow into spare room instead of being concatenated on every pass.

transformers' `DynamicLayer.update` appends a pass's keys and values with `torch.cat`, which
copies the whole cache of every layer on every pass. A batched decode over long audits is
thousands of passes over a cache of a few thousand tokens per row, so that copy grows with
the square of the reply's length: py-spy put it at 20% of a held-out eval of the SmolLM2
policy on this CPU (stop 46). Here each layer keeps a buffer with room to spare, writes a
pass's keys and values into it, and hands attention a view of the filled part; a buffer is
regrown (with a quarter more room) only when it is full, so a reply costs a few copies.

Everything else a `DynamicLayer` does still works: a layer whose `keys` were replaced from
outside (batch selection, reordering) is noticed and copied into a fresh buffer, and
cropping keeps the view of the same buffer.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

MIN_ROOM = 64  # spare positions a regrown buffer has at least (a decode pass reads a few ids)


class GrowingLayer(DynamicLayer):
    """A `DynamicLayer` that writes into a buffer with spare room along the sequence axis."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the pass's keys and values after the cached ones; return views of all of them."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        cached = self.get_seq_length()
        total = cached + key_states.shape[-2]
        if not self._has_room(key_states, total):
            self._regrow(key_states, value_states, cached, total)
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[:, :, cached:total] = key_states
        self._value_buffer[:, :, cached:total] = value_states
        self.keys = self._key_buffer[:, :, :total]
        self.values = self._value_buffer[:, :, :total]
        return self.keys, self.values

    @classmethod
    def of_rows(cls, keys: torch.Tensor, values: torch.Tensor, rows: Sequence[tuple[int, torch.Tensor]], width: int) -> GrowingLayer:
        """A layer whose row j holds columns `rows[j][1]` of batch row `rows[j][0]` of `keys` and
        `values`, left-padded with zeros to `width` (padding must stay finite: it is masked, and
        a masked NaN still poisons the softmax), in one copy, with room to grow."""
        room = width + max(MIN_ROOM, width // 4)
        key_buffer = keys.new_empty((len(rows), keys.shape[1], room, keys.shape[-1]))
        value_buffer = values.new_empty((len(rows), values.shape[1], room, values.shape[-1]))
        for j, (row, columns) in enumerate(rows):
            start = width - columns.numel()
            key_buffer[j, :, :start] = 0
            value_buffer[j, :, :start] = 0
            key_buffer[j, :, start:width] = keys[row].index_select(1, columns)
            value_buffer[j, :, start:width] = values[row].index_select(1, columns)
        layer = cls()
        layer.lazy_initialization(key_buffer, value_buffer)
        layer._key_buffer, layer._value_buffer = key_buffer, value_buffer
        layer.keys, layer.values = key_buffer[:, :, :width], value_buffer[:, :, :width]
        return layer

    def reset(self) -> None:
        self._key_buffer = self._value_buffer = None
        super().reset()

    def _has_room(self, key_states: torch.Tensor, total: int) -> bool:
        """Whether `keys` is still the start of this layer's buffer, shaped like the new
        states, with room for `total` positions."""
        buffer = self._key_buffer
        if buffer is None or self.keys is None or self.keys.numel() == 0:
            return False
        return (
            self.keys.data_ptr() == buffer.data_ptr()
            and self.keys.stride() == buffer.stride()
            and buffer.dtype == key_states.dtype
            and buffer.shape[:2] == key_states.shape[:2]
            and buffer.shape[-1] == key_states.shape[-1]
            and total <= buffer.shape[-2]
        )

    def _regrow(self, key_states: torch.Tensor, value_states: torch.Tensor, cached: int, total: int) -> None:
        """Fresh buffers with room to spare, holding the cached keys and values."""
        room = total + max(MIN_ROOM, total // 4)
        keys = key_states.new_empty((*key_states.shape[:2], room, key_states.shape[-1]))
        values = value_states.new_empty((*value_states.shape[:2], room, value_states.shape[-1]))
        if cached:
            keys[:, :, :cached] = self.keys
            values[:, :, :cached] = self.values
        self._key_buffer, self._value_buffer = keys, values


def growing_cache(layers: Iterable[tuple[torch.Tensor, torch.Tensor]] = ()) -> DynamicCache:
    """A `DynamicCache` of `GrowingLayer`s, holding `layers` (one (keys, values) per model
    layer, e.g. a reused prefix); empty, it adds a layer for each model layer as the model
    first writes to it."""
    cache = DynamicCache()
    cache.layer_class_to_replicate = GrowingLayer
    for keys, values in layers:
        layer = GrowingLayer()
        layer.update(keys, values)
        cache.layers.append(layer)
    return cache


def is_growing(cache: Any) -> bool:
    """Whether `cache` is a `growing_cache` (every layer a `GrowingLayer`): one `gather_rows` can re-lay."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(isinstance(layer, GrowingLayer) for layer in layers)


def gather_rows(cache: DynamicCache, rows: Sequence[tuple[int, Sequence[int]]]) -> tuple[DynamicCache, int]:
    """A new growing cache whose row j holds only the columns `rows[j][1]` of the old cache's
    row `rows[j][0]`, left-padded to the longest: rows that left are gone and padding between
    a row's tokens is squeezed out. Returns it and its width."""
    width = max(len(columns) for _, columns in rows)
    device = cache.layers[0].keys.device
    indexed = [(row, torch.tensor(list(columns), dtype=torch.long, device=device)) for row, columns in rows]
    gathered = DynamicCache()
    gathered.layer_class_to_replicate = GrowingLayer
    for layer in cache.layers:
        gathered.layers.append(GrowingLayer.of_rows(layer.keys, layer.values, indexed, width))
    return gathered, width
