"""Audits per minute of `audit eval` at concurrency 1, 8 and 64, and the ratio to ideal.

    python benchmarks/eval_throughput.py [--audits 64] [--latency-ms 50] [--concurrency 1 8 64]

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
"""

from __future__ import annotations

import argparse
import asyncio
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


def set_latency(seconds: float) -> None:
    """Make every fast-responder reply take `seconds` (as an API call would)."""

    async def slow(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        await asyncio.sleep(seconds)
        return await _plain_generate(self, *args, **kwargs)

    FastResponder.generate = slow if seconds > 0 else _plain_generate  # type: ignore[method-assign]


def suite(audits: int) -> Suite:
    repeats = max(1, audits // 8)  # 8 train quirks
    return Suite.model_validate({
        "name": "throughput", "max_turns": 20, "judge": "lexical", "repeats": repeats,
        "groups": [{"splits": ["train"], "organism": {"difficulty": "medium"}}],
    })


def audits_per_minute(concurrency: int, audits: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{tmp}/audit.db")
        started = time.perf_counter()
        results = asyncio.run(run_eval(suite(audits), auditor="heuristic", judge="lexical", out=Path(tmp) / "ev",
                                       store=store, secrets=SecretRegistry(), concurrency=concurrency))
        elapsed = time.perf_counter() - started
    return len(results.rows) / elapsed * 60, len(results.rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--audits", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    args = parser.parse_args()
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
