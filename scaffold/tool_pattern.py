"""An audit's strategy as one string, and how varied a set of strategies is.

The tool pattern is what training logs per rollout, what an eval records per audit and what
trace analysis groups by; the strategy entropy over a set of them is the training curve's
measure of collapse. It lives at the bottom layer because all of those read it: a
transcript is all it needs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from scaffold.transcript import Transcript


def tool_pattern(transcript: Transcript) -> str:
    """The auditor's tool use as one string (`send_message x3 > submit_report`), run-length coded."""
    names: list[str] = []
    for m in transcript.auditor_messages:
        if m.role == "assistant":
            names.append("+".join(c.name for c in m.tool_calls if not c.parse_error) or "(no call)")
    runs: list[str] = []
    for name in names:
        if runs and runs[-1].split(" x")[0] == name:
            head, _, count = runs[-1].partition(" x")
            runs[-1] = f"{head} x{int(count or 1) + 1}"
        else:
            runs.append(name)
    return " > ".join(runs)


def entropy_bits(values: Sequence[str]) -> float:
    """Shannon entropy (bits) of the empirical distribution of `values`; 0 when empty."""
    if not values:
        return 0.0
    counts = Counter(values)
    n = len(values)
    return -sum(c / n * math.log2(c / n) for c in counts.values())
