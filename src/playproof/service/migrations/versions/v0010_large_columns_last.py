"""On SQLite, the large columns of ``runs`` and ``grades`` move to the end of their rows.

Revision ID: 0010
Revises: 0009

SQLite stores a row's columns in order, and a value too large for its page
continues in a chain of overflow pages; reading a column stored after it
walks that chain. ``runs.envelope`` and ``grades.envelope`` (up to 16 MiB,
chosen by the uploader) were the fourth column, before the status, label,
board and summary columns that every list, board and proof read needs. With
20 verified runs of 12 MB envelopes, an anonymous ``leaderboard?limit=1``
took 195 ms of CPU instead of 4.3 ms, and the cost grew with the bytes
uploaded. This revision rebuilds both tables on SQLite with the large
columns last (the stored documents, then the envelope), keeping every row,
index and constraint. PostgreSQL keeps large values out of line already, so
nothing changes there. Column order has no meaning to any query, so going
down leaves it as it is.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

LAST = {
    "runs": ("report", "proof_document", "envelope"),
    "grades": ("report", "case_ids", "passing", "record_document", "envelope"),
}
"""Per table, the columns that go last, in this order (largest last)."""


def upgrade() -> None:
    """Rebuild ``runs`` and ``grades`` on SQLite with their large columns last."""
    connection = op.get_bind()
    if connection.dialect.name != "sqlite":
        return
    for table, last in LAST.items():
        names = [column["name"] for column in sa.inspect(connection).get_columns(table)]
        order = (*(name for name in names if name not in last), *last)
        with op.batch_alter_table(table, recreate="always", partial_reordering=[order]):
            pass


def downgrade() -> None:
    """Nothing to undo: column order changes no query (see the module)."""
