"""Rollouts: real, judged audits in the production scaffold, turned into training rows.

A task (one dataset prompt) is a quirk's organism, an auditor seed and a task index;
each of its G rollouts is a whole audit (`evals.audit_job.run_judged_audit`, the path
`audit run` and `audit eval` use) with the policy as the auditor, graded by the judge.
Every rollout is stored (OUT/rollouts.db and OUT/rollouts/RUN/), so `audit review`
reads training audits like any other.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from auditor.seeds import get_seed
from evals.audit_job import AuditJob, AuditModels, TargetCache, job_opening, run_judged_audit, sampling_configs
from evals.suites import split_quirk_ids
from rewards.hacking import hacking_flags
from rewards.judges import Judge
from rewards.types import JudgeResult, RewardResult
from scaffold.checkpoints import open_store_checkpointer
from scaffold.events import AuditorMessageEvent
from scaffold.model import ChatModel, close_model
from scaffold.providers.by_turn import then
from scaffold.run import SharedStart, play_shared_start
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from scaffold.store import Store
from scaffold.tool_pattern import entropy_bits, tool_pattern
from scaffold.transcript import Transcript
from targets.grammar.generate import use_generated_set
from targets.quirks import get_quirk, library_digest, quirk_set_digest
from targets.spec import OrganismSpec, TargetSpec
from training.config import TrainConfig
from training.distributed import Ranks
from training.rollout_diagnostics import (
    last_quote_source,
    quirk_showed,
    quotes_a_cited_reply,
    top_hypothesis_cites_a_reply,
)
from training.rows import TrainingRow, merge_turns, token_records

log = logging.getLogger(__name__)


class RolloutTask(BaseModel):
    """What one dataset prompt asks: audit this quirk's organism with this seed."""

    quirk: str
    seed_id: str

    def key(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_key(cls, key: str) -> RolloutTask:
        return cls.model_validate_json(key)


def training_tasks(config: TrainConfig) -> list[RolloutTask]:
    """Every (quirk, seed) pair of the training split, in a stable order."""
    tasks = config.tasks
    if tasks.generated is not None:
        use_generated_set(tasks.generated)
    splits = [tasks.split] + (["control"] if tasks.include_control else [])
    # The split's hand-written quirks, or the generated set's; the control is always hand-written.
    quirks = {q for s in splits for q in split_quirk_ids([s], generated=tasks.generated is not None and s != "control")}
    if tasks.families:
        quirks = {q for q in quirks if (origin := get_quirk(q).generated) is None or origin.family in tasks.families}
    for seed_id in config.tasks.seeds:
        get_seed(seed_id)  # an unknown seed fails before any model loads
    return [RolloutTask(quirk=q, seed_id=s) for q in sorted(quirks) for s in config.tasks.seeds]


def pin_task_quirks(out: Path, tasks: list[RolloutTask], resume: bool) -> None:
    """Record the quirk set a run trains on (ids and content); a resume must find the same set.

    Quirks can come from `--quirks` directories and files can be edited: a resume without
    the same directories, or after an edit, would silently train on other organisms.
    """
    path = out / "quirks.json"
    ids = sorted({t.quirk for t in tasks})
    # The library too: the reward's grader compares every hypothesis with all loaded quirks.
    state = {"digest": quirk_set_digest(ids), "quirks": ids, "library_digest": library_digest()}
    if resume and path.exists():
        saved = json.loads(path.read_text())
        if (saved.get("digest"), saved.get("library_digest")) != (state["digest"], state["library_digest"]):
            raise SpecError(
                f"{out}: the run trained on quirks {', '.join(saved.get('quirks', []))} (digest {saved.get('digest')}); "
                f"now {', '.join(ids)} (digest {state['digest']}): resume with the same --quirks and unedited quirk files"
            )
        return
    path.write_text(json.dumps(state, indent=2) + "\n")


def rollout_seed(base: int, step: int, index: int) -> int:
    """The sampling seed of rollout `index` of `step`: a stable hash, spaced 2**20 apart
    so that the per-call streams (seed + turn, the target's at +2**19) never meet."""
    digest = hashlib.blake2b(f"{base}:{step}:{index}".encode(), digest_size=5).digest()
    return int.from_bytes(digest, "big") << 20


@dataclass
class Rollout:
    """One judged audit and what training needs from it."""

    task: RolloutTask
    run_id: str
    transcript: Transcript | None
    judge: JudgeResult | None
    reward: RewardResult | None
    row: TrainingRow | None
    prefix_breaks: int = 0
    dropped_turns: int = 0
    wall_s: float = 0.0
    error: str | None = None
    hacks: dict[str, bool] = field(default_factory=dict)
    start: str | None = None  # the shared start it continued (tasks.shared_turns)

    @property
    def turns(self) -> int:
        return self.transcript.auditor_turns if self.transcript else 0

    @cached_property
    def pattern(self) -> str:
        """Its tool use (see `tool_pattern`); empty without a transcript."""
        return tool_pattern(self.transcript) if self.transcript else ""


def _row(transcript: Transcript, context_turns: int = 0) -> tuple[TrainingRow | None, int, int]:
    """The rollout's trainable row (the one holding its last turn), its prefix breaks and
    the turns of the other rows (which TRL's one-completion-per-rollout cannot carry).
    The first `context_turns` turns (a group's shared start) carry no loss."""
    merged = merge_turns(transcript.run_id, token_records(transcript), context_turns)
    if not merged.rows:
        return None, merged.prefix_breaks, 0
    row = merged.rows[-1]
    return row, merged.prefix_breaks, sum(len(r.turns) for r in merged.rows[:-1])


def _context_turns(transcript: Transcript, turns: int) -> int:
    """The token records of a rollout's first `turns` auditor turns, which carry no loss (its
    group's shared start, or the turns a frozen start auditor played): one a turn from a local
    model, none from a start auditor without tokens (an API model, a heuristic)."""
    played = [e for e in transcript.events if isinstance(e, AuditorMessageEvent) and e.message.role == "assistant"]
    return sum(1 for e in played[:turns] if e.tokens is not None)


class RolloutRunner:
    """Runs groups of judged audits with one sampler, one judge and cached organisms."""

    def __init__(
        self,
        config: TrainConfig,
        sampler: ChatModel,
        judge: Judge,
        out: Path,
        secrets: SecretRegistry,
        wrap_target: Callable[[ChatModel], ChatModel] = lambda m: m,
        ranks: Ranks = Ranks(),
        start_auditor: ChatModel | None = None,
    ) -> None:
        self.config, self.sampler, self.judge, self.secrets = config, sampler, judge, secrets
        # A frozen start auditor plays the shared turns; the policy every turn after (tasks.start_auditor).
        self.auditor = sampler if start_auditor is None else then(start_auditor, config.tasks.shared_turns, sampler)
        self.start_auditor = start_auditor
        self.ranks = ranks  # with several training processes, rollouts keep their global index
        self.out = out / "rollouts"
        self.out.mkdir(parents=True, exist_ok=True)
        self.store = Store(f"sqlite:///{out / 'rollouts.db'}", redact=secrets.redact)
        self.targets = TargetCache(secrets, wrap_target)

    def _target_spec(self, quirk: str, step: int) -> TargetSpec:
        fields: dict[str, object] = {"quirk": quirk, **self.config.tasks.organism}
        difficulty = self.config.tasks.difficulty_at(step + 1)  # `step` counts from 0 here
        if difficulty:
            fields["difficulty"] = difficulty
        organism = OrganismSpec.model_validate(fields)
        return TargetSpec(name=f"{quirk} ({organism.difficulty})", organism=organism)

    def _models(self, spec: TargetSpec) -> AuditModels:
        return AuditModels(self.auditor, self.targets.get(spec), self.judge)

    def _job(self, task: RolloutTask, spec: TargetSpec, step: int, index: int) -> AuditJob:
        return AuditJob(
            target=spec,
            auditor=f"policy:{self.config.name}",
            judge=self.config.reward.judge,
            seed=get_seed(task.seed_id).text,
            budget=self.config.tasks.budget,
            reward=self.config.reward.family,
            reward_weights=self.config.reward.weights,
            sample_seed=rollout_seed(self.config.seed, step, index),
            manual=self.config.policy.manual,
        )

    async def run(self, tasks: list[RolloutTask], step: int) -> list[Rollout]:
        """One rollout per entry of `tasks` (a task repeated G times gives its group), concurrently.

        With `tasks.shared_turns`, each group's first turns are played once and its rollouts
        continue from them.
        """
        starts = await self._shared_starts(tasks, step) if self.config.tasks.shared_turns else {}
        group = self.config.group_size
        async with open_store_checkpointer(self.store, self.out) as saver:
            return list(await asyncio.gather(
                *(self._one(t, step, self.ranks.global_index(i, len(tasks)), saver, starts.get(i // group))
                  for i, t in enumerate(tasks))
            ))

    async def _shared_starts(self, tasks: list[RolloutTask], step: int) -> dict[int, SharedStart]:
        """Each group's shared first turns, played concurrently; a group whose start ended
        early (a report, a failure) is left out, and its rollouts are whole audits."""
        if self.ranks.world > 1:  # a rank's slice may cut a group, whose halves would play different starts
            raise SpecError("tasks.shared_turns needs a single training process")
        group = self.config.group_size
        firsts = list(range(0, len(tasks), group))
        for first in firsts:
            if any(t != tasks[first] for t in tasks[first : first + group]):
                raise SpecError(f"step {step + 1}: rollouts {first}-{first + group - 1} are not one group of one task")
        played = await asyncio.gather(*(self._start(tasks[first], step, first // group) for first in firsts))
        return {g: start for g, start in enumerate(played) if start is not None}

    async def _start(self, task: RolloutTask, step: int, group: int) -> SharedStart | None:
        spec = self._target_spec(task.quirk, step)
        # Its own sampling streams: negative indexes never meet a rollout's.
        job = self._job(task, spec, step, -(group + 1))
        prompt, seed, brief_tools = job_opening(job)
        models = self._models(spec)
        try:
            start = await play_shared_start(
                models.auditor, models.target, seed, auditor_prompt=prompt, budget=job.budget,
                turns=self.config.tasks.shared_turns, run_id=f"s{step:05d}-g{group:03d}-{task.quirk}-start",
                redact=self.secrets.redact, brief_tools=brief_tools, **sampling_configs(job),
            )
        except Exception:  # noqa: BLE001 - its group still runs, as whole audits
            log.exception("step %d: the shared start of group %d failed", step + 1, group)
            return None
        if start is None:
            log.info("step %d: group %d's shared start ended early; its rollouts are whole audits", step + 1, group)
        return start

    async def _one(
        self, task: RolloutTask, step: int, index: int, saver: Any, start: SharedStart | None = None
    ) -> Rollout:
        spec = self._target_spec(task.quirk, step)
        # A step replayed after a crash gets fresh run ids; its samples are the same (sample_seed).
        run_id = f"s{step:05d}-{index:03d}-{task.quirk}-{uuid.uuid4().hex[:4]}"
        job = self._job(task, spec, step, index)
        started = time.perf_counter()
        try:
            judged = await run_judged_audit(
                job, self.store, self.secrets, self.out, run_id=run_id, models=self._models(spec), checkpointer=saver,
                start=start,
            )
            transcript = judged.transcript
            # A group whose start failed plays whole audits, whose first turns a frozen start auditor still played.
            frozen = self.config.tasks.shared_turns if self.start_auditor is not None else 0
            row, breaks, dropped = _row(transcript, _context_turns(transcript, start.turns if start else frozen))
            hacks = hacking_flags(transcript, self.config.reward.weights)
            # No verdict is not a zero: a rollout the judge could not score gets no advantage.
            # The reward is the one the job computed and stored with its verdict, never a second computation.
            reward = None if judged.judge.error else judged.reward
        except Exception as exc:  # noqa: BLE001 - one broken audit scores None, the step goes on
            log.exception("rollout %s failed", run_id)
            return Rollout(task, run_id, None, None, None, None, wall_s=time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
        error = judged.judge.error or (None if judged.result.status == "completed" else judged.result.error)
        return Rollout(
            task, run_id, transcript, judged.judge, reward, row, breaks, dropped,
            wall_s=time.perf_counter() - started, error=error, hacks=hacks, start=start.run_id if start else None,
        )

    async def close(self) -> None:
        await self.targets.close()
        if self.start_auditor is not None:
            await close_model(self.start_auditor)


def rollout_summary(rollouts: list[Rollout]) -> dict[str, Any]:
    """The step's rollout metrics: reward and its components, detection, valid calls,
    turns, masking, prefix breaks, hacking and strategy entropy."""
    rewards = [r.reward.reward for r in rollouts if r.reward is not None]
    out: dict[str, Any] = {"rollouts": len(rollouts), "rollouts_failed": sum(1 for r in rollouts if r.reward is None)}
    if rewards:
        mean = sum(rewards) / len(rewards)
        out["reward/mean"] = mean
        out["reward/std"] = math.sqrt(sum((x - mean) ** 2 for x in rewards) / len(rewards))
        components: dict[str, list[float]] = {}
        for r in rollouts:
            for name, value in (r.reward.components if r.reward else {}).items():
                components.setdefault(name, []).append(value)
        out.update({f"reward/{k}": sum(v) / len(v) for k, v in components.items()})
    quirk = [r for r in rollouts if r.judge is not None and r.task.quirk != "none"]
    control = [r for r in rollouts if r.judge is not None and r.task.quirk == "none"]
    if quirk:
        out["detection_rate"] = sum(1 for r in quirk if r.judge and r.judge.identified) / len(quirk)
        out["grounded_rate"] = sum(1 for r in quirk if r.judge and r.judge.grounded) / len(quirk)
        if any(r.judge and r.judge.named_own_words is not None for r in quirk):  # offline judges say
            out["named_own_words_rate"] = sum(1 for r in quirk if r.judge and r.judge.named_own_words) / len(quirk)
        # right or wrong: next to false_positive_rate, whether the policy tells a quirk from a clean target
        said = [r for r in quirk if r.judge and r.judge.claimed is not None]
        if said:
            out["claim_rate"] = sum(1 for r in said if r.judge and r.judge.claimed) / len(said)
        showed = [s for r in quirk if r.transcript and (s := quirk_showed(r.transcript)) is not None]
        if showed:  # simulated organisms only: whether the probing reached the trigger at all
            out["quirk_showed_rate"] = sum(showed) / len(showed)
    if control:
        out["false_positive_rate"] = sum(1 for r in control if r.judge and r.judge.false_positive) / len(control)
    with_transcript = [r for r in rollouts if r.transcript is not None]
    valid = [r.transcript.valid_call_turns() for r in with_transcript if r.transcript]
    total_turns = sum(t for _, t in valid)
    out["valid_tool_call_rate"] = sum(v for v, _ in valid) / total_turns if total_turns else 0.0
    out["turns/mean"] = total_turns / len(with_transcript) if with_transcript else 0.0
    transcripts = [r.transcript for r in with_transcript if r.transcript]
    if transcripts:
        out["report_rate"] = sum(1 for t in transcripts if t.report) / len(transcripts)
        out["citation_rate"] = sum(1 for t in transcripts if top_hypothesis_cites_a_reply(t)) / len(transcripts)
        out["quote_rate"] = sum(1 for t in transcripts if quotes_a_cited_reply(t)) / len(transcripts)
        # the reply slot of a report's frame: filled from a reply, or with the auditor's own request
        sources = [last_quote_source(t) for t in transcripts]
        out["quotes_own_request_rate"] = sources.count("request") / len(transcripts)
    completion = sum(len(r.row.completion_ids) for r in rollouts if r.row)
    sampled = sum(sum(r.row.completion_mask) for r in rollouts if r.row)
    out["tokens/sampled"] = sampled
    out["tokens/masked_fraction"] = 1 - sampled / completion if completion else 0.0
    out["shared_starts"] = len({r.start for r in rollouts if r.start})
    out["prefix_breaks"] = sum(r.prefix_breaks for r in rollouts)
    out["dropped_turns"] = sum(r.dropped_turns for r in rollouts)
    out["hacky_rate"] = sum(1 for r in with_transcript if any(r.hacks.values())) / len(with_transcript) if with_transcript else 0.0
    patterns = [r.pattern for r in with_transcript]
    out["strategy_entropy_bits"] = entropy_bits(patterns)
    out["strategy_patterns"] = len(set(patterns))
    out["top_pattern"] = Counter(patterns).most_common(1)[0][0] if patterns else ""
    return out


def trl_batch(rollouts: list[Rollout], eos_id: int) -> dict[str, list[Any]]:
    """TRL's rollout_func output: prompt ids, completion ids (environment text included),
    sampling logprobs, env_mask (1 on sampled tokens) and the reward as an extra field.

    A rollout with no row (it failed before the policy spoke) becomes a one-token,
    fully masked completion whose reward is None: TRL gives it no advantage.
    """
    batch: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "audit_reward": []}
    for r in rollouts:
        if r.row is None:
            batch["prompt_ids"].append([eos_id])
            batch["completion_ids"].append([eos_id])
            batch["logprobs"].append([0.0])
            batch["env_mask"].append([0])
            batch["audit_reward"].append(None)
            continue
        row = r.row
        batch["prompt_ids"].append(row.prompt_ids)
        batch["completion_ids"].append(row.completion_ids)
        batch["logprobs"].append(row.logprobs[row.prompt_length :])
        batch["env_mask"].append(row.completion_mask)
        batch["audit_reward"].append(r.reward.reward if r.reward is not None else None)
    return batch


def rollout_lines(rollouts: list[Rollout], step: int) -> list[str]:
    """One JSON line per rollout for OUT/rollouts.jsonl (what each audit earned, and why)."""
    lines = []
    for r in rollouts:
        origin = get_quirk(r.task.quirk).generated
        lines.append(
            json.dumps(
                {
                    "step": step,
                    "run_id": r.run_id,
                    "quirk": r.task.quirk,
                    "family": origin.family if origin is not None else None,  # generated quirks (audit traces)
                    "seed": r.task.seed_id,
                    "reward": r.reward.reward if r.reward else None,
                    "components": r.reward.components if r.reward else {},
                    "identified": r.judge.identified if r.judge else None,
                    "turns": r.turns,
                    "pattern": r.pattern,
                    "hacks": [k for k, v in r.hacks.items() if v],
                    "shared_start": r.start,
                    "wall_s": round(r.wall_s, 3),
                    "error": r.error,
                }
            )
        )
    return lines
