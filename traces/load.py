"""Rollouts as trace analysis reads them, from a training run or an eval directory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scaffold.specs import SpecError
from scaffold.tool_pattern import tool_pattern


@dataclass
class TracedRollout:
    """One judged audit: where it sits in training (step, group), what it earned, and what it did."""

    run_id: str
    step: int  # training step; an eval's audits are all step 0
    quirk: str
    reward: float
    pattern: str  # the auditor's tool use, run-length coded (scaffold.tool_pattern)
    hacks: list[str] = field(default_factory=list)
    family: str | None = None  # generated quirks: the behaviour family
    seed: str = ""  # the auditor seed: GRPO's group is (step, quirk, seed)
    report: list[str] = field(default_factory=list)  # hypothesis descriptions, top first
    cited: int = 0  # message ids the top hypothesis cites
    probes: list[str] = field(default_factory=list)  # what the auditor sent the target (send_message)
    prefills: int = 0  # send_message calls that put words in the target's mouth (a prefill)
    advantage: float = 0.0  # reward minus its group's mean (`group_key`)


def _transcripts(db: Path, run_ids: list[str], required: bool) -> dict[str, Any]:
    """Each run's transcript from the SQLite store at `db` (missing runs are left out); a store that was
    asked for (`required`) and is not there is a SpecError."""
    if not db.is_file():
        if required:
            raise SpecError(f"--store {db}: no such SQLite file (give the path of the eval's store, not a URL)")
        return {}
    from scaffold.store import Store
    from scaffold.transcript import Transcript

    store = Store(f"sqlite:///{db}")
    out = {}
    for run_id in run_ids:
        events = store.read_events(run_id)
        if events:
            out[run_id] = Transcript.from_events(run_id, events)
    return out


def _with_reports(rollouts: list[TracedRollout], db: Path, required: bool) -> None:
    transcripts = _transcripts(db, [r.run_id for r in rollouts], required)
    for r in rollouts:
        t = transcripts.get(r.run_id)
        if t is None:
            continue
        if not r.pattern:
            r.pattern = tool_pattern(t)
        sends = [c for m in t.auditor_messages if m.role == "assistant"
                 for c in m.tool_calls if c.name == "send_message" and not c.parse_error]
        r.probes = [str(c.arguments["message"]) for c in sends if c.arguments.get("message")]
        # A prefill is an argument of send_message, not a tool, so the tool pattern cannot show it.
        r.prefills = sum(1 for c in sends if c.arguments.get("prefill"))
        if t.report is not None:
            r.report = [h.description for h in t.report.hypotheses]
            r.cited = len(t.report.hypotheses[0].cited_message_ids) if t.report.hypotheses else 0


def group_key(r: TracedRollout) -> tuple[int, str, str]:
    """A rollout's GRPO group: the same step, quirk and auditor seed (an eval's: the quirk)."""
    return r.step, r.quirk, r.seed


def _advantages(rollouts: list[TracedRollout]) -> None:
    groups: dict[tuple[int, str, str], list[TracedRollout]] = {}
    for r in rollouts:
        groups.setdefault(group_key(r), []).append(r)
    for members in groups.values():
        mean = sum(m.reward for m in members) / len(members)
        for m in members:
            m.advantage = m.reward - mean


def load_rollouts(path: str | Path, store: str | Path | None = None) -> list[TracedRollout]:
    """A training run's rollouts (OUT/rollouts.jsonl) or an eval's audits (DIR/results.json); SpecError otherwise.

    Reports and tool use come from the run's store: OUT/rollouts.db, DIR/audit.db, or the
    SQLite file `store` (an eval run with `--store` elsewhere).
    """
    path = Path(path)
    if (path / "rollouts.jsonl").is_file():
        rows = [json.loads(line) for line in (path / "rollouts.jsonl").read_text().splitlines() if line.strip()]
        rollouts = [
            TracedRollout(run_id=r["run_id"], step=int(r["step"]), quirk=r["quirk"], reward=float(r["reward"] or 0.0),
                          pattern=r.get("pattern") or "", hacks=list(r.get("hacks") or []), family=r.get("family"),
                          seed=str(r.get("seed") or ""))
            for r in rows if not r.get("error")
        ]
        db = path / "rollouts.db"
    elif (path / "results.json").is_file():
        results = json.loads((path / "results.json").read_text())
        rollouts = [
            TracedRollout(run_id=r["run_id"], step=0, quirk=r["quirk"], reward=float(r.get("reward") or 0.0),
                          pattern="", family=r.get("family"))
            for r in results.get("rows", []) if r.get("status") == "completed" and r.get("split") != "control"
        ]
        db = path / "audit.db"
    else:
        raise SpecError(f"{path}: neither a training run (rollouts.jsonl) nor an eval directory (results.json)")
    if not rollouts:
        raise SpecError(f"{path}: no completed rollouts to trace")
    _with_reports(rollouts, Path(store) if store is not None else db, required=store is not None)
    _advantages(rollouts)
    return rollouts
