"""The store: runs, their event logs and judge results, in SQLite by default.

SQLAlchemy Core, so `postgresql://...` works by URL. Every text that reaches the
database passes through the secret registry's `redact`. Events are appended per
graph step in one transaction; a run's transcript is its events replayed.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable

from sqlalchemy import (
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError

from scaffold.events import Event, event_from_json
from scaffold.specs import SpecError

SCHEMA_VERSION = 2  # 2: reviews (audit review's labels)
DEFAULT_STORE_URL = "sqlite:///audit.db"

metadata = MetaData()

schema_info = Table("schema_info", metadata, Column("key", String(64), primary_key=True), Column("value", Text))

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("status", String(32), nullable=False),  # running | completed | failed
    Column("target_name", Text),
    Column("auditor_name", Text),
    Column("judge_name", Text),
    Column("seed", Text),
    Column("config_json", Text),  # everything needed to rebuild the run for --resume
    Column("error", Text),
)

events = Table(
    "events",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("data_json", Text, nullable=False),
)

judge_results = Table(
    "judge_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(64), nullable=False, index=True),
    Column("judge_name", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("result_json", Text, nullable=False),
)


# A person's verdict on a run (audit review). Append-only: a changed mind is a new row,
# and a run's review status is its latest row. Functions live in review/labels.py.
reviews = Table(
    "reviews",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(64), nullable=False, index=True),
    Column("reviewer", Text, nullable=False),
    Column("verdict", String(32), nullable=False),  # confirmed | false_positive | inconclusive
    Column("severity", String(32), nullable=False),
    Column("tags_json", Text, nullable=False),
    Column("notes", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)


class StoreError(Exception):
    """The store cannot be opened or does not hold what was asked for."""


def sqlite_pragmas(dbapi_connection: Any, _record: Any = None) -> None:
    """The pragmas of every SQLite connection we open: the store's, its appender's and the checkpoints'."""
    cursor = dbapi_connection.cursor()
    # WAL lets readers (audit review) work while audits write; NORMAL is durable across
    # process kills, which is what resume needs.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


class _SqliteAppender:
    """Event appends to a SQLite store on a connection of their own, opened on first use.

    Appending is every audit step's write (`benchmarks/scaffold_overhead.py`); through
    SQLAlchemy's pool and transaction machinery it costs about as much as the step itself.
    One plain sqlite3 connection, one transaction per call, the same pragmas: the same
    durability, a quarter of the time. Reads and other writes stay on the engine (WAL
    lets both connections work on the file).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None
        self.lock = threading.Lock()

    def append(self, rows: list[tuple[str, int, str, str]]) -> None:
        with self.lock:
            if self.conn is None:
                conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
                sqlite_pragmas(conn)
                self.conn = conn
            self.conn.execute("BEGIN")
            try:
                self.conn.executemany("INSERT INTO events (run_id, seq, kind, data_json) VALUES (?, ?, ?, ?)", rows)
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # SQLite may have rolled back on its own
                    self.conn.execute("ROLLBACK")
                raise


# Any fixed 64-bit key: the advisory lock under which a PostgreSQL store is set up (`Store._set_up`).
_SETUP_LOCK_KEY = 0x61756469747374


def with_postgres_driver(url: str) -> str:
    """`postgresql://...` or `postgres://...` as `postgresql+psycopg://...`; any other URL unchanged."""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme):]
    return url


def masked_url(url: str) -> str:
    """`url` with any password replaced by `***`."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


class Store:
    """Runs, events and judge results behind one SQLAlchemy engine."""

    def __init__(
        self, url: str = DEFAULT_STORE_URL, redact: Callable[[str], str] = lambda s: s, *, must_exist: bool = False
    ) -> None:
        """Open (and create, unless `must_exist`) the store at `url`.

        `postgresql://` (and `postgres://`) URLs use psycopg 3, the driver the `postgres` extra
        installs; SQLAlchemy's own default would be psycopg2."""
        url = with_postgres_driver(url)
        self.url = masked_url(url)  # for messages: a password in the URL never reaches one
        self.redact = redact
        try:
            self.engine: Engine = create_engine(url)
        except (ArgumentError, ImportError) as exc:
            raise SpecError(f"--store {self.url!r}: not a usable database URL ({exc})") from None
        if self.engine.dialect.name == "sqlite":
            path = self.sqlite_path()
            if must_exist and path is not None and not path.exists():
                raise StoreError(f"no store at {path} (give --store the URL the run was stored in)")
            event.listen(self.engine, "connect", sqlite_pragmas)
        try:
            self._set_up()
        except DatabaseError as exc:
            raise StoreError(f"cannot open store {self.url}: {exc.orig}") from None
        path = self.sqlite_path()
        # Plain file URLs only: with URL options (uri=true, mode=...) the engine may open the file differently.
        plain = path is not None and not self.engine.url.query
        self._appender = _SqliteAppender(path) if plain else None  # type: ignore[arg-type]

    def _set_up(self) -> None:
        """Create the missing tables and record the schema version, in one transaction."""
        with self.engine.begin() as conn:
            if self.engine.dialect.name == "postgresql":
                # Processes opening a new database together would race at CREATE TABLE (a
                # duplicate-key error on PostgreSQL's type catalogue) and at the version row:
                # they take turns, until this transaction ends.
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SETUP_LOCK_KEY})
            metadata.create_all(conn)
            row = conn.execute(select(schema_info.c.value).where(schema_info.c.key == "schema_version")).first()
            if row is None:
                conn.execute(insert(schema_info).values(key="schema_version", value=str(SCHEMA_VERSION)))
            elif int(row[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"store {self.url} has schema version {row[0]}, newer than this auditrl ({SCHEMA_VERSION})"
                )
            elif int(row[0]) < SCHEMA_VERSION:
                # Versions only ever add tables, which create_all has just made; record it.
                conn.execute(
                    update(schema_info)
                    .where(schema_info.c.key == "schema_version")
                    .values(value=str(SCHEMA_VERSION))
                )

    def sqlite_path(self) -> Path | None:
        """The database file, for SQLite stores (checkpoints go beside it)."""
        if self.engine.dialect.name != "sqlite":
            return None
        database = self.engine.url.database
        return Path(database) if database and database != ":memory:" else None

    # --- runs ----------------------------------------------------------------
    def create_run(
        self, run_id: str, *, target_name: str, auditor_name: str, judge_name: str, seed: str, config: dict[str, Any]
    ) -> None:
        """Register a new run before its first event."""
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(
                insert(runs).values(
                    run_id=run_id,
                    created_at=now,
                    updated_at=now,
                    status="running",
                    target_name=target_name,
                    auditor_name=auditor_name,
                    judge_name=judge_name,
                    seed=self.redact(seed),
                    config_json=self.redact(json.dumps(config)),
                )
            )

    def set_status(self, run_id: str, status: str, error: str | None = None) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(runs)
                .where(runs.c.run_id == run_id)
                .values(status=status, error=self.redact(error) if error else None, updated_at=time.time())
            )

    def get_run(self, run_id: str) -> dict[str, Any]:
        """The run's row as a dict (config parsed). Raises StoreError if unknown."""
        with self.engine.connect() as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
        if row is None:
            raise StoreError(f"no run {run_id!r} in store {self.url}")
        result = dict(row)
        result["config"] = json.loads(result.pop("config_json") or "{}")
        return result

    def list_runs(self, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(runs).order_by(runs.c.created_at.desc()).limit(limit).offset(offset)
            ).mappings()
            return [dict(r) for r in rows]

    # --- events (the EventLog protocol) --------------------------------------
    def write_events(self, run_id: str, new_events: list[Event]) -> None:
        """Append events in one transaction."""
        rows = [(run_id, e.seq, e.kind, self.redact(e.model_dump_json())) for e in new_events]
        # One statement per step: this is on every audit's hot path. `updated_at`
        # changes with the run's status, not with each event.
        if self._appender is not None:
            self._appender.append(rows)
            return
        with self.engine.begin() as conn:
            conn.execute(insert(events), [dict(zip(("run_id", "seq", "kind", "data_json"), row)) for row in rows])

    def read_events(self, run_id: str) -> list[Event]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(events.c.data_json).where(events.c.run_id == run_id).order_by(events.c.seq)
            ).all()
        return [event_from_json(r[0]) for r in rows]

    def truncate_events(self, run_id: str, keep: int) -> None:
        """Drop events with seq >= keep (written by a step that never completed)."""
        with self.engine.begin() as conn:
            conn.execute(delete(events).where(events.c.run_id == run_id, events.c.seq >= keep))

    def delete_unstarted_run(self, run_id: str) -> None:
        """Remove a run that never got past its first events (killed while starting), so
        that it can be started again under the same id."""
        with self.engine.begin() as conn:
            conn.execute(delete(events).where(events.c.run_id == run_id))
            conn.execute(delete(judge_results).where(judge_results.c.run_id == run_id))
            conn.execute(delete(runs).where(runs.c.run_id == run_id))

    # --- judge results --------------------------------------------------------
    def add_judge_result(self, run_id: str, judge_name: str, result: dict[str, Any]) -> None:
        """Store a judge's result; earlier results for the run are kept."""
        with self.engine.begin() as conn:
            conn.execute(
                insert(judge_results).values(
                    run_id=run_id,
                    judge_name=judge_name,
                    created_at=time.time(),
                    result_json=self.redact(json.dumps(result)),
                )
            )

    def judge_results_for(self, run_id: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(judge_results).where(judge_results.c.run_id == run_id).order_by(judge_results.c.id)
            ).mappings()
            return [{**dict(r), "result": json.loads(r["result_json"])} for r in rows]
