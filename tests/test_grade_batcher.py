"""Grading a rollout group together: the same verdicts as one at a time, in fewer MiniLM passes.

The batcher's scheduling is tested with a plain recording grader; the equality of batched
and one-at-a-time grading with the real MiniLM grader on the calibration set's cases.
"""

from __future__ import annotations

import asyncio

import pytest

from rewards.calibration import case_transcript, load_cases
from rewards.grade_batcher import GradeBatcher
from rewards.judges import OfflineJudge
from rewards.types import JudgeResult
from scaffold.specs import SpecError
from scaffold.transcript import Transcript
from targets.quirks import get_quirk


class RecordingGrader:
    """A grader whose verdict names the transcript; fails for run ids in `broken`."""

    def __init__(self, broken: frozenset[str] = frozenset()) -> None:
        self.calls: list[list[str]] = []
        self.broken = broken

    def grade_many(self, items):  # type: ignore[no-untyped-def]
        ids = [t.run_id for t, _ in items]
        self.calls.append(ids)
        if self.broken & set(ids):
            raise ValueError(f"cannot grade {sorted(self.broken & set(ids))}")
        return [JudgeResult(judge="recording", error=t.run_id) for t, _ in items]


def test_concurrent_requests_share_one_call_and_each_gets_its_own_verdict() -> None:
    grader = RecordingGrader()
    batcher = GradeBatcher(grader.grade_many)

    async def group() -> list[JudgeResult]:
        return await asyncio.gather(*(batcher.grade(Transcript(f"r{i}"), None) for i in range(8)))

    results = asyncio.run(group())
    assert [r.error for r in results] == [f"r{i}" for i in range(8)]
    assert grader.calls == [[f"r{i}" for i in range(8)]]
    assert batcher.batch_sizes == [8]


def test_requests_apart_in_time_are_graded_apart_and_max_batch_holds() -> None:
    grader = RecordingGrader()
    batcher = GradeBatcher(grader.grade_many, window_s=0.0, max_batch=3)

    async def apart_then_together() -> None:
        await batcher.grade(Transcript("a"), None)
        await batcher.grade(Transcript("b"), None)
        await asyncio.gather(*(batcher.grade(Transcript(f"c{i}"), None) for i in range(7)))

    asyncio.run(apart_then_together())
    assert grader.calls[:2] == [["a"], ["b"]]
    assert [len(call) for call in grader.calls[2:]] == [3, 3, 1]


def test_a_failing_transcript_fails_only_its_own_caller() -> None:
    grader = RecordingGrader(broken=frozenset({"bad"}))
    batcher = GradeBatcher(grader.grade_many)

    async def group() -> list[object]:
        names = ["ok1", "bad", "ok2"]
        return await asyncio.gather(*(batcher.grade(Transcript(n), None) for n in names), return_exceptions=True)

    ok1, bad, ok2 = asyncio.run(group())
    assert isinstance(ok1, JudgeResult) and ok1.error == "ok1"
    assert isinstance(ok2, JudgeResult) and ok2.error == "ok2"
    assert isinstance(bad, ValueError) and "bad" in str(bad)
    assert grader.calls[0] == ["ok1", "bad", "ok2"]  # the batch, then each alone
    assert sorted(map(tuple, grader.calls[1:])) == [("bad",), ("ok1",), ("ok2",)]


def test_an_exception_a_future_cannot_hold_reaches_its_caller_as_an_error() -> None:
    def stops(items):  # type: ignore[no-untyped-def]
        raise StopIteration("ran out")

    async def one() -> JudgeResult:
        return await GradeBatcher(stops).grade(Transcript("x"), None)

    with pytest.raises(RuntimeError, match="StopIteration"):
        asyncio.run(one())


def test_a_cancelled_caller_leaves_the_others_graded() -> None:
    grader = RecordingGrader()
    batcher = GradeBatcher(grader.grade_many, window_s=0.05)

    async def cancel_one() -> list[JudgeResult]:
        keep = [asyncio.create_task(batcher.grade(Transcript(f"k{i}"), None)) for i in range(2)]
        gone = asyncio.create_task(batcher.grade(Transcript("gone"), None))
        await asyncio.sleep(0.01)
        gone.cancel()
        return await asyncio.gather(*keep)

    results = asyncio.run(cancel_one())
    assert [r.error for r in results] == ["k0", "k1"]
    assert grader.calls == [["k0", "k1"]]


def test_one_batcher_serves_successive_event_loops() -> None:
    grader = RecordingGrader()
    batcher = GradeBatcher(grader.grade_many)
    assert asyncio.run(batcher.grade(Transcript("first"), None)).error == "first"
    assert asyncio.run(batcher.grade(Transcript("second"), None)).error == "second"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        GradeBatcher(RecordingGrader().grade_many, max_batch=0)


def test_the_lexical_judge_grades_inline() -> None:
    from rewards.quirk_grader import OfflineQuirkGrader

    assert OfflineJudge(OfflineQuirkGrader(), "lexical").batcher is None


# --- the real MiniLM grader ------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedding_grader():  # type: ignore[no-untyped-def]
    pytest.importorskip("sentence_transformers", reason="the offline judge needs sentence-transformers")
    from rewards.embedding_grader import EmbeddingQuirkGrader
    from scaffold.minilm import packaged_model_path

    try:
        packaged_model_path()
    except SpecError as exc:  # pragma: no cover - depends on the environment
        pytest.skip(str(exc))
    return EmbeddingQuirkGrader()


def test_grading_together_gives_the_verdicts_of_grading_alone(embedding_grader) -> None:  # type: ignore[no-untyped-def]
    # Every case of the calibration set, including controls, and a transcript with no ground truth.
    items = [(case_transcript(c), get_quirk(c.quirk)) for c in load_cases()]
    items.append((items[0][0], None))
    alone = [embedding_grader.grade(t, q) for t, q in items]
    together = []
    for start in range(0, len(items), 8):
        together += embedding_grader.grade_many(items[start : start + 8])
    assert any(r.identified for r in alone) and any(r.false_positive for r in alone)  # the set has both kinds
    for a, b in zip(alone, together, strict=True):
        assert (a.identified, a.grounded, a.false_positive, a.error) == (b.identified, b.grounded, b.false_positive, b.error)
        assert [h.matches_quirk for h in a.hypotheses] == [h.matches_quirk for h in b.hypotheses]
        assert a.scores.keys() == b.scores.keys()
        for key, value in a.scores.items():
            assert b.scores[key] == pytest.approx(value, abs=2e-4), key  # float noise of the batch's padding


def test_the_offline_judge_grades_a_group_in_one_call(embedding_grader) -> None:  # type: ignore[no-untyped-def]
    cases = [c for c in load_cases() if c.quirk == "flattery"][:8]
    items = [(case_transcript(c), get_quirk(c.quirk)) for c in cases]
    judge = OfflineJudge(embedding_grader, "offline")

    async def group() -> list[JudgeResult]:
        return await asyncio.gather(*(judge.evaluate(t, q) for t, q in items))

    results = asyncio.run(group())
    assert judge.batcher is not None and judge.batcher.batch_sizes == [len(items)]
    assert len(items) >= 4
    for result, (t, q) in zip(results, items):
        assert result.judge == "offline"
        assert result.identified == embedding_grader.grade(t, q).identified
