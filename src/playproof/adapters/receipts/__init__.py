"""Platform receipts: Steam's Web API and Xbox's REST API as evidence for platform-attested runs.

A receipts target is a spec (:class:`~playproof.core.receipts.ReceiptsSpec`);
:func:`arun_receipts` reads the provider before the run, lets the agent play
the spec's game, reads it again after, and returns a record whose receipts
pin every raw response. See ``docs/adapters-receipts.md``.
"""

from playproof.adapters.receipts._http import REQUEST_TIMEOUT_S
from playproof.adapters.receipts._run import (
    MAX_SPEC_BYTES,
    AttestedSession,
    arun_receipts,
    credentials_from_env,
    read_receipts_spec,
)
from playproof.adapters.receipts._sources import (
    DEFAULT_BASE_URLS,
    PHASE_DEADLINE_S,
    XBOX_PAGE_ITEMS,
    Credentials,
    ReceiptsSource,
)

__all__ = [
    "DEFAULT_BASE_URLS",
    "MAX_SPEC_BYTES",
    "PHASE_DEADLINE_S",
    "REQUEST_TIMEOUT_S",
    "XBOX_PAGE_ITEMS",
    "AttestedSession",
    "Credentials",
    "ReceiptsSource",
    "arun_receipts",
    "credentials_from_env",
    "read_receipts_spec",
]
