"""Run a suite: many judged audits at once, resumable, into one results.json.

Layout of an eval's directory:

    DIR/eval.json       what is being run (suite, auditor, judge, eval id), written first
    DIR/audits.jsonl    one AuditRow per finished audit, appended and fsynced as each ends
    DIR/runs/<run_id>/  each audit's transcript.json and report.json
    DIR/results.json    rows + aggregates (evals/results.py), written at the end
    DIR/report.md, DIR/report.html, DIR/plots/*.png

Every audit is also a run in the store (its run id is `<eval id>-<case id>`), so the
review app and `audit show` read it like any other. A killed eval resumes with
`--resume`: completed audits are read back, never redone; an audit that was cut off is
continued from its last checkpoint (resume_judged_audit), never restarted; an audit
that completed in the store but had not reached audits.jsonl is read from the store.

Models are built once per eval and shared by all its audits (one auditor, one judge,
one target per distinct organism), so a provider's concurrency limit and a local
model's batcher see every audit.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shlex
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from auditor.build import build_auditor
from auditor.heuristic import HEURISTIC_SPECS
from evals.audit_job import (
    AuditJob,
    AuditModels,
    JudgedAudit,
    TargetCache,
    grade_and_store,
    resume_judged_audit,
    run_judged_audit,
)
from evals.audit_rows import failed_row, make_row
from evals.prices import PriceTable, load_prices
from evals.results import SCHEMA_VERSION, AuditRow, EvalResults, aggregate
from evals.suites import EvalCase, Suite, expand
from rewards.judges import build_judge, judge_digest, resolve_judge_spec
from rewards.types import JudgeResult, RewardResult
from scaffold.checkpoints import open_store_checkpointer
from scaffold.model import ChatModel, close_model
from scaffold.providers.limits import ProcessSlots, provider_slots, slots_installed
from scaffold.run import INITIAL_EVENTS
from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError, model_spec_from_arg
from scaffold.store import Store, StoreError
from scaffold.transcript import Transcript
from targets.quirks import get_quirk, library_digest, quirk_set_digest

if TYPE_CHECKING:
    from evals.ray_runner import RayOptions

RowCallback = Callable[[AuditRow, int, int], None]  # (row, finished so far, total)
log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def quirk_pins(cases: list[EvalCase]) -> dict[str, Any]:
    """What the cases' quirks are: the audited set's digest, each quirk's, and the whole library's
    (graders compare a hypothesis with every loaded quirk). Computed once per eval."""
    quirk_ids = list(dict.fromkeys(c.quirk for c in cases))
    return {
        "quirk_digest": quirk_set_digest(quirk_ids),
        "library_digest": library_digest(),
        "quirk_digests": {q: get_quirk(q).digest() for q in quirk_ids},
    }


def _state(suite: Suite, auditor: str, judge: str, repeats: int | None, pins: dict[str, Any]) -> dict[str, Any]:
    # The results schema is part of what is run: rows written under another schema
    # (schema 1 had no grounded verdict) must not be mixed into this one's counts.
    # So is the quirk set: a quirk file edited between sessions makes other organisms.
    return {"suite": suite.model_dump(mode="json"), "auditor": auditor, "judge": judge, "repeats": repeats,
            "schema_version": SCHEMA_VERSION, "quirk_digest": pins["quirk_digest"],
            "library_digest": pins["library_digest"], "judge_digest": pins["judge_digest"]}


def open_eval_dir(
    out: Path, suite: Suite, auditor: str, judge: str, repeats: int | None, resume: bool, pins: dict[str, Any]
) -> str:
    """Create (or, with `resume`, check and reopen) an eval directory; returns the eval id."""
    state_path = out / "eval.json"
    wanted = _state(suite, auditor, judge, repeats, pins)
    if state_path.exists():
        if not resume:
            raise SpecError(f"{out} already holds an eval; pass --resume to continue it, or choose another --out")
        saved = json.loads(state_path.read_text(encoding="utf-8"))
        changed = [key for key in wanted if saved.get(key) != wanted[key]]
        if changed:
            raise SpecError(f"{out}: cannot resume with a different {', '.join(changed)} than the eval was started with")
        return str(saved["eval_id"])
    if resume:
        raise SpecError(f"{out}: no eval to resume (no eval.json)")
    out.mkdir(parents=True, exist_ok=True)
    eval_id = uuid.uuid4().hex[:8]
    _write_atomic(state_path, json.dumps({"eval_id": eval_id, "created_at": _now(), **wanted}, indent=2))
    return eval_id


def read_finished(out: Path) -> dict[str, AuditRow]:
    """Rows already in audits.jsonl, by case id. A line torn by a kill (even inside a
    multi-byte character) is skipped; its audit is read back from the store instead."""
    path = out / "audits.jsonl"
    rows: dict[str, AuditRow] = {}
    if path.exists():
        for line in path.read_bytes().split(b"\n"):
            try:
                row = AuditRow.model_validate_json(line.decode("utf-8"))
            except ValueError:  # UnicodeDecodeError and pydantic's ValidationError too
                continue
            rows[row.case_id] = row
    return rows


class _RowLog:
    """Appends rows to audits.jsonl, durably, one line per finished audit."""

    def __init__(self, path: Path, redact: Callable[[str], str]) -> None:
        self.path, self.redact = path, redact
        if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            with path.open("ab") as f:  # end a torn last line, so the next row is a line of its own
                f.write(b"\n")

    def append(self, row: AuditRow) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(self.redact(row.model_dump_json()) + "\n")
            f.flush()
            os.fsync(f.fileno())


@contextlib.contextmanager
def _exclusive(out: Path) -> Iterator[None]:
    """Hold DIR/.lock: two processes on one eval directory would run audits twice."""
    with (out / ".lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SpecError(f"{out}: another `audit eval` is running in this directory") from None
        yield


def _label(spec: str) -> str | None:
    if spec in HEURISTIC_SPECS:
        return None
    try:
        return model_spec_from_arg(spec).label()
    except SpecError:
        return None


class _SharedModels:
    """One auditor and one judge for the eval, one target per distinct organism."""

    def __init__(self, auditor: str, judge: str, secrets: SecretRegistry, auditor_model: ChatModel | None = None) -> None:
        self.secrets = secrets
        self.owns_auditor = auditor_model is None
        self.auditor = auditor_model if auditor_model is not None else build_auditor(auditor, secrets)
        self.judge = build_judge(judge, secrets)
        self.targets = TargetCache(secrets)

    def for_case(self, case: EvalCase) -> AuditModels:
        return AuditModels(self.auditor, self.targets.get(case.target), self.judge)

    async def close(self) -> None:
        await self.targets.close()
        mine = [self.auditor] if self.owns_auditor else []
        for model in [*mine, getattr(self.judge, "model", None)]:
            await close_model(model)


def _stored_run(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run's row in the store, whatever its status, or None if it was never started."""
    try:
        row = store.get_run(run_id)
    except StoreError:
        return None
    return row


async def run_eval(
    suite: Suite,
    *,
    auditor: str,
    judge: str | None,
    out: Path,
    store: Store,
    secrets: SecretRegistry,
    concurrency: int = 8,
    repeats: int | None = None,
    resume: bool = False,
    prices: PriceTable | None = None,
    on_row: RowCallback | None = None,
    on_start: Callable[[int, int], None] | None = None,
    auditor_model: ChatModel | None = None,
    ray: RayOptions | None = None,
) -> EvalResults:
    """Run (or resume) `suite` with `auditor` into `out`; returns what results.json holds.

    `auditor_model`, when given, is the auditor (a trainer's in-memory policy; left
    open), and `auditor` is only its label. With `ray`, the audits run as Ray tasks
    (`evals.ray_runner`); this process keeps audits.jsonl, the progress and the results.

    One audit's unexpected error becomes that audit's failed row (the traceback goes
    to the log); the others go on. Throughput and CPU seconds are measured over the
    audits this session ran, so a resumed eval does not claim the earlier sessions'.
    """
    judge_spec = resolve_judge_spec(judge or suite.judge)
    cases = expand(suite, repeats)
    out = out.resolve()
    pins = {**quirk_pins(cases), "judge_digest": judge_digest(judge_spec)}
    eval_id = open_eval_dir(out, suite, auditor, judge_spec, repeats, resume, pins)
    with _exclusive(out):
        return await _run_cases(
            suite, cases, eval_id, auditor=auditor, judge=judge_spec, out=out, store=store, secrets=secrets,
            concurrency=concurrency, repeats=repeats, prices=prices or load_prices(), on_row=on_row, on_start=on_start,
            auditor_model=auditor_model, pins=pins, ray=ray,
        )


async def _run_cases(
    suite: Suite,
    cases: list[EvalCase],
    eval_id: str,
    *,
    auditor: str,
    judge: str,
    out: Path,
    store: Store,
    secrets: SecretRegistry,
    concurrency: int,
    repeats: int | None,
    prices: PriceTable,
    on_row: RowCallback | None,
    on_start: Callable[[int, int], None] | None,
    auditor_model: ChatModel | None = None,
    pins: dict[str, Any],
    ray: RayOptions | None = None,
) -> EvalResults:
    finished = {k: r for k, r in read_finished(out).items() if r.status == "completed"}
    row_log = _RowLog(out / "audits.jsonl", secrets.redact)
    started_at, start, cpu_start = _now(), time.perf_counter(), time.process_time()
    rows: dict[str, AuditRow] = dict(finished)
    pending = [c for c in cases if c.case_id not in finished]
    if on_start:
        on_start(len(finished), len(cases))

    def record(row: AuditRow) -> None:
        row_log.append(row)
        rows[row.case_id] = row
        if on_row:
            on_row(row, len(rows), len(cases))

    settings = CaseSettings(eval_id=eval_id, suite=suite, auditor=auditor, judge=judge, out=out,
                            concurrency=concurrency)
    worker_cpu_s = 0.0  # CPU the audits used in other processes (Ray workers)
    if ray is not None:
        if auditor_model is not None:
            raise SpecError("an in-memory auditor cannot run on Ray: its workers build models from specs")
        from evals.ray_runner import play_on_ray

        worker_cpu_s = await play_on_ray(pending, settings, store, prices, ray, record)
    else:
        await play_cases(pending, settings, store, secrets, prices, record, auditor_model)
    wall_s = time.perf_counter() - start
    ordered = [rows[c.case_id] for c in cases]
    results = EvalResults(
        eval_id=eval_id,
        suite=suite.model_dump(mode="json"),
        **pins,
        auditor=auditor,
        judge=judge,
        repeats=repeats,
        started_at=started_at,
        finished_at=_now(),
        wall_s=round(wall_s, 3),
        command=" ".join(shlex.quote(a) for a in ["audit", *sys.argv[1:]]) if sys.argv else "",
        rows=ordered,
        aggregates=aggregate(
            ordered, wall_s=wall_s, cpu_s=time.process_time() - cpu_start + worker_cpu_s, audits_run=len(pending)
        ),
    )
    text = secrets.redact(results.model_dump_json(indent=2))
    _write_atomic(out / "results.json", text)
    from evals.report import write_reports  # matplotlib: only once there is something to plot

    write_reports(EvalResults.model_validate_json(text), out)  # the reports get the redacted text too
    return results


@dataclass(frozen=True)
class CaseSettings:
    """What every audit of one eval shares, as plain data (a Ray worker gets a pickled copy)."""

    eval_id: str
    suite: Suite
    auditor: str
    judge: str
    out: Path
    concurrency: int


async def play_cases(
    cases: list[EvalCase],
    settings: CaseSettings,
    store: Store,
    secrets: SecretRegistry,
    prices: PriceTable,
    on_done: Callable[[AuditRow], None],
    auditor_model: ChatModel | None = None,
) -> None:
    """Run, continue or read back each case, `settings.concurrency` at a time, handing each row to
    `on_done` as its audit ends. Models are built once and shared; one checkpointer serves all."""
    # Models built for this eval share one limit per provider endpoint, unless the caller (a Ray
    # worker) has installed slots that span processes. Built inside the block: a provider reads
    # its slots when it is made (TargetCache makes targets as the audits start).
    with contextlib.nullcontext() if slots_installed() else provider_slots(ProcessSlots()):
        models = _SharedModels(settings.auditor, settings.judge, secrets, auditor_model)
        auditor_label = _label(settings.auditor)
        limit = asyncio.Semaphore(settings.concurrency)

        async def one(case: EvalCase, saver: Any) -> None:
            run_id = f"{settings.eval_id}-{case.case_id}"
            async with limit:
                began = time.perf_counter()
                try:
                    played = await _audit_case(case, run_id, settings, store, secrets, models, saver)
                    row = make_row(
                        case, run_id, *played[:3], status=played[3], error=played[4],
                        wall_s=played[5] if played[5] is not None else time.perf_counter() - began,
                        auditor_label=auditor_label, prices=prices,
                    )
                except Exception as exc:  # noqa: BLE001 - one audit's bug must not end the eval
                    log.exception("eval %s: case %s failed", settings.eval_id, case.case_id)
                    row = failed_row(case, run_id, f"{type(exc).__name__}: {exc}", time.perf_counter() - began)
            on_done(row)

        try:
            # Beside the audits' own out_dir (DIR/runs), where `audit run --resume RUN` looks too.
            async with open_store_checkpointer(store, settings.out / "runs") as saver:
                await asyncio.gather(*(one(case, saver) for case in cases))
        finally:
            await models.close()


async def _audit_case(
    case: EvalCase,
    run_id: str,
    settings: CaseSettings,
    store: Store,
    secrets: SecretRegistry,
    models: _SharedModels,
    checkpointer: Any,
) -> tuple[Transcript, JudgeResult, RewardResult, str, str | None, float | None]:
    """Run, continue or read back one case: (transcript, verdict, reward, status, error, wall_s)."""
    suite, out = settings.suite, settings.out
    stored = _stored_run(store, run_id)
    if stored is not None and stored["status"] == "completed":
        transcript = Transcript.from_events(run_id, store.read_events(run_id))
        wall = float(stored["updated_at"] - stored["created_at"])
        ours = [r["result"] for r in store.judge_results_for(run_id) if r["judge_name"] == models.judge.name]
        verdict = ours[-1] if ours else None
        if verdict is None or verdict["judge"].get("error"):  # never judged by this eval's judge, or it failed
            graded, reward = await grade_and_store(models.judge, suite.reward, case.target, transcript, store)
            return transcript, graded, reward, "completed", None, wall
        return (transcript, JudgeResult.model_validate(verdict["judge"]),
                RewardResult.model_validate(verdict["reward"]), "completed", None, wall)
    shared = models.for_case(case)
    if stored is not None and len(store.read_events(run_id)) < INITIAL_EVENTS:
        store.delete_unstarted_run(run_id)  # killed before its first events: start it again
        stored = None
    if stored is not None:  # cut off by a kill, or failed: continue from its checkpoint
        judged: JudgedAudit = await resume_judged_audit(run_id, store, secrets, models=shared, checkpointer=checkpointer)
    else:
        job = AuditJob(
            target=case.target,
            auditor=settings.auditor,
            judge=settings.judge,
            budget=suite.budget,
            reward=suite.reward,
            sample_seed=case.sample_seed,
            manual=suite.manual,
        )
        judged = await run_judged_audit(job, store, secrets, out / "runs", run_id=run_id, models=shared, checkpointer=checkpointer)
    return (judged.transcript, judged.judge, judged.reward, judged.result.status, judged.result.error, judged.wall_s)
