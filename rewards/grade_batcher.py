"""Grade concurrent requests together, off the event loop.

The offline grader's cost is two MiniLM passes per call, and a pass costs about as much
for one sentence as for a dozen: the 88 MB of weights are streamed either way
(`benchmarks/reward_speed.py`). A GRPO step finishes its G rollouts at about the same
time, and an eval finishes audits side by side, so the judge collects the requests that
arrive within `window_s` of each other and grades them in one `grade_many` call. That
call runs in a worker thread, so the event loop keeps playing other audits meanwhile
(before, a grade blocked the loop).

A batch that fails is graded again one request at a time, so one bad transcript fails
only its own audit.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Callable, Sequence

from rewards.types import JudgeResult
from scaffold.transcript import Transcript
from targets.quirks import Quirk

GradeItem = tuple[Transcript, "Quirk | None"]
GradeMany = Callable[[Sequence[GradeItem]], list[JudgeResult]]


@dataclass
class _Queue:
    """One event loop's waiting requests and the task that drains them."""

    pending: list[tuple[Transcript, Quirk | None, asyncio.Future[JudgeResult]]] = field(default_factory=list)
    drain: asyncio.Task[None] | None = None


class GradeBatcher:
    """`await batcher.grade(transcript, quirk)`: graded with whatever else arrives within `window_s`."""

    def __init__(self, grade_many: GradeMany, window_s: float = 0.005, max_batch: int = 64) -> None:
        if window_s < 0 or max_batch < 1:
            raise ValueError(f"window_s must be >= 0 and max_batch >= 1, got {window_s} and {max_batch}")
        self.grade_many, self.window_s, self.max_batch = grade_many, window_s, max_batch
        # Per event loop: a judge outlives one asyncio.run (calibration and tests reuse judges).
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = weakref.WeakKeyDictionary()
        self.batch_sizes: list[int] = []  # how many requests each call graded, for benchmarks and tests

    async def grade(self, transcript: Transcript, quirk: Quirk | None) -> JudgeResult:
        """The grader's verdict on one transcript, graded in a batch with its concurrent neighbours."""
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, _Queue())
        future: asyncio.Future[JudgeResult] = loop.create_future()
        queue.pending.append((transcript, quirk, future))
        if queue.drain is None:
            queue.drain = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _Queue) -> None:
        batch: list[tuple[Transcript, Quirk | None, asyncio.Future[JudgeResult]]] = []
        try:
            await asyncio.sleep(self.window_s)  # let the rollouts finishing with this one join its batch
            while queue.pending:
                batch = [entry for entry in queue.pending[: self.max_batch] if not entry[2].done()]
                del queue.pending[: self.max_batch]
                if not batch:
                    continue
                self.batch_sizes.append(len(batch))
                outcomes = await asyncio.to_thread(self._grade_all, [(t, q) for t, q, _ in batch])
                for (_, _, future), outcome in zip(batch, outcomes):
                    if future.done():  # its caller was cancelled meanwhile
                        continue
                    if isinstance(outcome, BaseException):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            # Cancelled (the loop is shutting down): nobody is left to grade what still waits. An error,
            # not a cancellation, so that a caller that was not itself cancelled sees why.
            for _, _, future in batch + queue.pending:
                if not future.done():
                    future.set_exception(RuntimeError("grading stopped: the event loop is shutting down"))
            queue.pending.clear()
            queue.drain = None

    def _grade_all(self, items: list[GradeItem]) -> list[JudgeResult | Exception]:
        """The batch's verdicts; when the batch call fails, each item alone, so a failure stays its own."""
        try:
            results = self.grade_many(items)
        except Exception as exc:  # noqa: BLE001 - retried one by one, each error reaching its own caller
            return [_settable(exc)] if len(items) == 1 else [self._grade_one(item) for item in items]
        if len(results) != len(items):
            error = RuntimeError(f"grade_many returned {len(results)} verdicts for {len(items)} transcripts")
            return [error] * len(items)
        return list(results)

    def _grade_one(self, item: GradeItem) -> JudgeResult | Exception:
        try:
            return self.grade_many([item])[0]
        except Exception as exc:  # noqa: BLE001 - handed to the one caller it belongs to
            return _settable(exc)


def _settable(exc: Exception) -> Exception:
    """`exc`, or a RuntimeError in its place where a future cannot hold it (StopIteration)."""
    if isinstance(exc, StopIteration):
        return RuntimeError(f"grading failed: {type(exc).__name__} {exc}")
    return exc
