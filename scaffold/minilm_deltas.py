"""Low-rank deltas on the packaged MiniLM: how a small reader is trained on it and committed in a few MB.

Two readers are MiniLM with a trained low-rank delta on each linear layer of its six
blocks: the pair reader of the offline grader (rewards/pair_reader.py) and the situation
reader of generated organisms (targets/grammar/situation_reader.py). Training wraps each
layer (`add_deltas`); the trained deltas are saved by name (`delta_tensors`), in a
safetensors file with JSON metadata (`save_weights_file`, `read_weights_file`); at load they
are merged into a private copy of the encoder (`merge_deltas`), so reading costs one plain
MiniLM forward pass.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

from scaffold.specs import SpecError

# The linear layers of each BERT block that carry a trained delta.
ADAPTED = (
    "attention.self.query", "attention.self.key", "attention.self.value",
    "attention.output.dense", "intermediate.dense", "output.dense",
)


def adapted_linears(bert: Any) -> dict[str, Any]:
    """Every adapted linear layer of a BERT encoder, by its dotted name ("encoder.layer.0.attention.self.query")."""
    out = {}
    for index, layer in enumerate(bert.encoder.layer):
        for name in ADAPTED:
            module = layer
            for part in name.split("."):
                module = getattr(module, part)
            out[f"encoder.layer.{index}.{name}"] = module
    return out


def delta_names(layer: str) -> tuple[str, str]:
    """Names of one adapted layer's tensors in a weights file: `<layer>.down` (r x in) and `<layer>.up` (out x r)."""
    return f"{layer}.down", f"{layer}.up"


def with_delta(linear: Any, rank: int, scale: float, generator: Any) -> Any:
    """A frozen linear layer plus a trainable low-rank delta (up @ down, scaled); training only.
    `up` starts at zero, so the wrapped layer starts as the frozen one."""
    import torch

    class Adapted(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = linear
            bound = 1 / math.sqrt(linear.in_features)
            self.down = torch.nn.Parameter(torch.randn(rank, linear.in_features, generator=generator) * bound)
            self.up = torch.nn.Parameter(torch.zeros(linear.out_features, rank))

        def forward(self, x: Any) -> Any:
            return self.linear(x) + (x @ self.down.T @ self.up.T) * scale

    return Adapted()


def replace_module(bert: Any, dotted: str, module: Any) -> None:
    """Put `module` at the dotted path `dotted` of `bert`."""
    parent_name, _, leaf = dotted.rpartition(".")
    parent = bert
    for part in parent_name.split("."):
        parent = parent[int(part)] if part.isdigit() else getattr(parent, part)
    setattr(parent, leaf, module)


def add_deltas(encoder: Any, rank: int, scale: float, generator: Any) -> tuple[Any, dict[str, Any]]:
    """A trainable copy of the encoder's BERT, frozen but for a delta on each adapted layer:
    (bert, the wrapped layers by name)."""
    bert = copy.deepcopy(encoder[0].auto_model)
    for parameter in bert.parameters():
        parameter.requires_grad = False
    adapted = {}
    for name, linear in adapted_linears(bert).items():
        adapted[name] = with_delta(linear, rank, scale, generator)
        replace_module(bert, name, adapted[name])
    return bert, adapted


def delta_tensors(adapted: dict[str, Any]) -> dict[str, Any]:
    """The trained deltas of `add_deltas`' layers, by their names in a weights file."""
    tensors: dict[str, Any] = {}
    for name, module in adapted.items():
        down, up = delta_names(name)
        tensors[down], tensors[up] = module.down.detach().contiguous(), module.up.detach().contiguous()
    return tensors


def missing_deltas(bert: Any, tensors: dict[str, Any]) -> list[str]:
    """The delta tensors a weights file must hold for `bert` and does not (empty: all there)."""
    return [n for layer in adapted_linears(bert) for n in delta_names(layer) if n not in tensors]


def merge_deltas(encoder: Any, tensors: dict[str, Any], scale: float) -> Any:
    """A private copy of the encoder's BERT, in eval mode, with each delta merged in (W + scale * up @ down);
    the caller checks `missing_deltas` first."""
    import torch

    bert = copy.deepcopy(encoder[0].auto_model).eval()
    with torch.no_grad():
        for layer, linear in adapted_linears(bert).items():
            down, up = (tensors[n] for n in delta_names(layer))
            linear.weight += scale * (up @ down)
    return bert


def deltas_beside(encoder: Any, tensors: dict[str, Any], scale: float) -> Any:
    """A copy of the encoder's BERT, in eval mode, with saved deltas beside each frozen layer, as in
    training: what the merged model must compute (tests compare the two, so a merge that is
    transposed or unscaled shows)."""
    import torch

    bert = copy.deepcopy(encoder[0].auto_model).eval()
    for name, linear in adapted_linears(bert).items():
        down, up = (tensors[n] for n in delta_names(name))
        module = with_delta(linear, down.shape[0], scale, torch.Generator())
        with torch.no_grad():
            module.down.copy_(down)
            module.up.copy_(up)
        replace_module(bert, name, module)
    return bert.eval()


def save_weights_file(tensors: dict[str, Any], metadata: dict[str, Any], path: str | Path) -> None:
    """Write a reader's tensors with JSON-encoded metadata (safetensors keeps string metadata only)."""
    from safetensors.torch import save_file

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={k: json.dumps(v) for k, v in metadata.items()})


def read_weights_file(path: str | Path, who: str, noun: str, train: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors, metadata) of a file `save_weights_file` wrote; a SpecError naming `who` (the reader),
    the file and, when it is missing, the command `train` that makes one."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{who}: no {noun} at {path}; train them with `{train}`")
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:
        raise SpecError(f"{who} needs safetensors; run: pip install 'auditrl[local]'") from None
    try:
        with safe_open(str(path), framework="pt") as handle:  # one read gives both
            raw = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
        metadata = {k: json.loads(v) for k, v in raw.items()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise SpecError(f"{who}: cannot read the {noun} {path}: {exc}") from None
    return tensors, metadata
