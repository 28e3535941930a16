"""Did a GRPO run's weights move along a direction, or at random? Its checkpoints, against Adam on noise.

    python benchmarks/update_coherence.py START RUN [--trials 5] [--dim 200000]

START is the adapter the run began from (its warm start; OUT/start-weights.safetensors also
works), RUN the run directory with `checkpoint-N/` and `metrics.jsonl`. The displacement
between consecutive checkpoints is one window; the script prints the cosine between every
pair of windows.

Cosines alone prove nothing: Adam's momentum carries a window's direction into the next,
so even pure noise gives positive cosines. The script therefore runs the same optimizer
(AdamW as TRL configures it: β 0.9 / 0.999, ε 1e-8, no weight decay) on gradients that are
pure noise, with as many updates in each window as the run made (a step whose every
micro-batch was skipped is no update: `update/skipped_micro_batches`), and prints those
cosines beside the run's. A run whose cosines are at or below the null's moved no more
coherently than noise does; adding a fixed signal direction to the null shows how far
above it a given signal-to-noise ratio would put the cosines.

Why: a held-out eval costs 15-30 minutes on this CPU. This reads the checkpoints in seconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.adapter_drift import load_adapter_weights  # noqa: E402
from training.grpo import checkpoint_step  # noqa: E402
from training.metrics import read_metrics  # noqa: E402

ADAPTER = "adapter_model.safetensors"


def checkpoints(run: Path) -> list[tuple[int, Path]]:
    """RUN's checkpoint directories, by step."""
    found = sorted(
        (step, p) for p in run.glob("checkpoint-*") if (step := checkpoint_step(p)) is not None and (p / ADAPTER).is_file()
    )
    if not found:
        raise ValueError(f"{run}: no checkpoint-N/{ADAPTER}")
    return found


def updates_per_window(run: Path, bounds: list[int]) -> list[int]:
    """Optimizer updates in each window (bounds[i], bounds[i+1]]: steps with a micro-batch not skipped."""
    steps = {r["step"]: r for r in read_metrics(run) if r.get("stage") == "grpo"}
    per_step = _micro_batches_per_step(run)
    counts = []
    for low, high in zip(bounds, bounds[1:], strict=False):
        missing = [s for s in range(low + 1, high + 1) if s not in steps]
        if missing:
            raise ValueError(f"{run}/metrics.jsonl has no line for steps {missing}")
        counts.append(sum(1 for s in range(low + 1, high + 1) if steps[s].get("update/skipped_micro_batches", 0) < per_step))
    return counts


def _micro_batches_per_step(run: Path) -> int:
    from training.config import load_config

    return load_config(run / "config.yaml").micro_batches_per_step()


def window_cosines(vectors: list[torch.Tensor]) -> dict[tuple[int, int], float]:
    """Cosine between the displacements of every pair of windows (consecutive vectors)."""
    moves = [b - a for a, b in zip(vectors, vectors[1:], strict=False)]
    return {
        (i, j): float(torch.dot(moves[i], moves[j]) / (moves[i].norm() * moves[j].norm()))
        for i in range(len(moves))
        for j in range(i + 1, len(moves))
        if moves[i].norm() > 0 and moves[j].norm() > 0
    }


def adam_null(updates: list[int], signal: float = 0.0, dim: int = 200_000, trials: int = 5, seed: int = 0) -> dict[tuple[int, int], float]:
    """Mean window cosines of Adam on i.i.d. Gaussian gradients (per-coordinate scales log-normal),
    plus `signal` times a fixed direction of the same scales."""
    generator = torch.Generator().manual_seed(seed)
    totals: dict[tuple[int, int], float] = {}
    for _ in range(trials):
        scale = torch.exp(torch.randn(dim, generator=generator))
        direction = torch.randn(dim, generator=generator) * scale
        optimizer_state = (torch.zeros(dim), torch.zeros(dim))
        weights, count = torch.zeros(dim), 0
        marks = [weights.clone()]
        for window in updates:
            for _ in range(window):
                count += 1
                gradient = torch.randn(dim, generator=generator) * scale + signal * direction
                weights, optimizer_state = _adam_step(weights, gradient, optimizer_state, count)
            marks.append(weights.clone())
        for key, value in window_cosines(marks).items():
            totals[key] = totals.get(key, 0.0) + value / trials
    return totals


def _adam_step(
    weights: torch.Tensor, gradient: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], count: int,
    betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    first = betas[0] * state[0] + (1 - betas[0]) * gradient
    second = betas[1] * state[1] + (1 - betas[1]) * gradient * gradient
    step = (first / (1 - betas[0] ** count)) / ((second / (1 - betas[1] ** count)).sqrt() + eps)
    return weights - step, (first, second)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("start", type=Path, help="the adapter the run started from")
    parser.add_argument("run", type=Path, help="the run directory (checkpoint-N/, metrics.jsonl, config.yaml)")
    parser.add_argument("--trials", type=int, default=5, help="null runs averaged")
    parser.add_argument("--dim", type=int, default=200_000, help="coordinates of the null (its cosines do not depend on it)")
    args = parser.parse_args(argv)
    try:
        found = checkpoints(args.run)
        bounds = [0, *(step for step, _ in found)]
        updates = updates_per_window(args.run, bounds)
        start = load_adapter_weights(args.start)
        saved = [load_adapter_weights(path) for _, path in found]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if any(s.keys() != start.keys() for s in saved):
        print(f"error: {args.start} and the checkpoints hold different parameters", file=sys.stderr)
        return 2
    names = sorted(start)
    vectors = [torch.cat([weights[n].flatten() for n in names]) for weights in (start, *saved)]
    observed = window_cosines(vectors)
    nulls = {signal: adam_null(updates, signal, args.dim, args.trials) for signal in (0.0, 0.3, 1.0)}
    labels = [
        (f"step {high}" if high == low + 1 else f"steps {low + 1}-{high}") + f" ({n} updates)"
        for low, high, n in zip(bounds, bounds[1:], updates, strict=False)
    ]
    print("windows: " + "; ".join(f"{i}: {label}" for i, label in enumerate(labels)))
    print("| windows | run | Adam on noise | signal/noise 0.3 | signal/noise 1 |")
    print("|---|---|---|---|---|")
    for key in sorted(nulls[0.0]):
        run_value = f"{observed[key]:.3f}" if key in observed else "– (no move)"
        print(f"| {key[0]} vs {key[1]} | {run_value} | " + " | ".join(f"{nulls[s][key]:.3f}" for s in (0.0, 0.3, 1.0)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
