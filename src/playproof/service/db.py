"""The database: one SQLAlchemy engine per service, sessions, and Alembic migrations.

SQLite (embedded, the default) and PostgreSQL (``postgresql+psycopg://``) are
both supported; the one linear migration history lives in ``migrations/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from playproof.errors import ServiceError

__all__ = [
    "MIGRATIONS",
    "Base",
    "current_revision",
    "downgrade",
    "head_revision",
    "make_engine",
    "read_connection",
    "read_only",
    "session_factory",
    "upgrade",
    "utc_now",
]

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
