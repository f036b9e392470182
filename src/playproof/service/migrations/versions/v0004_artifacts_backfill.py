"""Content-addressed evidence artifacts; board columns filled for runs stored before 0003.

Revision ID: 0004
Revises: 0003

Migration 0003 added the run columns leaderboards sort on (target, seed,
budget, cost, earned, earnable, score ratio) and filled only the trust label:
older runs kept NULL there and so were missing from every board. This
revision reads each such run's stored envelope and report, as ingest and the
stored verdict would have, and fills them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def backfilled_columns(envelope: bytes, status: str, report: str | None) -> dict[str, Any]:
    """The board columns of a stored run, from its envelope and report ({} if unreadable).

    The same values ingest writes (target, seed, budget, cost: None when a
    decision was unpriced) and, for a verified run, the score its stored
    verdict gives.
    """
    from playproof.core.canonical import parse_json
    from playproof.core.record import parse_run_record
    from playproof.core.report import VerificationReport
    from playproof.errors import FormatError
    from playproof.sign import MAX_ENVELOPE_BYTES, parse_envelope

    try:
        statement = parse_json(
            parse_envelope(envelope).payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="payload"
        )
        if not isinstance(statement, dict):
            return {}
        record = parse_run_record(statement.get("predicate"))
    except FormatError:
        return {}
    values: dict[str, Any] = {
        "target_name": record.target.name,
        "seed": record.seed,
        "budget_usd": record.limits.budget_usd,
        "cost_usd": (
            record.accounting.spent_usd if record.accounting.unmeasured_decisions == 0 else None
        ),
    }
    if status == "verified" and report is not None:
        try:
            verdict = VerificationReport.model_validate_json(report)
        except ValueError:
            return values
        score = verdict.score if verdict.clean else None
        if score is not None:
            values["earned"] = score.earned
            values["earnable"] = score.earnable
            values["score_ratio"] = score.earned / score.earnable if score.earnable else 0.0
    return values


def _backfill() -> None:
    runs = sa.table(
        "runs",
        sa.column("id", sa.String),
        sa.column("envelope", sa.LargeBinary),
        sa.column("status", sa.String),
        sa.column("report", sa.Text),
        sa.column("target_name", sa.String),
        sa.column("seed", sa.BigInteger),
        sa.column("budget_usd", sa.Float),
        sa.column("cost_usd", sa.Float),
        sa.column("earned", sa.Integer),
        sa.column("earnable", sa.Integer),
        sa.column("score_ratio", sa.Float),
    )
    connection = op.get_bind()
    # Only runs never filled: ingest sets the seed of every run it stores.
    waiting = list(
        connection.execute(
            sa.select(runs.c.id).where(runs.c.seed.is_(None), runs.c.target_name.is_(None))
        ).scalars()
    )
    for run_id in waiting:  # one row at a time: envelopes are up to 16 MiB each
        row = connection.execute(
            sa.select(runs.c.envelope, runs.c.status, runs.c.report).where(runs.c.id == run_id)
        ).one()
        values = backfilled_columns(bytes(row.envelope), row.status, row.report)
        if values:
            connection.execute(runs.update().where(runs.c.id == run_id).values(**values))


def upgrade() -> None:
    """Create the artifact tables, then fill the board columns of older runs."""
    op.create_table(
        "artifacts",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("media_type", sa.String(128), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "run_artifacts",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("role", sa.String(32), primary_key=True),
        sa.Column(
            "digest", sa.String(64), sa.ForeignKey("artifacts.digest"), nullable=False, index=True
        ),
    )
    _backfill()


def downgrade() -> None:
    """Drop the artifact tables (the filled run columns keep their values)."""
    op.drop_table("run_artifacts")
    op.drop_table("artifacts")
