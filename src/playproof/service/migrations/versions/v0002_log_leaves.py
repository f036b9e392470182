"""The transparency log's leaves.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """One row per verified run, keyed by its leaf index."""
    op.create_table(
        "log_leaves",
        sa.Column("leaf_index", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id"), nullable=False, unique=True),
        sa.Column("record_digest", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drop the leaves."""
    op.drop_table("log_leaves")
