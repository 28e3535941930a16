"""A small dynamic batcher: concurrent requests to one local model share its forward passes.

Transformers generation blocks, and sixty-four concurrent audits must not mean
sixty-four sequential `generate` calls (DESIGN.md, local models under concurrency).
`GenerationBatcher.submit` is awaited by many coroutines at once; the batcher

1. waits a short window (5 ms by default) after the first request so that requests
   arriving together are taken together — and every request that queued up while
   the previous batch was running is taken at once, with no wait;
2. takes the oldest request's group — requests with the same `key(request)`, i.e.
   the same sampling settings — up to `max_batch_size`, oldest first;
3. runs the blocking `run_batch(requests) -> results` on a worker thread (one
   thread: one generate at a time on the CPU, and the event loop never blocks);
4. routes each result back to its caller. If `run_batch` raises, every caller of
   that batch gets the exception: nobody hangs.
5. marks the batch in flight abandoned when its worker task is cancelled (Ctrl-C or
   SIGTERM: `asyncio.run` cancels its tasks; a long-lived loop must cancel them itself,
   `cancel_pending`). A worker thread cannot be killed, and the process waits for it at
   exit; a `run_batch` that polls `batch_abandoned()` raises `GenerationAbandoned` and
   the process exits at once (stop 49: a GRPO run sent SIGTERM printed its resume hint
   and then decoded on for more than 30 s). The mark is the batch's own, so a later
   batch never clears it.

It knows nothing about torch: `run_batch` is any callable, so it is tested without a
model. `left_pad` is the padding helper for batched causal generation.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, Sequence, TypeVar

Request = TypeVar("Request")
Result = TypeVar("Result")


@dataclass
class _Pending(Generic[Request, Result]):
    request: Request
    future: asyncio.Future[Result]
    key: Hashable


class GenerationAbandoned(RuntimeError):
    """A generation stopped early because nobody is left to read it (`batch_abandoned`)."""


_RUNNING = threading.local()  # on a worker thread: the abandon mark of the batch it runs


def batch_abandoned() -> bool:
    """Called from a `run_batch`: whether the batch it runs lost its callers (step 5)."""
    mark = getattr(_RUNNING, "abandoned", None)
    return mark is not None and mark.is_set()


def cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel every task still pending on `loop` and let them finish cancelling.

    `loop.run_until_complete` interrupted by Ctrl-C leaves its tasks pending (only
    `asyncio.run` cancels them); running the loop again to close things would let the
    interrupted audits go on. Cancelling marks a batch in flight abandoned."""
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


class GenerationBatcher(Generic[Request, Result]):
    """Collects concurrent `submit` calls into batches for a blocking `run_batch`.

    `key(request)` groups requests that may share a batch (default: all may).
    `executor` runs `run_batch`; by default a private single-thread executor. Pass
    one shared executor to several batchers to keep all of them to one generate at a
    time. A batcher serves one event loop at a time; it follows the loop it is used
    from (tests run each in a fresh loop).
    """

    def __init__(
        self,
        run_batch: Callable[[list[Request]], Sequence[Result]],
        *,
        max_batch_size: int = 16,
        window_s: float = 0.005,
        key: Callable[[Request], Hashable] = lambda request: None,
        executor: Executor | None = None,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        self.run_batch = run_batch
        self.max_batch_size = max_batch_size
        self.window_s = window_s
        self.key = key
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix="generate")
        self._pending: deque[_Pending[Request, Result]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: asyncio.Task[None] | None = None
        self._lock = threading.Lock()  # guards the switch to a new event loop
        self.batch_sizes: list[int] = []  # one entry per run_batch call, for tests and benchmarks

    async def submit(self, request: Request) -> Result:
        """Queue `request`, wait for its batch to run, and return its result."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if loop is not self._loop:
                # A new loop (the old one is gone): its futures can never be resolved.
                self._loop, self._pending, self._worker = loop, deque(), None
            future: asyncio.Future[Result] = loop.create_future()
            self._pending.append(_Pending(request, future, self.key(request)))
            if self._worker is None or self._worker.done():
                self._worker = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        # The worker lives only while there is work, so an idle batcher holds no task
        # that a closing loop would complain about.
        while self._pending:
            if len(self._pending) < self.max_batch_size:
                await asyncio.sleep(self.window_s)
            batch = self._take_batch()
            if batch:
                await self._run(batch)

    def _take_batch(self) -> list[_Pending[Request, Result]]:
        while self._pending and self._pending[0].future.done():  # cancelled while queued
            self._pending.popleft()
        if not self._pending:
            return []
        key = self._pending[0].key
        batch: list[_Pending[Request, Result]] = []
        rest: deque[_Pending[Request, Result]] = deque()
        for item in self._pending:
            if item.key == key and len(batch) < self.max_batch_size and not item.future.done():
                batch.append(item)
            elif not item.future.done():
                rest.append(item)
        self._pending = rest
        return batch

    async def _run(self, batch: list[_Pending[Request, Result]]) -> None:
        loop = asyncio.get_running_loop()
        self.batch_sizes.append(len(batch))
        abandoned = threading.Event()
        requests = [p.request for p in batch]

        def run() -> Sequence[Result]:  # on the worker thread, with this batch's mark
            _RUNNING.abandoned = abandoned
            try:
                return self.run_batch(requests)
            finally:
                _RUNNING.abandoned = None

        try:
            results = await loop.run_in_executor(self._executor, run)
            if len(results) != len(batch):
                raise RuntimeError(f"run_batch returned {len(results)} results for {len(batch)} requests")
        except BaseException as exc:
            # CancelledError included: a waiter must never be left hanging.
            error = exc if isinstance(exc, Exception) else RuntimeError(f"generation interrupted: {exc!r}")
            for p in batch:
                if not p.future.done():
                    p.future.set_exception(error)
            if not isinstance(exc, Exception):
                abandoned.set()  # cancelled: tell the worker thread to stop decoding
                raise
            return
        for p, result in zip(batch, results, strict=True):
            if not p.future.done():  # the caller may have been cancelled meanwhile
                p.future.set_result(result)


def left_pad(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[list[list[int]], list[list[int]]]:
    """Left-pad token sequences to one length: (ids, attention mask).

    Causal generation appends at the right, so every row's last real token must sit
    in the last column; the mask (0 on padding) keeps padding out of attention.
    """
    width = max((len(s) for s in sequences), default=0)
    ids = [[pad_id] * (width - len(s)) + list(s) for s in sequences]
    mask = [[0] * (width - len(s)) + [1] * len(s) for s in sequences]
    return ids, mask
