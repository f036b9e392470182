"""Deployments with a policy envelope of their own are customized instances.

Revision ID: 0008
Revises: 0007

A policy-bound run is judged against its deployment's envelope, and that
envelope is private (only ``has_policy_envelope`` is published). Before this
revision a deployment whose only change was its envelope was labelled
``benchmarked_canonical_template``: its runs were public and ranked on the
public boards with a ``wallet_safety`` verdict judged against an envelope
nobody else could see (a laxer one passed trades the packaged envelope
refuses). Ingest now labels such a deployment customized; this revision
relabels the ones already stored, and their runs, so they are read by their
owners only. A run's stored proof document is keyed by its label, so it is
rebuilt on the next read.

Going down keeps the new labels: which deployments were labelled canonical
only because of the old rule is not recorded, and publishing them again
would repeat the mistake.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

CANONICAL = "benchmarked_canonical_template"
CUSTOMIZED = "benchmark_compatible_customized_instance"


def upgrade() -> None:
    """Relabel deployments holding a policy envelope, and their runs, as customized."""
    deployments = sa.table(
        "deployments",
        sa.column("id", sa.String),
        sa.column("customized", sa.Boolean),
        sa.column("policy_envelope", sa.Text),
        sa.column("trust_label", sa.String),
    )
    runs = sa.table(
        "runs",
        sa.column("deployment_id", sa.String),
        sa.column("trust_label", sa.String),
    )
    relabelled = (
        sa.select(deployments.c.id)
        .where(deployments.c.policy_envelope.is_not(None))
        .where(deployments.c.trust_label == CANONICAL)
        .scalar_subquery()
    )
    connection = op.get_bind()
    connection.execute(
        runs.update()
        .where(runs.c.deployment_id.in_(relabelled))
        .where(runs.c.trust_label == CANONICAL)
        .values(trust_label=CUSTOMIZED)
    )
    connection.execute(
        deployments.update()
        .where(deployments.c.policy_envelope.is_not(None))
        .where(deployments.c.trust_label == CANONICAL)
        .values(trust_label=CUSTOMIZED, customized=True)
    )


def downgrade() -> None:
    """Nothing to undo (see the module: the new labels are kept)."""
