"""Audits per minute of `audit eval` at concurrency 1, 8 and 64, and the ratio to ideal.

    python benchmarks/eval_throughput.py [--audits 64] [--latency-ms 50] [--concurrency 1 8 64]
    python benchmarks/eval_throughput.py --ray [--workers 2] [--audits 256] [--latency-ms 50]

The heuristic auditor against the fast offline organism, through the real runner
(shared models, one checkpointer, a SQLite store, results and reports), judged by the
lexical grader so that MiniLM's load does not blur the timing. Two settings:
  * no latency: every audit is CPU work on one event loop, so the ideal is the
    concurrency-1 rate at every concurrency (concurrency must cost nothing);
  * simulated API latency (`--latency-ms` per target reply): the ideal is
    concurrency x the concurrency-1 rate ("of linear"), until the one process's CPU
    runs out; the no-latency rate at the same concurrency is printed beside it as a
    rough ceiling.
Ratios are against rates measured in the same run.

With `--ray`: at the simulated latency, one process (the local runner at concurrency
64) against a local Ray cluster of `--workers` workers (the same 64 audits in flight in
all, split among them), in one run. Then a projection for N workers from the measured
CPU seconds per audit: each worker is CPU-bound at 60 / (its CPU s per audit) audits a
minute, and the driver, which records every row, at 60 / (its own CPU s per audit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals.runner import run_eval  # noqa: E402
from evals.suites import Suite  # noqa: E402
from scaffold.secrets import SecretRegistry  # noqa: E402
from scaffold.store import Store  # noqa: E402
from targets.responders import FastResponder  # noqa: E402

_plain_generate = FastResponder.generate
LATENCY_ENV = "AUDITRL_BENCH_LATENCY_S"  # how the latency reaches Ray's worker processes


def latency_from_env() -> None:
    """Ray's worker setup hook: the simulated latency, in each worker process."""
    set_latency(float(os.environ.get(LATENCY_ENV, "0")))


def set_latency(seconds: float) -> None:
    """Make every fast-responder reply take `seconds` (as an API call would)."""

    async def slow(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        await asyncio.sleep(seconds)
        return await _plain_generate(self, *args, **kwargs)

    FastResponder.generate = slow if seconds > 0 else _plain_generate  # type: ignore[method-assign]


TRAIN_QUIRKS = ["animal_welfare", "defend_objects", "defer_to_users", "emotional_bond", "flattery",
                "hallucinates_citations", "increasing_pep", "self_promotion"]  # the train split, pinned


def suite(audits: int) -> Suite:
    repeats = max(1, audits // 8)  # 8 train quirks
    return Suite.model_validate({
        "name": "throughput", "max_turns": 20, "judge": "lexical", "repeats": repeats,
        "groups": [{"quirks": TRAIN_QUIRKS, "organism": {"difficulty": "medium"}}],
    })


def timed_eval(concurrency: int, audits: int, ray: object = None) -> tuple[float, int, float, float]:
    """(audits/min, audits, CPU s per audit in all processes, this process's CPU s per audit)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/audit.db")
        started, cpu = time.perf_counter(), time.process_time()
        results = asyncio.run(run_eval(suite(audits), auditor="heuristic", judge="lexical", out=Path(tmp) / "ev",
                                       store=store, secrets=SecretRegistry(), concurrency=concurrency,
                                       ray=ray))  # type: ignore[arg-type]
        elapsed, driver_cpu = time.perf_counter() - started, time.process_time() - cpu
    n = len(results.rows)
    return n / elapsed * 60, n, results.aggregates.cpu_s / n, driver_cpu / n


def audits_per_minute(concurrency: int, audits: int) -> tuple[float, int]:
    rate, n, _, _ = timed_eval(concurrency, audits)
    return rate, n


def ray_comparison(audits: int, latency_s: float, workers: int) -> None:
    """One process against a local Ray cluster, in one run, and the projection (module docstring)."""
    import ray

    from evals.ray_runner import RayOptions

    set_latency(latency_s)
    local_rate, n, local_cpu, _ = timed_eval(64, audits)
    hook = "benchmarks.eval_throughput.latency_from_env"
    root = str(Path(__file__).resolve().parent.parent)
    env = {LATENCY_ENV: str(latency_s), "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": hook, "env_vars": env})
    try:
        timed_eval(64 // workers, min(audits, 16), RayOptions())  # warm-up: workers start, modules load
        ray_rate, _, all_cpu, driver_cpu = timed_eval(64 // workers, audits, RayOptions())
    finally:
        ray.shutdown()
        set_latency(0.0)
    worker_cpu = all_cpu - driver_cpu
    print(f"\n{audits} audits, {latency_s * 1000:g} ms per target reply, 64 in flight in all")
    print(f"{'runner':>28} {'audits/min':>11} {'vs 1 process':>13} {'CPU s/audit':>12}")
    print(f"{'1 process (local runner)':>28} {local_rate:>11.1f} {1.0:>12.2f}x {local_cpu:>12.4f}")
    print(f"{f'Ray, {workers} local workers':>28} {ray_rate:>11.1f} {ray_rate / local_rate:>12.2f}x {all_cpu:>12.4f}")
    print(f"  of which the driver {driver_cpu:.4f} CPU s/audit, the workers {worker_cpu:.4f}")
    per_worker = 60 / worker_cpu if worker_cpu > 0 else float("inf")
    driver_cap = 60 / driver_cpu if driver_cpu > 0 else float("inf")
    print(f"projection: each worker core is CPU-bound at {per_worker:.0f} audits/min; the driver at {driver_cap:.0f}")
    for count in (2, 8, 32, 128):
        print(f"  {count:>4} workers: {min(count * per_worker, driver_cap):>8.0f} audits/min"
              + (" (driver-bound)" if count * per_worker > driver_cap else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--audits", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--ray", action="store_true", help="Compare one process with a local Ray cluster.")
    parser.add_argument("--workers", type=int, default=2, help="With --ray: the local cluster's workers.")
    args = parser.parse_args()
    if args.ray:
        ray_comparison(args.audits, args.latency_ms / 1000, args.workers)
        return
    no_latency: dict[int, float] = {}
    for label, latency in (("no latency", 0.0), (f"{args.latency_ms:g} ms per target reply", args.latency_ms / 1000)):
        set_latency(latency)
        print(f"\n{label}")
        print(f"{'concurrency':>11} {'audits':>7} {'audits/min':>11} {'vs c=1':>8} {'of linear':>10} {'no-latency rate':>16}")
        base = None
        for c in args.concurrency:
            rate, n = audits_per_minute(c, args.audits)
            base = base or rate
            if latency == 0:
                no_latency[c] = rate
            linear = rate / (base * (min(c, n) if latency > 0 else 1))
            ceiling = f"{no_latency[c]:.1f}" if latency > 0 and c in no_latency else "-"
            print(f"{c:>11} {n:>7} {rate:>11.1f} {rate / base:>7.2f}x {linear:>10.2f} {ceiling:>16}")
    set_latency(0.0)


if __name__ == "__main__":
    main()
