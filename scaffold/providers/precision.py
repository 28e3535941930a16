"""bf16 on the hardware that computes it: the check and the autocast context that the local
provider's decode, the GRPO trainer, SFT and the benchmarks share, so that `precision: auto`
means one thing everywhere."""

from __future__ import annotations

from typing import Any

import torch


def bf16_is_native(device: torch.device | str) -> bool:
    """Whether `device` computes bf16 in hardware: a CUDA GPU with bf16, or a CPU with
    avx512_bf16 or AMX. Elsewhere bf16 autocast is emulated: measured on a 2-core AMD EPYC
    without avx512, a SmolLM2 + LoRA forward+backward of 256 tokens took 2.4 s in fp32 and
    55 s under bf16 autocast."""
    device = torch.device(device)
    if device.type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device.type != "cpu":
        return False
    # Private torch probes of the CPU's ISA: absent in some builds, where we say no.
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def autocast(device: torch.device, bf16: bool) -> Any:
    """bf16 autocast on `device` when `bf16`, else a no-op context."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)
