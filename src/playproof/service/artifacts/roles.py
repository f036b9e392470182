"""What an artifact is for: its role in a run and its media type (pure: no database)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "POLICY_ENVELOPE",
    "REBALANCE_ALLOCATION",
    "REBALANCE_EVIDENCE",
    "RUN_EVENTS",
    "ArtifactBytes",
    "Role",
]

MAX_ARTIFACT_BYTES = 8 * 1024 * 1024
"""The largest artifact stored; a larger one is not kept (the checks reading it say so)."""


@dataclass(frozen=True)
class Role:
    """A role an artifact plays for a run, and the media type its bytes have."""

    name: str
    media_type: str


RUN_EVENTS = Role("run-events", "application/vnd.playproof.run-events+json")
"""The run events the server's replay regenerated: a JSON array of event strings."""
POLICY_ENVELOPE = Role("policy-envelope", "application/vnd.playproof.policy-envelope+json")
"""The envelope the run is judged by: the deployment's, else the one its target deploys."""
REBALANCE_EVIDENCE = Role("rebalance-evidence", "application/vnd.playproof.rebalance-evidence+json")
"""A rebalance run's ``rebalance_evidence_v1`` document as the server's replay regenerated it."""
REBALANCE_ALLOCATION = Role(
    "rebalance-allocation", "application/vnd.playproof.rebalance-allocation+json"
)
"""The target weights and drift threshold a rebalance run is judged by (what its target deploys)."""


@dataclass(frozen=True)
class ArtifactBytes:
    """Bytes a replay produced for one role of a run (picklable: it leaves the replay process)."""

    role: str
    media_type: str
    content: bytes

    @property
    def digest(self) -> str:
        """SHA-256 of the exact bytes."""
        return hashlib.sha256(self.content).hexdigest()
