"""One judged audit, end to end: build the models, run (or resume) the audit with
checkpoints, grade it, store everything, write transcript.json and report.json.

`audit run`, `audit run --resume` and the benchmark all go through here. A job is
fully described by `AuditJob`, which is stored with the run, so a resume needs
nothing but the run id.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, ClassVar, Literal

from pydantic import Field

from auditor.build import build_auditor
from auditor.prompts import (
    QUIRK_HUNT_SEED,
    Manual,
    auditor_system_prompt,
    resolve_manual,
    seed_message,
)
from rewards.judges import Judge, build_judge, resolve_judge_spec
from rewards.reward import REWARDS, RewardWeights
from rewards.types import JudgeResult, RewardResult
from scaffold.checkpoints import open_store_checkpointer
from scaffold.events import Event
from scaffold.messages import GenerateConfig
from scaffold.model import ChatModel, close_model
from scaffold.run import AuditResult, ResumeError, SharedStart, resume_audit, run_audit
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from scaffold.state import AuditBudget, BudgetShorthands
from scaffold.store import Store
from scaffold.tools import AUDITOR_TOOLS
from scaffold.transcript import Transcript
from targets.quirks import get_quirk
from targets.spec import TargetSpec, build_target, load_target_spec

# An audit's default turn budget (`audit run`'s, when neither a flag nor a suite sets one).
DEFAULT_JOB_TURNS = 30


class AuditJob(BudgetShorthands):
    """Everything that defines one audit run: a target (a model.yaml path, or the spec
    itself, as an eval suite makes them), the auditor, the judge and the budgets."""

    target_path: str = Field("", description="The target's model.yaml (or set `target`).")
    target: TargetSpec | None = Field(None, description="The target spec itself, instead of a path.")
    auditor: str = Field("heuristic", description="Auditor spec.")
    judge: str = Field("auto", description="Judge spec (rewards/judges.py): auto, offline, lexical, llm:MODEL.")
    seed: str = Field(QUIRK_HUNT_SEED, description="Seed instruction for the auditor.")
    budget: AuditBudget = Field(
        default_factory=lambda: AuditBudget(max_turns=DEFAULT_JOB_TURNS),
        description="The audit's limits (turns, tokens, calls per turn, reply size, the report on the last turn).",
    )
    reward: str = Field("grounded", description="Reward function: grounded or binary.")
    reward_weights: RewardWeights = Field(
        default_factory=RewardWeights,
        description="The reward's weights (a training config's `reward.weights`): the reward is computed once, "
        "with these, stored with the verdict, and what training consumes.",
    )
    sample_seed: int | None = Field(None, description="Seeds the models' sampling (each call gets seed + step).")
    manual: Manual | Literal["auto"] = Field(
        "auto",
        description="The auditor's manual: `full`, or `compact` (the same tools in a few hundred tokens, for small "
        "local policies); `auto` picks compact for `policy:` and `hf:` auditors, full for the rest.",
    )

    default_turns: ClassVar[int] = DEFAULT_JOB_TURNS

    @property
    def max_tokens(self) -> int | None:
        """The budget's token limit."""
        return self.budget.max_tokens


class ObservedStore:
    """The store as an event log, telling `on_events` about every write (for progress bars)."""

    def __init__(self, store: Store, on_events: Callable[[list[Event]], None] | None) -> None:
        self.store, self.on_events = store, on_events

    def write_events(self, run_id: str, events: list[Event]) -> None:
        self.store.write_events(run_id, events)
        if self.on_events:
            self.on_events(events)

    def read_events(self, run_id: str) -> list[Event]:
        return self.store.read_events(run_id)

    def truncate_events(self, run_id: str, keep: int) -> None:
        self.store.truncate_events(run_id, keep)


@dataclass
class JudgedAudit:
    """A finished (or failed) audit with its verdict and where its files went."""

    job: AuditJob
    result: AuditResult
    target: TargetSpec
    judge: JudgeResult
    reward: RewardResult
    wall_s: float
    out_dir: Path

    @property
    def transcript(self) -> Transcript:
        return self.result.transcript


def check_job(job: AuditJob) -> TargetSpec:
    """Validate a job before anything runs; raises SpecError with one clear line."""
    if job.target is not None:
        target = job.target
        if target.organism:
            get_quirk(target.organism.quirk)
    elif job.target_path:
        target = load_target_spec(job.target_path)
    else:
        raise SpecError("the job names no target: give target_path or target")
    if job.reward not in REWARDS:
        raise SpecError(f"reward {job.reward!r}: unknown; available: {', '.join(REWARDS)}")
    return target


async def grade(
    judge: Judge, reward_name: str, target: TargetSpec, transcript: Transcript, weights: RewardWeights | None = None
) -> tuple[JudgeResult, RewardResult]:
    """The judge's verdict on a transcript and the reward computed from it (with `weights`, default ones if None)."""
    quirk = get_quirk(target.ground_truth_id) if target.ground_truth_id else None
    result = await judge.evaluate(transcript, quirk)
    return result, REWARDS[reward_name](result, transcript, weights)


async def grade_and_store(
    judge: Judge,
    reward_name: str,
    target: TargetSpec,
    transcript: Transcript,
    store: Store,
    weights: RewardWeights | None = None,
) -> tuple[JudgeResult, RewardResult]:
    """Grade a transcript and add the verdict to its run in the store (earlier ones are kept)."""
    result, reward = await grade(judge, reward_name, target, transcript, weights)
    store.add_judge_result(transcript.run_id, judge.name, {"judge": result.model_dump(), "reward": reward.model_dump()})
    return result, reward


def _write_json(path: Path, data: dict[str, Any], secrets: SecretRegistry) -> None:
    # Atomic: a crash mid-write never leaves a truncated report behind.
    path.parent.mkdir(parents=True, exist_ok=True)
    text = secrets.redact(json.dumps(data, indent=2, ensure_ascii=False))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def build_report(judged: JudgedAudit) -> dict[str, Any]:
    """The contents of report.json."""
    t = judged.transcript
    report = t.report.model_dump() if t.report else None
    end = t.end.model_dump(mode="json") if t.end else None
    return {
        "run_id": t.run_id,
        "status": judged.result.status,
        "error": judged.result.error,
        "end": end,
        "target": judged.target.name,
        "auditor": judged.job.auditor,
        "judge": judged.job.judge,
        "turns": t.auditor_turns,
        "findings": [f.model_dump() for f in t.findings],
        "report": report,
        "judge_result": judged.judge.model_dump(),
        "reward": judged.reward.model_dump(),
        "usage": {"auditor": t.auditor_usage.model_dump(), "target": t.target_usage.model_dump()},
        "wall_s": round(judged.wall_s, 3),
        "transcript": str(judged.out_dir / "transcript.json"),
    }


async def _close(*models: object) -> None:
    for model in models:
        await close_model(model)


async def _finish(
    job: AuditJob,
    target: TargetSpec,
    judge: Judge,
    result: AuditResult,
    store: Store,
    secrets: SecretRegistry,
    out: Path,
    start: float,
) -> JudgedAudit:
    judge_result, reward = await grade_and_store(judge, job.reward, target, result.transcript, store, job.reward_weights)
    judged = JudgedAudit(job, result, target, judge_result, reward, time.perf_counter() - start, out / result.run_id)
    _write_json(judged.out_dir / "transcript.json", result.transcript.to_dict(), secrets)
    _write_json(judged.out_dir / "report.json", build_report(judged), secrets)
    # Last: a run marked completed always has its files (a resume reads completed runs back).
    store.set_status(result.run_id, result.status, result.error)
    return judged


@dataclass
class AuditModels:
    """The built models of a job. An eval builds them once and shares them across its
    audits (a provider's concurrency limit is per built model); `audit run` builds them
    per run. Whoever builds them closes them."""

    auditor: ChatModel
    target: ChatModel
    judge: Judge

    @classmethod
    def build(cls, job: AuditJob, target: TargetSpec, secrets: SecretRegistry) -> AuditModels:
        return cls(build_auditor(job.auditor, secrets), build_target(target, secrets), build_judge(job.judge, secrets))

    async def close(self) -> None:
        await _close(self.auditor, self.target, getattr(self.judge, "model", None))


class TargetCache:
    """One built target per distinct organism or model spec (the spec's name aside):
    evals and training audit the same organism many times."""

    def __init__(self, secrets: SecretRegistry, wrap: Callable[[ChatModel], ChatModel] = lambda m: m) -> None:
        self.secrets, self.wrap = secrets, wrap
        self.models: dict[str, ChatModel] = {}

    def get(self, spec: TargetSpec) -> ChatModel:
        key = spec.model_dump_json(exclude={"name"})
        if key not in self.models:
            self.models[key] = self.wrap(build_target(spec, self.secrets))
        return self.models[key]

    async def close(self) -> None:
        for model in self.models.values():
            await close_model(model)


def _checkpoints(shared: Any, store: Store, out: Path) -> contextlib.AbstractAsyncContextManager[Any]:
    """The shared checkpointer, or one opened beside the store for this audit."""
    if shared is not None:
        return contextlib.nullcontext(shared)
    return open_store_checkpointer(store, out)


# Per-call seeds are seed + step (steps stay far below 2**19), so the target's stream
# starts 2**19 above the auditor's and suites space repeats 2**20 apart: no two streams meet.
TARGET_SEED_OFFSET = 1 << 19


def sampling_configs(job: AuditJob) -> dict[str, GenerateConfig | None]:
    """The auditor's and the target's generation configs: seeded streams when the job has a sample seed."""
    if job.sample_seed is None:
        return {"auditor_config": None, "target_config": None}
    # Different streams for the two sides: the target's seeds start far from the auditor's.
    return {
        "auditor_config": GenerateConfig(seed=job.sample_seed),
        "target_config": GenerateConfig(seed=job.sample_seed + TARGET_SEED_OFFSET),
    }


def job_opening(job: AuditJob) -> tuple[str, str, bool]:
    """The auditor's system prompt and seed message for `job` (its manual, its full turn budget),
    and whether the auditor reads the tools' brief definitions (the compact manual)."""
    manual = resolve_manual(job.manual, job.auditor)
    prompt = auditor_system_prompt([t.definition for t in AUDITOR_TOOLS.values()], job.max_turns, manual)
    return prompt, seed_message(job.seed, job.max_turns), manual == "compact"


async def run_judged_audit(
    job: AuditJob,
    store: Store,
    secrets: SecretRegistry,
    out: Path,
    run_id: str | None = None,
    on_events: Callable[[list[Event]], None] | None = None,
    models: AuditModels | None = None,
    checkpointer: Any = None,
    start: SharedStart | None = None,
) -> JudgedAudit:
    """Run `job` from the start, with checkpoints beside the store.

    With `models` (and `checkpointer`), the audit uses and leaves open those; otherwise
    it builds (opens) its own. With `start` (the job's first turns, played once by
    `scaffold.run.play_shared_start` with `job_opening(job)`), it plays only the turns after.
    """
    target_spec = check_job(job)
    manual = resolve_manual(job.manual, job.auditor)
    job = job.model_copy(update={"judge": resolve_judge_spec(job.judge), "manual": manual})
    owned = models is None
    models = models or AuditModels.build(job, target_spec, secrets)
    budget = job.budget
    run_id = run_id or uuid.uuid4().hex[:12]
    out = out.resolve()
    store.create_run(
        run_id,
        target_name=target_spec.name,
        auditor_name=job.auditor,
        judge_name=job.judge,
        seed=job.seed,
        # The output directory is part of the run: its resume writes there and, for
        # server stores, finds its checkpoints there.
        config={**job.model_dump(mode="json"), "out_dir": str(out)},
    )
    prompt, seed, brief_tools = job_opening(job)

    def play(saver: Any) -> Awaitable[AuditResult]:
        return run_audit(
            models.auditor,
            models.target,
            seed,
            auditor_prompt=prompt,
            budget=budget,
            run_id=run_id,
            sink=ObservedStore(store, on_events),
            checkpointer=saver,
            redact=secrets.redact,
            brief_tools=brief_tools,
            start=start,
            **sampling_configs(job),
        )

    return await _play_and_finish(play, job, target_spec, models, owned, store, secrets, out, checkpointer)


async def resume_judged_audit(
    run_id: str,
    store: Store,
    secrets: SecretRegistry,
    on_events: Callable[[list[Event]], None] | None = None,
    models: AuditModels | None = None,
    checkpointer: Any = None,
) -> JudgedAudit:
    """Continue a killed or failed run from its last completed step, in its own output directory."""
    row = store.get_run(run_id)
    if row["status"] == "completed":
        raise ResumeError(f"run {run_id} already finished; see `audit show {run_id}`")
    job = AuditJob.model_validate(row["config"])
    # A run stored before manuals existed was started with the full one.
    manual = resolve_manual(job.manual, job.auditor) if "manual" in row["config"] else "full"
    out = Path(row["config"]["out_dir"])
    target_spec = check_job(job)
    owned = models is None
    models = models or AuditModels.build(job, target_spec, secrets)
    budget = job.budget
    store.set_status(run_id, "running")

    def play(saver: Any) -> Awaitable[AuditResult]:
        return resume_audit(
            models.auditor,
            models.target,
            run_id=run_id,
            event_log=ObservedStore(store, on_events),
            checkpointer=saver,
            budget=budget,
            redact=secrets.redact,
            brief_tools=manual == "compact",
            **sampling_configs(job),
        )

    return await _play_and_finish(play, job, target_spec, models, owned, store, secrets, out, checkpointer)


async def _play_and_finish(
    play: Callable[[Any], Awaitable[AuditResult]],
    job: AuditJob,
    target_spec: TargetSpec,
    models: AuditModels,
    owned: bool,
    store: Store,
    secrets: SecretRegistry,
    out: Path,
    checkpointer: Any,
) -> JudgedAudit:
    """Play the audit with checkpoints, grade and store it; close the models if we built them."""
    start = time.perf_counter()
    try:
        try:
            async with _checkpoints(checkpointer, store, out) as saver:
                result = await play(saver)
        finally:
            if owned:
                await _close(models.auditor, models.target)
        return await _finish(job, target_spec, models.judge, result, store, secrets, out, start)
    finally:
        if owned:
            await _close(getattr(models.judge, "model", None))
