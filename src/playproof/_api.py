"""The top-level API: play a target, sign the record, verify a signed record.

>>> import playproof
>>> record = playproof.run("native/2048", playproof.BaselineDriver("round-robin"), max_turns=40)
>>> record.stop_reason.value, len(record.decisions)
('turn-limit', 40)
>>> playproof.verify_record(record).verdict
'clean'
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from playproof._provenance import source_checkout
from playproof.core.agent import Driver
from playproof.core.contract import Contract
from playproof.core.game import Game, VerificationMode
from playproof.core.record import RecorderPin, RunRecord, RunSettings
from playproof.core.report import CheckResult, VerificationReport
from playproof.core.transcript import Transcript
from playproof.drivers import CallableDriver
from playproof.engine import (
    DEFAULT_HISTORY,
    DEFAULT_MAX_TURNS,
    Analyst,
    CampaignResult,
    EpisodeConfig,
    Ledger,
    SegmentReport,
    SteeringHook,
    TurnReport,
    check_mode,
    play,
    run_campaign,
)
from playproof.errors import PlayproofError, TargetError
from playproof.sign import SigningKey, VerifyingKey, verify_envelope
from playproof.targets import (
    Target,
    adhoc_family,
    adhoc_target,
    get_target,
    target_libraries,
    target_roms,
)
from playproof.targets._adhoc import code_named_by
from playproof.verify import VerificationInputs, attest, parse_record, verify_by_mode
from playproof.verify._receipts import attest_receipts

__all__ = [
    "acampaign",
    "arun",
    "campaign",
    "resolve_target",
    "run",
    "verify_record",
    "verify_signed",
]


def resolve_target(
    target: str | Target, contract: Contract | None = None, *, rom_sha256: str | None = None
) -> Target:
    """A Target from a registry name, an ad-hoc spec (``gym:CartPole-v1``) or a Target.

    An ad-hoc spec needs ``contract``. A contract given for a packaged target
    replaces the shipped one, and the target is then uncalibrated.
    ``rom_sha256`` is the digest a ``gb:`` ROM file must have.
    """
    if isinstance(target, str) and adhoc_family(target) is not None:
        if contract is None:
            raise TargetError(f"{target} is an ad-hoc target: give it a contract (--contract FILE)")
        return adhoc_target(target, contract, rom_sha256=rom_sha256)
    resolved = get_target(target) if isinstance(target, str) else target
    if contract is not None and contract != resolved.contract:
        resolved = dataclasses.replace(resolved, contract=contract, user_contract=True)
    return resolved


def _config(
    target: Target,
    seed: int | None,
    budget_usd: float | None,
    max_turns: int,
    stop_at_game_over: bool,
    mode: VerificationMode | str | None,
    guidance: str | None,
    settings: RunSettings,
    recorder: Callable[[Transcript], RecorderPin] | None = None,
) -> EpisodeConfig:
    """The episode config of a run on ``target`` (seed defaults to the target's reference seed)."""
    return EpisodeConfig(
        seed=target.spec.reference_seed if seed is None else seed,
        budget_usd=budget_usd,
        max_turns=max_turns,
        stop_at_game_over=stop_at_game_over,
        mode=VerificationMode(mode) if isinstance(mode, str) else mode,
        guidance=guidance,
        libraries=target_libraries(target),
        target_name=target.name,
        calibrated=target.calibrated,
        roms=target_roms(target),
        source=source_checkout(),
        settings=settings,
        seal=recorder,
    )


def _settings(target: Target, worker: bool | None, given: RunSettings | None) -> RunSettings:
    """The run settings to record, with where the game actually runs filled in."""
    in_worker = target.spec.isolation == "worker" if worker is None else worker
    settings = given or RunSettings()
    return settings.model_copy(update={"worker": in_worker, "history": DEFAULT_HISTORY})


def _as_driver(agent: Driver | Callable[..., Any]) -> Driver:
    if hasattr(agent, "act") and hasattr(agent, "kind"):
        return agent  # type: ignore[return-value]
    return CallableDriver(agent)


async def arun(
    target: str | Target,
    agent: Driver | Callable[..., Any],
    *,
    seed: int | None = None,
    budget_usd: float | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    stop_at_game_over: bool = True,
    mode: VerificationMode | str | None = None,
    worker: bool | None = None,
    guidance: str | None = None,
    cancel: asyncio.Event | None = None,
    on_turn: Callable[[TurnReport], None] | None = None,
    contract: Contract | None = None,
    settings: RunSettings | None = None,
    recorder: Callable[[Transcript], RecorderPin] | None = None,
) -> RunRecord:
    """Play ``target`` with ``agent`` (a Driver or a plain function) and return the record.

    ``target`` is a registry name, an ad-hoc spec such as ``gym:CartPole-v1``
    (with ``contract``) or a Target. ``seed`` defaults to the target's
    reference seed. The mode is checked against the target's platform before
    the game starts. ``settings`` is recorded as provenance (the caller removes
    secrets); the record's ``score`` is earned over earnable. A
    ``trusted-recorder`` run needs ``recorder`` (e.g.
    ``playproof.adapters.desktop.TranscriptSealer``), which signs the
    transcript of the one live pass; the record pins it.
    """
    resolved = resolve_target(target, contract)
    config = _config(
        resolved,
        seed,
        budget_usd,
        max_turns,
        stop_at_game_over,
        mode,
        guidance,
        _settings(resolved, worker, settings),
        recorder,
    )
    driver = _as_driver(agent)
    game = resolved.open(worker=worker)
    try:
        check_mode(game, config.mode)
        return await play(game, resolved.contract, driver, config, cancel=cancel, on_turn=on_turn)
    finally:
        game.close()


def run(target: str | Target, agent: Driver | Callable[..., Any], **options: Any) -> RunRecord:
    """Blocking form of :func:`arun` (same arguments)."""
    return asyncio.run(arun(target, agent, **options))


async def acampaign(
    target: str | Target,
    agent: Driver | Callable[..., Any],
    *,
    segment_turns: int,
    ledger: str | Path | None = None,
    ledger_key: SigningKey | None = None,
    seed: int | None = None,
    budget_usd: float | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    stop_at_game_over: bool = True,
    mode: VerificationMode | str | None = None,
    worker: bool | None = None,
    guidance: str | None = None,
    analyst: Analyst | None = None,
    steering: SteeringHook | None = None,
    segments: int | None = None,
    saved: Ledger | None = None,
    cancel: asyncio.Event | None = None,
    on_turn: Callable[[TurnReport], None] | None = None,
    on_segment: Callable[[SegmentReport], None] | None = None,
    contract: Contract | None = None,
    settings: RunSettings | None = None,
    guard: str | Path | None = None,
) -> CampaignResult:
    """Play (or resume from ``ledger``) a campaign of ``segment_turns``-turn segments.

    The finished campaign's ``record`` is the same run record a single episode
    with the same driver, seed and limits produces. A ``ledger`` file needs
    ``ledger_key``: every save is signed with it and a resume refuses a ledger
    it did not sign (use the key that will sign the record). ``saved`` is the
    ledger already read from ``ledger`` with ``playproof.engine.load_ledger``,
    so the file is not read twice (it is still checked in full). ``guard`` is
    a folder out of the agent's reach where the campaign's last save is noted,
    so a resume refuses an older copy of the ledger (see
    ``playproof.engine.run_campaign``).
    """
    resolved = resolve_target(target, contract)
    config = _config(
        resolved,
        seed,
        budget_usd,
        max_turns,
        stop_at_game_over,
        mode,
        guidance,
        _settings(resolved, worker, settings),
    )
    driver = _as_driver(agent)
    game = resolved.open(worker=worker)
    try:
        return await run_campaign(
            game,
            resolved.contract,
            driver,
            config,
            segment_turns=segment_turns,
            ledger=Path(ledger) if ledger is not None else None,
            ledger_key=ledger_key,
            analyst=analyst,
            steering=steering,
            segments=segments,
            saved=saved,
            cancel=cancel,
            on_turn=on_turn,
            on_segment=on_segment,
            guard=Path(guard) if guard is not None else None,
        )
    finally:
        game.close()


def campaign(
    target: str | Target, agent: Driver | Callable[..., Any], **options: Any
) -> CampaignResult:
    """Blocking form of :func:`acampaign` (same arguments)."""
    return asyncio.run(acampaign(target, agent, **options))


def verify_record(
    record: RunRecord | Any,
    *,
    target: str | Target | None = None,
    game: Game | None = None,
    contract: Contract | None = None,
    worker: bool | None = None,
    transcript: bytes | None = None,
    recorder_keys: Sequence[VerifyingKey] = (),
) -> VerificationReport:
    """Verify an unsigned record by replay on the target it names (or the one given).

    ``target`` may be an ad-hoc spec; a record played on one needs ``contract``
    (the verifier's own copy; its hash must match the record's pin). For a
    ``gb:`` ROM the file must have the recorded SHA-256. Never raises on a
    malformed record: the report's checks say what is wrong. The report's score
    is recomputed from the contract, and library versions that differ from the
    recorder's are listed (with a warning naming them when replay diverges).

    A ``trusted-recorder`` record is verified from ``transcript`` (the signed
    transcript envelope's bytes) signed by one of ``recorder_keys``; the game
    is never opened, and the report's ``trust`` says what was relied on.
    """
    parsed, why = parse_record(record)
    if parsed is None:
        return VerificationReport.from_checks(
            [CheckResult(id="record-well-formed", passed=False, reason=why)]
        )
    mode = parsed.target.verification_mode
    if mode is not VerificationMode.REPLAY:
        # The verifier's target decides how a record may be verified, never the record:
        # one that names a target (or is checked against one) must be in a mode it declares.
        refused = _undeclared_mode(parsed, target, contract, worker, game)
        if refused is not None:
            return refused
    if mode is VerificationMode.PLATFORM_ATTESTED:
        # The record pins its own evidence (the providers' responses); no game is opened.
        # A receipts spec is no packaged target: never calibrated.
        return _as_verified(attest_receipts(parsed), parsed.target.name or parsed.target.game_id)
    if mode is VerificationMode.TRUSTED_RECORDER:
        return _verify_transcript(parsed, target, contract, transcript, recorder_keys)
    if game is not None and contract is not None:
        return attest(parsed, game, contract)
    name = target if target is not None else parsed.target.name
    if name is None:
        return VerificationReport.from_checks(
            [
                CheckResult(
                    id="target-pinned",
                    passed=False,
                    reason="record names no registered target; pass one",
                )
            ]
        )
    chosen = code_named_by(name) if isinstance(name, str) and target is None else None
    if isinstance(name, str) and chosen is not None:  # the record would pick code to run
        return VerificationReport.from_checks(
            [
                CheckResult(
                    id="target-pinned",
                    passed=False,
                    reason=f"the record names the target {name[:200]}, and {chosen}: "
                    "name it yourself to verify it (--target)",
                )
            ]
        )
    roms = parsed.provenance.roms or {}
    pinned_rom = next(iter(roms.values())) if len(roms) == 1 else None
    try:
        resolved = resolve_target(name, contract, rom_sha256=pinned_rom)
        opened = resolved.open(worker=worker)
    except TargetError as exc:
        return VerificationReport.from_checks(
            [CheckResult(id="target-pinned", passed=False, reason=str(exc))],
            target=parsed.target.label,
            calibrated=parsed.target.calibrated,
        )
    try:
        report = attest(
            parsed,
            opened,
            resolved.contract,
            libraries=target_libraries(resolved),
            roms=target_roms(resolved),
        )
    finally:
        opened.close()
    return _as_verified(report, resolved.name, calibrated=resolved.calibrated)


def _as_verified(
    report: VerificationReport, name: str, *, calibrated: bool = False
) -> VerificationReport:
    """``report`` naming the target as the verifier resolved it, not as the record says.

    A record's own ``calibrated`` flag and target name are claims: the label a
    report carries (and a listing shows) is the verifier's.
    """
    label = name if calibrated else f"{name} (uncalibrated)"
    return report.model_copy(update={"target": label, "calibrated": calibrated})


def _adhoc_modes(spec: str) -> tuple[VerificationMode, ...]:
    """The modes an ad-hoc spec's family declares: ``desktop:`` programs are verified from
    their transcript, every other family by replay."""
    if adhoc_family(spec) == "desktop":
        return (VerificationMode.TRUSTED_RECORDER,)
    return (VerificationMode.REPLAY,)


def _declared_modes(resolved: Target, worker: bool | None) -> tuple[VerificationMode, ...]:
    """The verification modes ``resolved``'s platform declares.

    An ad-hoc spec's family decides (:func:`_adhoc_modes`); a registry
    target's game is opened and its descriptor asked.
    """
    if resolved.adhoc is not None:
        return _adhoc_modes(resolved.adhoc)
    opened = resolved.open(worker=worker)
    try:
        return tuple(opened.descriptor.platform.modes)
    finally:
        opened.close()


def _undeclared_mode(
    record: RunRecord,
    target: str | Target | None,
    contract: Contract | None,
    worker: bool | None,
    game: Game | None,
) -> VerificationReport | None:
    """A refusal when the game or target in play (given, else named by the record) lacks
    the record's mode."""
    name = target if target is not None else record.target.name
    if game is not None:
        name = game.descriptor.id
    if name is None:
        return None  # the record carries its own spec (receipts): its mode is the spec's
    mode = record.target.verification_mode
    label = name if isinstance(name, str) else name.name
    try:
        if game is not None:
            declared: tuple[VerificationMode, ...] = tuple(game.descriptor.platform.modes)
        elif isinstance(name, str) and adhoc_family(name) is not None:
            declared = _adhoc_modes(name)  # no contract needed to know an ad-hoc family's
        else:
            declared = _declared_modes(resolve_target(name, contract), worker)
    except (TargetError, PlayproofError) as exc:
        reason = str(exc)
    else:
        if mode in declared:
            return None
        words = ", ".join(m.value for m in declared)
        reason = f"{label[:128]} declares {words}; the record asks to be verified {mode.value}"
    return VerificationReport.from_checks(
        [
            CheckResult(
                id="record-well-formed", passed=True, reason="record is a validated RunRecord"
            ),
            CheckResult(id="mode-supported", passed=False, reason=reason),
        ],
        target=f"{label[:128]} (uncalibrated)",
        calibrated=False,
    )


def _verify_transcript(
    record: RunRecord,
    target: str | Target | None,
    contract: Contract | None,
    transcript: bytes | None,
    keys: Sequence[VerifyingKey],
) -> VerificationReport:
    """A trusted-recorder record, verified from its transcript (the game is not opened).

    Against a registry target (one whose platform declares the mode, checked
    before), the record must pin that target's build, whatever its transcript says.
    """
    name = target if target is not None else record.target.name
    label = record.target.game_id if name is None else name if isinstance(name, str) else name.name
    calibrated = False
    try:
        if name is None or (isinstance(name, str) and adhoc_family(name) is not None):
            if contract is None:
                raise TargetError(
                    "a trusted-recorder record of an ad-hoc target is verified against your "
                    "copy of its contract: pass --contract FILE"
                )
        else:
            resolved = resolve_target(name, contract)
            contract, calibrated = resolved.contract, resolved.calibrated
            if resolved.adhoc is None and record.target.build_digest != resolved.spec.build_digest:
                raise TargetError(
                    f"the record pins build {record.target.build_digest[:12]}, "
                    f"{resolved.name} is build {resolved.spec.build_digest[:12]}"
                )
    except TargetError as exc:
        return VerificationReport.from_checks(
            [CheckResult(id="target-pinned", passed=False, reason=str(exc))],
            target=f"{label[:128]} (uncalibrated)",
            calibrated=False,
        )
    report = verify_by_mode(
        record, contract, VerificationInputs(transcript=transcript, trusted_keys=tuple(keys))
    )
    return _as_verified(report, label, calibrated=calibrated)


def verify_signed(
    envelope: bytes | str | Any,
    keys: VerifyingKey | Sequence[VerifyingKey] | None,
    *,
    target: str | Target | None = None,
    worker: bool | None = None,
    contract: Contract | None = None,
    transcript: bytes | None = None,
) -> VerificationReport:
    """Check the signature of a signed record, then verify the record by replay.

    Never raises on hostile input. Replay runs only when the signature checks
    pass: an unsigned claim is not worth the compute. ``target`` and
    ``contract`` are as for :func:`verify_record`; a ``trusted-recorder``
    record is checked against ``transcript``, whose recorder key must be
    among ``keys``.
    """
    verdict = verify_envelope(envelope, keys)
    if not verdict.clean or verdict.record is None:
        return VerificationReport.from_checks(verdict.checks, key_id=verdict.key_id)
    trusted = [keys] if isinstance(keys, VerifyingKey) else list(keys or ())
    replayed = verify_record(
        verdict.record,
        target=target,
        worker=worker,
        contract=contract,
        transcript=transcript,
        recorder_keys=trusted,
    )
    return VerificationReport.from_checks(
        [*verdict.checks, *replayed.checks],
        **replayed.model_dump(exclude={"verdict", "checks", "key_id"}),
        key_id=verdict.key_id,
    )
