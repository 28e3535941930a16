"""LoRA adapters for the local policy: attach one to a loaded base model, then swap it.

The RL loop changes the policy often while the base model (up to many GB) stays fixed, so
a new policy moves only the small LoRA tensors, never the base. `swap_adapter(model, DIR)`
takes a `save_pretrained` directory: with the same rank, alpha and LoRA tensor shapes as
the active adapter, peft's `hotswap_adapter` copies tensors in place ("hotswap"; data
pointers and a torch.compile'd graph stay valid); otherwise the adapter is loaded beside
the old one, the old one deleted, and loaded again under the old name ("reloaded-adapter").
`swap_adapter_weights` copies a trainer's in-memory LoRA state dict in place, each step. Every
problem with an adapter directory is a one-line `SpecError` naming the path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import warnings
from pathlib import Path
from typing import Any, Literal, Mapping

import torch
from peft import LoraConfig, PeftModel
from peft.tuners.tuners_utils import BaseTunerLayer
from peft.utils.hotswap import hotswap_adapter
from safetensors import safe_open

from scaffold.specs import SpecError

SwapMechanism = Literal["hotswap", "reloaded-adapter"]
WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
# Besides the tensors these decide the output; hotswap keeps the old ones, so they must be equal.
_SAME_FOR_HOTSWAP = ("r", "lora_alpha", "rank_pattern", "alpha_pattern", "use_rslora", "use_dora", "bias")


def _adapter_files(adapter_dir: str | Path) -> tuple[Path, Path, dict[str, Any]]:
    """(directory, weight file, parsed adapter_config.json) of a LoRA adapter, or SpecError."""
    p = Path(adapter_dir).expanduser()
    if not p.is_dir():
        raise SpecError(f"{p}: {'is a file, expected a' if p.exists() else 'no such'} LoRA adapter directory")
    if not (p / "adapter_config.json").is_file():
        raise SpecError(f"{p}: not a PEFT adapter (no adapter_config.json)")
    try:  # read here, not by peft, so that a non-LoRA adapter gets a plain message
        config = json.loads((p / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{p}: unreadable adapter_config.json: {exc}") from None
    kind = config.get("peft_type") if isinstance(config, dict) else None
    if kind != "LORA":
        raise SpecError(f"{p}: not a LoRA adapter (peft_type {kind!r}); only LoRA is supported")
    weights = next((p / name for name in WEIGHT_FILES if (p / name).is_file()), None)
    if weights is None:
        raise SpecError(f"{p}: no adapter weights ({' or '.join(WEIGHT_FILES)})")
    return p, weights, config


def _fail(p: Path, exc: BaseException) -> SpecError:
    """One line for people from whatever peft or torch raised while loading `p`."""
    text = " ".join(str(exc).split())[:300]
    return exc if isinstance(exc, SpecError) else SpecError(f"{p}: LoRA adapter does not fit this base model: {text}")


def _slots(model: torch.nn.Module, adapter_name: str) -> dict[str, torch.nn.Parameter]:
    """The LoRA parameters of one adapter, by name (unwrapping a torch.compile wrapper)."""
    pattern = re.compile(rf"\.lora_[A-Za-z_]+\.{re.escape(adapter_name)}(\.|$)")
    return {n: param for n, param in getattr(model, "_orig_mod", model).named_parameters() if pattern.search(n)}


def _with_adapter_name(key: str, adapter_name: str) -> str:
    """`...q_proj.lora_A.weight` (as saved) -> `...q_proj.lora_A.<name>.weight` (as in the model)."""
    return re.sub(r"(\.lora_[A-Za-z_]+)(\.|$)", rf"\1.{adapter_name}\2", key, count=1)


def _saved_shapes(weights: Path) -> dict[str, tuple[int, ...]] | None:
    """LoRA tensor shapes in a safetensors file, from its header only; None for .bin."""
    if weights.suffix != ".safetensors":
        return None
    with safe_open(str(weights), framework="pt") as f:
        return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys() if "lora_" in k}


def _check_coverage(p: Path, weights: Path, model: torch.nn.Module, adapter_name: str) -> None:
    """peft silently drops saved tensors that match no module: count them against the model."""
    saved, slots = _saved_shapes(weights), len(_slots(model, adapter_name))
    if saved is not None and len(saved) != slots:
        raise SpecError(f"{p}: LoRA adapter does not fit this base model: {len(saved)} LoRA tensors saved, "
                        f"{slots} LoRA slots in the model (trained for another architecture?)")


def _strip_lora_layers(model: torch.nn.Module, keep_config: bool) -> None:
    """Undo a failed injection: put each wrapped module's base layer back in place."""
    if not keep_config:
        vars(model).pop("peft_config", None)
    for name, module in list(model.named_modules()):
        if name and isinstance(module, BaseTunerLayer):
            parent, _, child = name.rpartition(".")
            with contextlib.suppress(AttributeError):  # inside a layer already put back
                setattr(model.get_submodule(parent), child, module.get_base_layer())


def attach_adapter(model: torch.nn.Module, adapter_dir: str | Path, *, adapter_name: str = "default") -> PeftModel:
    """Wrap a loaded causal LM with the LoRA adapter in `adapter_dir`; returns the PeftModel.

    Local files only: the directory is checked before peft sees it, so peft never goes to
    the Hub. On failure the base model is restored (peft injects its layers first).
    """
    p, weights, _ = _adapter_files(adapter_dir)
    if isinstance(model, PeftModel):
        raise SpecError(f"{p}: the model already has an adapter; use swap_adapter to replace it")
    had_config = "peft_config" in vars(model)  # peft sets it on the base, too
    try:
        config = LoraConfig.from_pretrained(str(p))
        with warnings.catch_warnings():  # _check_coverage says it in one line
            warnings.filterwarnings("ignore", message="Found missing adapter keys")
            peft_model = PeftModel.from_pretrained(model, str(p), adapter_name=adapter_name, config=config)
        _check_coverage(p, weights, peft_model, adapter_name)
    except Exception as exc:
        _strip_lora_layers(model, keep_config=had_config)
        raise _fail(p, exc) from None
    return peft_model.requires_grad_(False).eval()  # inference only; the trainer pushes weights


def _can_hotswap(peft_model: PeftModel, adapter_name: str, weights: Path, config: dict[str, Any]) -> bool:
    """True when copying tensors in place gives exactly what a fresh load would."""
    old = peft_model.peft_config[adapter_name].to_dict()
    if any(old.get(k) != config.get(k) for k in _SAME_FOR_HOTSWAP) or config.get("modules_to_save"):
        return False
    saved = _saved_shapes(weights) or {}
    current = {name: tuple(param.shape) for name, param in _slots(peft_model, adapter_name).items()}
    return bool(saved) and {_with_adapter_name(k, adapter_name): s for k, s in saved.items()} == current


def swap_adapter(peft_model: PeftModel, adapter_dir: str | Path, *, adapter_name: str = "default") -> SwapMechanism:
    """Replace adapter `adapter_name` with the one in `adapter_dir`, keeping the base weights.

    Returns the path taken (see the module docstring). On SpecError the old adapter stays.
    """
    p, weights, config = _adapter_files(adapter_dir)
    if adapter_name not in getattr(peft_model, "peft_config", {}):
        raise ValueError(f"the model has no LoRA adapter named {adapter_name!r}")
    incoming = f"{adapter_name}__incoming"
    try:
        if hot := _can_hotswap(peft_model, adapter_name, weights, config):
            device = str(next(iter(_slots(peft_model, adapter_name).values())).device)
            hotswap_adapter(peft_model, str(p), adapter_name=adapter_name, torch_device=device)
        else:
            peft_model.load_adapter(str(p), adapter_name=incoming, is_trainable=False)
            _check_coverage(p, weights, peft_model, incoming)
    except Exception as exc:
        if incoming in peft_model.peft_config:
            peft_model.delete_adapter(incoming)
        raise _fail(p, exc) from None
    if hot:
        return "hotswap"
    # It fits: make it live, drop the old one, then load it under the old name (a second small read).
    peft_model.set_adapter(incoming)
    peft_model.delete_adapter(adapter_name)
    peft_model.load_adapter(str(p), adapter_name=adapter_name, is_trainable=False)
    peft_model.set_adapter(adapter_name)
    peft_model.delete_adapter(incoming)
    peft_model.requires_grad_(False)  # set_adapter made the active adapter trainable
    return "reloaded-adapter"


def swap_adapter_weights(
    peft_model: PeftModel, state_dict: Mapping[str, torch.Tensor], adapter_name: str = "default"
) -> None:
    """Copy LoRA tensors from memory into adapter `adapter_name` in place (no new parameters).

    Keys as `get_peft_model_state_dict` gives them or as in the model; every LoRA tensor, in
    its shape, else ValueError and nothing changes. Rank and alpha stay the adapter's.
    """
    slots = _slots(peft_model, adapter_name)
    if not slots:
        raise ValueError(f"the model has no LoRA adapter named {adapter_name!r}")
    plan: list[tuple[torch.nn.Parameter, torch.Tensor]] = []
    for key, value in state_dict.items():
        name = key.removeprefix("_orig_mod.")
        name = name if name in slots else _with_adapter_name(name, adapter_name)
        if name not in slots:
            raise ValueError(f"LoRA weight {key!r} matches no tensor of adapter {adapter_name!r}")
        if tuple(value.shape) != tuple(slots[name].shape):
            raise ValueError(f"LoRA weight {key!r}: shape {tuple(value.shape)}, adapter has {tuple(slots[name].shape)}")
        plan.append((slots.pop(name), value))
    if slots:
        raise ValueError(f"{len(slots)} LoRA tensors of adapter {adapter_name!r} not given, e.g. {next(iter(slots))!r}")
    with torch.no_grad():
        for param, value in plan:
            param.copy_(value)


def adapter_fingerprint(adapter_dir: str | Path) -> str:
    """12 hex digits of sha256 over the weight file, then the config (alpha changes outputs too)."""
    _, weights, _ = _adapter_files(adapter_dir)
    digest = hashlib.sha256()
    for path in (weights, weights.with_name("adapter_config.json")):
        with path.open("rb") as f:
            hashlib.file_digest(f, lambda: digest)  # feeds the one running digest
    return digest.hexdigest()[:12]
