"""TRL's GRPOTrainer, adapted to audits: logprob parity on the loss's own forward pass,
importance correction for an external (vLLM) sampler, a CPU logprob path, and each
micro-batch's gradient handed to the gradient-noise measure (training/gradient_noise.py).

`AuditGRPOTrainer` subclasses TRL's trainer and overrides a few of its hooks; everything else
(loss types, clipping, KL, optimizer, checkpoints, resume) is TRL's own.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

import torch

from scaffold.providers.precision import autocast
from training.config import TrainConfig
from training.metrics import logprob_parity


def trainer_class() -> type:
    """The GRPOTrainer subclass (built lazily: TRL is the train extra)."""
    from trl import GRPOTrainer
    from trl.trainer.utils import RepeatSampler

    class AuditGRPOTrainer(GRPOTrainer):
        """GRPOTrainer plus logprob parity and importance correction for an external sampler."""

        session: Any  # training.grpo.GrpoSession

        def _get_train_sampler(self, dataset: Any = None) -> Any:
            s = super()._get_train_sampler(dataset)
            return EpochSeededSampler(s.data_source, s.mini_repeat_count, s.batch_size, s.repeat_count, s.shuffle, s.seed)

        def _get_per_token_logps_and_entropies(
            self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
            batch_size: int | None = None, compute_entropy: bool = False, compute_aux_loss: bool = False, **extra: Any,
        ) -> Any:
            plain = input_ids.device.type == "cpu" and not compute_aux_loss and all(v is None for v in extra.values())
            if plain:
                with autocast(input_ids.device, self.session.bf16):
                    result = completion_logps(
                        model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, self.temperature
                    )
            else:
                result = super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss, **extra
                )
            if getattr(self, "_capture", None) is not None:
                self._capture.append(result[0].detach())
            return result

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            output = super()._generate_and_score_completions(inputs)
            sampler = self.session.config.sampler
            if self.session.external_sampler and sampler.importance_correction:
                ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
                attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
                with torch.no_grad():
                    old, _, _ = self._get_per_token_logps_and_entropies(
                        self.model, ids, attention, output["completion_ids"].size(1), self.args.per_device_train_batch_size
                    )
                mask = _loss_mask(output)
                # A sampler logprob that is not a number gets ratio 1 (no correction), as in TRL.
                delta = torch.nan_to_num((old - output["sampling_per_token_logps"]) * mask, nan=0.0)
                output["old_per_token_logps"] = old
                output["importance_sampling_ratio"] = torch.exp(delta).clamp(max=sampler.importance_cap)
            return output

        def training_step(self, model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> torch.Tensor:
            loss = super().training_step(model, inputs, num_items_in_batch)
            if self.session.noise is not None:  # one process: this micro-batch's own contribution
                self.session.noise.observe(model)
            return loss

        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
            if self.beta == 0 and not bool(torch.any(inputs["advantages"] != 0)):
                # Every advantage is 0 and there is no KL term: the loss and its gradient are 0
                # whatever the forward pass says. Common while no rollout in a group scores; the
                # pass through a whole audit costs minutes on a CPU. No gradient, no update.
                self.session.skipped_updates += 1
                return torch.zeros((), device=inputs["advantages"].device, requires_grad=True)
            self._capture: list[torch.Tensor] | None = []
            try:
                with self._apply_importance_ratio("importance_sampling_ratio" in inputs):
                    loss = super()._compute_loss(model, inputs)
                captured = self._capture
            finally:
                self._capture = None
            if captured and "sampling_per_token_logps" in inputs:
                self.session.parity.append(
                    logprob_parity(
                        captured[0], inputs["sampling_per_token_logps"], _loss_mask(inputs), self.session.config.sampler.importance_cap
                    )
                )
            return loss

        @contextlib.contextmanager
        def _apply_importance_ratio(self, on: bool) -> Iterator[None]:
            # TRL multiplies the per-token loss by inputs["importance_sampling_ratio"] only
            # under its own vLLM flags; we set them for the duration of this loss.
            saved = (self.use_vllm, self.vllm_importance_sampling_correction)
            if on:
                self.use_vllm, self.vllm_importance_sampling_correction = True, True
            try:
                yield
            finally:
                self.use_vllm, self.vllm_importance_sampling_correction = saved

    class EpochSeededSampler(RepeatSampler):
        """TRL's RepeatSampler, reseeded per epoch: a run resumed in epoch e sees the same
        prompt order as one that never stopped (transformers skips into a fresh sampler)."""

        def set_epoch(self, epoch: int) -> None:
            if self.shuffle:
                self.generator.manual_seed((self.seed or 0) * 1_000_003 + epoch)

    return AuditGRPOTrainer


def completion_logps(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    batch_size: int | None,
    compute_entropy: bool,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor | None, None]:
    """Per-token logprobs (and entropies) of the last `logits_to_keep` tokens, as TRL returns them.

    On the CPU, TRL's fused LM head (without triton) projects every position of the
    ~3k-token prompt through the vocabulary; here only the completion's positions are
    projected. Positions count real tokens, as the sampler's do, so left padding does
    not shift them.
    """
    batch_size = batch_size or input_ids.size(0)
    targets = input_ids[:, -logits_to_keep:]
    logps, entropies = [], []
    for start in range(0, input_ids.size(0), batch_size):
        ids, mask = input_ids[start : start + batch_size], attention_mask[start : start + batch_size]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=logits_to_keep + 1).logits
        scaled = logits[:, :-1].float() / temperature
        log_probs = torch.log_softmax(scaled, dim=-1)
        logps.append(log_probs.gather(-1, targets[start : start + batch_size, :, None])[..., 0])
        if compute_entropy:
            with torch.no_grad():
                entropies.append(-(log_probs.exp() * log_probs).sum(-1))
    return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None


def _loss_mask(batch: dict[str, Any]) -> torch.Tensor:
    mask = batch["completion_mask"]
    return mask * batch["tool_mask"] if batch.get("tool_mask") is not None else mask


def grpo_args(config: TrainConfig, out: Path, world: int = 1) -> Any:
    """TRL's GRPOConfig for our config: one generation batch (G x prompts) per optimizer step,
    split over `world` processes (each runs rollouts_per_step / world of them)."""
    from trl import GRPOConfig

    accumulation = config.micro_batches_per_step(world)
    return GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=config.micro_batch_size,
        gradient_accumulation_steps=accumulation,
        num_generations=config.group_size,
        max_steps=config.steps,
        learning_rate=config.lr,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=config.warmup_steps,
        max_grad_norm=config.max_grad_norm,
        beta=config.beta,
        loss_type=config.loss_type,
        epsilon=config.epsilon,
        epsilon_high=config.epsilon_high,
        temperature=config.policy.temperature,  # trainer logprobs are log_softmax(logits / T), as the sampler's
        logging_steps=1,
        save_strategy="steps",
        save_steps=config.save_every,
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        seed=config.seed,
        data_seed=config.seed,
        disable_tqdm=True,
        # Only dr_grpo reads it (its loss normaliser); a whole audit's completion, environment text included.
        max_completion_length=config.tasks.max_turns * (config.policy.max_tokens_per_turn + 512),
        gradient_checkpointing=config.gradient_checkpointing,
        dataloader_num_workers=0,
    )
