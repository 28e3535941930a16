"""LangGraph SQLite checkpoints, kept in a file beside the store."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, AsyncIterator

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from scaffold.store import Store


def checkpoint_path(store: Store, fallback_dir: Path) -> Path:
    """Where a store's checkpoints live: `audit.db` -> `audit.checkpoints.db`; for
    server databases (PostgreSQL), `fallback_dir/checkpoints.db`."""
    db = store.sqlite_path()
    if db is None:
        return fallback_dir / "checkpoints.db"
    return db.with_name(db.stem + ".checkpoints.db")


@contextlib.asynccontextmanager
async def open_checkpointer(path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """An AsyncSqliteSaver on `path`, closed on exit.

    WAL and a busy timeout, because several processes (`audit run`, an eval) may share
    one checkpoint file; within a process, share one saver across concurrent audits.
    `synchronous=NORMAL`, as the event store has it: in WAL mode a committed checkpoint
    survives a killed process (the kill tests), and only an OS crash or power loss can
    take back the last commits, which then go back in the event store too (resume
    truncates events to the checkpoint). It saves an fsync per graph step.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        await configure_connection(saver.conn)
        yield saver


async def configure_connection(conn: Any) -> None:
    """The pragmas every checkpoint connection gets (see `open_checkpointer`)."""
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=NORMAL")
    await conn.execute("PRAGMA busy_timeout=10000")
