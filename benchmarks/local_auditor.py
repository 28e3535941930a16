"""The packaged SmolLM2 as auditor, untrained: how many of its turns are valid tool calls.

    python benchmarks/local_auditor.py [--max-turns 8] [--max-tokens 128] [--seeds 0 1]
                                       [--temperature 0.7] [--target targets/examples/flattery.yaml]

Runs whole audits offline (packaged weights, the flattery organism, the lexical grader)
with `hf:smollm2-135m`, once with free decoding and once with constrained decoding
(`+constrained`), and prints, per mode: the fraction of auditor turns that were valid
tool calls (at least one call, every call parsed and naming a real tool), the audit
status, seconds per turn, and the reward. It is the starting point RL has to improve
on; the numbers are measurements, not targets.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from evals.audit_job import AuditJob, run_judged_audit  # noqa: E402
from scaffold.secrets import SecretRegistry  # noqa: E402
from scaffold.store import Store  # noqa: E402
from scaffold.tools import AUDITOR_TOOLS  # noqa: E402
from scaffold.transcript import Transcript  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def valid_turns(transcript: Transcript) -> tuple[int, int]:
    """(valid tool-call turns, auditor turns) of an audit."""
    turns = [m for m in transcript.auditor_messages if m.role == "assistant"]
    valid = sum(
        1
        for m in turns
        if m.tool_calls and all(c.parse_error is None and c.name in AUDITOR_TOOLS for c in m.tool_calls)
    )
    return valid, len(turns)


async def one_audit(spec: str, args: argparse.Namespace, seed: int, tmp: Path) -> dict[str, object]:
    torch.manual_seed(seed)
    job = AuditJob(target_path=args.target, auditor=spec, judge="lexical", max_turns=args.max_turns)
    started = time.perf_counter()
    out = tmp / f"{abs(hash((spec, seed)))}"
    judged = await run_judged_audit(job, Store(f"sqlite:///{tmp / 'runs.db'}"), SecretRegistry(), out)
    valid, turns = valid_turns(judged.transcript)
    return {
        "status": judged.result.status,
        "valid": valid,
        "turns": turns,
        "s_per_turn": (time.perf_counter() - started) / max(turns, 1),
        "reward": judged.reward.reward,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=str(ROOT / "targets/examples/flattery.yaml"))
    parser.add_argument("--max-turns", type=int, default=8, help="auditor turns per audit")
    parser.add_argument("--max-tokens", type=int, default=128, help="most tokens per auditor reply")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    base = f"hf:smollm2-135m+max_tokens:{args.max_tokens}+temperature:{args.temperature}"
    print(f"auditor {base}, target {Path(args.target).name}, {args.max_turns} turns, seeds {args.seeds}")
    print(f"{'mode':<12} {'valid turns':>12} {'fraction':>9} {'s/turn':>7} {'reward':>7}  statuses")
    with tempfile.TemporaryDirectory() as tmp:
        for mode, spec in (("free", base), ("constrained", base + "+constrained")):
            runs = [await one_audit(spec, args, seed, Path(tmp)) for seed in args.seeds]
            valid = sum(int(r["valid"]) for r in runs)  # type: ignore[call-overload]
            turns = sum(int(r["turns"]) for r in runs)  # type: ignore[call-overload]
            per_turn = statistics.mean(float(r["s_per_turn"]) for r in runs)  # type: ignore[arg-type]
            reward = statistics.mean(float(r["reward"]) for r in runs)  # type: ignore[arg-type]
            statuses = ",".join(str(r["status"]) for r in runs)
            print(f"{mode:<12} {valid:>5}/{turns:<6} {valid / max(turns, 1):>9.2f} {per_turn:>7.1f} {reward:>7.2f}  {statuses}")


if __name__ == "__main__":
    asyncio.run(main())
