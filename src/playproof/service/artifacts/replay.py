"""The artifacts a policy-bound run's replay regenerates (run in the replay process).

A run is policy-bound when its target is a packaged target that deploys a
policy envelope (its ``envelope`` option). The server replays the record's
inputs from its seed on that target and keeps the run events, with the
deployed envelope: the deployment's when the run names one with a policy
envelope, else the envelope the target deploys.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

from playproof.core.canonical import canonical_json, parse_json
from playproof.core.record import RunRecord, parse_run_record
from playproof.errors import PlayproofError
from playproof.service.artifacts.roles import (
    MAX_ARTIFACT_BYTES,
    POLICY_ENVELOPE,
    REBALANCE_ALLOCATION,
    REBALANCE_EVIDENCE,
    RUN_EVENTS,
    ArtifactBytes,
)
from playproof.sign import MAX_ENVELOPE_BYTES, parse_envelope

if TYPE_CHECKING:
    from playproof.targets import Target

__all__ = ["is_policy_target", "policy_artifacts", "policy_targets"]

log = logging.getLogger("playproof.service")


@functools.cache
def policy_targets() -> frozenset[str]:
    """The packaged targets that deploy a policy envelope (read from the registry once)."""
    from playproof.targets import list_targets

    return frozenset(t.name for t in list_targets() if "envelope" in t.spec.options)


def is_policy_target(name: str | None) -> bool:
    """True when ``name`` is a packaged policy-bound target."""
    return name is not None and name in policy_targets()


def _record(envelope: bytes) -> RunRecord | None:
    try:
        statement = parse_json(
            parse_envelope(envelope).payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="payload"
        )
        return parse_run_record(statement.get("predicate")) if isinstance(statement, dict) else None
    except PlayproofError:
        return None


def _replayed(target: Target, record: RunRecord) -> list[ArtifactBytes]:
    """The run events, and for a rebalance target its evidence document and allocation."""
    from playproof.policy.replay import deployed_allocation, replay_record

    replayed = replay_record(record, target)
    made = [
        ArtifactBytes(RUN_EVENTS.name, RUN_EVENTS.media_type, canonical_json(list(replayed.events)))
    ]
    if replayed.rebalance_evidence is not None:
        document = replayed.rebalance_evidence.model_dump(mode="json", by_alias=True)
        made.append(
            ArtifactBytes(
                REBALANCE_EVIDENCE.name, REBALANCE_EVIDENCE.media_type, canonical_json(document)
            )
        )
    allocation = deployed_allocation(target)
    if allocation is not None:
        weights = allocation.model_dump(mode="json", by_alias=True)
        made.append(
            ArtifactBytes(
                REBALANCE_ALLOCATION.name, REBALANCE_ALLOCATION.media_type, canonical_json(weights)
            )
        )
    return made


def policy_artifacts(envelope: bytes, deployed: str | None = None) -> tuple[ArtifactBytes, ...]:
    """The artifacts of a signed record of a policy-bound target (none for any other record).

    The run events (and for a rebalance target the rebalance evidence
    document and the target weights it deploys) as replay regenerated them,
    and the envelope the run is judged by: ``deployed``, the deployment's
    policy envelope (canonical JSON), else the one the target deploys.
    Nothing is produced for a record whose build is not the packaged one
    (its replay would not be the run's), or when the replay fails; the
    checks then say their input is missing.
    """
    record = _record(envelope)
    if record is None or not is_policy_target(record.target.name):
        return ()
    from playproof.targets import get_target

    try:
        target = get_target(str(record.target.name))
        if target.spec.build_digest != record.target.build_digest:
            return ()
        replayed = _replayed(target, record)
    except (PlayproofError, ValueError, OSError) as exc:
        log.warning("no policy artifacts for the run: its replay failed (%s)", type(exc).__name__)
        return ()
    authority: Any = target.spec.options["envelope"]
    envelope = deployed.encode("utf-8") if deployed is not None else canonical_json(authority)
    made = [*replayed, ArtifactBytes(POLICY_ENVELOPE.name, POLICY_ENVELOPE.media_type, envelope)]
    return tuple(a for a in made if len(a.content) <= MAX_ARTIFACT_BYTES)
