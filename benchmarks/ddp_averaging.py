"""Does two-process GRPO average its gradients like one process? One step, SmolLM2, from an adapter that earns reward.

`tests/test_distributed_training.py` shows that two ranks run the one process's rollouts
and end with its adapter, but on `cpu-smoke` nothing moves: the tiny random policy earns
no reward, so there is no gradient to average. This runs the same comparison where the
adapter does move: `cpu-smollm2-short` from a warm-start adapter (an SFT run's
`OUT/final`), with the `binary` reward (it pays naming, which the SFT policy does in
about one rollout in seven, so a group of 8 usually disagrees), for `--steps` steps:

1. one process (`audit train`, threads=2);
2. two processes (`torchrun --nproc_per_node 2`, gloo on the loopback, threads=1 each);
   rank 0 plays the first group, rank 1 the second;
3. the control: one process with the first group alone, which is where rank 0 would
   end if the ranks did not average their gradients.

It prints whether the runs played the same rollouts with the same rewards, and compares
the updates (final adapter minus start): their L2 gap relative to the move, their cosine,
and the share of weights moved in the same direction. Adam's first step moves every
weight by about the learning rate, in the sign of its gradient, so a weight whose
gradient is near 0 can go either way on float noise alone; the control says how far
apart the updates are when the gradients really differ.

    python benchmarks/ddp_averaging.py --init-adapter train-out/sft-s3x5/final --out train-out/ddp-averaging

Minutes on 2 cores (two runs of G x prompts rollouts plus their updates). Each run is
skipped when its final adapter is already there, so a cut-short run can be rerun.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "training" / "configs" / "cpu-smollm2-short.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(command: list[str], env: dict[str, str], log: Path) -> float:
    start = time.perf_counter()
    with log.open("w") as handle:
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:6])} ... failed with {done.returncode}; see {log}")
    return time.perf_counter() - start


def rollouts(*paths: Path) -> list[tuple]:  # type: ignore[type-arg]
    """(step, run id without its random tail, seed, reward, pattern) per rollout, sorted."""
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines()]
    return sorted((r["step"], r["run_id"].rsplit("-", 1)[0], r["seed"], r["reward"], r["pattern"]) for r in rows)


def adapter(path: Path) -> dict:  # type: ignore[type-arg]
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--init-adapter", type=Path, required=True, help="The warm start (an SFT run's OUT/final).")
    parser.add_argument("--out", type=Path, default=Path("train-out/ddp-averaging"))
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--prompts", type=int, default=2, help="Groups per step (prompts_per_step).")
    parser.add_argument("--reward", default="binary", help="Reward family (binary pays naming: more signal).")
    args = parser.parse_args()
    if not (args.init_adapter / "adapter_model.safetensors").is_file():
        sys.exit(f"--init-adapter {args.init_adapter}: no adapter_model.safetensors there")
    args.out.mkdir(parents=True, exist_ok=True)
    sets = [f"steps={args.steps}", f"prompts_per_step={args.prompts}", f"reward.family={args.reward}",
            "eval.every=0", "eval.at_end=false", f"save_every={args.steps}"]
    train = ["-m", "audit.cli", "train", "--config", str(CONFIG), "--init-adapter", str(args.init_adapter.resolve())]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOO_SOCKET_IFNAME": "lo"}
    one, two, alone = args.out / "one", args.out / "two", args.out / "first-group-alone"
    timings = {}
    if not (one / "final").is_dir():
        command = [sys.executable, *train, "--out", str(one), *(x for s in [*sets, "threads=2"] for x in ("--set", s))]
        timings["one"] = _run(command, env, args.out / "one.log")
    if not (two / "final").is_dir():
        launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                  "--master_addr", "127.0.0.1", "--master_port", str(_free_port())]
        command = [*launch, *train, "--out", str(two), *(x for s in [*sets, "threads=1"] for x in ("--set", s))]
        timings["two"] = _run(command, {**env, "OMP_NUM_THREADS": "1"}, args.out / "two.log")
    if not (alone / "final").is_dir():
        first = [*sets, "threads=2", "prompts_per_step=1"]
        command = [sys.executable, *train, "--out", str(alone), *(x for s in first for x in ("--set", s))]
        timings["first group alone"] = _run(command, env, args.out / "first-group-alone.log")

    played_one = rollouts(one / "rollouts.jsonl")
    played_two = rollouts(two / "rollouts.jsonl", two / "rank-1" / "rollouts.jsonl")
    rewards = [r[3] for r in played_one]
    played_alone = rollouts(alone / "rollouts.jsonl")
    start = adapter(args.init_adapter)
    one_step, two_step, alone_step = (update(adapter(p / "final"), start) for p in (one, two, alone))
    print(f"{len(played_one)} rollouts a run, rewards {sorted(rewards)}; run times (s): "
          + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()))
    print(f"two processes played the one process's rollouts and rewards: {played_one == played_two}; "
          f"the control played its first group's: {played_alone == [r for r in played_one if r in played_alone]}"
          f" ({len(played_alone)} rollouts)")
    if float(one_step.norm()) == 0:
        print("the adapter did not move (every group agreed): no gradient was averaged; try more --prompts")
        return
    print(f"update of one process: L2 {float(one_step.norm()):.3e}, largest {float(one_step.abs().max()):.3e}")
    for name, other in (("two processes", two_step), ("first group alone (no averaging)", alone_step)):
        gap, cosine, same = compare(one_step, other)
        print(f"one process vs {name}: L2 gap / move {gap:.4f}, cosine {cosine:.5f}, "
              f"same direction {same:.2%} of the weights moved")


def update(final: dict, start: dict):  # type: ignore[no-untyped-def]
    """The adapter's move, flattened: final minus start over every tensor."""
    import torch

    # float64: a cosine over millions of weights drifts past 1 in float32
    return torch.cat([(final[k].double() - start[k].double()).flatten() for k in sorted(start)])


def compare(a, b) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """(L2 of a - b over L2 of a, cosine, share of the weights either moved whose signs agree)."""
    import torch

    moved = (a != 0) | (b != 0)
    same = float((torch.sign(a[moved]) == torch.sign(b[moved])).float().mean()) if bool(moved.any()) else 1.0
    cosine = float(a @ b / (a.norm() * b.norm()))
    return float((a - b).norm() / a.norm()), cosine, same

if __name__ == "__main__":
    main()
