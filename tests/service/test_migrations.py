"""The one linear migration history goes up and back down on both databases."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import inspect, text

import playproof
from playproof.core.record import RunRecord
from playproof.service.artifacts import models as _artifacts  # noqa: F401
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
from playproof.service.grades.services import SUMMARY_COLUMNS
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


def _insert_old_runs(engine: Any, bodies: dict[str, tuple[bytes, str, str | None]]) -> None:
    """Runs as a server before migration 0003 stored them: no board columns."""
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO owners (id, name, created_at) VALUES (1, 'o', :t)"),
            {"t": datetime.now(UTC)},
        )
        for run_id, (body, status, report) in bodies.items():
            connection.execute(
                text(
                    "INSERT INTO runs (id, owner_id, envelope_sha256, envelope, record_digest,"
                    " key_id, decision_count, status, report, created_at) VALUES (:id, 1, :sha,"
                    " :env, 'd', 'k', 1, :status, :report, :t)"
                ),
                {
                    "id": run_id,
                    "sha": run_id * 2,
                    "env": body,
                    "status": status,
                    "report": report,
                    "t": datetime.now(UTC),
                },
            )


BOARD_COLUMNS = (
    "target_name",
    "seed",
    "budget_usd",
    "cost_usd",
    "earned",
    "earnable",
    "score_ratio",
)


def test_runs_stored_before_0003_get_their_board_columns_filled(
    database_url: str, signer: SigningKey, record_2048: RunRecord
) -> None:
    body = playproof.sign_record(record_2048, signer).to_bytes()
    report = playproof.verify_signed(body, [signer.verifying_key])
    assert report.clean
    assert report.score is not None
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0002")
        _insert_old_runs(
            engine,
            {
                "a" * 32: (body, "verified", report.model_dump_json()),
                "b" * 32: (body, "pending", None),
                "c" * 32: (b"not an envelope", "rejected", None),
            },
        )
        upgrade(engine)
        columns = ", ".join(BOARD_COLUMNS)
        with engine.connect() as connection:
            rows = {
                row[0]: dict(zip(BOARD_COLUMNS, row[1:], strict=True))
                for row in connection.execute(text(f"SELECT id, {columns} FROM runs")).all()
            }
        score = report.score
        assert rows["a" * 32] == {
            "target_name": "native/2048",
            "seed": record_2048.seed,
            "budget_usd": record_2048.limits.budget_usd,
            "cost_usd": (
                record_2048.accounting.spent_usd
                if record_2048.accounting.unmeasured_decisions == 0
                else None
            ),
            "earned": score.earned,
            "earnable": score.earnable,
            "score_ratio": score.earned / score.earnable,
        }
        assert rows["b" * 32]["target_name"] == "native/2048"
        assert rows["b" * 32]["earned"] is None  # not verified: no score
        assert set(rows["c" * 32].values()) == {None}  # unreadable: left alone
        downgrade(engine, "0003")
        upgrade(engine)
    finally:
        engine.dispose()


def test_the_artifact_tables_go_up_and_down_with_data(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO artifacts (digest, size, media_type, content, created_at)"
                    " VALUES (:d, 2, 'application/json', :c, :t)"
                ),
                {"d": "e" * 64, "c": b"[]", "t": datetime.now(UTC)},
            )
        assert {"artifacts", "run_artifacts"} <= set(inspect(engine).get_table_names())
        downgrade(engine, "0003")
        assert not {"artifacts", "run_artifacts"} & set(inspect(engine).get_table_names())
        upgrade(engine)
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_runs_stored_before_0005_get_their_agent_and_lose_the_column_going_down(
    database_url: str, signer: SigningKey, record_2048: RunRecord
) -> None:
    body = playproof.sign_record(record_2048, signer).to_bytes()
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0004")
        _insert_old_runs(
            engine,
            {"a" * 32: (body, "verified", None), "c" * 32: (b"not an envelope", "rejected", None)},
        )
        upgrade(engine)
        with engine.connect() as connection:
            agents: dict[str, str | None] = dict(
                connection.execute(text("SELECT id, agent FROM runs")).all()
            )
        expected = f"{record_2048.actor.kind}:{record_2048.actor.id}"
        assert agents == {"a" * 32: expected, "c" * 32: None}  # unreadable: left NULL
        downgrade(engine, "0004")
        assert "agent" not in {c["name"] for c in inspect(engine).get_columns("runs")}
        with engine.connect() as connection:
            kept = connection.execute(text("SELECT count(*) FROM runs")).scalar_one()
        assert kept == 2  # going down keeps the runs
        upgrade(engine)
        with engine.connect() as connection:
            again: dict[str, str | None] = dict(
                connection.execute(text("SELECT id, agent FROM runs")).all()
            )
        assert again == agents
    finally:
        engine.dispose()


def test_runs_stored_before_0009_get_their_stop_reason_and_lose_the_column_going_down(
    database_url: str, signer: SigningKey, record_2048: RunRecord
) -> None:
    body = playproof.sign_record(record_2048, signer).to_bytes()
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0004")
        _insert_old_runs(
            engine,
            {"a" * 32: (body, "verified", None), "c" * 32: (b"not an envelope", "rejected", None)},
        )
        upgrade(engine, "0008")
        assert "stop_reason" not in {c["name"] for c in inspect(engine).get_columns("runs")}
        upgrade(engine)
        with engine.connect() as connection:
            reasons = dict(connection.execute(text("SELECT id, stop_reason FROM runs")).all())
        assert reasons == {"a" * 32: record_2048.stop_reason.value, "c" * 32: None}
        downgrade(engine, "0008")
        assert "stop_reason" not in {c["name"] for c in inspect(engine).get_columns("runs")}
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM runs")).scalar_one() == 2
    finally:
        engine.dispose()


def test_0010_puts_the_large_columns_last_on_sqlite_and_keeps_everything_else(
    database_url: str, signer: SigningKey, record_2048: RunRecord
) -> None:
    from playproof.service.migrations.versions.v0010_large_columns_last import LAST

    body = playproof.sign_record(record_2048, signer).to_bytes()
    engine = make_engine(database_url)

    def shape() -> dict[str, Any]:
        found = inspect(engine)
        return {
            table: (
                sorted(c["name"] for c in found.get_columns(table)),
                sorted(str(u["column_names"]) for u in found.get_unique_constraints(table)),
                sorted((i["name"], str(i["column_names"])) for i in found.get_indexes(table)),
                sorted(str(f["referred_table"]) for f in found.get_foreign_keys(table)),
            )
            for table in LAST
        }

    try:
        upgrade(engine, "0004")
        _insert_old_runs(engine, {"a" * 32: (body, "verified", None)})
        upgrade(engine, "0009")
        before = shape()
        upgrade(engine)
        assert shape() == before  # the same columns, constraints, indexes and references
        if engine.dialect.name == "sqlite":
            for table, last in LAST.items():
                names = [c["name"] for c in inspect(engine).get_columns(table)]
                assert tuple(names[-len(last) :]) == last, table
        with engine.connect() as connection:
            stored = connection.execute(text("SELECT envelope FROM runs")).scalar_one()
        assert bytes(stored) == body
    finally:
        engine.dispose()


def test_0006_adds_the_stored_proof_columns_and_lz4_where_the_server_has_it(
    database_url: str,
) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0005")
        assert "proof_document" not in {c["name"] for c in inspect(engine).get_columns("runs")}
        upgrade(engine)
        columns = {c["name"] for c in inspect(engine).get_columns("runs")}
        assert {"proof_document", "proof_key"} <= columns
        if engine.dialect.name == "postgresql":
            with engine.connect() as connection:
                methods = connection.execute(
                    text(
                        "SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'"
                    )
                ).scalar()
                stored = connection.execute(
                    text(
                        "SELECT attcompression FROM pg_attribute WHERE attrelid = 'runs'::regclass "
                        "AND attname = 'envelope'"
                    )
                ).scalar()
            assert stored == ("l" if "lz4" in methods else "")
        downgrade(engine, "0005")
        assert "proof_key" not in {c["name"] for c in inspect(engine).get_columns("runs")}
        upgrade(engine)
    finally:
        engine.dispose()


GRADE_SUMMARY = SUMMARY_COLUMNS


def test_grades_stored_before_0007_get_their_summary_and_lose_it_going_down(
    database_url: str, signer: SigningKey
) -> None:
    from playproof.corpus import CandidatePin, CaseResult, GradeRecord, sign_grade
    from playproof.service.grades.services import command_sha256, passing_bitmap

    cases = ["b-case", "a-case", "ünï"]
    record = GradeRecord(
        corpus_id="my-corpus",
        corpus_version="1",
        corpus_digest="a" * 64,
        candidate=CandidatePin(command=["/secret/candidate"], build_digest="b" * 64),
        isolation="rlimits",
        limits={"cpu_seconds": 1.0},
        results=[CaseResult(case_id=c, passed=c != "a-case", reason="r") for c in cases],
        passed=2,
        denominator=3,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
    )
    bodies = {"a" * 32: sign_grade(record, signer).to_bytes(), "c" * 32: b"not an envelope"}
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0006")
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO owners (id, name, created_at) VALUES (1, 'o', :t)"),
                {"t": datetime.now(UTC)},
            )
            for grade_id, body in bodies.items():
                connection.execute(
                    text(
                        "INSERT INTO grades (id, owner_id, envelope_sha256, envelope,"
                        " record_digest, key_id, corpus_id, corpus_digest, status, attempts,"
                        " created_at) VALUES (:id, 1, :sha, :env, 'd', 'k', 'my-corpus', :cd,"
                        " 'verified', 0, :t)"
                    ),
                    {
                        "id": grade_id,
                        "sha": grade_id * 2,
                        "env": body,
                        "cd": "a" * 64,
                        "t": datetime.now(UTC),
                    },
                )
        upgrade(engine)
        columns = ", ".join(GRADE_SUMMARY)
        with engine.connect() as connection:
            rows = {
                row[0]: dict(zip(GRADE_SUMMARY, row[1:], strict=True))
                for row in connection.execute(text(f"SELECT id, {columns} FROM grades")).all()
            }
        filled = rows["a" * 32]
        assert (filled["passed"], filled["denominator"], filled["trust"]) == (2, 3, "untrusted")
        assert filled["build_digest"] == "b" * 64
        assert filled["command_sha256"] == command_sha256(["/secret/candidate"])
        assert "/secret" not in str(filled)  # only a digest of the command is kept
        assert json.loads(filled["case_ids"]) == cases
        assert filled["case_ids"].isascii()
        assert filled["case_ids_sha256"] == hashlib.sha256(filled["case_ids"].encode()).hexdigest()
        assert filled["passing"] == passing_bitmap([True, False, True]) == "a0"
        document = json.loads(filled["record_document"])
        assert (document["corpus_id"], document["passed"], document["reward"]) == (
            "my-corpus",
            2,
            0,
        )
        assert set(rows["c" * 32].values()) == {None}  # unreadable: left NULL
        downgrade(engine, "0006")
        assert not set(GRADE_SUMMARY) & {c["name"] for c in inspect(engine).get_columns("grades")}
        with engine.connect() as connection:
            kept = connection.execute(text("SELECT count(*) FROM grades")).scalar_one()
        assert kept == 2  # going down keeps the grades
        upgrade(engine)
        with engine.connect() as connection:
            again = {
                row[0]: dict(zip(GRADE_SUMMARY, row[1:], strict=True))
                for row in connection.execute(text(f"SELECT id, {columns} FROM grades")).all()
            }
        assert again == rows
    finally:
        engine.dispose()
