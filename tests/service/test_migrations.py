"""The one linear migration history goes up and back down on both databases."""

from __future__ import annotations

from sqlalchemy import inspect

from playproof.service.db import (
    Base,
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    upgrade,
)
from playproof.service.log import models as _log  # noqa: F401  (registers tables)
from playproof.service.owners import models as _owners  # noqa: F401
from playproof.service.runs import models as _runs  # noqa: F401


def test_upgrade_then_downgrade_to_base(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        assert current_revision(engine) is None
        upgrade(engine)
        assert current_revision(engine) == head_revision()
        tables = set(inspect(engine).get_table_names())
        assert set(Base.metadata.tables) <= tables
        upgrade(engine)  # again: nothing to do
        downgrade(engine)
        assert current_revision(engine) is None
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        upgrade(engine)
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_the_models_match_the_migrations(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        found = inspect(engine)
        for name, table in Base.metadata.tables.items():
            columns = {c["name"] for c in found.get_columns(name)}
            assert columns == {c.name for c in table.columns}, name
    finally:
        engine.dispose()
