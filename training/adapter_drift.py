"""How far the trainable weights have moved since the run started.

A GRPO run can log a loss, a gradient norm and a rising or flat reward while its weights
barely move: on this project's CPU runs, 7 to 16 optimizer steps at lr 5e-5 left the
LoRA weights about 1% away from the warm start, so the held-out eval measured the warm
start again. This makes that visible on every step, next to the reward, instead of after
a 14-minute eval.

The start is what the trainer's model holds before its first step: the init adapter, or
the fresh LoRA. It is written to OUT/start-weights.safetensors on a new run and read back
on resume, so the drift of a resumed run is still measured from the run's own start.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import torch

START_FILE = "start-weights.safetensors"


def trainable_weights(model: Any) -> dict[str, torch.Tensor]:
    """A detached fp32 CPU copy of every parameter the optimizer updates."""
    return {
        name: param.detach().to("cpu", torch.float32).clone()
        for name, param in model.named_parameters()
        if param.requires_grad
    }


class AdapterDrift:
    """Relative distances of the trainable weights from the run's start and from the last step."""

    def __init__(self, start: dict[str, torch.Tensor]) -> None:
        if not start:
            raise ValueError("no trainable parameters: nothing can drift")
        self.start = start
        # An all-zero start (nothing trained yet and no init) has no scale: the drift is then absolute.
        self.start_norm = math.sqrt(sum(float(t.pow(2).sum()) for t in start.values())) or 1.0
        self.previous: dict[str, torch.Tensor] | None = {name: t.clone() for name, t in start.items()}

    @classmethod
    def for_run(cls, model: Any, out: Path, resumed: bool = False) -> AdapterDrift:
        """The run's start, read from OUT where the run saved one, else taken from `model` and saved.

        Call it before the first step: `model` then holds the init adapter or the seeded fresh
        LoRA, the start even of a resumed run whose older version saved none. `resumed` (a
        checkpoint will be loaded after this) drops the first step's `update/step_change`: the
        weights before that step are the checkpoint's, which this never sees."""
        from safetensors.torch import load_file, save_file

        path = out / START_FILE
        current = trainable_weights(model)
        if path.is_file():
            start = load_file(str(path))
            if set(start) != set(current):
                raise ValueError(f"{path} holds other parameters than this model trains; it is not this run's start")
        else:
            start = current
            partial = path.with_name(path.name + ".partial")  # a crash mid-write must not leave a torn start
            save_file(start, str(partial))
            os.replace(partial, path)
        drift = cls(start)
        if resumed:
            drift.previous = None
        return drift

    def measure(self, model: Any) -> dict[str, float]:
        """`update/drift`: ‖θ − θ_start‖ / ‖θ_start‖; `update/step_change`: ‖θ − θ_last‖ / ‖θ_start‖;
        `update/max_abs_drift`: the largest single weight's move from the start. A resumed run's
        first step has no `update/step_change`: the weights it resumed from are not known here."""
        return self.measure_weights(trainable_weights(model))

    def measure_weights(self, current: dict[str, torch.Tensor]) -> dict[str, float]:
        """`measure`, on weights already copied out (fp32, CPU, named as the start)."""
        if set(current) != set(self.start):
            raise ValueError("the model's trainable parameters changed during the run")
        from_start = from_last = 0.0
        largest = 0.0
        for name, weight in current.items():
            moved = weight - self.start[name]
            from_start += float(moved.pow(2).sum())
            if self.previous is not None:
                from_last += float((weight - self.previous[name]).pow(2).sum())
            largest = max(largest, float(moved.abs().max()))
        measured = {"update/drift": math.sqrt(from_start) / self.start_norm, "update/max_abs_drift": largest}
        if self.previous is not None:
            measured["update/step_change"] = math.sqrt(from_last) / self.start_norm
        self.previous = current
        return measured


def load_adapter_weights(path: Path) -> dict[str, torch.Tensor]:
    """A saved adapter's weights in fp32: a directory holding adapter_model.safetensors (OUT/final,
    OUT/checkpoint-N, a warm start) or a .safetensors file (OUT/START_FILE), named as peft saves
    them. The trainer's own START_FILE keeps peft's adapter name (".default."); saved adapters drop it."""
    from safetensors.torch import load_file

    file = path if path.suffix == ".safetensors" else path / "adapter_model.safetensors"
    if not file.is_file():
        raise ValueError(f"{path}: no adapter_model.safetensors (an adapter directory: OUT/final, OUT/checkpoint-N)")
    return {name.replace(".default.", "."): t.float() for name, t in load_file(str(file)).items()}


def adapter_distance(start: Path, end: Path) -> dict[str, float]:
    """The drift between two saved adapters (`load_adapter_weights`), as `AdapterDrift.measure`
    reports it: for runs whose metrics predate `update/drift`."""
    before, after = load_adapter_weights(start), load_adapter_weights(end)
    if before.keys() != after.keys():
        raise ValueError(f"{start} and {end} hold different parameters: not the same adapter")
    drift = AdapterDrift(before)
    measured = drift.measure_weights(after)
    measured.pop("update/step_change", None)
    return measured


def main(argv: list[str] | None = None) -> int:
    """`python -m training.adapter_drift START END`: how far END's weights are from START's."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("start", type=Path, help="the adapter a run started from (e.g. an SFT warm start)")
    parser.add_argument("end", type=Path, nargs="+", help="adapters the run saved (checkpoints, final)")
    args = parser.parse_args(argv)
    for end in args.end:
        try:
            measured = adapter_distance(args.start, end)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{end}: drift {measured['update/drift']:.4f}  largest move {measured['update/max_abs_drift']:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
