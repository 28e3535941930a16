"""LangGraph SQLite checkpoints, kept in a file beside the store, written inline.

An audit's graph state is an O(1) cursor, so a checkpoint write is a few small rows.
LangGraph's AsyncSqliteSaver sends each statement to an aiosqlite thread and back; at
three checkpointed steps per turn those hops cost more than the writes themselves
(`benchmarks/scaffold_overhead.py`, 300 turns with the event store: 5.4 ms wall per turn
with AsyncSqliteSaver, 2.1 ms inline). `InlineSqliteSaver` is LangGraph's own SqliteSaver with its async methods
answered on the event loop's thread: the same tables, the same commits, the same
`durability="sync"` contract (each step's checkpoint is committed before the next step
writes events), minus the thread hops. A write blocks the loop for tens of microseconds.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

from langgraph.checkpoint.sqlite import SqliteSaver

from scaffold.store import Store, sqlite_pragmas


def checkpoint_path(store: Store, fallback_dir: Path) -> Path:
    """Where a store's checkpoints live: `audit.db` -> `audit.checkpoints.db`; for
    server databases (PostgreSQL), `fallback_dir/checkpoints.db`."""
    db = store.sqlite_path()
    if db is None:
        return fallback_dir / "checkpoints.db"
    return db.with_name(db.stem + ".checkpoints.db")


class InlineSqliteSaver(SqliteSaver):
    """SqliteSaver whose async methods run its sync ones on the caller's thread (see the module docstring)."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def aget(self, config: Any) -> Any:
        return self.get(config)

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def alist(self, config: Any, *, filter: Any = None, before: Any = None, limit: int | None = None) -> Any:
        # Materialised first: SqliteSaver.list holds its (non-reentrant) lock between items,
        # and a caller that stops early and then reads again would wait on it forever.
        for item in list(self.list(config, filter=filter, before=before, limit=limit)):
            yield item

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)


@contextlib.contextmanager
def inline_saver(path: Path) -> Iterator[InlineSqliteSaver]:
    """An InlineSqliteSaver on the SQLite file `path` (made if missing), configured and closed on exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # One connection, used only from the event loop's thread; check_same_thread=False
    # because SqliteSaver guards it with its own lock.
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        # The store's pragmas: WAL and a busy timeout, because several processes (`audit
        # run`, an eval) may share one checkpoint file; synchronous=NORMAL, under which a
        # committed checkpoint survives a killed process (the kill tests) and only an OS
        # crash can take back the last commits. It saves an fsync per step.
        sqlite_pragmas(conn)
        saver = InlineSqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()


@contextlib.asynccontextmanager
async def open_checkpointer(path: Path) -> AsyncIterator[InlineSqliteSaver]:
    """The checkpointer of `audit run`, evals and training rollouts on `path`, closed on exit.

    Within a process, share one saver across concurrent audits.
    """
    with inline_saver(path) as saver:
        yield saver
