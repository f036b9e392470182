"""Targets, deployments, challenges, grades; trust labels and board columns on runs.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import base64
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

CANONICAL = "benchmarked_canonical_template"
CUSTOMIZED = "benchmark_compatible_customized_instance"


def _stored_label(envelope: bytes) -> str:
    """The label of a run stored before labels were: canonical only for a calibrated pin.

    Anything unreadable or not clearly calibrated is labelled customized,
    which only its owner may read: a migration never publishes a run.
    """
    try:
        statement = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
        target: Any = statement["predicate"]["target"]
        named = isinstance(target.get("name"), str) and "/" in target["name"]
        if named and ":" not in target["name"] and target.get("calibrated") is not False:
            return CANONICAL
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    return CUSTOMIZED


def upgrade() -> None:
    """Create the new tables, then add and fill the new run columns."""
    op.create_table(
        "targets",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("build_digest", sa.String(64), nullable=False),
        sa.Column("calibration", sa.String(24), nullable=False),
        sa.Column("calibrated", sa.Boolean(), nullable=False),
        sa.Column("refreshed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "deployments",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("owner_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False, index=True),
        sa.Column(
            "target_name",
            sa.String(128),
            sa.ForeignKey("targets.name"),
            nullable=False,
            index=True,
        ),
        sa.Column("template_version", sa.String(64), nullable=False),
        sa.Column("configuration", sa.Text(), nullable=False),
        sa.Column("configuration_sha256", sa.String(64), nullable=False),
        sa.Column("customized", sa.Boolean(), nullable=False),
        sa.Column("policy_envelope", sa.Text(), nullable=True),
        sa.Column("trust_label", sa.String(48), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "challenges",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "target_name",
            sa.String(128),
            sa.ForeignKey("targets.name"),
            nullable=False,
            index=True,
        ),
        sa.Column("seeds", sa.Text(), nullable=False),
        sa.Column("budget_usd", sa.Float(), nullable=False),
        sa.Column("opens_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closes_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "grades",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("owner_id", sa.Integer(), sa.ForeignKey("owners.id"), nullable=False, index=True),
        sa.Column("envelope_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("envelope", sa.LargeBinary(), nullable=False),
        sa.Column("record_digest", sa.String(64), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("corpus_id", sa.String(128), nullable=False),
        sa.Column("corpus_digest", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("report", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error_kind", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    with op.batch_alter_table("owners") as batch:
        batch.add_column(
            sa.Column("admin", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("deployment_id", sa.String(32), nullable=True))
        batch.add_column(
            sa.Column("trust_label", sa.String(48), nullable=False, server_default=CUSTOMIZED)
        )
        batch.add_column(sa.Column("target_name", sa.String(128), nullable=True))
        batch.add_column(sa.Column("seed", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("budget_usd", sa.Float(), nullable=True))
        batch.add_column(sa.Column("cost_usd", sa.Float(), nullable=True))
        batch.add_column(sa.Column("earned", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("earnable", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("score_ratio", sa.Float(), nullable=True))
        batch.add_column(
            sa.Column("attempts", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
        batch.add_column(sa.Column("error_kind", sa.String(64), nullable=True))
        batch.create_foreign_key("fk_runs_deployment_id", "deployments", ["deployment_id"], ["id"])
        batch.create_index("ix_runs_deployment_id", ["deployment_id"])
        batch.create_index("ix_runs_board", ["target_name", "status", "trust_label"])
    runs = sa.table(
        "runs",
        sa.column("id", sa.String),
        sa.column("envelope", sa.LargeBinary),
        sa.column("trust_label", sa.String),
    )
    connection = op.get_bind()
    for run_id, envelope in connection.execute(sa.select(runs.c.id, runs.c.envelope)).all():
        connection.execute(
            runs.update().where(runs.c.id == run_id).values(trust_label=_stored_label(envelope))
        )


def downgrade() -> None:
    """Drop the run columns and the new tables."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_board")
        batch.drop_index("ix_runs_deployment_id")
        batch.drop_constraint("fk_runs_deployment_id", type_="foreignkey")
        for column in (
            "error_kind",
            "attempts",
            "score_ratio",
            "earnable",
            "earned",
            "cost_usd",
            "budget_usd",
            "seed",
            "target_name",
            "trust_label",
            "deployment_id",
        ):
            batch.drop_column(column)
    with op.batch_alter_table("owners") as batch:
        batch.drop_column("admin")
    op.drop_table("grades")
    op.drop_table("challenges")
    op.drop_table("deployments")
    op.drop_table("targets")
