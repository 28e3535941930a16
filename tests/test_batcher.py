"""The dynamic batcher, without torch: a run_batch that records what it was given."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from scaffold.providers.batcher import GenerationAbandoned, GenerationBatcher, batch_abandoned, cancel_pending, left_pad


class Recorder:
    """A blocking run_batch that doubles its inputs and records each batch."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.batches: list[list[int]] = []
        self.delay_s = delay_s
        self.running = 0
        self.most_running = 0
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, requests: list[int]) -> list[int]:
        with self._lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay_s)
        self.batches.append(list(requests))
        with self._lock:
            self.running -= 1
        return [2 * r for r in requests]


async def test_concurrent_submits_are_batched_and_routed_back() -> None:
    run = Recorder()
    batcher = GenerationBatcher(run, max_batch_size=16)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(16)))
    assert results == [2 * i for i in range(16)]
    assert len(run.batches) == 1 and sorted(run.batches[0]) == list(range(16))
    assert threading.current_thread().name not in run.threads  # ran off the event loop


async def test_max_batch_size_is_respected() -> None:
    run = Recorder()
    batcher = GenerationBatcher(run, max_batch_size=8)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(20)))
    assert results == [2 * i for i in range(20)]
    assert [len(b) for b in run.batches] == [8, 8, 4] and batcher.batch_sizes == [8, 8, 4]


async def test_requests_are_grouped_by_key_and_run_one_at_a_time() -> None:
    run = Recorder(delay_s=0.02)
    batcher = GenerationBatcher(run, key=lambda r: r % 3)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(12)))
    assert results == [2 * i for i in range(12)]
    assert sorted(len(b) for b in run.batches) == [4, 4, 4]
    assert all(len({r % 3 for r in b}) == 1 for b in run.batches)
    assert run.most_running == 1


async def test_requests_that_queue_during_a_batch_form_the_next_one() -> None:
    run = Recorder(delay_s=0.2)
    batcher = GenerationBatcher(run)
    first = asyncio.ensure_future(batcher.submit(0))
    await asyncio.sleep(0.05)  # the first batch is running now
    rest = await asyncio.gather(*(batcher.submit(i) for i in range(1, 6)))
    assert await first == 0 and rest == [2, 4, 6, 8, 10]
    assert [len(b) for b in run.batches] == [1, 5]


async def test_an_exception_reaches_every_waiter_of_its_batch() -> None:
    def boom(requests: list[int]) -> list[int]:
        raise ValueError(f"cannot run {len(requests)}")

    batcher = GenerationBatcher(boom)
    results = await asyncio.wait_for(asyncio.gather(*(batcher.submit(i) for i in range(5)), return_exceptions=True), 5)
    assert all(isinstance(r, ValueError) and "cannot run 5" in str(r) for r in results)
    batcher.run_batch = Recorder()  # the batcher survives and serves the next requests
    assert await asyncio.wait_for(batcher.submit(3), 5) == 6


async def test_a_wrong_number_of_results_is_an_error_for_all() -> None:
    batcher = GenerationBatcher(lambda requests: requests[:1])
    results = await asyncio.wait_for(asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True), 5)
    assert all(isinstance(r, RuntimeError) for r in results)


async def test_the_event_loop_keeps_running_during_a_batch() -> None:
    batcher = GenerationBatcher(Recorder(delay_s=0.3))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    assert await batcher.submit(1) == 2
    task.cancel()
    assert ticks >= 10


async def test_a_cancelled_waiter_does_not_disturb_the_others() -> None:
    run = Recorder(delay_s=0.1)
    batcher = GenerationBatcher(run)
    doomed = asyncio.ensure_future(batcher.submit(1))
    kept = asyncio.ensure_future(batcher.submit(2))
    await asyncio.sleep(0.02)
    doomed.cancel()
    assert await kept == 4
    with pytest.raises(asyncio.CancelledError):
        await doomed


def test_the_batcher_follows_a_new_event_loop() -> None:
    batcher = GenerationBatcher(Recorder())
    assert asyncio.run(batcher.submit(1)) == 2
    assert asyncio.run(batcher.submit(2)) == 4


class Abandonable:
    """A run_batch that polls its request's count of 10 ms steps, unless its batch is abandoned."""

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def __call__(self, requests: list[int]) -> list[int]:
        for _ in range(requests[0]):
            if batch_abandoned():
                self.stopped.set()
                raise GenerationAbandoned("its callers are gone")
            time.sleep(0.01)
        return requests


async def _interrupted(batcher: GenerationBatcher[int, int]) -> None:
    asyncio.ensure_future(batcher.submit(1000))  # ten seconds unless told to stop
    await asyncio.sleep(0.1)
    raise KeyboardInterrupt


def test_a_batch_that_loses_its_event_loop_is_told_to_stop() -> None:
    """Ctrl-C or SIGTERM ends the loop and cancels its tasks; the worker thread cannot be
    killed, so the batch is marked abandoned and a run_batch that polls the mark stops
    early instead of keeping the process alive until its generation ends."""
    run = Abandonable()
    batcher = GenerationBatcher(run)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(_interrupted(batcher))
    assert run.stopped.wait(2.0)
    assert asyncio.run(batcher.submit(3)) == 3  # the next batch is not abandoned
    assert not batch_abandoned()  # outside a batch: never


def test_a_long_lived_loop_abandons_its_batch_once_its_tasks_are_cancelled() -> None:
    """GRPO drives one loop with run_until_complete, which an interrupt leaves with its tasks
    pending: the batch runs on until `cancel_pending` (the session's close) cancels them."""
    run = Abandonable()
    batcher = GenerationBatcher(run)
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(_interrupted(batcher))
        assert not run.stopped.wait(0.2)  # nothing was cancelled: it decodes on
        cancel_pending(loop)
        assert run.stopped.wait(2.0)
        assert loop.run_until_complete(batcher.submit(2)) == 2
    finally:
        loop.close()


def test_left_pad() -> None:
    ids, mask = left_pad([[5, 6, 7], [8], []], pad_id=0)
    assert ids == [[5, 6, 7], [0, 0, 8], [0, 0, 0]]
    assert mask == [[1, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert left_pad([], pad_id=0) == ([], [])


def test_invalid_batch_size() -> None:
    with pytest.raises(ValueError):
        GenerationBatcher(Recorder(), max_batch_size=0)
