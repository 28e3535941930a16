"""How much of a GRPO step's gradient is signal: the gradient noise scale, measured per step.

A step's gradient is the sum of its micro-batches' contributions. Their spread says how
noisy that sum is (McCandlish et al. 2018, "An Empirical Model of Large-Batch Training",
the simple noise scale). Treating each micro-batch as one sample x_i of the true gradient G
(n samples, x_i = n times its contribution, so that their mean is the step's gradient):

- `update/grad_noise_trace`: tr(Σ), the summed per-coordinate variance of one sample;
- `update/grad_signal_sq`: an unbiased estimate of |G|², the step gradient's squared norm
  less the noise's share, tr(Σ)/n (negative when the noise explains all of it);
- `update/grad_snr`: |G|² / (tr(Σ)/n), the step's own signal-to-noise ratio. Near or below 0,
  the update is a random direction, whatever the loss and reward curves say;
- `update/noise_scale_rows`: tr(Σ)/|G|², how many rollouts a step would need for signal and
  noise to weigh the same (only when |G|² > 0).

Adam moves every weight by about the learning rate whatever the gradient holds, so a run
whose updates are noise still moves (see training/adapter_drift.py); this tells the two
apart on every step. The per-step estimate is noisy; pool several steps by summing their
traces and their signals. Rows of one group share their advantages' zero sum, so they are
not independent samples: read the scale as an order of magnitude, not a batch size to the row.

One process only: with several, the last micro-batch's gradients are all-reduced across
ranks, and its contribution is not this rank's own.
"""

from __future__ import annotations

from typing import Any

import torch


def flat_gradients(model: Any) -> torch.Tensor:
    """Every trainable parameter's gradient, flattened to one fp32 vector on the parameters'
    device (None counts as 0). It stays there: on a GPU a copy to the host after every
    micro-batch would be a device sync."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise ValueError("no trainable parameters: there is no gradient to measure")
    return torch.cat([
        (p.grad.detach().to(torch.float32) if p.grad is not None else torch.zeros(p.numel(), device=p.device)).flatten()
        for p in trainable
    ])


class GradientNoise:
    """Collects one step's micro-batch contributions (call `observe` after each backward pass)
    and summarises them (`summary`, once the optimizer has stepped)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # The accumulated gradient after the last micro-batch: the sum of the contributions so far.
        self.previous: torch.Tensor | None = None
        self.squares: torch.Tensor | float = 0.0  # Σ|c_i|², a device tensor until `summary` reads it
        self.count = 0

    def observe(self, model: Any) -> None:
        """Record the last backward pass's contribution: the accumulated gradient's change."""
        accumulated = flat_gradients(model)
        contribution = accumulated if self.previous is None else accumulated - self.previous
        self.previous = accumulated
        self.squares = self.squares + contribution.pow(2).sum()
        self.count += 1

    def summary(self) -> dict[str, float]:
        """The step's noise metrics (module docstring), and a fresh start for the next step.
        Empty when fewer than two micro-batches were seen, or none had a gradient."""
        count, squares, total = self.count, float(self.squares), self.previous
        self._reset()
        if count < 2 or total is None or squares == 0.0:
            return {}
        mean_sq = float(total.pow(2).sum())  # |mean of x_i|²: the step's gradient
        # Σ|x_i - mean|² / (n - 1), with x_i = n·c_i: (n²·Σ|c_i|² - n·|Σc_i|²) / (n - 1)
        trace = max(0.0, (count * count * squares - count * mean_sq) / (count - 1))
        signal = mean_sq - trace / count
        measured = {"update/grad_noise_trace": trace, "update/grad_signal_sq": signal}
        if trace > 0:
            measured["update/grad_snr"] = signal / (trace / count)
        if signal > 0:
            measured["update/noise_scale_rows"] = trace / signal
        return measured


def pooled_noise_scale(steps: list[dict[str, Any]]) -> dict[str, float | int]:
    """Several steps' metrics pooled (summed traces over summed signals): steer by this, not by
    one step's. `snr_per_row` is the pooled |G|² / tr(Σ); a step of n rows has about n times it."""
    measured = [s for s in steps if "update/grad_noise_trace" in s]
    trace = sum(float(s["update/grad_noise_trace"]) for s in measured)
    signal = sum(float(s["update/grad_signal_sq"]) for s in measured)
    pooled: dict[str, float | int] = {"steps": len(measured)}
    if trace > 0:
        pooled["snr_per_row"] = signal / trace
    if signal > 0:
        pooled["noise_scale_rows"] = trace / signal
    return pooled


def main(argv: list[str] | None = None) -> int:
    """`python -m training.gradient_noise OUT [--from N] [--to M]`: a run's steps pooled."""
    import argparse
    import sys
    from pathlib import Path

    from training.metrics import read_metrics

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out", type=Path, help="a GRPO run directory (its metrics.jsonl)")
    parser.add_argument("--from", dest="first", type=int, default=1, help="first step pooled")
    parser.add_argument("--to", dest="last", type=int, default=None, help="last step pooled (default: the last logged)")
    args = parser.parse_args(argv)
    steps = [
        r for r in read_metrics(args.out)
        if r.get("stage") == "grpo" and r["step"] >= args.first and (args.last is None or r["step"] <= args.last)
    ]
    if not steps:
        print(f"error: {args.out}/metrics.jsonl holds no GRPO step in that range", file=sys.stderr)
        return 2
    pooled = pooled_noise_scale(steps)
    if not pooled["steps"]:
        print(f"{args.out}: none of {len(steps)} steps measured the gradient noise (all skipped, or logged before the metric)")
        return 0
    line = f"{args.out}: {pooled['steps']} of {len(steps)} steps measured"
    if "snr_per_row" in pooled:
        line += f"; signal-to-noise per rollout {pooled['snr_per_row']:.3g}"
    line += f"; rollouts a step needs for signal = noise: {pooled['noise_scale_rows']:.3g}" if "noise_scale_rows" in pooled else "; no signal above the noise"
    print(line)
    for step in steps:
        if "update/grad_snr" in step:
            print(f"  step {step['step']}: signal-to-noise {step['update/grad_snr']:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
