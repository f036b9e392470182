"""The stop reason of each run as a column, so listing runs reads no envelope.

Revision ID: 0009
Revises: 0008

A run's status document names the stop reason its signed record states, and
it was read by parsing the record (remembered per process). A list of status
documents (a deployment's runs, anyone may ask for up to 200 of a canonical
deployment's) therefore parsed every listed record once per process: with 20
runs of 12 MB, one anonymous request took 1.7 s of CPU and 320 MB. This
revision adds ``runs.stop_reason``, which ingest now fills, and fills it for
every stored run from its envelope, one row at a time; a run whose envelope
does not read keeps NULL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _stored_stop_reason(envelope: bytes) -> str | None:
    from playproof.core.canonical import parse_json
    from playproof.core.record import parse_run_record
    from playproof.errors import FormatError
    from playproof.sign import MAX_ENVELOPE_BYTES, parse_envelope

    try:
        statement = parse_json(
            parse_envelope(envelope).payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="payload"
        )
        if not isinstance(statement, dict):
            return None
        return parse_run_record(statement.get("predicate")).stop_reason.value
    except FormatError:
        return None


def upgrade() -> None:
    """Add ``runs.stop_reason`` and fill it from every stored envelope."""
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("stop_reason", sa.String(32), nullable=True))
    runs = sa.table(
        "runs",
        sa.column("id", sa.String),
        sa.column("envelope", sa.LargeBinary),
        sa.column("stop_reason", sa.String),
    )
    connection = op.get_bind()
    waiting = list(connection.execute(sa.select(runs.c.id).order_by(runs.c.id)).scalars())
    for run_id in waiting:  # one row at a time: envelopes are up to 16 MiB each
        envelope = connection.execute(
            sa.select(runs.c.envelope).where(runs.c.id == run_id)
        ).scalar_one()
        reason = _stored_stop_reason(bytes(envelope))
        if reason is not None:
            connection.execute(runs.update().where(runs.c.id == run_id).values(stop_reason=reason))


def downgrade() -> None:
    """Drop ``runs.stop_reason`` (the records still state it)."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("stop_reason")
