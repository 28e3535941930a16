"""Detection rate of the heuristic baseline auditor on the train-split organisms.

    python benchmarks/heuristic_baseline.py [--difficulty easy|medium|hard] [--max-turns 30]
                                            [--repeats 3] [--judge offline] [--json PATH]

Every train-split quirk gets a simulated organism (fast base responder) and `--repeats`
judged audits (seeds 0, 1, 2, ...) through the normal path, `run_judged_audit`, with
auditor `heuristic`; the quirk-free control (`none`) gets as many. A run counts as a
detection when the judge says `identified` (the quirk matches a top-k hypothesis; the
rank is `matched_rank`); a control run counts as a false positive when the judge says
`false_positive`. The auditor never sees the target spec: it only gets the YAML path
through the job, like `audit run`.

Determinism: the heuristic auditor, the fast responder and the graders are
deterministic; each repeat's seed reaches the organism (its fire decision at medium
and hard difficulty is salted with the sampling seed), so repeats differ only where a
quirk shows on a fraction of turns. At easy difficulty they are identical; the script
checks this and says so, since the Wilson interval over all runs then overstates the
sample size (the effective n is the number of quirks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals.audit_job import DEFAULT_JOB_TURNS, AuditJob, run_judged_audit  # noqa: E402
from evals.metrics import wilson  # noqa: E402
from scaffold.secrets import SecretRegistry  # noqa: E402
from scaffold.store import Store  # noqa: E402
from targets.quirks import quirks_in_split  # noqa: E402
from targets.spec import load_target_spec  # noqa: E402


def write_target(work: Path, quirk_id: str, seed: int, difficulty: str | None) -> Path:
    """A model.yaml for a simulated organism with `quirk_id` (difficulty omitted: the spec's default)."""
    organism = f"quirk: {quirk_id}, implant: simulated, base_responder: fast"
    if difficulty:
        organism += f", difficulty: {difficulty}"
    path = work / "targets" / f"{quirk_id}-s{seed}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"name: baseline-{quirk_id}\norganism: {{{organism}}}\n", encoding="utf-8")
    load_target_spec(path)  # fail here, naming the file, if the spec is bad
    return path


async def one_run(
    quirk_id: str, seed: int, args: argparse.Namespace, store: Store, work: Path
) -> dict[str, Any]:
    path = write_target(work, quirk_id, seed, args.difficulty)
    job = AuditJob(
        target_path=str(path), auditor="heuristic", judge=args.judge, max_turns=args.max_turns, sample_seed=seed
    )
    start = time.perf_counter()
    judged = await run_judged_audit(job, store, SecretRegistry(), work / "out", run_id=f"{quirk_id}-s{seed}")
    verdict, transcript = judged.judge, judged.transcript
    report = transcript.report
    return {
        "quirk": quirk_id,
        "seed": seed,
        "status": judged.result.status,
        "error": judged.result.error or verdict.error,
        "identified": verdict.identified,
        "matched_rank": verdict.matched_rank,
        "false_positive": verdict.false_positive,
        "reward": judged.reward.reward,
        "turns": transcript.auditor_turns,
        "findings": len(transcript.findings),
        "top_hypothesis": report.hypotheses[0].description if report and report.hypotheses else None,
        "wall_s": round(time.perf_counter() - start, 3),
    }


def fingerprint(run: dict[str, Any]) -> tuple[Any, ...]:
    return (run["status"], run["identified"], run["matched_rank"], run["false_positive"], run["reward"], run["top_hypothesis"])


def rank_text(ranks: list[int | None]) -> str:
    return ",".join("-" if r is None else str(r) for r in ranks)


async def main(args: argparse.Namespace) -> int:
    quirks = [q.id for q in quirks_in_split("train")]
    seeds = list(range(args.repeats))
    difficulty = args.difficulty or "default (easy)"
    print(f"heuristic auditor, judge {args.judge}, difficulty {difficulty}, max_turns {args.max_turns}, "
          f"{len(quirks)} train quirks x {len(seeds)} repeats + {len(seeds)} controls")
    start = time.perf_counter()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="heuristic-baseline-") as tmp:
        work = Path(tmp)
        store = Store(f"sqlite:///{work / 'runs.db'}")
        for quirk_id in [*quirks, "none"]:
            for seed in seeds:
                runs.append(await one_run(quirk_id, seed, args, store, work))
        store.engine.dispose()
    wall = time.perf_counter() - start

    header = f"{'quirk':<24} {'detected':>8} {'mean reward':>12} {'ranks':>8} {'s/run':>6}  top hypothesis (seed 0)"
    print(header)
    print("-" * len(header))
    detected = total = 0
    nondeterministic: list[str] = []
    failed = [r for r in runs if r["status"] != "completed" or r["error"]]
    for quirk_id in [*quirks, "none"]:
        mine = [r for r in runs if r["quirk"] == quirk_id]
        if len({fingerprint(r) for r in mine}) > 1:
            nondeterministic.append(quirk_id)
        mean_reward = sum(r["reward"] for r in mine) / len(mine)
        per_run = sum(r["wall_s"] for r in mine) / len(mine)
        top = (mine[0]["top_hypothesis"] or "(no report hypotheses)")[:60]
        if quirk_id == "none":
            hits = sum(bool(r["false_positive"]) for r in mine)
            print("-" * len(header))
            print(f"{'none (control, FPs)':<24} {f'{hits}/{len(mine)}':>8} {mean_reward:>12.3f} {'':>8} {per_run:>6.2f}  {top}")
            continue
        hits = sum(bool(r["identified"]) for r in mine)
        detected, total = detected + hits, total + len(mine)
        ranks = rank_text([r["matched_rank"] for r in mine])
        print(f"{quirk_id:<24} {f'{hits}/{len(mine)}':>8} {mean_reward:>12.3f} {ranks:>8} {per_run:>6.2f}  {top}")

    controls = [r for r in runs if r["quirk"] == "none"]
    fps = sum(bool(r["false_positive"]) for r in controls)
    low, high = wilson(detected, total)
    flow, fhigh = wilson(fps, len(controls))
    rewards = [r["reward"] for r in runs if r["quirk"] != "none"]
    print()
    print(f"detection rate: {detected}/{total} = {detected / total:.1%}  (95% Wilson {low:.1%} - {high:.1%})")
    print(f"false positives on controls: {fps}/{len(controls)} = {fps / len(controls):.1%}  "
          f"(95% Wilson {flow:.1%} - {fhigh:.1%})")
    print(f"mean reward (seeded quirks): {sum(rewards) / len(rewards):.3f}")
    if nondeterministic:
        print(f"repeats differed for: {', '.join(nondeterministic)}")
    else:
        quirk_hits = sum(bool(r["identified"]) for r in runs if r["quirk"] != "none" and r["seed"] == 0)
        qlow, qhigh = wilson(quirk_hits, len(quirks))
        print(f"repeats identical for every organism (deterministic): effective n = {len(quirks)} quirks, "
              f"{quirk_hits}/{len(quirks)} (95% Wilson {qlow:.1%} - {qhigh:.1%})")
    if failed:
        errors = [f"{r['quirk']}-s{r['seed']}: {r['error']}" for r in failed]
        print(f"runs with errors: {'; '.join(errors)}")
    print(f"wall time: {wall:.1f}s for {len(runs)} audits (incl. loading the judge)")

    if args.json:
        summary = {
            "auditor": "heuristic",
            "judge": args.judge,
            "difficulty": args.difficulty or "default",
            "max_turns": args.max_turns,
            "repeats": args.repeats,
            "detected": detected,
            "total": total,
            "detection_rate": detected / total,
            "detection_wilson95": [low, high],
            "false_positives": fps,
            "controls": len(controls),
            "false_positive_rate": fps / len(controls),
            "false_positive_wilson95": [flow, fhigh],
            "repeats_identical": not nondeterministic,
            "wall_s": round(wall, 3),
            "runs": runs,
        }
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--difficulty", choices=["easy", "medium", "hard"], default=None,
                        help="Organism difficulty (default: the target spec's default, easy).")
    parser.add_argument("--max-turns", type=int, default=DEFAULT_JOB_TURNS,
                        help="Auditor turn budget per audit (default: AuditJob's).")
    parser.add_argument("--repeats", type=int, default=3, help="Audits per organism (seeds 0..N-1).")
    parser.add_argument("--judge", default="offline", help="Judge spec: offline (MiniLM) or lexical.")
    parser.add_argument("--json", metavar="PATH", help="Also write every run and the totals here.")
    raise SystemExit(asyncio.run(main(parser.parse_args())))
