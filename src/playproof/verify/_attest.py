"""Attestation: recompute what a run record earned, by the mode the record names.

Mode dispatch (the one place a verification mode is chosen)
-----------------------------------------------------------
A record's ``target.verification_mode`` decides how it is checked, and each
mode has one verifier, a :class:`ModeVerifier`. :data:`MODE_VERIFIERS` maps
every verifiable mode to the factory (``"module:function"``, imported on first
use) that builds its verifier from :class:`VerificationInputs`, the material a
caller holds: a game session to replay, a signed transcript, trusted keys,
and any other material by name in ``extra``. :func:`verify_by_mode` looks the
record's mode up there; :func:`attest_mode` runs the checks every mode shares
around the verifier:

1. ``record-well-formed``; then the verifier's :meth:`ModeVerifier.admit`
   gives its own gate checks (e.g. ``transcript-signed``), ``target-pinned``
   and the modes the platform declares (``mode-supported``);
2. ``decision-chain-intact`` and ``accounting-consistent`` from the record;
3. only when the pin and the mode passed, :meth:`ModeVerifier.reproduce`
   recomputes the milestones (a :class:`Reproduction`: the graded milestones
   with their turns, game over, the verifier's further checks, and ``trust``,
   the words saying what the verdict relied on beyond the verifier's own
   computation);
4. ``limits-respected`` and ``claims-reproduced`` against that result.

Adding a mode is one entry in :data:`MODE_VERIFIERS` naming a factory in a
module of its own (which may read ``VerificationInputs.extra``). A mode with no
entry is reported as ``mode-supported`` failed, never guessed at.

Replay (this module's own verifier) replays the record's input log on a game
session the verifier was handed (never one the record chose), recomputes the
decision chain and the accounting, checks the limits and the target pin, and
grades the claims against what replay reproduced. Nothing here trusts a
claimed result or raises on hostile input; every problem becomes a failed
check.

The score in the report is recomputed from the contract the verifier holds:
which milestones are identity milestones comes from the contract, not from the
record. When the caller names the verifier's library versions (and ROM
digests), the report lists those that differ from the recorder's, and warns by
name when replay then fails to reproduce the record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Final, Protocol, cast

from playproof.core.chain import ChainLinker, genesis_hash
from playproof.core.contract import Contract
from playproof.core.game import Game, ReplayResult, VerificationMode
from playproof.core.record import RunRecord, StopReason, parse_run_record
from playproof.core.replay import replay
from playproof.core.report import CheckResult, LibraryDifference, VerificationReport
from playproof.core.score import identity_ids
from playproof.errors import FormatError, PlayproofError
from playproof.sign import VerifyingKey

__all__ = [
    "MODE_VERIFIERS",
    "Admission",
    "ModeVerifier",
    "ModeVerifierFactory",
    "Reproduction",
    "VerificationInputs",
    "attest",
    "attest_mode",
    "library_differences",
    "parse_record",
    "verify_by_mode",
]


@dataclass(frozen=True)
class VerificationInputs:
    """What a caller holds to verify a record with; each mode's factory takes what it needs.

    ``game`` is a session to replay on (replay); ``transcript`` the signed
    transcript envelope's bytes and ``trusted_keys`` the keys the caller
    trusts (trusted recorder); ``extra`` carries material of other modes by
    name. ``libraries`` and ``roms`` describe the verifier's side.
    """

    game: Game | None = None
    transcript: bytes | None = None
    trusted_keys: Sequence[VerifyingKey] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    libraries: Mapping[str, str] | None = None
    roms: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Admission:
    """A verifier's gate: its own first checks, the target pin, and the platform's modes."""

    pin: CheckResult
    modes: tuple[VerificationMode, ...]
    checks: tuple[CheckResult, ...] = ()


@dataclass(frozen=True)
class Reproduction:
    """What a mode's verifier recomputed: milestones with turns, or why it could not.

    ``result`` is None when nothing could be recomputed (``failure`` says why);
    ``checks`` are the verifier's own checks after the shared ones; ``trust``
    says what the verdict relies on beyond the verifier's own computation.
    """

    result: ReplayResult | None
    failure: str = ""
    checks: tuple[CheckResult, ...] = ()
    trust: str | None = None
    source: str = "replay"
    """What recomputed the milestones, as claims' reasons name it (``the transcript``)."""


class ModeVerifier(Protocol):
    """One verification mode's verifier (see the module docstring)."""

    @property
    def mode(self) -> VerificationMode:
        """The mode this verifier checks."""
        ...

    def admit(self, record: RunRecord, contract: Contract) -> Admission:
        """Gate checks, the target pin and the platform's declared modes."""
        ...

    def reproduce(self, record: RunRecord, contract: Contract) -> Reproduction:
        """Recompute what the record earned (called only once admitted)."""
        ...


ModeVerifierFactory = Callable[[RunRecord, VerificationInputs], "ModeVerifier | str"]
"""Builds a mode's verifier from the caller's material, or says in words what is missing."""

MODE_VERIFIERS: Final[dict[VerificationMode, str]] = {
    VerificationMode.REPLAY: "playproof.verify._attest:replay_verifier",
    VerificationMode.TRUSTED_RECORDER: "playproof.verify._transcript:transcript_verifier",
    VerificationMode.PLATFORM_ATTESTED: "playproof.verify._receipts:receipts_verifier",
}
"""Each verifiable mode's factory, as ``module:function`` (imported on first use)."""


def _factory(mode: VerificationMode) -> ModeVerifierFactory | None:
    where = MODE_VERIFIERS.get(mode)
    if where is None:
        return None
    module, _, name = where.partition(":")
    return cast(ModeVerifierFactory, getattr(import_module(module), name))


def parse_record(data: Any) -> tuple[RunRecord | None, str]:
    """Read ``data`` (JSON text or parsed JSON) strictly into a RunRecord, or None and why.

    Strict as the published schema: a string seed, a ``"yes"`` for a boolean or
    a float turn is a malformed record, never coerced.
    """
    if isinstance(data, RunRecord):
        return data, "record is a validated RunRecord"
    try:
        record = parse_run_record(data)
    except FormatError as exc:
        return None, f"record is malformed: {exc}"
    return record, f"record matches {record.schema_}"


def _check(check_id: Any, passed: bool, reason: str) -> CheckResult:
    return CheckResult(id=check_id, passed=passed, reason=reason)


def _pin(record: RunRecord, game: Game, contract: Contract) -> CheckResult:
    pin, descriptor = record.target, game.descriptor
    problems = []
    if pin.game_id != descriptor.id:
        problems.append(f"record plays {pin.game_id!r}, verifier has {descriptor.id!r}")
    if pin.build_digest != descriptor.build.digest:
        problems.append("build digest differs from the verifier's build")
    if pin.contract_hash != contract.hash:
        problems.append("contract hash differs from the verifier's contract")
    if pin.platform != descriptor.platform.family:
        problems.append(f"platform {pin.platform!r} is not {descriptor.platform.family!r}")
    total = len(contract.milestones)
    if record.milestones_total != total:
        problems.append(f"record says {record.milestones_total} milestones, contract has {total}")
    identity = len(identity_ids(contract))
    if record.milestones_identity is not None and record.milestones_identity != identity:
        problems.append(
            f"record says {record.milestones_identity} identity milestones, contract has {identity}"
        )
    if problems:
        return _check("target-pinned", False, "; ".join(problems))
    return _check("target-pinned", True, f"{descriptor.id} build {descriptor.build.digest[:12]}")


def _mode(
    record: RunRecord, verifier: VerificationMode, declared: Sequence[VerificationMode]
) -> CheckResult:
    mode = record.target.verification_mode
    if mode not in declared:
        return _check("mode-supported", False, f"the platform does not declare mode {mode.value}")
    if mode is not verifier:
        return _check(
            "mode-supported",
            False,
            f"mode {mode.value} cannot be checked by {verifier.value} attestation",
        )
    return _check("mode-supported", True, f"mode {mode.value}")


def _chain(record: RunRecord) -> CheckResult:
    log = record.log
    if not log.positional:
        index, turn = next((i, t) for i, t in enumerate(log.turns, start=1) if t != i)
        return _check("decision-chain-intact", False, f"decision {index} is numbered turn {turn}")
    pin = record.target
    genesis = genesis_hash(pin.game_id, pin.build_digest, pin.contract_hash, seed=record.seed)
    # One tight loop over the columns: the same head as link_hash folded over
    # the decisions (a property test holds the two equal).
    try:
        head = ChainLinker(genesis).extend(1, log.inputs, log.costs_usd)
    except UnicodeEncodeError:
        return _check("decision-chain-intact", False, "an input is not valid Unicode")
    if head != record.chain_head:
        return _check(
            "decision-chain-intact", False, "recomputed chain head differs from the recorded head"
        )
    return _check("decision-chain-intact", True, f"{len(log)} decisions chain to the head")


def _accounting(record: RunRecord) -> CheckResult:
    log = record.log
    spent = 0.0
    latency = 0.0
    unmeasured = 0
    for cost in log.costs_usd:
        if cost is None:
            unmeasured += 1
        else:
            spent += cost
    for ms in log.latencies_ms:
        latency += ms
    acc = record.accounting
    problems = []
    # The decision loop stops a run before either total overflows, so no honest record has one.
    if not math.isfinite(spent):
        problems.append("costs add up past the largest finite amount, which no run records")
    elif spent != acc.spent_usd:
        problems.append(f"costs sum to {spent!r}, record says {acc.spent_usd!r}")
    if unmeasured != acc.unmeasured_decisions:
        problems.append(f"{unmeasured} unmeasured costs, record says {acc.unmeasured_decisions}")
    if not math.isfinite(latency):
        problems.append("latencies add up past the largest finite amount, which no run records")
    elif latency != acc.total_latency_ms:
        problems.append(f"latencies sum to {latency!r}, record says {acc.total_latency_ms!r}")
    if problems:
        return _check("accounting-consistent", False, "; ".join(problems))
    return _check("accounting-consistent", True, f"spent {spent:.6f} USD")


def _limits(record: RunRecord, result: ReplayResult | None, source: str = "replay") -> CheckResult:
    limits, count = record.limits, len(record.decisions)
    problems = []
    if count > limits.max_turns:
        problems.append(f"{count} decisions exceed the {limits.max_turns}-turn limit")
    if limits.budget_usd is not None:
        log = record.log
        spent = 0.0
        for turn, cost in zip(log.turns, log.costs_usd, strict=True):
            if cost is None:
                problems.append(f"turn {turn} has no measured cost under a budget")
                break
            if spent >= limits.budget_usd:
                problems.append(f"turn {turn} was taken after the budget was spent")
                break
            spent += cost
    stop = record.stop_reason
    expected = _expected_stop(record, result)
    if expected is not None and stop is not expected:
        problems.append(f"the loop would stop with {expected.value}, record says {stop.value}")
    if result is not None:
        over_at = result.over_at
        if limits.stop_at_game_over and over_at is not None and over_at < count:
            problems.append(f"the game was over at turn {over_at} but play went on to turn {count}")
        if record.game_over != (over_at is not None):
            problems.append(f"record says game_over={record.game_over}, {source} disagrees")
    if problems:
        return _check("limits-respected", False, "; ".join(problems))
    return _check(
        "limits-respected", True, f"{count} of {limits.max_turns} turns, stop: {stop.value}"
    )


def _expected_stop(record: RunRecord, result: ReplayResult | None) -> StopReason | None:
    """The stop reason the loop's check order implies, or None when a caller stopped it."""
    limits, count = record.limits, len(record.decisions)
    if result is None:
        return None
    if limits.stop_at_game_over and result.over_at is not None and result.over_at <= count:
        return StopReason.GAME_OVER
    if count >= limits.max_turns:
        return StopReason.TURN_LIMIT
    if limits.budget_usd is not None and record.accounting.spent_usd >= limits.budget_usd:
        return StopReason.BUDGET
    if record.stop_reason in (StopReason.STOPPED, StopReason.SEGMENT_LIMIT):
        return record.stop_reason
    return StopReason.STOPPED


def _claims(
    record: RunRecord, contract: Contract, result: ReplayResult, source: str = "replay"
) -> CheckResult:
    reproduced = {p.id: p.turn for p in result.verified}
    known = set(contract.ids)
    problems = []
    seen: set[str] = set()
    for claim in record.claimed:
        if claim.id in seen:
            problems.append(f"{claim.id} is claimed twice")
        seen.add(claim.id)
        if claim.id not in known:
            problems.append(f"{claim.id} is not a milestone of the contract")
        elif claim.id not in reproduced:
            problems.append(f"{claim.id} was not reproduced by {source}")
        elif reproduced[claim.id] != claim.turn:
            problems.append(
                f"{claim.id} is claimed at turn {claim.turn}, {source} reached it at turn "
                f"{reproduced[claim.id]}"
            )
    if record.identity_claimed is not None:
        identity = identity_ids(contract)
        said = set(record.identity_claimed)
        actual = {c.id for c in record.claimed if c.id in identity}
        if said != actual:
            problems.append(
                f"record counts {sorted(said) or 'none'} as identity milestones, the contract "
                f"makes {sorted(actual) or 'none'} of its claims identity milestones"
            )
    if problems:
        return _check("claims-reproduced", False, "; ".join(problems))
    unclaimed = [m for m in reproduced if m not in seen]
    note = f" (also reproduced, unclaimed: {', '.join(unclaimed)})" if unclaimed else ""
    return _check("claims-reproduced", True, f"{len(seen)} claims reproduced by {source}{note}")


def library_differences(
    record: RunRecord,
    libraries: Mapping[str, str] | None,
    roms: Mapping[str, str] | None = None,
) -> list[LibraryDifference]:
    """Libraries (and ROMs, as ``rom:NAME``) whose versions differ from the recorder's.

    Only what both sides know is compared: a record that names no libraries
    (written before they were recorded) yields nothing, and so does a
    verifier that names none.
    """
    found: list[LibraryDifference] = []
    pairs = [(record.provenance.libraries, libraries, "")]
    if record.provenance.roms is not None:
        pairs.append((record.provenance.roms, roms, "rom:"))
    for recorded, here, prefix in pairs:
        if not recorded or here is None:
            continue
        for name in sorted(set(recorded) | set(here)):
            then, now = recorded.get(name), here.get(name)
            if then != now:
                found.append(LibraryDifference(name=prefix + name, recorded=then, verifier=now))
    return found


_DIVERGED = frozenset({"target-pinned", "claims-reproduced", "limits-respected"})
"""Checks whose failure means replay did not reproduce the run as recorded."""


def _warnings(checks: Sequence[CheckResult], differences: Sequence[LibraryDifference]) -> list[str]:
    if not differences or not any(c.id in _DIVERGED and not c.passed for c in checks):
        return []
    named = "; ".join(d.text for d in differences)
    return [
        f"replay did not reproduce the record and the verifier's libraries differ from the "
        f"recorder's: {named}; verify again with the recorded versions installed"
    ]


class ReplayVerifier:
    """Replay attestation: the record's inputs replayed on a game session the verifier holds."""

    mode = VerificationMode.REPLAY

    def __init__(self, game: Game) -> None:
        self.game = game

    def admit(self, record: RunRecord, contract: Contract) -> Admission:
        """The pin against the game's descriptor; the modes its platform declares."""
        return Admission(
            pin=_pin(record, self.game, contract), modes=self.game.descriptor.platform.modes
        )

    def reproduce(self, record: RunRecord, contract: Contract) -> Reproduction:
        """Replay the input log from the seed and grade it against ``contract``."""
        try:
            return Reproduction(replay(self.game, record.seed, record.inputs, contract))
        except PlayproofError as exc:
            return Reproduction(None, failure=f"replay failed: {exc}")


def replay_verifier(record: RunRecord, inputs: VerificationInputs) -> ModeVerifier | str:
    """The replay verifier on the caller's game (a string saying why when there is none)."""
    if inputs.game is None:
        return "replay needs a game session to replay the record on"
    return ReplayVerifier(inputs.game)


def attest(
    data: Any,
    game: Game,
    contract: Contract,
    *,
    libraries: Mapping[str, str] | None = None,
    roms: Mapping[str, str] | None = None,
) -> VerificationReport:
    """Verify a run record (model or raw JSON) by replay on ``game`` against ``contract``.

    ``verified`` in the report lists what replay reproduced, in the order it
    passed; ``identity_verified`` the identity milestones among them. The
    verdict is ``clean`` only when every check passes. ``libraries`` (name ->
    version) and ``roms`` (name -> SHA-256) describe the verifier's side; when
    given, differences from the recorder's are reported, and a warning names
    them when replay diverged.
    """
    return attest_mode(data, ReplayVerifier(game), contract, libraries=libraries, roms=roms)


def _rejected(contract: Contract, checks: Sequence[CheckResult]) -> VerificationReport:
    return VerificationReport.from_checks(
        checks,
        milestones_total=len(contract.milestones),
        milestones_identity=len(identity_ids(contract)),
    )


def verify_by_mode(data: Any, contract: Contract, inputs: VerificationInputs) -> VerificationReport:
    """Verify a record by the mode it names, with the verifier :data:`MODE_VERIFIERS` lists."""
    record, why = parse_record(data)
    if record is None:
        return _rejected(contract, [_check("record-well-formed", False, why)])
    mode = record.target.verification_mode
    factory = _factory(mode)
    verifier = (
        factory(record, inputs)
        if factory is not None
        else f"no verifier for mode {mode.value} is available in this version of playproof"
    )
    if isinstance(verifier, str):
        return VerificationReport.from_checks(
            [_check("record-well-formed", True, why), _check("mode-supported", False, verifier)],
            milestones_total=len(contract.milestones),
            milestones_identity=len(identity_ids(contract)),
            target=record.target.label,
            calibrated=record.target.calibrated,
        )
    return attest_mode(record, verifier, contract, libraries=inputs.libraries, roms=inputs.roms)


def attest_mode(
    data: Any,
    verifier: ModeVerifier,
    contract: Contract,
    *,
    libraries: Mapping[str, str] | None = None,
    roms: Mapping[str, str] | None = None,
) -> VerificationReport:
    """Verify a record with ``verifier`` around the checks every mode shares (module docstring)."""
    identity = identity_ids(contract)
    record, why = parse_record(data)
    if record is None:
        return _rejected(contract, [_check("record-well-formed", False, why)])
    admission = verifier.admit(record, contract)
    pin = admission.pin
    mode = _mode(record, verifier.mode, admission.modes)
    checks = [
        _check("record-well-formed", True, why),
        *admission.checks,
        pin,
        mode,
        _chain(record),
        _accounting(record),
    ]
    result: ReplayResult | None = None
    reproduction = Reproduction(None, failure="not replayed: the target pin or mode failed")
    admitted = pin.passed and mode.passed and all(c.passed for c in admission.checks)
    if admitted:
        reproduction = verifier.reproduce(record, contract)
        result = reproduction.result
    checks += reproduction.checks
    claims = (
        _claims(record, contract, result, reproduction.source)
        if result is not None
        else _check("claims-reproduced", False, reproduction.failure)
    )
    checks += [_limits(record, result, reproduction.source), claims]
    verified: Sequence[str] = [p.id for p in result.verified] if result is not None else ()
    differences = library_differences(record, libraries, roms)
    return VerificationReport.from_checks(
        checks,
        verified=verified,
        milestones_total=len(contract.milestones),
        milestones_identity=len(identity),
        identity_verified=[m for m in verified if m in identity],
        target=record.target.label,
        calibrated=record.target.calibrated,
        library_differences=differences,
        warnings=_warnings(checks, differences),
        trust=reproduction.trust if admitted else None,
    )
