"""The database: one SQLAlchemy engine per service, sessions, and Alembic migrations.

SQLite (embedded, the default) and PostgreSQL (``postgresql+psycopg://``) are
both supported; the one linear migration history lives in ``migrations/``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.pool import QueuePool

from playproof.errors import ServiceError

__all__ = [
    "MIGRATIONS",
    "Base",
    "InlineReads",
    "current_revision",
    "downgrade",
    "head_revision",
    "make_engine",
    "make_inline_engine",
    "read_connection",
    "read_only",
    "session_factory",
    "upgrade",
    "utc_now",
]

log = logging.getLogger("playproof.service")

MIGRATIONS = Path(__file__).parent / "migrations"
"""The Alembic script folder shipped inside the package."""
SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long a SQLite writer waits for another writer before failing."""
CONNECT_TIMEOUT_S = 10
"""How long connecting to a database server may take."""
POOL_SIZE = 16
"""Connections an engine keeps open. Requests run on worker threads, many at once; with a
smaller pool every request past it opened and closed a connection of its own (a new server
process on PostgreSQL), which cost more than the request's queries."""
POOL_OVERFLOW = 16
"""Connections opened beyond ``POOL_SIZE`` under a burst (closed again when returned)."""
INLINE_REST_S = 5.0
"""After a read on an inline engine failed (a timeout, a lost connection), how long reads
go elsewhere."""
INLINE_APPLICATION_NAME = "playproof-inline-reads"
"""How an inline engine's connection names itself to PostgreSQL (``pg_stat_activity``)."""
INLINE_STATEMENT_TIMEOUT_MS = 200
"""How long one statement on an inline engine (:func:`make_inline_engine`) may run before
the database server cancels it."""


class Base(DeclarativeBase):
    """The declarative base of every service table."""


def utc_now() -> datetime:
    """The current time in UTC (stored naive-free on both databases)."""
    return datetime.now(UTC)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created on first use."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ServiceError(f"not a database URL: {exc}") from exc
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        connect_args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S}
    elif parsed.get_backend_name() == "postgresql":
        connect_args = {"connect_timeout": CONNECT_TIMEOUT_S}
    else:
        raise ServiceError(
            f"unsupported database {parsed.get_backend_name()!r}: use sqlite:///FILE "
            "or postgresql+psycopg://USER@HOST/NAME"
        )
    try:
        engine = create_engine(
            parsed, connect_args=connect_args, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW
        )
    except (ArgumentError, ImportError) as exc:
        raise ServiceError(f"cannot open database {parsed.render_as_string()}: {exc}") from exc
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def make_inline_engine(url: str) -> Engine | None:
    """An engine of one connection for reads made on the event loop's own thread, or None.

    Only for PostgreSQL, where a worker thread's read waits on the network and
    then for the interpreter lock behind the loop. (SQLite reads in the
    process, mostly outside the lock, and measured faster from worker
    threads.) Statements run outside a transaction block, set once per
    connection, with nothing to roll back on return, and are cancelled after
    ``INLINE_STATEMENT_TIMEOUT_MS``, so a slow database stalls the loop for
    at most that long. The pool never waits: asking while its one connection
    is out fails at once.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return None
    options = f"-c statement_timeout={INLINE_STATEMENT_TIMEOUT_MS}"
    try:
        return create_engine(
            parsed,
            connect_args={
                "connect_timeout": CONNECT_TIMEOUT_S,
                "options": options,
                "application_name": INLINE_APPLICATION_NAME,
            },
            isolation_level="AUTOCOMMIT",
            pool_reset_on_return=None,
            pool_size=1,
            max_overflow=0,
            pool_timeout=0,
        )
    except (ArgumentError, ImportError) as exc:
        raise ServiceError(f"cannot open database {parsed.render_as_string()}: {exc}") from exc


class InlineReads:
    """The event loop's own database connection, for the hottest reads.

    ``engine`` (:func:`make_inline_engine`) holds one connection, which is
    opened on a worker thread (:meth:`open`) and used on the loop only while
    it is open and idle; None: every read goes to a worker thread.
    """

    def __init__(self, engine: Engine | None) -> None:
        self.engine = engine
        self._rest_until = 0.0
        self._opening = threading.Lock()
        self._warned = False

    def _resting(self) -> bool:
        return time.monotonic() < self._rest_until

    def usable(self) -> Engine | None:
        """The engine, when its connection is open and idle and no read failed lately."""
        engine = self.engine
        if engine is None or self._resting():
            return None
        pool = engine.pool
        return engine if isinstance(pool, QueuePool) and pool.checkedin() > 0 else None

    def needs_opening(self) -> bool:
        """Whether the connection should be opened now (it is not, and no read failed lately)."""
        engine = self.engine
        if engine is None or self._resting() or self._opening.locked():
            return False
        pool = engine.pool
        return isinstance(pool, QueuePool) and pool.checkedin() == 0 and pool.checkedout() == 0

    def failed(self) -> None:
        """A read failed: close the connection, and send reads elsewhere for a while."""
        self._rest_until = time.monotonic() + INLINE_REST_S
        if self.engine is not None:
            self.engine.dispose()  # a broken connection is not reopened on the loop

    def open(self) -> None:
        """Open the connection (on a worker thread: connecting may take a while)."""
        if self.engine is None or not self._opening.acquire(blocking=False):
            return  # nothing to open, or another thread is opening it
        try:
            with self.engine.connect():
                pass
        except SQLAlchemyError as exc:
            if not self._warned:  # once: a pooler that refuses the options would repeat it
                self._warned = True
                log.warning("proof reads stay on worker threads: %s", str(exc).splitlines()[0])
            self.failed()
        finally:
            self._opening.release()

    def dispose(self) -> None:
        """Close the connection."""
        if self.engine is not None:
            self.engine.dispose()


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions bound to ``engine`` whose objects stay readable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def read_only(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session for reading only: it is never committed, and it is rolled back at the end.

    On PostgreSQL its statements run outside a transaction block: each sees
    the newest committed data, as each statement of a transaction does at
    PostgreSQL's default isolation (read committed), and a read costs one
    round trip instead of three (``BEGIN``, the query, ``ROLLBACK``).
    SQLite's driver opens no transaction for reads either. The closing
    rollback therefore could not undo a write on PostgreSQL: readers must not
    write (the read routes' tests check that they never do).
    """
    session = factory()
    try:
        bind = session.get_bind()
        if bind.dialect.name == "postgresql":
            session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        yield session
    finally:
        session.rollback()
        session.close()


@contextmanager
def read_connection(engine: Engine) -> Iterator[Connection]:
    """A connection for one read, as :func:`read_only` reads (outside a transaction block on
    PostgreSQL); no ORM session is made, for the hottest read route."""
    connection = engine.connect()
    try:
        if engine.dialect.name == "postgresql":
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        yield connection
    finally:
        connection.rollback()
        connection.close()


def _alembic_config(engine: Engine) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (default: the newest)."""
    from alembic import command

    command.upgrade(_alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Undo migrations down to ``revision`` (default: an empty database)."""
    from alembic import command

    command.downgrade(_alembic_config(engine), revision)


def head_revision() -> str | None:
    """The newest revision of the shipped migration history."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(
        _alembic_config(create_engine("sqlite://"))
    ).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: no migrations applied)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return MigrationContext.configure(connection).get_current_revision()
