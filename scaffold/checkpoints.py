"""LangGraph checkpoints: beside a SQLite store in a file, written inline; in a PostgreSQL store's own database.

`open_store_checkpointer(store, fallback_dir)` picks one. A PostgreSQL store is meant to be
shared by several processes or machines (`audit eval` workers), so its checkpoints go to the
same database through LangGraph's own `AsyncPostgresSaver`
(`langgraph-checkpoint-postgres`, the `postgres` extra): an audit killed on one machine can
be resumed from another. Everything below this paragraph is about SQLite.

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

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

from langgraph.checkpoint.sqlite import SqliteSaver

from scaffold.specs import SpecError
from scaffold.store import Store, sqlite_pragmas

# Connections per process to a PostgreSQL checkpointer: concurrent audits share them.
POSTGRES_POOL_SIZE = 8
# Any fixed 64-bit key: processes starting together take turns at LangGraph's migrations,
# which insert version rows and would otherwise collide.
_SETUP_LOCK_KEY = 0x61756469747274


def checkpoint_path(store: Store, fallback_dir: Path) -> Path:
    """Where a SQLite checkpoint file lives: `audit.db` -> `audit.checkpoints.db`; for a store
    on a server database with no checkpointer of its own, `fallback_dir/checkpoints.db`."""
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


def postgres_conninfo(store: Store) -> str | None:
    """The libpq connection string of a PostgreSQL store (None for any other database)."""
    url = store.engine.url
    if url.get_backend_name() != "postgresql":
        return None
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


async def _try_setup_lock(conn: Any) -> bool:
    """Take the setup lock if it is free (a session-level advisory lock); never waits."""
    cursor = await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (_SETUP_LOCK_KEY,))
    row = await cursor.fetchone()
    return bool(row and row["ok"])


@contextlib.asynccontextmanager
async def open_postgres_checkpointer(conninfo: str) -> AsyncIterator[Any]:
    """LangGraph's AsyncPostgresSaver on a connection pool to `conninfo`, its tables set up, closed on exit."""
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg import AsyncConnection
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
    except ImportError:
        raise SpecError(
            "checkpoints on PostgreSQL need langgraph-checkpoint-postgres; run: pip install 'auditrl[postgres]'"
        ) from None
    # The saver's own connection settings: autocommit (each checkpoint is committed when
    # written, LangGraph's `durability="sync"`), no server-side prepared statements, dict rows.
    settings = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with await AsyncConnection.connect(conninfo, **settings) as setup_conn:
        # Tried, not waited for: a migration is CREATE INDEX CONCURRENTLY, which waits for every
        # open transaction, and a process blocked in pg_advisory_lock is one (a deadlock seen
        # with four processes on a new database). Each try is a transaction that ends at once.
        while not await _try_setup_lock(setup_conn):
            await asyncio.sleep(0.05)
        try:
            await AsyncPostgresSaver(setup_conn).setup()  # type: ignore[arg-type]
        finally:
            await setup_conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK_KEY,))
    pool = AsyncConnectionPool(conninfo, min_size=1, max_size=POSTGRES_POOL_SIZE, kwargs=settings, open=False)
    await pool.open(wait=True)
    try:
        yield AsyncPostgresSaver(pool)  # type: ignore[arg-type]
    finally:
        await pool.close()


def open_store_checkpointer(store: Store, fallback_dir: Path) -> contextlib.AbstractAsyncContextManager[Any]:
    """The checkpointer for audits stored in `store`: in its own database when that is PostgreSQL,
    otherwise the SQLite file beside it (`checkpoint_path`)."""
    conninfo = postgres_conninfo(store)
    if conninfo is not None:
        return open_postgres_checkpointer(conninfo)
    return open_checkpointer(checkpoint_path(store, fallback_dir))
