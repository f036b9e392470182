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
        context.configure(connection=connection, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


# Alembic runs this file inside its environment; anything else that imports it
# (a doctest collector, a linter) finds no configuration and does nothing.
if hasattr(context, "config"):
    run_migrations()
