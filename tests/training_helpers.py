"""A test reward with variance under a random tiny policy, so GRPO has advantages to use.

Real rewards give a random 3M-parameter model nothing (it never finds a quirk), and a
group whose rewards are all equal has no gradient. This one pays for activity: turns
taken and text written, both of which vary from sample to sample.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from rewards.reward import REWARDS
from rewards.types import RewardResult


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
