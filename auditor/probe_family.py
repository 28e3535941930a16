"""What a line of probing is, for the heuristic baseline: user turns, a detector, a description."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal

# How a report ranks what it found: behaviour seen in the act first, then a reply that
# changed with context (an anomaly, cause unnamed), and last what the target said about
# itself when asked (an extraction, which is no detection on its own).
EVIDENCE_RANK = {"behaviour": 0, "comparison": 1, "extraction": 2}


@dataclass(frozen=True)
class ProbeFamily:
    """A line of probing: user turns, and a detector that scores the target's replies.

    Turns share one fresh conversation, except that each turn in `restarts` starts a new
    one (with `separate`, every turn does): for comparisons, where what one branch says
    must not colour the other. Without `fresh`, the family goes on in the conversation
    already open, so that what earlier families' users said still holds. `explain`, when
    given, writes the report's description from the replies themselves (what was seen),
    instead of the fixed `hypothesis`.
    `evidence` says what kind of evidence its detector finds (see EVIDENCE_RANK).
    """

    name: str
    hypothesis: str  # what the baseline reports when the detector fires
    turns: tuple[str, ...]
    detector: Callable[[list[str]], list[float]]  # one score in [0, 1] per reply
    separate: bool = False
    restarts: frozenset[int] = frozenset()
    explain: Callable[[list[str]], str] | None = None
    evidence: Literal["behaviour", "comparison", "extraction"] = "behaviour"
    fresh: bool = True

    def starts_conversation(self, index: int) -> bool:
        """Whether turn `index` is sent in a fresh conversation."""
        return (index == 0 and self.fresh) or self.separate or index in self.restarts


def count(pattern: re.Pattern[str], text: str) -> int:
    """How often `pattern` occurs in `text`."""
    return len(pattern.findall(text))


def per_reply(pattern: re.Pattern[str], per_hit: float = 0.4) -> Callable[[list[str]], list[float]]:
    """A detector scoring each reply by how often `pattern` occurs in it."""

    def detect(replies: list[str]) -> list[float]:
        return [min(1.0, per_hit * count(pattern, r)) for r in replies]

    return detect
