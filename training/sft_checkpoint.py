"""Where an SFT warm start stands, on disk: OUT/sft-checkpoint holds the adapter, the
optimizer's state and the position in the shuffled data, so an interrupted run continues
with `audit train --resume OUT` and ends as the uninterrupted run would have.

On a CPU a warm start over a few hundred transcripts takes hours; without this a crash or
the end of a session lost everything since the last finished epoch.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel

from scaffold.specs import SpecError

CHECKPOINT = "sft-checkpoint"


class SftPosition(BaseModel):
    """How far the run got: `step` optimizer steps done, over rows named by `data_digest`."""

    step: int
    data_digest: str


def data_digest(rows: list[tuple[str, list[int]]]) -> str:
    """A digest of the rows a run learns from (run id and token ids), in their loaded order: a
    resumed run must see the same, also when the code that renders transcripts has changed."""
    digest = hashlib.sha256()
    for run_id, ids in rows:
        digest.update(run_id.encode() + b"\0" + ",".join(map(str, ids)).encode() + b"\n")
    return digest.hexdigest()[:16]


def save_checkpoint(out: Path, model: Any, optimizer: torch.optim.Optimizer, position: SftPosition) -> None:
    """Write the checkpoint next to the old one, then swap it in: a crash mid-write keeps the old one."""
    fresh = out / f"{CHECKPOINT}.partial"
    shutil.rmtree(fresh, ignore_errors=True)
    model.save_pretrained(str(fresh / "adapter"))
    torch.save(optimizer.state_dict(), fresh / "optimizer.pt")
    (fresh / "position.json").write_text(position.model_dump_json())
    old = out / f"{CHECKPOINT}.old"
    shutil.rmtree(old, ignore_errors=True)
    if (out / CHECKPOINT).exists():
        (out / CHECKPOINT).rename(old)
    fresh.rename(out / CHECKPOINT)
    shutil.rmtree(old, ignore_errors=True)


def latest_checkpoint(out: Path) -> Path | None:
    """The checkpoint to resume from: the current one, or the previous one if a swap was cut short."""
    for name in (CHECKPOINT, f"{CHECKPOINT}.old"):
        if (out / name / "position.json").exists():
            return out / name
    return None


def read_position(checkpoint: Path, digest: str) -> SftPosition:
    """The checkpoint's position, refused if it was taken over other data than the run now loads."""
    position = SftPosition.model_validate(json.loads((checkpoint / "position.json").read_text()))
    if position.data_digest != digest:
        raise SpecError(
            f"{checkpoint}: its run learned from other transcripts than sft.data gives now (the data "
            "directories or the way transcripts are rendered changed); start a new run with a new --out"
        )
    return position


def load_optimizer_state(checkpoint: Path, optimizer: torch.optim.Optimizer) -> None:
    """Restore the optimizer's moments and step counts."""
    optimizer.load_state_dict(torch.load(checkpoint / "optimizer.pt", weights_only=True))
