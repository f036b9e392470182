"""What the grade pages show of each grade, as columns, so no page parses envelopes.

Revision ID: 0007
Revises: 0006

The grades list and a grade's history parsed the signed record of every
grade they showed (up to 50, and up to 200 earlier grades): seconds of CPU
per anonymous page view with large records. This revision adds the summary
columns ingest now writes (pass count, denominator, trust, build digest, a
SHA-256 of the candidate's command line, the case ids in the record's order
with their digest, a bitmap of the passing cases, and the proof document's
``record`` block, so a proof read parses no envelope either) and fills them for
every stored grade from its envelope, parsed once. A grade whose envelope
does not read keeps NULL, as a page showed it before (its record unknown).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TYPES: dict[str, sa.types.TypeEngine[Any]] = {
    "passed": sa.Integer(),
    "denominator": sa.Integer(),
    "trust": sa.String(16),
    "build_digest": sa.String(64),
    "command_sha256": sa.String(64),
    "case_ids": sa.Text(),
    "case_ids_sha256": sa.String(64),
    "passing": sa.Text(),
    "record_document": sa.Text(),
}
"""The summary columns (all nullable) and their types."""


def _backfill() -> None:
    from playproof.service.grades.services import record_in_envelope, summary_columns

    grades = sa.table(
        "grades",
        sa.column("id", sa.String),
        sa.column("envelope", sa.LargeBinary),
        *(sa.column(name, kind) for name, kind in _TYPES.items()),
    )
    connection = op.get_bind()
    waiting = list(connection.execute(sa.select(grades.c.id).order_by(grades.c.id)).scalars())
    for grade_id in waiting:  # one row at a time: envelopes are up to 16 MiB each
        envelope = connection.execute(
            sa.select(grades.c.envelope).where(grades.c.id == grade_id)
        ).scalar_one()
        record = record_in_envelope(bytes(envelope))
        if record is not None:
            connection.execute(
                grades.update().where(grades.c.id == grade_id).values(**summary_columns(record))
            )


def upgrade() -> None:
    """Add the summary columns of ``grades`` and fill them from every stored envelope."""
    with op.batch_alter_table("grades") as batch:
        for name, kind in _TYPES.items():
            batch.add_column(sa.Column(name, kind, nullable=True))
    _backfill()


def downgrade() -> None:
    """Drop the summary columns (the records still hold everything they summarise)."""
    with op.batch_alter_table("grades") as batch:
        for name in reversed(_TYPES):
            batch.drop_column(name)
