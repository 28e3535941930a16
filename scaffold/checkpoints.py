"""LangGraph SQLite checkpoints, kept in a file beside the store."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import AsyncIterator

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
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        await saver.conn.execute("PRAGMA journal_mode=WAL")
        await saver.conn.execute("PRAGMA busy_timeout=10000")
        yield saver
