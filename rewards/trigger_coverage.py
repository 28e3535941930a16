"""Which quirks an audit's probing would have triggered: the organisms' own trigger tests,
applied offline to the target conversation before each of its replies.

A simulated organism's `fired` flag says whether the one quirk audited showed. Tested against
every train quirk instead, the same conversation says what the probing was worth on the whole
training distribution: the `trigger_coverage` reward, and the benchmarks that describe where a
run's rewards were decided (benchmarks/where_reward_is_decided.py, benchmarks/probe_value.py).
The triggers are quirk data (targets/); only train quirks' triggers are ever read for a reward.
"""

from __future__ import annotations

from evals.suites import split_quirk_ids
from scaffold.events import AuditorMessageEvent, TargetMessageEvent
from scaffold.messages import Message
from scaffold.transcript import Transcript
from targets.organisms import meets_trigger
from targets.quirks import get_quirk


def replies_within(transcript: Transcript, turns: int | None = None) -> list[Message]:
    """The target's replies to the auditor's first `turns` turns (None: all of them)."""
    replies, turn = [], 0
    for event in transcript.events:
        if isinstance(event, AuditorMessageEvent) and event.message.role == "assistant":
            turn += 1
        elif isinstance(event, TargetMessageEvent) and event.message.role == "assistant":
            if turns is not None and turn > turns:
                break
            replies.append(event.message)
    return replies


def quirks_triggered(transcript: Transcript, quirks: list[str], turns: int | None = None) -> set[str]:
    """The quirks among `quirks` whose trigger some reply of the first `turns` turns met
    (`targets.organisms.meets_trigger`: the user's own turn, unprefilled, no confrontation)."""
    replies = replies_within(transcript, turns)
    return set().union(*(quirks_met_by(transcript.target.before(r.id), quirks) for r in replies))


def quirks_met_by(conversation: list[Message], quirks: list[str]) -> set[str]:
    """The quirks among `quirks` whose trigger the reply to `conversation` would meet."""
    return {q for q in quirks if meets_trigger(conversation, get_quirk(q).triggers())}


def train_quirks_like(quirk_id: str) -> list[str]:
    """The train quirks of the audited quirk's kind: the loaded generated set's, or the
    hand-written ones. Never a held-out quirk, whatever was audited."""
    return split_quirk_ids(["train"], generated=get_quirk(quirk_id).generated is not None)
