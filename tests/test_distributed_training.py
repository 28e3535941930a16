"""Two-process data-parallel GRPO (torchrun, gloo on the CPU) on `cpu-smoke`, against one process.

What this shows: the two ranks run exactly the rollouts one process runs (the same
sampling seeds and run ids, from each rollout's index in the global batch), rank 0
alone writes the run's files while rank 1 keeps its rollouts in OUT/rank-1/, and the
final adapters are the same.

What it cannot show: gradient averaging. cpu-smoke's tiny random policy earns reward 0
in every rollout, so every advantage is 0; and TRL's reference for a run is its starting
adapter, so the KL term is 0 too. No gradient flows in either run (the adapters equal
their start). `benchmarks/ddp_averaging.py` runs the same comparison with SmolLM2 from a
warm start that earns reward, too slow for CI (see issue 20's note).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from training.metrics import read_metrics

pytest.importorskip("trl", reason="training needs the train extra")

CONFIG = str(ROOT / "training" / "configs" / "cpu-smoke.yaml")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rollouts(*paths: Path) -> list[tuple]:
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines()]
    # The run id's last part is random (a replayed step gets fresh ids); the rest is step, index and quirk.
    return sorted((r["step"], r["run_id"].rsplit("-", 1)[0], r["seed"], r["reward"], r["pattern"], r["turns"])
                  for r in rows)


def test_two_processes_run_the_one_process_rollouts_and_end_with_its_adapter(tmp_path: Path) -> None:
    # gloo on the loopback interface: a container's hostname need not resolve to a reachable address.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    # Micro-batches of 1: each rank plays two per step, so a rank's rollouts must be mapped to the
    # global batch as TRL deals it (a contiguous slice per rank), not one micro-batch per rank in turn.
    train = ["-m", "audit.cli", "train", "--config", CONFIG, "--set", "micro_batch_size=1"]
    one = subprocess.run([sys.executable, *train, "--out", str(tmp_path / "one")], capture_output=True, text=True,
                         timeout=600, env=env, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
              "--master_port", str(_free_port())]
    two = subprocess.run([*launch, *train, "--out", str(tmp_path / "two")], capture_output=True, text=True,
                         timeout=600, env=env, cwd=tmp_path)
    assert two.returncode == 0, two.stderr[-4000:]

    out = tmp_path / "two"
    assert _rollouts(out / "rollouts.jsonl", out / "rank-1" / "rollouts.jsonl") == _rollouts(
        tmp_path / "one" / "rollouts.jsonl")
    assert len(_rollouts(out / "rollouts.jsonl")) == 4  # half of the 8 each
    # Rank 0 owns the run's files; rank 1 only its own rollouts, store and metrics.
    assert {p.name for p in (out / "rank-1").iterdir()} <= {"rollouts", "rollouts.db", "rollouts.jsonl", "metrics.jsonl",
                                                             "rollouts.checkpoints.db", "rollouts.db-wal",
                                                             "rollouts.db-shm", "rollouts.checkpoints.db-wal",
                                                             "rollouts.checkpoints.db-shm"}
    assert (out / "final" / "adapter_model.safetensors").is_file() and (out / "evals" / "final").is_dir()
    assert (out / "start-weights.safetensors").is_file()  # rank 0 measures how far the shared weights moved
    assert all("update/drift" in r for r in read_metrics(out) if r["stage"] == "grpo")
    assert not any("update/drift" in r for r in read_metrics(out / "rank-1"))
    assert two.stdout.count("step 2/2") == 1  # one progress line per step: rank 0's

    from safetensors.torch import load_file

    a = load_file(str(tmp_path / "one" / "final" / "adapter_model.safetensors"))
    b = load_file(str(out / "final" / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-6


def test_a_global_batch_that_does_not_split_over_the_processes_is_refused() -> None:
    from scaffold.specs import SpecError
    from training.config import load_config
    from training.trl_trainer import grpo_args

    config = load_config(CONFIG)  # 4 rollouts a step, micro-batches of 2
    assert grpo_args(config, Path("/tmp/unused"), world=2).gradient_accumulation_steps == 1
    with pytest.raises(SpecError, match="multiple of micro_batch_size x processes = 2 x 4"):
        grpo_args(config, Path("/tmp/unused"), world=4)


def test_each_rank_holds_a_contiguous_slice_of_the_global_batch() -> None:
    from training.distributed import Ranks

    # One process: indices unchanged. Two, with 4 rollouts each: rank 0 has 0-3, rank 1 has 4-7.
    assert [Ranks(0, 1).global_index(i, 4) for i in range(4)] == [0, 1, 2, 3]
    assert [Ranks(0, 2).global_index(i, 4) for i in range(4)] == [0, 1, 2, 3]
    assert [Ranks(1, 2).global_index(i, 4) for i in range(4)] == [4, 5, 6, 7]
    assert Ranks(1, 2).own_dir(Path("OUT")) == Path("OUT/rank-1") and Ranks(0, 2).own_dir(Path("OUT")) == Path("OUT")


async def test_rank_1_adopts_the_adapter_rank_0_loaded_into_the_vllm_server(tmp_path: Path) -> None:
    """One vLLM server, two training ranks: rank 0 loads each new adapter; rank 1, holding the same
    all-reduced weights, samples under the name rank 0 loaded it by and never calls the server."""
    import shutil

    from scaffold.providers import build_model
    from scaffold.providers.local_weights import resolve_local_model
    from scaffold.secrets import SecretRegistry
    from scaffold.specs import ModelSpec, SpecError
    from tests.fakes.wire_server import Reply, WireServer
    from training.config import load_config
    from training.policy import load_base, lora_config

    try:
        tokenizer_dir = resolve_local_model("smollm2-135m")
    except SpecError as exc:
        pytest.skip(str(exc))
    config = load_config(CONFIG)
    model, _ = load_base(config)
    from peft import get_peft_model

    rank0_dir, rank1_dir = tmp_path / "rank0-adapter", tmp_path / "rank1-adapter"
    get_peft_model(model, lora_config(config, model)).save_pretrained(str(rank0_dir))
    shutil.copytree(rank0_dir, rank1_dir)  # what rank 1 saves: the same weights
    with WireServer(responder=lambda request: Reply(body="ok", content_type="text/plain")) as server:
        spec = ModelSpec(provider="vllm", model="auditor", base_url=f"{server.base_url}/v1",
                         extra={"tokenizer": str(tokenizer_dir)})
        rank0, rank1 = build_model(spec, SecretRegistry()), build_model(spec, SecretRegistry())
        version = await rank0.swap_adapter(str(rank0_dir))
        loads = [r.body for r in server.requests if r.path.endswith("/load_lora_adapter")]
        assert loads == [{"lora_name": f"auditor@{version}", "lora_path": str(rank0_dir.resolve())}]
        calls = len(server.requests)
        assert rank1.adopt_adapter(str(rank1_dir)) == version
        assert rank1.served_model == rank0.served_model == f"auditor@{version}" and len(server.requests) == calls
        await rank0.aclose()
        await rank1.aclose()
