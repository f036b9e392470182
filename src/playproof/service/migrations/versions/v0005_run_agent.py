"""The agent of each run as a column, so a whole board can be sorted by it.

Revision ID: 0005
Revises: 0004

The agent (the record's actor, ``KIND:ID``) was only inside each signed
record. This revision adds ``runs.agent`` and fills it for every stored run
from its stored envelope, as ingest now does; a run whose envelope cannot be
read keeps NULL (it sorts after every named agent).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

AGENT_CHARS = 769
"""The longest agent: an actor kind (256 characters), a colon and an actor id (512)."""


def stored_agent(envelope: bytes) -> str | None:
    """The agent (``KIND:ID``) of a stored envelope's record; None when it cannot be read."""
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
        record = parse_run_record(statement.get("predicate"))
    except FormatError:
        return None
    return f"{record.actor.kind}:{record.actor.id}"


def _backfill() -> None:
    runs = sa.table(
        "runs",
        sa.column("id", sa.String),
        sa.column("envelope", sa.LargeBinary),
        sa.column("agent", sa.String),
    )
    connection = op.get_bind()
    waiting = list(connection.execute(sa.select(runs.c.id).order_by(runs.c.id)).scalars())
    for run_id in waiting:  # one row at a time: envelopes are up to 16 MiB each
        envelope = connection.execute(
            sa.select(runs.c.envelope).where(runs.c.id == run_id)
        ).scalar_one()
        agent = stored_agent(bytes(envelope))
        if agent is not None:
            connection.execute(runs.update().where(runs.c.id == run_id).values(agent=agent))


def upgrade() -> None:
    """Add ``runs.agent`` and fill it from every stored envelope."""
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("agent", sa.String(AGENT_CHARS), nullable=True))
    _backfill()


def downgrade() -> None:
    """Drop ``runs.agent`` (the records still name their agents)."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("agent")
