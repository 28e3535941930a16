"""`audit import petri`: Petri transcript files into a store, judged by Petri's verdict and optionally ours.

An import is idempotent: a transcript already imported in full is skipped, and one whose
import was cut short (the run exists, unfinished) is written again from the start, so a
crash loses nothing and duplicates nothing. Each imported run's config says where it
came from (`imported_from: petri`, the file, Petri's transcript id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interop.petri_format import PetriTranscript, read_petri
from interop.petri_import import PETRI_JUDGE, Imported, to_transcript
from rewards.judges import Judge
from rewards.reward import REWARDS
from rewards.types import JudgeResult
from scaffold.specs import SpecError
from scaffold.store import Store, StoreError
from scaffold.tool_pattern import tool_pattern
from targets.quirks import Quirk

IMPORTED_FROM = "petri"


@dataclass
class ImportOutcome:
    """What happened to one file."""

    path: Path
    run_id: str
    status: str  # "imported" or "already imported"
    notes: list[str] = field(default_factory=list)
    verdict: JudgeResult | None = None  # ours, when --judge was given
    reward: float | None = None
    pattern: str = ""
    seed: str = ""


def petri_files(sources: list[Path]) -> list[Path]:
    """The transcript files named by `sources`: files as given, directories' *.json (sorted). SpecError if none."""
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            found = sorted(p for p in source.glob("*.json") if p.is_file())
            if not found:
                raise SpecError(f"{source}: a directory with no .json transcript in it")
            files += found
        elif source.is_file():
            files.append(source)
        elif source.exists():
            raise SpecError(f"{source}: not a regular file")
        else:
            raise SpecError(f"{source}: no such file or directory")
    return files


def _existing(store: Store, run_id: str) -> dict[str, Any] | None:
    try:
        return store.get_run(run_id)
    except StoreError:
        return None


@dataclass
class Prepared:
    """A file read, checked and converted in full: nothing is written before every file is."""

    path: Path
    petri: PetriTranscript
    imported: Imported


def prepare(path: Path) -> Prepared:
    """Read and convert one file; SpecError (file, field) when it is not a well-formed Petri v3 transcript."""
    petri = read_petri(path)
    return Prepared(path, petri, to_transcript(petri))


async def import_file(
    prepared: Prepared, store: Store, *, judge: Judge | None = None, quirk: Quirk | None = None,
    reward: str = "grounded",
) -> ImportOutcome:
    """Import one prepared file into `store`, judged by Petri's verdict and, with `judge`, by ours."""
    path, petri, imported = prepared.path, prepared.petri, prepared.imported
    run_id, transcript = imported.run_id, imported.transcript
    outcome = ImportOutcome(path, run_id, "imported", imported.notes, pattern=tool_pattern(transcript),
                            seed=petri.seed)
    row = _existing(store, run_id)
    if row is not None and row.get("status") == "completed":
        outcome.status = "already imported"
    else:
        _write(store, path, petri, imported, judge_name=judge.name if judge else PETRI_JUDGE,
               quirk=quirk, fresh=row is None)
    if judge is not None:  # judged again on a second import, as `audit judge` would: verdicts accumulate
        result = await judge.evaluate(transcript, quirk)
        paid = REWARDS[reward](result, transcript, None)
        store.add_judge_result(run_id, judge.name, {"judge": result.model_dump(), "reward": paid.model_dump()})
        outcome.verdict, outcome.reward = result, paid.reward
    return outcome


def _write(
    store: Store, path: Path, petri: PetriTranscript, imported: Imported, *, judge_name: str, quirk: Quirk | None,
    fresh: bool,
) -> None:
    """The run, its events and Petri's verdict; the run is marked completed last, so a cut-short import shows."""
    run_id = imported.run_id
    if fresh:
        config = {
            "imported_from": IMPORTED_FROM,
            "file": str(path),
            "transcript_id": petri.transcript_id,
            "version": petri.metadata.get("version"),
            "quirk": quirk.id if quirk else None,
        }
        store.create_run(
            run_id,
            target_name=str(petri.metadata.get("target_model") or "target"),
            auditor_name=str(petri.metadata.get("auditor_model") or "auditor"),
            judge_name=judge_name,
            seed=petri.seed,
            config=config,
        )
    else:
        store.truncate_events(run_id, 0)  # an import cut short: write it again, whole
    store.write_events(run_id, imported.transcript.events)
    if imported.verdict is not None:
        store.add_judge_result(run_id, PETRI_JUDGE, {"judge": imported.verdict.model_dump(), "reward": None})
    store.set_status(run_id, "completed")


def write_traces_index(outcomes: list[ImportOutcome], out: Path, quirk: Quirk | None) -> Path:
    """`out/rollouts.jsonl`, one row per imported audit, so that `audit traces out --store FILE` reads them."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "rollouts.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for o in outcomes:
            row = {"run_id": o.run_id, "step": 0, "quirk": quirk.id if quirk else "unknown",
                   "reward": o.reward if o.reward is not None else 0.0, "pattern": o.pattern, "seed": o.seed,
                   "source": str(o.path)}
            handle.write(json.dumps(row) + "\n")
    return path
