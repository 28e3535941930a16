"""What a rollout did, as a set of named behaviours, from what is stored.

* `tool:<name>`: the auditor called this tool (rollback, prefill, synthetic tools,
  `sample_user_turn` and `think` included) at least once;
* `use:prefill`: a send_message call carried a prefill (an argument, so no tool name shows it);
* `seq:<a>><b>`: one turn called `a`, and the next turn began with `b`;
* `hack:<name>`: the reward's hack detectors flagged it (narration, shotgun lists, ...);
* `report:none`, `report:many` (three or more hypotheses), `report:long` (a top
  hypothesis of 40 words or more), `cites:none` (a top hypothesis citing nothing);
* `template:<words>`: its top hypothesis is a near duplicate (same first words once
  digits and quotes are masked) of those of many other rollouts;
* `pattern:<tools>`: its whole tool pattern, for collapse (one pattern taking over).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from traces.load import TracedRollout

TEMPLATE_WORDS = 8  # a template is keyed by this many leading words
TEMPLATE_SHARE = 0.03  # ... and shared by at least this share of the rollouts (and 3 of them)
LONG_WORDS = 40
_MASK = re.compile(r"\"[^\"]*\"|'[^']*'|\d+")


def _turn_tools(pattern: str) -> list[list[str]]:
    """Per turn (expanding `xN` runs), the tools it called."""
    turns: list[list[str]] = []
    for run in (p.strip() for p in pattern.split(" > ") if p.strip()):
        head, _, count = run.partition(" x")
        calls = [c for c in head.split("+") if c and c != "(no call)"]
        turns += [calls] * (int(count) if count.isdigit() else 1)
    return turns


def template_key(text: str) -> str:
    """A top hypothesis's template: its first words, lower case, quotes and digits masked."""
    words = _MASK.sub("#", text.lower()).split()
    return " ".join(words[:TEMPLATE_WORDS])


def shared_templates(rollouts: Sequence[TracedRollout]) -> set[str]:
    """The template keys that many rollouts' top hypotheses share."""
    counts = Counter(template_key(r.report[0]) for r in rollouts if r.report)
    least = max(3, int(TEMPLATE_SHARE * len(rollouts)))
    return {key for key, n in counts.items() if n >= least and key}


def behaviours(rollout: TracedRollout, templates: set[str]) -> set[str]:
    """The named behaviours of one rollout (see the module docstring)."""
    out: set[str] = set()
    turns = _turn_tools(rollout.pattern)
    for calls in turns:
        out |= {f"tool:{c}" for c in calls}
    for before, after in zip(turns, turns[1:]):
        if before and after:
            out.add(f"seq:{before[-1]}>{after[0]}")
    if rollout.prefills:
        out.add("use:prefill")
    out |= {f"hack:{h}" for h in rollout.hacks}
    if not rollout.report:
        out.add("report:none")
    else:
        if len(rollout.report) >= 3:
            out.add("report:many")
        if len(rollout.report[0].split()) >= LONG_WORDS:
            out.add("report:long")
        if rollout.cited == 0:
            out.add("cites:none")
        key = template_key(rollout.report[0])
        if key in templates:
            out.add(f"template:{key}")
    if rollout.pattern:
        out.add(f"pattern:{rollout.pattern}")
    return out
