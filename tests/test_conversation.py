"""The target conversation tree, rollback and the transcript's views."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaffold.conversation import RollbackError, TargetConversation
from scaffold.events import RollbackEvent, TargetMessageEvent
from scaffold.messages import Message
from scaffold.transcript import Transcript


def _msg(t: Transcript, role: str, text: str) -> None:
    t.append(TargetMessageEvent(message=Message(id=t.new_id("t"), role=role, content=text)))


def test_rollback_branches_and_target_sees_only_current_branch() -> None:
    t = Transcript("r")
    _msg(t, "system", "sys")
    _msg(t, "user", "u1")
    _msg(t, "assistant", "a1")
    _msg(t, "user", "u2")
    _msg(t, "assistant", "a2")
    t.append(RollbackEvent(to_message_id="t3"))
    _msg(t, "user", "u2-alt")
    _msg(t, "assistant", "a2-alt")
    assert [m.content for m in t.target_view()] == ["sys", "u1", "a1", "u2-alt", "a2-alt"]
    assert t.target.branches() == [["t1", "t2", "t3", "t4", "t5"], ["t1", "t2", "t3", "t6", "t7"]]
    assert t.target_message("t5").content == "a2"  # the old branch is kept
    assert t.target_message("t6").parent_id == "t3"
    # What each reply had been shown: its own branch, the abandoned one included.
    assert [m.content for m in t.target.before("t5")] == ["sys", "u1", "a1", "u2"]
    assert [m.content for m in t.target.before("t7")] == ["sys", "u1", "a1", "u2-alt"]
    assert t.target.before("t1") == []


def test_rollback_to_unknown_or_abandoned_message_fails() -> None:
    conv = TargetConversation()
    for i, role in enumerate(["system", "user", "assistant"]):
        conv.append(Message(id=f"t{i}", role=role, content=str(i)))
    conv.rollback_to("t1")
    conv.append(Message(id="t9", role="assistant", content="x"))
    with pytest.raises(RollbackError):
        conv.rollback_to("t2")  # on the abandoned branch
    with pytest.raises(RollbackError):
        conv.rollback_to("nope")


def test_new_system_message_starts_a_new_root() -> None:
    t = Transcript("r")
    _msg(t, "system", "one")
    _msg(t, "user", "hi")
    _msg(t, "system", "two")
    assert [m.content for m in t.target_view()] == ["two"]
    assert len(t.target.branches()) == 2


def test_replay_rebuilds_identical_views() -> None:
    t = Transcript("r")
    _msg(t, "system", "s")
    for i in range(5):
        _msg(t, "user", f"u{i}")
        _msg(t, "assistant", f"a{i}")
    t.append(RollbackEvent(to_message_id="t4"))
    _msg(t, "user", "again")
    replayed = Transcript.from_events("r", t.events)
    assert [m.model_dump() for m in replayed.target_view()] == [m.model_dump() for m in t.target_view()]
    assert replayed.target.branches() == t.target.branches()
    assert replayed.new_id("t") == t.new_id("t")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.just("say"), st.integers(min_value=0, max_value=30)), min_size=1, max_size=60))
def test_views_match_a_naive_model(ops: list) -> None:
    """Against a naive list model: the view is the kept prefix plus what came after."""
    t = Transcript("r")
    _msg(t, "system", "s")
    naive = ["s"]
    for n, op in enumerate(ops):
        if op == "say":
            _msg(t, "user", f"m{n}")
            naive.append(f"m{n}")
        else:
            keep = min(op, len(naive) - 1)
            target_id = t.target_view()[keep].id
            t.append(RollbackEvent(to_message_id=target_id))
            naive = naive[: keep + 1]
        assert [m.content for m in t.target_view()] == naive
    # every branch is a root-to-leaf path through real parent links
    for branch in t.target.branches():
        for parent, child in zip(branch, branch[1:]):
            assert t.target_message(child).parent_id == parent
    assert sum(1 for e in t.events if e.kind == "target_message") == len(t.target.nodes)
