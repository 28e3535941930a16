"""The trainable policy: base weights, a LoRA adapter, and the sampler rollouts use.

With the `hf` sampler, rollouts run on the trainer's own module through the
production `hf` provider (LocalChatModel), so sampler and trainer share weights
exactly and nothing is synced. With the `vllm` sampler, the adapter is saved after
every update and loaded into the server (`VllmPolicy.swap_adapter`).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Literal

import torch

from scaffold.model import ChatModel
from scaffold.providers.hf_local import LocalChatModel
from scaffold.providers.local_weights import load_model_and_tokenizer, load_packaged_tokenizer, resolve_local_model
from scaffold.providers.precision import bf16_is_native
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError
from training.config import TrainConfig

TINY_RANDOM = "tiny-random"


def tiny_random_model(
    tokenizer: Any, seed: int, *, heads: int = 2, kv_heads: int = 1, initializer_range: float = 0.02
) -> Any:
    """A ~3M-parameter random Llama over `tokenizer`'s vocabulary (smoke tests, benchmarks).

    The default head_dim (64 / heads = 32) is one vLLM's CPU attention serves.
    """
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=8192,  # as SmolLM2: room for the auditor prompt and its tools
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        initializer_range=initializer_range,
    )
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(config)


TURN_CACHE_MB = 2048  # a SmolLM2 rollout of 3k tokens holds 138 MB of KV


def load_base(config: TrainConfig) -> tuple[Any, Any]:
    """(model, tokenizer) of `policy.base`, fp32 on the CPU, never from a hub."""
    if config.policy.base == TINY_RANDOM:
        tokenizer = load_packaged_tokenizer()
        return tiny_random_model(tokenizer, config.seed), tokenizer
    model, tokenizer = load_model_and_tokenizer(resolve_local_model(config.policy.base))
    return model, tokenizer


def lora_config(config: TrainConfig, model: Any) -> Any:
    """The peft LoraConfig of a fresh adapter on `model` (`lora.top_layers` counts its decoder layers)."""
    from peft import LoraConfig

    s = config.lora
    layers = None
    if s.top_layers is not None:
        total = model.config.num_hidden_layers
        if s.top_layers > total:
            raise SpecError(f"lora.top_layers is {s.top_layers}, but {config.policy.base} has {total} layers")
        layers = list(range(total - s.top_layers, total))
    return LoraConfig(
        r=s.r,
        lora_alpha=s.alpha,
        lora_dropout=s.dropout,
        target_modules=list(s.target_modules),
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )


def with_adapter(model: Any, config: TrainConfig) -> tuple[Any, Any]:
    """(model, peft_config for the trainer): the init adapter loaded trainable, or a fresh one to create."""
    if not config.policy.init_adapter:
        return model, lora_config(config, model)
    from peft import PeftModel

    path = Path(config.policy.init_adapter)
    if not (path / "adapter_config.json").is_file():
        raise SpecError(f"policy.init_adapter {path}: no adapter_config.json there (an SFT run writes OUT/final)")
    return PeftModel.from_pretrained(model, str(path), is_trainable=True), None


def uses_bf16(config: TrainConfig, device: torch.device, phase: Literal["update", "rollout"] = "update") -> bool:
    """Whether `phase` runs under bf16 autocast (`policy.precision`).

    `auto` is bf16 where `device` computes it natively, except for decoding rollouts on a
    CPU: there a decode step is a few small matmuls, and autocast's cast of every weight on
    every call costs more than bf16 saves. Measured on a 2-core EPYC with avx512_bf16
    (`benchmarks/grpo_step.py`, SmolLM2 + LoRA): a decode step of 8 rows took 1.39-1.53x
    as long under bf16 autocast, a forward+backward over 1,536 tokens 0.57x."""
    precision = config.policy.precision
    if precision != "auto":
        return precision == "bf16"
    device = torch.device(device)
    return bf16_is_native(device) and (phase == "update" or device.type != "cpu")


@contextmanager
def sampling_mode(model: Any, merge: bool = True) -> Iterator[None]:
    """The trainer's module in eval mode (no dropout) while it samples; its mode after.

    With `merge`, a LoRA model's adapter is merged into its base weights meanwhile, so a
    decode step runs one matmul per layer instead of three (measured on SmolLM2 + LoRA r16,
    8 rows: `benchmarks/grpo_step.py`'s decode probe). The base weights are restored
    bit for bit afterwards, not by subtracting the delta again, so no rounding drifts
    into the frozen base over a run's steps."""
    was_training = model.training
    model.eval()
    saved = _merge_lora(model) if merge else None
    try:
        yield
    finally:
        if saved is not None:
            _unmerge_lora(model, saved)
        model.train(was_training)


def merges_for(config: TrainConfig, sampler: Any) -> bool:
    """Whether `sampling_mode` merges the LoRA for `sampler`: with `policy.merge_lora`, and only
    for the hf sampler, the one that decodes with the trainer's own module (a vLLM server
    holds its own copy of the weights)."""
    return config.policy.merge_lora and isinstance(sampler, LocalChatModel)


def _lora_layers(model: Any) -> list[Any]:
    """The model's LoRA-adapted layers (empty when it is not a peft LoRA model)."""
    try:
        from peft.tuners.lora import LoraLayer
    except ImportError:
        return []
    return [m for m in model.modules() if isinstance(m, LoraLayer)]


def _merge_lora(model: Any) -> list[tuple[Any, torch.Tensor]] | None:
    """Merge the active adapter into the base weights; the originals, to restore, or None if nothing merged."""
    layers = [layer for layer in _lora_layers(model) if not layer.merged]
    if not layers or not hasattr(model, "merge_adapter"):
        return None
    with torch.no_grad():
        saved = [(layer, layer.get_base_layer().weight.detach().clone()) for layer in layers]
        model.merge_adapter()
    return saved


def _unmerge_lora(model: Any, saved: list[tuple[Any, torch.Tensor]]) -> None:
    """Undo `_merge_lora`: the adapter unmerged, the base weights copied back exactly."""
    with torch.no_grad():
        model.unmerge_adapter()
        for layer, weight in saved:
            layer.get_base_layer().weight.copy_(weight)


def rollout_sampler(config: TrainConfig, model: Any, tokenizer: Any, secrets: SecretRegistry) -> ChatModel:
    """The ChatModel rollouts sample from (the auditor of every training audit)."""
    p = config.policy
    if config.sampler.backend == "hf":
        return LocalChatModel.from_model(
            model,
            tokenizer,
            name=f"policy:{config.name}",
            max_tokens=p.max_tokens_per_turn,
            temperature=p.temperature,
            max_batch_size=p.max_batch_size,
            constrained=p.constrained,
            max_calls_per_turn=p.max_calls_per_turn,
            copy_quotes=p.copy_quotes,
            max_request_quotes=p.max_request_quotes,
            policy_version="step-0",
            prefix_cache_tokens=256 if p.prefix_cache else 0,
            turn_cache_mb=TURN_CACHE_MB if p.turn_cache else 0,
            bf16_autocast=uses_bf16(config, next(model.parameters()).device, "rollout"),
        )
    from scaffold.providers.vllm_server import build as build_vllm

    tokenizer_dir = _tokenizer_dir(config, tokenizer)
    spec = ModelSpec(
        provider="vllm",
        model=config.sampler.served_adapter,
        base_url=config.sampler.url,
        max_tokens=p.max_tokens_per_turn,
        temperature=p.temperature,
        max_concurrency=max(16, config.rollouts_per_step),
        extra={"tokenizer": str(tokenizer_dir)},
    )
    return build_vllm(spec, secrets)


def _tokenizer_dir(config: TrainConfig, tokenizer: Any) -> Path:
    if config.policy.base == TINY_RANDOM:
        raise SpecError("sampler.backend vllm needs a base model directory the server can load, not tiny-random")
    return resolve_local_model(config.policy.base)
