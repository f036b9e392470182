"""The one linear migration history goes up and back down on both databases."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, text

import playproof
from playproof.core.record import RunRecord
from playproof.service.db import (
    Base,
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    upgrade,
)
from playproof.service.deployments import models as _deployments  # noqa: F401
from playproof.service.grades import models as _grades  # noqa: F401
from playproof.service.leaderboards import models as _leaderboards  # noqa: F401
from playproof.service.log import models as _log  # noqa: F401  (registers tables)
from playproof.service.owners import models as _owners  # noqa: F401
from playproof.service.runs import models as _runs  # noqa: F401
from playproof.sign import SigningKey


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


def test_runs_stored_before_trust_labels_get_one_and_none_is_published_by_mistake(
    database_url: str, signer: SigningKey, record_2048: RunRecord
) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0002")
        data = record_2048.to_json()
        uncalibrated = RunRecord.model_validate(
            {**data, "target": {**data["target"], "calibrated": False}}
        )
        bodies = {
            "a" * 32: playproof.sign_record(record_2048, signer).to_bytes(),
            "b" * 32: playproof.sign_record(uncalibrated, signer).to_bytes(),
            "c" * 32: b"not an envelope",
        }
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO owners (id, name, created_at) VALUES (1, 'o', :t)"),
                {"t": datetime.now(UTC)},
            )
            for run_id, body in bodies.items():
                connection.execute(
                    text(
                        "INSERT INTO runs (id, owner_id, envelope_sha256, envelope, record_digest,"
                        " key_id, decision_count, status, created_at) VALUES (:id, 1, :sha, :env,"
                        " 'd', 'k', 1, 'verified', :t)"
                    ),
                    {"id": run_id, "sha": run_id * 2, "env": body, "t": datetime.now(UTC)},
                )
        upgrade(engine)
        with engine.connect() as connection:
            labels = dict(connection.execute(text("SELECT id, trust_label FROM runs")).all())
        assert labels == {
            "a" * 32: "benchmarked_canonical_template",
            "b" * 32: "benchmark_compatible_customized_instance",
            "c" * 32: "benchmark_compatible_customized_instance",
        }
        downgrade(engine, "0002")
        upgrade(engine)
    finally:
        engine.dispose()
