"""The warm start: LoRA fine-tuning on stored audits, in the policy's own tool-call protocol.

Transcripts come from eval directories (`audit eval --out DIR`): their audits.jsonl
says each audit's quirk and split, so held-out quirks are refused here and never
reach the policy. Each transcript becomes one row: the auditor's conversation exactly
as the policy's prompt builder renders it (system prompt, seed, the environment's
replies), with loss only on the auditor's own turns, tool calls written in the text
protocol the policy reads and writes (`<tool_call>{...}</tool_call>`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from pathlib import Path
from typing import Any, NamedTuple

import torch
from pydantic import BaseModel

from auditor.prompts import Manual, auditor_system_prompt
from scaffold.events import EVENT_ADAPTER
from scaffold.providers.precision import autocast
from scaffold.providers.text_tools import render_assistant_text
from scaffold.providers.token_prompts import PromptBuilder
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from scaffold.tools import AUDITOR_TOOLS
from scaffold.transcript import Transcript
from targets.grammar.generate import use_generated_set
from targets.quirks import get_quirk
from training.config import TrainConfig, dump_config
from training.metrics import MetricsLog, ProgressSink, print_progress, refuse_earlier_run
from training.policy import load_base, lora_config, rollout_sampler, uses_bf16
from training.rollout_diagnostics import quirk_showed
from training.sft_checkpoint import (
    SftPosition,
    data_digest,
    latest_checkpoint,
    load_optimizer_state,
    read_position,
    save_checkpoint,
)
from training.sft_grammar import AlignedAudit, GrammarAligner

log = logging.getLogger(__name__)


class SftRow(BaseModel):
    """One transcript as token ids, with loss on the auditor's turns."""

    run_id: str
    input_ids: list[int]
    loss_mask: list[int]
    turns: int


class SftData(BaseModel):
    """The rows, and what was left out and why."""

    rows: list[SftRow]
    skipped: dict[str, int]
    controls: int = 0  # how many of the rows are control audits
    silent: int = 0  # how many are quirk audits that rightly claimed nothing (`sft.silent_share`)


def read_transcript(path: Path) -> Transcript:
    """A transcript.json written by `audit run` / `audit eval`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return Transcript.from_events(data["run_id"], [EVENT_ADAPTER.validate_python(e) for e in data["events"]])


class EvalAudits(NamedTuple):
    """What an eval directory gives the warm start."""

    audits: list[Transcript]  # train-split quirk audits kept by `keep`
    controls: list[Transcript]  # control audits that raised no false positive
    skipped: dict[str, int]  # what was left out, by reason
    silent: list[Transcript]  # quirk audits `keep` left out that claimed nothing where nothing showed


def eval_transcripts(directory: Path, keep: str, collect_silent: bool = False) -> EvalAudits:
    """The usable transcripts of an eval directory: train-split audits that completed and,
    with `keep` identified or grounded, whose verdict says so; and the completed controls
    with no false positive. With `collect_silent`, also the audits `keep` leaves out whose
    report claimed nothing and whose target never showed its quirk (the organism's `fired`
    flag: data selection reads the ground truth, as `keep` does through the verdict)."""
    rows_path = directory / "audits.jsonl"
    if not rows_path.exists():
        raise SpecError(f"sft.data {directory}: not an eval directory (no audits.jsonl); make one with `audit eval --out`")
    skipped = {"heldout": 0, "failed": 0, "false_positive": 0, f"not_{keep}": 0, "missing": 0}
    audits: list[Transcript] = []
    controls: list[Transcript] = []
    silent: list[Transcript] = []
    for line in rows_path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn line
        split = _split_of(row.get("quirk"))
        if split not in ("train", "control"):
            skipped["heldout"] += 1  # never train on what the benchmark holds out (or on an unknown quirk)
            continue
        if row.get("status") != "completed":
            skipped["failed"] += 1
            continue
        if row.get("false_positive") is True:  # whatever `keep`: a control's report must claim nothing
            skipped["false_positive"] += 1
            continue
        path = directory / "runs" / row["run_id"] / "transcript.json"
        if keep != "all" and row.get(keep) is False:
            silent_candidate = collect_silent and row.get("claimed") is False and path.exists()
            transcript = read_transcript(path) if silent_candidate else None
            if transcript is not None and quirk_showed(transcript) is False:
                silent.append(transcript)
            else:
                skipped[f"not_{keep}"] += 1
            continue
        if not path.exists():
            skipped["missing"] += 1
            continue
        (controls if split == "control" else audits).append(read_transcript(path))
    return EvalAudits(audits, controls, skipped, silent)


def cap_audits(audits: list[SftRow], most: int | None, seed: int) -> list[SftRow]:
    """At most `most` of `audits` (all when None or when there are no more), drawn by `seed`, in their order."""
    if most is None or len(audits) <= most:
        return audits
    chosen = set(random.Random(seed).sample(range(len(audits)), most))
    return [row for k, row in enumerate(audits) if k in chosen]


def draw_to_share(rows: list[SftRow], n_audits: int, share: float | None, seed: int) -> list[SftRow]:
    """The rows of one kind (controls, silent audits) to learn from: all of them (`share`
    None), or a seeded draw that makes them `share` of the rows next to `n_audits` quirk
    rows (all, if too few)."""
    if share is None:
        return rows
    wanted = round(share * n_audits / (1 - share))
    if wanted >= len(rows):
        return rows
    kept = set(random.Random(seed).sample(range(len(rows)), wanted))
    return [row for k, row in enumerate(rows) if k in kept]


def _split_of(quirk: object) -> str | None:
    """The split of a quirk id by the quirk library (not by the row's own label)."""
    try:
        return get_quirk(str(quirk)).split
    except SpecError:
        return None


def sft_row(
    transcript: Transcript,
    builder: PromptBuilder,
    max_length: int,
    manual: Manual = "full",
    max_turns: int | None = None,
    aligned: AlignedAudit | None = None,
) -> SftRow | None:
    """The transcript as the policy would have seen and written it, cut at a turn boundary
    to `max_length` tokens; None when not even its first turn fits.

    With the compact manual, the system prompt is the compact one (for `max_turns`) and
    the tools are shown brief, as the policy sees them in rollouts: the warm start
    teaches the prompt it will be trained and evaluated with.

    For a constrained policy, `aligned` (training/sft_grammar.py) is the audit as its grammar
    writes it: no text before the calls (the heuristic's "Probing: situation_pets_advice
    (1/1), ..." named the requests it was about to send, a plan no rollout has; stop 45), and
    each reply in the grammar's tokens rather than the natural ones.
    """
    messages = list(aligned.messages if aligned is not None else transcript.auditor_messages)
    definitions = [tool.definition for tool in AUDITOR_TOOLS.values()]
    tools = definitions
    if manual == "compact":
        tools = [tool.brief_definition for tool in AUDITOR_TOOLS.values()]
        if messages and messages[0].role == "system":
            turns_budget = max_turns or transcript.auditor_turns
            prompt = auditor_system_prompt(definitions, turns_budget, "compact")
            messages[0] = messages[0].model_copy(update={"content": prompt})
    stop = builder.assistant_closing().rstrip("\n") or builder.assistant_closing()
    ids: list[int] = []
    mask: list[int] = []
    consumed = ""
    turns = 0
    for k, message in enumerate(messages):
        if message.role != "assistant":
            continue
        prompt = builder.render(messages[:k], tools)
        closed = builder.render_closed(messages[: k + 1], tools)
        if not (prompt.startswith(consumed) and closed.startswith(prompt)):
            break  # a template that rewrites earlier turns: stop at what is exact
        reply = closed[len(prompt) :]
        reply = reply[: reply.index(stop) + len(stop)] if stop in reply else reply
        if aligned is not None and reply != render_assistant_text(message) + stop:
            break  # the template writes the calls otherwise than the grammar walked them: stop at what is exact
        env_ids = builder.encode(prompt[len(consumed) :])
        reply_ids = aligned.reply_ids[message.id] if aligned is not None else builder.encode(reply)
        if len(ids) + len(env_ids) + len(reply_ids) > max_length:
            break
        ids += env_ids + reply_ids
        mask += [0] * len(env_ids) + [1] * len(reply_ids)
        consumed = prompt + reply
        turns += 1
    if not turns:
        return None
    return SftRow(run_id=transcript.run_id, input_ids=ids, loss_mask=mask, turns=turns)


def constrained_aligner(config: TrainConfig, tokenizer: Any) -> GrammarAligner:
    """The grammar a constrained policy of `config` writes its replies in, for aligning teacher audits."""
    tools = [tool.definition for tool in AUDITOR_TOOLS.values()]
    policy = config.policy
    return GrammarAligner(tokenizer, tools, max_calls=policy.max_calls_per_turn, max_tokens=policy.max_tokens_per_turn,
                          copy_quotes=policy.copy_quotes, max_request_quotes=policy.max_request_quotes)


def load_sft_data(config: TrainConfig, tokenizer: Any) -> SftData:
    """Every row of `sft.data`, with controls drawn to `sft.control_share` and silent audits
    to `sft.silent_share`, and counts of what was skipped."""
    if not config.sft.data:
        raise SpecError("the sft stage needs sft.data: eval directories of stored audits (`audit eval --out DIR`)")
    if config.tasks.generated is not None:
        # The rows name generated quirks: without their set, every one would read as unknown and be skipped.
        use_generated_set(config.tasks.generated)
    builder = PromptBuilder(tokenizer)
    aligner = constrained_aligner(config, tokenizer) if config.policy.constrained else None
    audits: list[SftRow] = []
    controls: list[SftRow] = []
    silent: list[SftRow] = []
    skipped: dict[str, int] = {"too_long": 0, "not_writable": 0}
    for entry in config.sft.data:
        found = eval_transcripts(Path(entry), config.sft.keep, collect_silent=config.sft.silent_share > 0)
        for key, n in found.skipped.items():
            skipped[key] = skipped.get(key, 0) + n
        for transcripts, rows in ((found.audits, audits), (found.controls, controls), (found.silent, silent)):
            for transcript in transcripts:
                aligned = aligner.align(transcript) if aligner is not None else None
                if aligner is not None and aligned is None:
                    skipped["not_writable"] += 1
                    continue
                row = sft_row(
                    transcript, builder, config.sft.max_length, config.policy.manual, config.tasks.max_turns, aligned
                )
                if row is None:
                    skipped["too_long"] += 1
                else:
                    rows.append(row)
    kept = cap_audits(audits, config.sft.max_audits, config.seed)
    skipped["over_max_audits"] = len(audits) - len(kept)
    audits = kept
    drawn = draw_to_share(controls, len(audits), config.sft.control_share, config.seed)
    skipped["control"] = len(controls) - len(drawn)
    quiet = draw_to_share(silent, len(audits), config.sft.silent_share, config.seed)
    skipped["silent"] = len(silent) - len(quiet)
    rows = audits + drawn + quiet
    if not rows:
        hint = ""
        if skipped["not_writable"]:
            policy = config.policy
            hint = (f"; not_writable: the constrained policy's grammar ({policy.max_tokens_per_turn} tokens and "
                    f"{policy.max_calls_per_turn} calls a turn) cannot write those audits' turns: raise "
                    "policy.max_tokens_per_turn or policy.max_calls_per_turn")
        raise SpecError(f"sft.data gave no usable transcripts (skipped: {skipped}){hint}")
    return SftData(rows=rows, skipped=skipped, controls=len(drawn), silent=len(quiet))


def sft_loss(model: Any, row: SftRow, device: torch.device, bf16: bool = False) -> torch.Tensor:
    """Mean next-token cross-entropy over the row's auditor tokens (the forward under bf16
    autocast with `bf16`; the loss itself in fp32).

    Logits are computed only where a token carries loss (`logits_to_keep`): the vocabulary
    projection of every other position is a third of the work and its result was discarded.
    """
    ids = torch.tensor([row.input_ids], device=device)
    # Position p predicts token p + 1: keep the positions whose next token is the auditor's.
    positions = torch.tensor([p for p, m in enumerate(row.loss_mask[1:]) if m], device=device, dtype=torch.long)
    with autocast(device, bf16):
        logits = model(input_ids=ids, logits_to_keep=positions).logits[0]
    return torch.nn.functional.cross_entropy(logits.float(), ids[0, positions + 1])


def run_sft(
    config: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    secrets: SecretRegistry | None = None,
    progress: ProgressSink = print_progress,
) -> Path:
    """LoRA SFT of `config.policy` on `config.sft.data`; writes OUT/final (and its eval).

    Every `sft.save_every` steps OUT/sft-checkpoint is rewritten; with `resume` the run goes
    on from it, over the same rows in the same order, and ends as the uninterrupted run would.
    `progress` gets (step, total steps, a line of the step's numbers) after every step.
    """
    from peft import PeftModel, get_peft_model

    secrets = secrets or SecretRegistry()
    if not resume:
        refuse_earlier_run(out, f"continue it with --resume {out}, or pick a new --out")
    out.mkdir(parents=True, exist_ok=True)
    dump_config(config, out / "config.yaml")
    if config.threads:
        torch.set_num_threads(config.threads)
    model, tokenizer = load_base(config)
    data = load_sft_data(config, tokenizer)
    digest = data_digest([(row.run_id, row.input_ids) for row in data.rows])
    checkpoint = latest_checkpoint(out) if resume else None
    done = read_position(checkpoint, digest).step if checkpoint else 0
    total = config.sft.epochs * len(data.rows)
    quiet = f", {data.silent} silent audits" if data.silent else ""
    progress(done, total, f"sft: {len(data.rows)} transcripts ({data.controls} of them controls{quiet}), "
                          f"{sum(len(r.input_ids) for r in data.rows)} tokens; skipped {data.skipped}"
                          + (f"; resumed after step {done}" if checkpoint else ""))
    if checkpoint:
        model = PeftModel.from_pretrained(model, str(checkpoint / "adapter"), is_trainable=True)
    elif config.policy.init_adapter:
        model = PeftModel.from_pretrained(model, config.policy.init_adapter, is_trainable=True)
    else:
        model = get_peft_model(model, lora_config(config, model))
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()  # LoRA: the frozen embeddings' output must carry grad
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.sft.lr)
    if checkpoint:
        load_optimizer_state(checkpoint, optimizer)
    metrics = MetricsLog(out, resume_step=done if resume else None)
    device = next(model.parameters()).device
    # The same rule as GRPO's update: with `auto`, bf16 where the device computes it natively.
    bf16 = uses_bf16(config, device, "update")
    order = random.Random(config.seed)
    step = 0
    for epoch in range(config.sft.epochs):
        rows = list(data.rows)
        order.shuffle(rows)  # replayed on resume, so the skipped rows are the ones already learned
        for row in rows:
            step += 1
            if step <= done:
                continue
            started = time.perf_counter()
            loss = sft_loss(model, row, device, bf16)
            optimizer.zero_grad()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            record = {
                "stage": "sft", "step": step, "epoch": epoch, "loss": loss.item(), "grad_norm": float(norm),
                "bf16_autocast": bf16, "tokens": len(row.input_ids), "loss_tokens": sum(row.loss_mask),
                "time/step_s": time.perf_counter() - started,
            }
            metrics.write(record)
            if step % config.sft.save_every == 0 or step == total:
                save_checkpoint(out, model, optimizer, SftPosition(step=step, data_digest=digest))
            progress(step, total, f"sft step {step}/{total}  loss {record['loss']:.4f}  {record['time/step_s']:.1f}s")
        if step > done:
            model.save_pretrained(str(out / f"epoch-{epoch + 1}"))
    optimizer.zero_grad(set_to_none=True)
    del optimizer  # its state and the gradients: the eval below needs the memory
    final = out / "final"
    model.save_pretrained(str(final))
    dump_config(config, final / "training-config.yaml")
    if config.eval.at_end:
        model.eval()
        loop = asyncio.new_event_loop()
        sampler = rollout_sampler(config.model_copy(update={"sampler": config.sampler.model_copy(update={"backend": "hf"})}), model, tokenizer, secrets)
        try:
            from training.evaluation import eval_metrics, evaluate_policy

            results = evaluate_policy(config, out, step, model=model, sampler=sampler, loop=loop, secrets=secrets, final=True)
            metrics.write({"stage": "eval", "step": step, **eval_metrics(results)})
        finally:
            from scaffold.providers.batcher import cancel_pending

            cancel_pending(loop)  # an interrupted eval's audits stop with it
            loop.close()
    metrics.close()
    return final
