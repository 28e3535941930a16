"""Judged audits as the exporters read them: from a store (by run id) or from an eval directory.

An eval directory is self-contained: `results.json` lists its audits, and each one has
`runs/<run_id>/transcript.json` (the events) and `report.json` (the verdict and the
reward). A store holds the same through `audit run`/`audit eval`'s `--store`.

The exporters never read anything else, so what they write is exactly what was
judged. The quirk's ground truth is looked up here, once, and kept apart from the
conversation (`StoredAudit.ground_truth`), because only graders may see it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rewards.types import JudgeResult, RewardResult
from scaffold.events import event_from_json
from scaffold.specs import SpecError
from scaffold.store import Store
from scaffold.transcript import Transcript
from targets.quirks import all_quirks

# Case fields that name the quirk or give its kind away (the case id embeds the quirk id; a
# control's split is "control"; a generated quirk's family is its behaviour).
GRADER_LABELS = ("case_id", "split", "family")


@dataclass
class StoredAudit:
    """One audit with its verdict; `verdict`/`reward` are None when it was never judged."""

    run_id: str
    status: str
    transcript: Transcript
    target: str = ""
    auditor: str = ""
    judge: str = ""
    error: str | None = None
    verdict: JudgeResult | None = None
    reward: RewardResult | None = None
    quirk: str | None = None  # the seeded quirk's id ("none" for a control), from the verdict or the run
    ground_truth: str | None = None  # graders only
    created_at: float | None = None
    labels: dict[str, Any] = field(default_factory=dict)  # an eval row's case fields: split, difficulty, repeat…

    @property
    def seeded(self) -> bool:
        """The target was an organism with a seeded quirk (or a control): its names can say which."""
        return self.quirk is not None

    @property
    def public_id(self) -> str:
        """The id a viewer shows. An organism's run id names its quirk ("<eval>-flattery-..."), so
        seeded audits show a digest of it; the run id itself is among the graders' fields."""
        if not self.seeded:
            return self.run_id
        return "audit-" + hashlib.sha256(self.run_id.encode()).hexdigest()[:12]

    @property
    def public_target(self) -> str:
        """The target's name where a viewer may see it (an organism's name is its quirk's)."""
        return "organism" if self.seeded else self.target

    def graders_only(self) -> dict[str, Any] | None:
        """What only graders may see: the quirk, its ground truth, and the names that give it away."""
        if not self.seeded:
            return None
        verified = {}
        if self.verdict is not None:
            verified = {str(h.rank): h.verified_message_ids for h in self.verdict.hypotheses}
        return {
            "quirk": self.quirk,
            "ground_truth": self.ground_truth,
            "run_id": self.run_id,
            "target": self.target,
            "verified_citations": verified,  # by hypothesis rank: the cited replies where the quirk fired
            **{k: v for k, v in self.labels.items() if k in GRADER_LABELS and v is not None},
        }

    def public_labels(self) -> dict[str, Any]:
        """The eval row's case fields a viewer may see."""
        hidden = GRADER_LABELS if self.seeded else ()
        return {k: v for k, v in self.labels.items() if k not in hidden and v is not None}

    def public_facts(self) -> dict[str, Any]:
        """The run's facts a viewer may see, the same in every export (the run id only when it names no quirk)."""
        t = self.transcript
        facts: dict[str, Any] = {
            "id": self.public_id,
            "status": self.status,
            "target": self.public_target,
            "auditor": self.auditor,
            "judge": self.judge,
            "turns": t.auditor_turns,
            "end": t.end.reason if t.end else None,
            "report": t.report.model_dump() if t.report else None,
            **self.public_labels(),
        }
        if not self.seeded:
            facts["run_id"] = self.run_id
        return facts

    @property
    def seed(self) -> str:
        """The auditor's instruction: the first user message it read."""
        first = next((m for m in self.transcript.auditor_messages if m.role == "user"), None)
        return first.content if first else ""

    @property
    def started(self) -> float | None:
        return self.transcript.events[0].time if self.transcript.events else self.created_at

    @property
    def finished(self) -> float | None:
        return self.transcript.events[-1].time if self.transcript.events else self.created_at


def _ground_truth(quirk_id: str | None) -> str | None:
    if not quirk_id or quirk_id == "none":
        return None
    quirk = all_quirks().get(quirk_id)
    return quirk.ground_truth if quirk else None


def _verdict(stored: dict[str, Any] | None) -> tuple[JudgeResult | None, RewardResult | None]:
    if not stored:
        return None, None
    # A store's judge result says {"judge": ..., "reward": ...}; report.json says "judge_result".
    judge = stored.get("judge_result") or stored.get("judge")
    judge = judge if isinstance(judge, dict) else None
    reward = stored.get("reward") if isinstance(stored.get("reward"), dict) else None
    return (
        JudgeResult.model_validate(judge) if judge else None,
        RewardResult.model_validate(reward) if reward else None,
    )


def from_store(store: Store, run_id: str) -> StoredAudit:
    """One run from a store, with its newest judge result. StoreError when the run is unknown."""
    row = store.get_run(run_id)
    transcript = Transcript.from_events(run_id, store.read_events(run_id))
    results = store.judge_results_for(run_id)
    verdict, reward = _verdict(results[-1]["result"] if results else None)
    organism = ((row.get("config") or {}).get("target") or {}).get("organism") or {}
    quirk = verdict.quirk_id if verdict and verdict.quirk_id else organism.get("quirk")
    return StoredAudit(
        run_id=run_id,
        status=row.get("status") or "",
        transcript=transcript,
        target=row.get("target_name") or "",
        auditor=row.get("auditor_name") or "",
        judge=row.get("judge_name") or "",
        error=row.get("error"),
        verdict=verdict,
        reward=reward,
        quirk=quirk,
        ground_truth=_ground_truth(quirk),
        created_at=row.get("created_at"),
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: missing (is this an `audit eval` output directory?)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: not readable JSON ({exc})") from None


def from_eval_dir(directory: Path, results: Any = None) -> list[StoredAudit]:
    """Every audit of an `audit eval` output directory, in its results order (`results`: its
    results.json, when the caller has already read it)."""
    results = _read_json(directory / "results.json") if results is None else results
    rows = results.get("rows") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise SpecError(f"{directory / 'results.json'}: field 'rows' is missing; not an eval's results")
    audits = []
    for row in rows:
        run_id = str(row.get("run_id", ""))
        run_dir = directory / "runs" / run_id
        if not run_id or run_dir.resolve().parent != (directory / "runs").resolve():
            raise SpecError(f"{directory / 'results.json'}: a row has a bad run_id {run_id!r}")
        if row.get("status") != "completed" and not (run_dir / "transcript.json").is_file():
            data, report = {}, {}  # a failed audit may have written nothing: exported as failed, with its error
        else:
            data, report = _read_json(run_dir / "transcript.json"), _read_json(run_dir / "report.json")
        try:
            events = [event_from_json(json.dumps(e)) for e in data.get("events", [])]
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{run_dir / 'transcript.json'}: not a transcript ({type(exc).__name__})") from None
        verdict, reward = _verdict(report)
        quirk = verdict.quirk_id if verdict and verdict.quirk_id else row.get("quirk")
        audits.append(
            StoredAudit(
                run_id=run_id,
                status=str(row.get("status") or report.get("status") or ""),
                transcript=Transcript.from_events(run_id, events),
                target=str(report.get("target") or ""),
                auditor=str(report.get("auditor") or results.get("auditor") or ""),
                judge=str(report.get("judge") or results.get("judge") or ""),
                error=row.get("error") or report.get("error"),
                verdict=verdict,
                reward=reward,
                quirk=quirk,
                ground_truth=_ground_truth(quirk),
                labels={k: row.get(k) for k in ("case_id", "split", "family", "difficulty", "repeat") if k in row},
            )
        )
    return audits


def load_audits(sources: list[str], open_store: Callable[[], Store] | None) -> tuple[list[StoredAudit], str]:
    """The audits named by `sources` (eval directories, or run ids in the store `open_store` opens)
    and a name for the set. SpecError (one line, naming the source) when a source is neither.
    """
    audits: list[StoredAudit] = []
    names = []
    store: Store | None = None
    for source in sources:
        path = Path(source)
        if path.is_dir():
            results = _read_json(path / "results.json")
            audits += from_eval_dir(path, results)
            suite = results.get("suite") if isinstance(results, dict) else None
            names.append(str(suite.get("name")) if isinstance(suite, dict) and suite.get("name") else path.name)
            continue
        if open_store is None:
            raise SpecError(f"{source!r}: not an eval directory; to export a run id, give --store")
        if store is None:
            store = open_store()
        audits.append(from_store(store, source))
        names.append("audit")
    if not audits:
        raise SpecError("nothing to export: the sources hold no audits")
    unique = list({a.run_id: a for a in audits}.values())  # a run named twice is exported once
    return unique, "+".join(dict.fromkeys(names))
