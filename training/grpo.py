"""GRPO on judged audits: TRL's GRPOTrainer, fed by a rollout_func that runs audits.

TRL 1.16's `rollout_func(prompts, trainer)` returns, per rollout, prompt ids,
completion ids, sampling logprobs and an `env_mask` (1 on tokens the policy sampled,
0 on environment text), plus extra fields for the reward functions. That carries a
multi-turn audit faithfully: the completion is every token after the first prompt
(the auditor's turns and the scaffold's replies between them, exactly as the policy
saw them, see training/rows.py) and the mask keeps loss on the policy's own tokens.
So we use TRL's trainer, loss (dapo / dr_grpo / grpo), KL, clipping, optimizer,
checkpoints and resume as they are, and add only what audits need:

- the rollouts are real audits (training/rollouts.py), run G per prompt concurrently
  in the production scaffold, graded by the judge;
- sampler-vs-trainer logprob parity, measured on the loss's own forward pass;
- with a vLLM sampler, TRL's truncated importance correction, which TRL only applies
  to its own vLLM client: we compute the trainer's logprobs and the ratios, and let
  TRL's loss apply them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from auditor.build import build_auditor
from evals.suites import load_suite
from rewards.judges import build_judge
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from training.adapter_drift import AdapterDrift
from training.config import TrainConfig, dump_config
from training.distributed import Ranks, current_ranks
from training.evaluation import eval_metrics
from training.gradient_noise import GradientNoise
from training.metrics import (
    BusyClock,
    MetricsLog,
    ProgressSink,
    TimedModel,
    drop_after_step,
    merge_parity,
    print_progress,
    refuse_earlier_run,
)
from training.policy import load_base, merges_for, rollout_sampler, sampling_mode, uses_bf16, with_adapter
from training.rollouts import (
    RolloutRunner,
    RolloutTask,
    pin_task_quirks,
    rollout_lines,
    rollout_summary,
    training_tasks,
    trl_batch,
)
from training.trl_trainer import grpo_args
from training.trl_trainer import trainer_class as make_trainer_class

log = logging.getLogger(__name__)
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental; we pin TRL <2


def audit_reward(prompts: list[Any], completions: list[Any], audit_reward: list[float | None], **_: Any) -> list[float | None]:
    """The judged audit's reward, computed in the rollout (None: the audit failed, no advantage)."""
    return audit_reward


class GrpoSession:
    """What the rollout_func, the trainer and the callback share during one run."""

    def __init__(
        self, config: TrainConfig, out: Path, secrets: SecretRegistry, resume_step: int | None, ranks: Ranks = Ranks()
    ) -> None:
        # `out` is this rank's own directory (training.distributed): rollouts, store, metrics.
        self.config, self.out, self.secrets, self.ranks = config, out, secrets, ranks
        self.resume_step = resume_step
        self.loop = asyncio.new_event_loop()
        self.clocks = {"policy": BusyClock(), "target": BusyClock(), "judge": BusyClock()}
        self.judge = TimedModel(build_judge(config.reward.judge, secrets), self.clocks["judge"], "evaluate")
        self.metrics = MetricsLog(out, resume_step=resume_step)
        if resume_step is not None:
            drop_after_step(out / "rollouts.jsonl", resume_step)
        self.pending: dict[str, Any] = {}
        self.parity: list[dict[str, float]] = []
        self.step_started = time.perf_counter()
        self.sampler: Any = None
        self.runner: RolloutRunner | None = None
        self.synced_step: int | None = None
        self.eos_id = 0
        self.bf16 = False  # the update's autocast; set in attach, from policy.precision and the model's device
        self.bf16_rollout = False  # the hf sampler's autocast; set in attach likewise
        self.skipped_updates = 0  # micro-batches whose advantages were all 0 (no forward pass)
        self.drift: AdapterDrift | None = None  # set in attach on rank 0 (AdapterDrift.for_run: the run's start)
        # Per-micro-batch gradients are this process's own only when it is the only one.
        self.noise: GradientNoise | None = GradientNoise() if ranks.world == 1 else None

    def attach(self, trainer: Any, tokenizer: Any) -> None:
        """Build the sampler over the trainer's (wrapped) model, and (rank 0) note the run's start weights."""
        self.trainer = trainer
        self.eos_id = int(tokenizer.eos_token_id)
        self.bf16 = uses_bf16(self.config, next(trainer.model.parameters()).device)
        self.sampler = rollout_sampler(self.config, trainer.model, tokenizer, self.secrets)
        self.bf16_rollout = bool(getattr(self.sampler, "bf16_autocast", False))  # as the sampler was built
        if self.ranks.main:  # every rank holds the same (all-reduced) weights: rank 0 measures them
            self.drift = AdapterDrift.for_run(trainer.model, self.out, resumed=bool(self.resume_step))
        self.runner = RolloutRunner(
            self.config,
            TimedModel(self.sampler, self.clocks["policy"]),
            self.judge,
            self.out,
            self.secrets,
            wrap_target=lambda m: TimedModel(m, self.clocks["target"]),
            ranks=self.ranks,
            start_auditor=self._start_auditor(),
        )

    def _start_auditor(self) -> Any:
        """The frozen auditor of the groups' shared turns (tasks.start_auditor). Not wrapped in a clock:
        a `by_turn` start must stay one, so its routes hand their ids on (`by_turn.then`)."""
        spec = self.config.tasks.start_auditor
        return None if spec is None else build_auditor(spec, self.secrets)

    @property
    def external_sampler(self) -> bool:
        return self.config.sampler.backend == "vllm"

    def sync_policy(self, step: int) -> None:
        """Make the sampler sample from the current weights (vLLM: reload the adapter).

        With several training processes and one vLLM server, rank 0 loads the adapter and
        the others adopt its name (`sync_for_rollouts` orders them)."""
        if self.synced_step == step:
            return
        if self.external_sampler:
            adapter = self.out / "sampler-adapter"
            self.trainer.model.save_pretrained(str(adapter))
            started = time.perf_counter()
            if self.ranks.main:
                self.loop.run_until_complete(self.sampler.swap_adapter(str(adapter)))
            else:
                self.sampler.adopt_adapter(str(adapter))  # all-reduced weights: rank 0's, so its name
            self.pending["time/adapter_sync_s"] = time.perf_counter() - started
        else:
            self.sampler.policy_version = f"step-{step}"  # the same module: nothing to copy
        self.synced_step = step

    def sync_for_rollouts(self, step: int) -> None:
        """`sync_policy` before a step's rollouts, every rank. With an external sampler shared by
        several ranks, rank 0 loads the new adapter before any rank samples from it."""
        if self.ranks.world > 1 and self.external_sampler:
            if self.ranks.main:
                self.sync_policy(step)
            self.ranks.barrier()
            if not self.ranks.main:
                self.sync_policy(step)
        else:
            self.sync_policy(step)

    def rollout_func(self, prompts: list[str], trainer: Any) -> dict[str, list[Any]]:
        """TRL's hook: one judged audit per prompt (TRL repeats each prompt G times)."""
        assert self.runner is not None
        step = trainer.state.global_step
        self.step_started = time.perf_counter()
        for clock in self.clocks.values():
            clock.take()
        decode_stats = getattr(self.sampler, "decode_stats", None)  # the hf sampler's; a vLLM server keeps its own
        if decode_stats is not None:
            decode_stats.take()
        self.sync_for_rollouts(step)
        batcher = getattr(self.judge, "batcher", None)  # the offline judge grades a group's audits together
        batches_before = len(batcher.batch_sizes) if batcher is not None else 0
        with sampling_mode(trainer.model, merge=merges_for(self.config, self.sampler)):  # the trainer's own weights
            started = time.perf_counter()
            rollouts = self.loop.run_until_complete(self.runner.run([RolloutTask.from_key(p) for p in prompts], step))
            wall = time.perf_counter() - started
        if all(r.reward is None for r in rollouts):
            first = next((r.error for r in rollouts if r.error), "no reward")
            raise RuntimeError(f"step {step + 1}: every rollout failed, e.g. {first}; fix it and continue with --resume")
        summary = rollout_summary(rollouts)
        summary["difficulty"] = self.config.tasks.difficulty_at(step + 1) or self.config.tasks.organism.get("difficulty")
        busy = {name: clock.take() for name, clock in self.clocks.items()}
        summary.update(
            {
                "time/rollout_s": wall,
                "time/policy_s": busy["policy"],
                "time/target_s": busy["target"],
                "time/reward_s": busy["judge"],
                # Wall time with no model call in flight: the scaffold's own work (graph, store, tools).
                "time/scaffold_share": max(0.0, 1 - (busy["policy"] + busy["target"] + busy["judge"]) / wall) if wall else 0.0,
                "tokens_per_s": summary["tokens/sampled"] / busy["policy"] if busy["policy"] else 0.0,
            }
        )
        if decode_stats is not None:
            summary.update({f"sampler/{name}": value for name, value in decode_stats.take().items()})
        graded_together = batcher.batch_sizes[batches_before:] if batcher is not None else []
        if graded_together:
            summary["judge/batch_mean"] = sum(graded_together) / len(graded_together)
        self.pending.update(summary)
        with (self.out / "rollouts.jsonl").open("a") as handle:
            handle.writelines(line + "\n" for line in rollout_lines(rollouts, step + 1))
        return trl_batch(rollouts, self.eos_id)

    def write_step(self, step: int, logs: dict[str, Any]) -> dict[str, Any]:
        """One metrics.jsonl line: TRL's loss-side numbers and ours (returned)."""
        record: dict[str, Any] = {"stage": "grpo", "step": step, "bf16_autocast": self.bf16, "bf16_rollout": self.bf16_rollout}
        for key in ("loss", "grad_norm", "learning_rate", "kl", "entropy", "clip_ratio/region_mean", "clip_ratio/low_mean", "clip_ratio/high_mean"):
            if key in logs:
                record[key] = float(logs[key])
        record.update(self.pending)
        record.update(merge_parity(self.parity))
        record["update/skipped_micro_batches"], self.skipped_updates = self.skipped_updates, 0
        if self.drift is not None:
            record.update(self.drift.measure(self.trainer.model))
        if self.noise is not None:
            record.update(self.noise.summary())
        step_s = time.perf_counter() - self.step_started
        record["time/step_s"] = step_s
        record["time/update_s"] = max(0.0, step_s - record.get("time/rollout_s", 0.0) - record.get("time/eval_s", 0.0))
        self.metrics.write(record)
        self.pending, self.parity = {}, []
        return record

    def evaluate(self, step: int, final: bool = False) -> Any:
        """The held-out eval of the current weights."""
        from training.evaluation import evaluate_policy

        return evaluate_policy(
            self.config, self.out, step, model=self.trainer.model, sampler=self.sampler, loop=self.loop,
            secrets=self.secrets, final=final,
        )

    def close(self) -> None:
        """Close everything, each part on its own: one failure must not hide the run's error.
        First whatever an interrupt left running: its audits must not go on while closing."""
        from scaffold.providers.batcher import cancel_pending

        for part in (
            lambda: cancel_pending(self.loop),
            lambda: self.runner is not None and self.loop.run_until_complete(self.runner.close()),
            lambda: self.loop.run_until_complete(_aclose(self.sampler)),
            self.metrics.close,
            self.loop.close,
        ):
            try:
                part()
            except Exception:  # noqa: BLE001
                log.exception("closing the training session")


async def _aclose(model: Any) -> None:
    from scaffold.model import close_model

    await close_model(model)


def latest_checkpoint(out: Path) -> Path | None:
    """The complete OUT/checkpoint-N with the largest N, or None. transformers writes
    trainer_state.json last, so a checkpoint cut off by a crash lacks it and is skipped."""
    complete = [
        p for p in out.glob("checkpoint-*")
        if checkpoint_step(p) is not None and (p / "trainer_state.json").exists() and (p / "adapter_model.safetensors").exists()
    ]
    return max(complete, key=lambda p: checkpoint_step(p) or 0, default=None)


def checkpoint_step(path: Path) -> int | None:
    """N of OUT/checkpoint-N, or None for another name."""
    tail = path.name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else None


def run_grpo(
    config: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    secrets: SecretRegistry | None = None,
    progress: ProgressSink = print_progress,
) -> Path:
    """Train `config` into `out` (or continue it from its last checkpoint); returns OUT/final.

    `progress` gets (step, total steps, a line of the step's numbers) after every step.
    """
    from datasets import Dataset
    from transformers import TrainerCallback


    secrets = secrets or SecretRegistry()
    # transformers 5.x warns on every step about names TRL still uses (gradient_checkpointing).
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\..*")
    ranks = current_ranks()
    if not ranks.main:
        progress = _quiet  # one progress line per step, rank 0's
    checkpoint = latest_checkpoint(out) if resume else None
    resume_step = checkpoint_step(checkpoint) if checkpoint else (0 if resume else None)
    if not resume:
        refuse_earlier_run(out, f"continue it with --resume {out}, or pick a new --out")
    tasks = training_tasks(config)
    ranks.barrier()  # every rank has looked at OUT before rank 0 writes to it
    if ranks.main:
        out.mkdir(parents=True, exist_ok=True)
        pin_task_quirks(out, tasks, resume)  # before the config: a refused resume leaves the run as it was
        dump_config(config, out / "config.yaml")
    ranks.barrier()
    own = ranks.own_dir(out)
    own.mkdir(parents=True, exist_ok=True)
    if config.threads:
        torch.set_num_threads(config.threads)
    model, tokenizer = load_base(config)
    model, peft_config = with_adapter(model, config)
    if config.prompts_per_step > len(tasks):
        raise SpecError(f"prompts_per_step {config.prompts_per_step} is more than the {len(tasks)} tasks of the config")
    if config.eval.every or config.eval.at_end:
        load_suite(config.eval.suite)  # a bad suite name fails now, not after hours of training
    dataset = Dataset.from_list([{"prompt": t.key()} for t in tasks])
    session = GrpoSession(config, own, secrets, resume_step, ranks)
    trainer_class = make_trainer_class()

    class StepCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            # A resumed run reads save_steps back from its checkpoint's trainer state; the config's
            # `save_every`, which a resume may change, is the one to follow.
            state.save_steps = args.save_steps

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            every = config.eval.every
            # Rank 0 evaluates; the others wait for it at the next step's gradient all-reduce.
            if ranks.main and every and state.global_step % every == 0 and state.global_step < config.steps:
                started = time.perf_counter()
                session.sync_policy(state.global_step)  # the update changed the weights: a new version
                try:
                    session.pending.update(eval_metrics(session.evaluate(state.global_step)))
                except Exception as exc:  # noqa: BLE001 - a failed eval is reported, training goes on
                    log.exception("held-out eval at step %d failed", state.global_step)
                    session.pending["eval/error"] = f"{type(exc).__name__}: {exc}"
                session.pending["time/eval_s"] = time.perf_counter() - started

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any) -> None:
            if logs and "loss" in logs:
                progress(state.global_step, config.steps, _progress_line(config, state.global_step,
                                                                         session.write_step(state.global_step, logs)))

    trainer = trainer_class(
        model=model,
        reward_funcs=audit_reward,
        args=grpo_args(config, out, ranks.world),
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=session.rollout_func,
        peft_config=peft_config,
        callbacks=[StepCallback()],
    )
    trainer.session = session
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # our progress line replaces TRL's dict dump
    session.attach(trainer, tokenizer)
    try:
        if checkpoint is not None and resume_step is not None and resume_step >= config.steps:
            # Already there: transformers would still take one more step from a checkpoint at max_steps.
            _load_adapter(trainer.model, checkpoint)
        else:
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        final = out / "final"
        ranks.barrier()
        if not ranks.main:
            return final  # rank 0 saves the (identical, all-reduced) weights and evaluates them
        trainer.model.save_pretrained(str(final))
        dump_config(config, final / "training-config.yaml")
        if config.eval.at_end:
            session.synced_step = None
            session.sync_policy(config.steps)
            summary = eval_metrics(session.evaluate(config.steps, final=True))
            session.metrics.write({"stage": "eval", "step": config.steps, **summary})
    finally:
        session.close()
    return final


def _quiet(step: int, total: int, line: str) -> None:
    """A progress sink that prints nothing (ranks other than 0)."""


def _load_adapter(model: Any, checkpoint: Path) -> None:
    """Put a checkpoint's LoRA weights into the trainer's model."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(checkpoint / "adapter_model.safetensors")))


def _progress_line(config: TrainConfig, step: int, last: dict[str, Any]) -> str:
    parts = [f"step {step}/{config.steps}"]
    for key, label in (("loss", "loss"), ("reward/mean", "reward"), ("detection_rate", "detect"), ("valid_tool_call_rate", "valid"), ("parity/mean_abs_dlogp", "|dlogp|"), ("update/drift", "drift"), ("update/grad_snr", "grad snr"), ("time/step_s", "s")):
        if key in last:
            parts.append(f"{label} {last[key]:.4g}")
    if "eval/grounded_rate" in last:
        parts.append(f"heldout grounded {last['eval/grounded_rate']:.1%}")
    if "eval/detection_rate" in last:
        parts.append(f"named {last['eval/detection_rate']:.1%}")
    return "  ".join(parts)

