"""A test reward with variance under a random tiny policy, so GRPO has advantages to use.

Real rewards give a random 3M-parameter model nothing (it never finds a quirk), and a
group whose rewards are all equal has no gradient. This one pays for activity: turns
taken and text written, both of which vary from sample to sample.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from rewards.reward import REWARDS
from rewards.types import RewardResult

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"


def run_audit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m audit.cli ARGS` from the repository root, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "audit.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def activity_reward(judge, transcript, weights=None) -> RewardResult:  # noqa: ANN001
    turns = [m for m in transcript.auditor_messages if m.role == "assistant"]
    chars = sum(len(m.content or "") + sum(len(str(c.arguments)) for c in m.tool_calls) for m in turns)
    value = 0.5 * min(1.0, len(turns) / 3) + 0.5 * min(1.0, chars / 400)
    return RewardResult(name="activity", reward=round(value, 4), components={"turns": len(turns), "chars": chars})


@pytest.fixture
def activity() -> Iterator[str]:
    REWARDS["activity"] = activity_reward
    yield "activity"
    del REWARDS["activity"]
