"""Alembic environment: migrations run on the engine the caller hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine


def run_migrations() -> None:
    """Run the migrations Alembic asked for, in one transaction, on the caller's engine."""
    engine = context.config.attributes.get("engine")
    if not isinstance(engine, Engine):
        raise RuntimeError("run migrations through playproof db upgrade, which passes the engine")
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # A batch migration copies a table and drops the old one, which the
            # foreign keys of other tables' rows would refuse: they are checked
            # once at the end instead (SQLite ignores this pragma inside a
            # transaction, so it is set before one begins).
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        try:
            context.configure(connection=connection, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
            if sqlite:
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                if broken:
                    raise RuntimeError(f"the migration left broken foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                connection.rollback()
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


# Alembic runs this file inside its environment; anything else that imports it
# (a doctest collector, a linter) finds no configuration and does nothing.
if hasattr(context, "config"):
    run_migrations()
