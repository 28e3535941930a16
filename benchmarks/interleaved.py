"""Timing two ways of doing one thing in turn, in one run: benchmarks print ratios measured in the
same run, and taking turns lets a busy neighbour slow every way alike."""

from __future__ import annotations

import statistics
from typing import Any, Callable


def interleaved_medians(runs: dict[str, Callable[[], tuple[float, Any]]], repeats: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Each run's median seconds over `repeats` rounds in which the runs take turns, and each
    run's last output. A run returns (seconds, output) and times only what it compares."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    outputs: dict[str, Any] = {}
    for _ in range(repeats):
        for name, run in runs.items():
            seconds, outputs[name] = run()
            times[name].append(seconds)
    return {name: statistics.median(seconds) for name, seconds in times.items()}, outputs
