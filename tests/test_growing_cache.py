"""The growing KV cache gives the logits of transformers' concatenating one, pass after pass,
while copying its buffers only when they are full; and it survives what transformers' cache
methods do to a layer (batch selection, cropping)."""

from __future__ import annotations

from typing import Any

from hf_fixtures import tiny_model, torch
from transformers import DynamicCache

from scaffold.providers.growing_cache import GrowingLayer, gather_rows, growing_cache, is_growing


def _passes(cache: Any, chunks: list[torch.Tensor], mask: torch.Tensor) -> tuple[list[torch.Tensor], list[int]]:
    """Each pass's logits, and the data pointer of layer 0's keys after it. `mask` covers
    the cached positions and every chunk's."""
    model, logits, pointers = tiny_model(), [], []
    end = mask.shape[1] - sum(ids.shape[1] for ids in chunks)
    with torch.inference_mode():
        for ids in chunks:
            end += ids.shape[1]
            positions = (mask[:, :end].cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1] :]
            out = model(input_ids=ids, attention_mask=mask[:, :end], position_ids=positions, cache=cache, use_cache=True)
            cache = out["cache"]
            logits.append(out.logits)
            pointers.append(cache.layers[0].keys.data_ptr())
    return logits, pointers


def _chunks(seed: int, batch: int, sizes: list[int]) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 200, (batch, n), generator=generator) for n in sizes]


def test_a_growing_cache_matches_the_concatenating_one_and_copies_only_when_full() -> None:
    sizes = [40] + [1, 3, 2, 5] * 25  # a left-padded prompt, then decode passes of a few ids
    chunks = _chunks(0, 2, sizes)
    mask = torch.ones(2, sum(sizes), dtype=torch.long)
    mask[1, :15] = 0  # row 1's prompt is left-padded
    expected, _ = _passes(DynamicCache(), chunks, mask)
    got, pointers = _passes(growing_cache(), chunks, mask)
    for e, g in zip(expected, got, strict=True):
        torch.testing.assert_close(g, e, rtol=0, atol=1e-5)
    # 40 + 275 positions: the buffer is regrown a handful of times, not on each of 101 passes.
    regrowths = sum(a != b for a, b in zip(pointers, pointers[1:]))
    assert 1 <= regrowths <= 5


def test_a_growing_cache_holds_a_reused_prefix_and_survives_batch_selection_and_cropping() -> None:
    prompt = _chunks(1, 3, [30])[0]
    with torch.inference_mode():
        filled = tiny_model()(input_ids=prompt, use_cache=True)["cache"]
    prefix = [(layer.keys, layer.values) for layer in filled.layers]
    caches = {"concat": DynamicCache(ddp_cache_data=prefix), "growing": growing_cache(prefix)}
    assert all(isinstance(layer, GrowingLayer) for layer in caches["growing"].layers)
    ones = torch.ones(3, 41, dtype=torch.long)
    logits: dict[str, list[torch.Tensor]] = {}
    for name, cache in caches.items():
        out, _ = _passes(cache, _chunks(2, 3, [2, 4]), ones[:, :36])
        cache.reorder_cache(torch.tensor([2, 0, 1]))  # same shape, rows moved: a new tensor, not the buffer
        out += _passes(cache, _chunks(5, 3, [1]), ones[:, :37])[0]
        cache.batch_select_indices(torch.tensor([0, 2]))  # replaces each layer's keys from outside
        out += _passes(cache, _chunks(3, 2, [3, 1]), ones[:2, :41])[0]
        cache.crop(-2)  # drops the last two positions (41 -> 39): a view of the same buffer
        out += _passes(cache, _chunks(4, 2, [2]), ones[:2, :41])[0]
        logits[name] = out
    for e, g in zip(logits["concat"], logits["growing"], strict=True):
        torch.testing.assert_close(g, e, rtol=0, atol=1e-5)


def test_gather_rows_keeps_the_chosen_rows_columns_left_padded_with_zeros_and_room_to_grow() -> None:
    generator = torch.Generator().manual_seed(3)
    layers = [(torch.randn(3, 2, 10, 4, generator=generator), torch.randn(3, 2, 10, 4, generator=generator)) for _ in range(2)]
    source = growing_cache(layers)
    rows = [(2, [1, 4, 5, 9]), (0, [7, 8])]  # row 1 left; row 2's tokens had padding between them
    gathered, width = gather_rows(source, rows)
    assert width == 4 and is_growing(gathered) and not is_growing(DynamicCache())
    for (keys, values), layer in zip(layers, gathered.layers, strict=True):
        assert layer.keys.shape == (2, 2, 4, 4) and layer.values.shape == (2, 2, 4, 4)
        assert torch.equal(layer.keys[0], keys[2][:, [1, 4, 5, 9]]) and torch.equal(layer.values[0], values[2][:, [1, 4, 5, 9]])
        assert torch.equal(layer.keys[1, :, 2:], keys[0][:, [7, 8]]) and torch.equal(layer.values[1, :, 2:], values[0][:, [7, 8]])
        assert not layer.keys[1, :, :2].any() and not layer.values[1, :, :2].any()  # padding is zeros, never garbage
    # It grows in place like any growing layer: the next pass's keys land after the gathered ones.
    pointer = gathered.layers[0].keys.data_ptr()
    new = torch.ones(2, 2, 1, 4)
    keys, _ = gathered.layers[0].update(new, new)
    assert keys.shape[2] == 5 and keys.data_ptr() == pointer and torch.equal(keys[:, :, 4:], new)
