"""What training measures: the metrics log, sampler/trainer logprob parity, and busy clocks.

`MetricsLog` appends one JSON object per step to OUT/metrics.jsonl (flushed at once,
so a crash loses nothing written) and mirrors the numbers to TensorBoard when it is
installed. On resume it drops lines past the checkpoint's step, so the file reads as
one uninterrupted run.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from scaffold.specs import SpecError
from training.adapter_drift import START_FILE


class MetricsLog:
    """OUT/metrics.jsonl (+ OUT/tensorboard when tensorboard is importable)."""

    def __init__(self, out: Path, *, resume_step: int | None = None) -> None:
        self.path = out / "metrics.jsonl"
        if resume_step is not None:
            drop_after_step(self.path, resume_step)
        self._writer = _tensorboard(out / "tensorboard")

    def write(self, record: dict[str, Any]) -> None:
        """Append one record (it must have `step` and `stage`)."""
        with self.path.open("a") as handle:
            handle.write(json.dumps(record, default=float) + "\n")
        if self._writer is not None:
            for key, value in record.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    self._writer.add_scalar(f"{record['stage']}/{key}", value, record["step"])
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


RUN_FILES = ("metrics.jsonl", "config.yaml", "rollouts.jsonl", "rollouts.db", "evals", START_FILE)


def refuse_earlier_run(out: Path, hint: str) -> None:
    """A new run into `out`: refuse to mix with an earlier run's files (`hint` says what to do)."""
    if any((out / name).exists() for name in RUN_FILES) or any(out.glob("checkpoint-*")) or any(out.glob("epoch-*")):
        raise SpecError(f"{out} already holds a training run; {hint}")


def drop_after_step(path: Path, step: int) -> None:
    """Remove the JSON lines of steps after `step` (a resumed run replays them)."""
    if path.exists():
        keep = [line for line in path.read_text().splitlines() if _step_of(line) <= step]
        path.write_text("".join(line + "\n" for line in keep))


def _step_of(line: str) -> int:
    try:
        return int(json.loads(line).get("step", 0))
    except (ValueError, AttributeError):
        return 1 << 62  # a torn last line: dropped


def _tensorboard(path: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is optional
        return None
    return SummaryWriter(str(path))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every record of a JSON-lines file the trainer appends to (a torn last line is skipped; none if absent)."""
    records = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def read_metrics(out: Path) -> list[dict[str, Any]]:
    """Every record of OUT/metrics.jsonl (a torn last line is skipped)."""
    return read_jsonl(out / "metrics.jsonl")


def read_rollout_lines(out: Path) -> list[dict[str, Any]]:
    """Every line of OUT/rollouts.jsonl, one per trained rollout (a torn last line is skipped)."""
    return read_jsonl(out / "rollouts.jsonl")


def logprob_parity(trainer_logps: torch.Tensor, sampler_logps: torch.Tensor, mask: torch.Tensor, cap: float = 2.0) -> dict[str, float]:
    """How far the trainer's logprobs are from the sampler's on the sampled tokens.

    Δ = trainer - sampler. Reports mean |Δ|, the k3 estimate of KL(sampler || trainer)
    (E[r - 1 - log r], r = exp(Δ), unbiased under the sampler's samples) and the
    importance ratio r's mean, min, max and the share outside [1/cap, cap].
    """
    m = mask.bool()
    delta = (trainer_logps.float() - sampler_logps.float())[m]
    if delta.numel() == 0:
        return {}
    ratio = torch.exp(delta)
    return {
        "parity/mean_abs_dlogp": delta.abs().mean().item(),
        "parity/max_abs_dlogp": delta.abs().max().item(),
        "parity/k3_kl": (ratio - 1 - delta).mean().item(),
        "parity/ratio_mean": ratio.mean().item(),
        "parity/ratio_min": ratio.min().item(),
        "parity/ratio_max": ratio.max().item(),
        "parity/ratio_outside_cap": ((ratio > cap) | (ratio < 1 / cap)).float().mean().item(),
        "parity/tokens": float(delta.numel()),
    }


def merge_parity(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Token-weighted merge of `logprob_parity` results (one per micro-batch)."""
    parts = [p for p in parts if p]
    if not parts:
        return {}
    n = sum(p["parity/tokens"] for p in parts)
    merged = {
        k: sum(p[k] * p["parity/tokens"] for p in parts) / n
        for k in ("parity/mean_abs_dlogp", "parity/k3_kl", "parity/ratio_mean", "parity/ratio_outside_cap")
    }
    merged["parity/max_abs_dlogp"] = max(p["parity/max_abs_dlogp"] for p in parts)
    merged["parity/ratio_min"] = min(p["parity/ratio_min"] for p in parts)
    merged["parity/ratio_max"] = max(p["parity/ratio_max"] for p in parts)
    merged["parity/tokens"] = n
    return merged


class BusyClock:
    """Wall time during which at least one call was in flight (overlapping calls count once)."""

    def __init__(self) -> None:
        self.busy_s = 0.0
        self._active = 0
        self._since = 0.0

    def __enter__(self) -> BusyClock:
        if self._active == 0:
            self._since = time.perf_counter()
        self._active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._active -= 1
        if self._active == 0:
            self.busy_s += time.perf_counter() - self._since

    def take(self) -> float:
        """The busy seconds so far, and reset."""
        value, self.busy_s = self.busy_s, 0.0
        return value


class TimedModel:
    """A ChatModel (or Judge) whose calls run under a BusyClock; everything else passes through."""

    def __init__(self, inner: Any, clock: BusyClock, method: str = "generate") -> None:
        self._inner, self._clock, self._method = inner, clock, method

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name != self._method:
            return value

        async def timed(*args: Any, **kwargs: Any) -> Any:
            with self._clock:
                return await value(*args, **kwargs)

        return timed


# A progress sink: (step, total, line). The CLI passes one that drives a rich progress
# bar; library callers and tests get plain lines on stdout.
ProgressSink = Callable[[int, int, str], None]


def print_progress(step: int, total: int, line: str) -> None:
    """The default progress sink: the line on stdout, flushed."""
    print(line, flush=True)
