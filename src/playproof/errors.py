"""The one exception hierarchy of playproof.

Every error playproof raises on purpose derives from :class:`PlayproofError`::

    PlayproofError
    ├── FormatError                 a document (contract, record, key, script) is malformed
    │   ├── ContractError           a contract breaks the contract language (all violations listed)
    │   └── ObservationError        an observation breaks the observation bounds
    ├── TargetError                 unknown target, or a target that cannot be built
    │   └── ModeError               a verification mode the target's platform does not declare
    ├── RunError                    an episode could not be completed honestly
    │   ├── DriverError             the driver raised, timed out or answered badly
    │   │   └── InputError          empty, oversized or otherwise unusable input
    │   ├── CostError               a cost that is negative, not finite, or cannot be measured
    │   ├── HookError               a campaign's analyst or steering hook failed or answered badly
    │   ├── ReceiptError            a platform receipt source answered badly or off-spec
    │   └── RunCancelled            the run was cancelled before it finished
    ├── WorkerError                 a game worker process failed
    │   ├── WorkerStartError        the worker did not become ready in time
    │   ├── WorkerCrashed           the worker died
    │   ├── WorkerTimeout           the worker did not answer in time
    │   └── WorkerProtocolError     the worker wrote garbage or an oversized message
    ├── CheckpointError             a checkpoint blob is corrupt or from another build
    ├── SigningKeyError             a signing key cannot be read or is of the wrong kind
    ├── LogError                    a transparency log was asked for a leaf or size it lacks
    ├── ServiceError                the proof service refused a request or could not be reached
    ├── PolicyError                 a policy envelope refused before anything ran (mainnet guard)
    └── NotSupportedError           a feature that is declared but not built yet

Verifiers do not raise on hostile input: they return a report whose checks say
what is wrong. These errors are for the places where bad input enters.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CheckpointError",
    "ContractError",
    "CostError",
    "DriverError",
    "FormatError",
    "HookError",
    "InputError",
    "LedgerError",
    "LogError",
    "SigningKeyError",
    "ServiceError",
    "ModeError",
    "NotSupportedError",
    "ObservationError",
    "PlayproofError",
    "PolicyError",
    "ReceiptError",
    "RunCancelled",
    "RunError",
    "TargetError",
    "WorkerCrashed",
    "WorkerError",
    "WorkerProtocolError",
    "WorkerStartError",
    "WorkerTimeout",
]


class PlayproofError(Exception):
    """Base class of every error playproof raises on purpose."""


class FormatError(PlayproofError):
    """A document (contract, record, key, input script) is malformed."""


class ContractError(FormatError):
    """A contract violates the contract language; ``violations`` lists every problem."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        count = len(self.violations)
        summary = "; ".join(self.violations)
        super().__init__(f"invalid contract ({count} violation{'s' * (count != 1)}): {summary}")


class ObservationError(FormatError):
    """An observation breaks the bounds of ARCHITECTURE 3.3 (nothing is silently shrunk)."""


class LedgerError(FormatError):
    """A campaign ledger is missing, malformed, disagrees with itself or with the run it continues.

    ``problems`` lists every mismatch found, each naming what disagrees.
    """

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__(f"ledger {path} rejected: {'; '.join(self.problems)}")


class TargetError(PlayproofError):
    """A target is unknown or cannot be built."""


class ModeError(TargetError):
    """A verification mode that the target's platform does not declare."""


class RunError(PlayproofError):
    """An episode could not be completed honestly; no record is produced."""


class DriverError(RunError):
    """The driver raised, timed out or answered with something unusable."""


class InputError(DriverError):
    """The driver's input is empty, oversized or otherwise unusable."""


class CostError(RunError):
    """A cost that is negative, not finite, or that cannot be measured under a budget."""


class HookError(RunError):
    """A campaign's analyst or steering hook raised or gave an answer that does not validate."""


class ReceiptError(RunError):
    """A platform receipt source (Steam, Xbox) answered badly, too much, too slowly or off-spec."""


class RunCancelled(RunError):
    """The run was cancelled before it finished."""


class WorkerError(PlayproofError):
    """A game worker process failed."""


class WorkerStartError(WorkerError):
    """The worker did not complete its readiness handshake in time."""


class WorkerCrashed(WorkerError):
    """The worker process died; the message carries its exit status and stderr tail."""


class WorkerTimeout(WorkerError):
    """The worker did not answer within its deadline (it has been killed)."""


class WorkerProtocolError(WorkerError):
    """The worker wrote a malformed or oversized message (it has been killed)."""


class CheckpointError(PlayproofError):
    """A checkpoint blob is corrupt, truncated or from another build."""


class SigningKeyError(PlayproofError):
    """A signing key cannot be read or is not an Ed25519 key."""


class LogError(PlayproofError):
    """A transparency log was asked for a leaf, tree size or proof it does not hold."""


class ServiceError(PlayproofError):
    """The proof service refused a request, answered badly, or could not be reached in time."""


class PolicyError(PlayproofError):
    """A policy envelope refused a deployment before anything ran (e.g. the mainnet guard)."""


class NotSupportedError(PlayproofError):
    """A declared feature that is not built yet; the message says what is missing."""
