"""Transcript attestation: verify a trusted-recorder run from its signed transcript.

The game is never run again. The verifier:

1. ``transcript-signed``: reads the transcript envelope (bounded, strict),
   checks that its payload is the one the record pins (SHA-256) and that it
   carries a valid Ed25519 signature by the recorder key the record names,
   which must be among the keys the verifier trusts;
2. ``target-pinned``: the transcript's game, build digest and platform are
   the record's, its build digest is recomputed from the spec, pinned file
   digests and evidence rules it carries (so the rules applied are the ones
   the build digest pins), and the contract hash is the verifier's;
3. ``mode-supported``: the record's mode is ``trusted-recorder`` and the
   transcript's platform declares it;
4. ``transcript-consistent``: the seed and every input are the record's, in
   order, one step per decision, and every file's bytes match its digest;
5. recomputes the evidence of every step with the transcript's rules and
   grades it against the verifier's contract (``claims-reproduced``,
   ``limits-respected``).

The report's ``trust`` names what was relied on: the recorder key attested
the transcript; the game was not re-executed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from playproof.core.canonical import sha256_hex
from playproof.core.contract import Contract
from playproof.core.game import ReplayResult, VerificationMode
from playproof.core.record import RecorderPin, RunRecord
from playproof.core.report import CheckId, CheckResult
from playproof.core.tracker import MilestoneTracker
from playproof.core.transcript import (
    MAX_TRANSCRIPT_BYTES,
    TRANSCRIPT_PAYLOAD_TYPE,
    EvidenceReader,
    Transcript,
    build_digest_of,
    parse_transcript,
)
from playproof.errors import FormatError
from playproof.sign import VerifyingKey, parse_envelope
from playproof.sign._dsse import signing_key_id
from playproof.verify._attest import (
    Admission,
    ModeVerifier,
    Reproduction,
    VerificationInputs,
)

__all__ = ["TranscriptVerifier", "transcript_trust", "transcript_verifier"]


def _check(check_id: CheckId, passed: bool, reason: str) -> CheckResult:
    return CheckResult(id=check_id, passed=passed, reason=reason)


def transcript_trust(key_id: str) -> str:
    """The words a report carries for a verdict that rests on a recorder's transcript."""
    return (
        f"the recorder key {key_id[:16]} attested this transcript; the game was not re-executed, "
        "so the score is only as sound as that recorder"
    )


@dataclass
class _Opened:
    transcript: Transcript | None
    check: CheckResult


def _open(record: RunRecord, envelope: bytes | None, keys: Sequence[VerifyingKey]) -> _Opened:
    pin = record.recorder
    if pin is None:
        return _Opened(None, _check("transcript-signed", False, "the record pins no transcript"))
    if envelope is None:
        return _Opened(
            None,
            _check(
                "transcript-signed",
                False,
                "no transcript given; pass the run's NAME.transcript.json (--transcript FILE)",
            ),
        )
    if len(envelope) > MAX_TRANSCRIPT_BYTES * 2:
        return _Opened(
            None, _check("transcript-signed", False, "the transcript envelope is too large")
        )
    try:
        parsed = parse_envelope(envelope)
        payload = parsed.payload_bytes()
    except FormatError as exc:
        return _Opened(None, _check("transcript-signed", False, f"transcript: {exc}"))
    if parsed.payloadType != TRANSCRIPT_PAYLOAD_TYPE:
        return _Opened(
            None,
            _check(
                "transcript-signed",
                False,
                f"payload type {parsed.payloadType[:80]!r} is not a transcript",
            ),
        )
    if sha256_hex(payload) != pin.transcript_sha256:
        return _Opened(
            None,
            _check(
                "transcript-signed",
                False,
                "the transcript's digest is not the one the record pins (it was changed or "
                "belongs to another run)",
            ),
        )
    named = [key for key in keys if key.key_id == pin.key_id]
    if not named:
        return _Opened(
            None,
            _check(
                "transcript-signed",
                False,
                f"the recorder key {pin.key_id[:16]} the record names is not trusted; name its "
                "public key with --key FILE.pub.pem",
            ),
        )
    key_id, why = signing_key_id(parsed, named, payload)
    if key_id is None:
        return _Opened(
            None,
            _check("transcript-signed", False, f"no valid recorder signature: {why}"),
        )
    try:
        transcript = parse_transcript(payload)
    except FormatError as exc:
        return _Opened(None, _check("transcript-signed", False, f"signed but malformed: {exc}"))
    return _Opened(
        transcript,
        _check("transcript-signed", True, f"signed by the trusted recorder key {key_id[:16]}"),
    )


class TranscriptVerifier:
    """Trusted-recorder attestation from a signed transcript (module docstring)."""

    mode = VerificationMode.TRUSTED_RECORDER

    def __init__(self, envelope: bytes | None, keys: Sequence[VerifyingKey]) -> None:
        self.envelope = envelope
        self.keys = tuple(keys)
        self._opened: tuple[RecorderPin | None, _Opened] | None = None

    def _transcript(self, record: RunRecord) -> _Opened:
        # Opened once per record pin: a verifier used again for another record checks the
        # transcript against that record's own digest and recorder key, never the last one's.
        if self._opened is None or self._opened[0] != record.recorder:
            self._opened = (record.recorder, _open(record, self.envelope, self.keys))
        return self._opened[1]

    def admit(self, record: RunRecord, contract: Contract) -> Admission:
        """The signature gate, then the pin against the transcript's own build."""
        opened = self._transcript(record)
        transcript = opened.transcript
        if transcript is None:
            pin = _check(
                "target-pinned", False, "not checked: no trusted transcript names the build"
            )
            # The mode is judged on the record alone here; the pin failing stops the rest.
            return Admission(pin=pin, modes=(self.mode,), checks=(opened.check,))
        target = record.target
        problems = []
        if transcript.game_id != target.game_id:
            problems.append(f"record plays {target.game_id!r}, transcript {transcript.game_id!r}")
        if transcript.build_digest != target.build_digest:
            problems.append("the transcript's build digest differs from the record's")
        rebuilt = build_digest_of(transcript.spec, transcript.pins, transcript.rules)
        if rebuilt != transcript.build_digest:
            problems.append("the transcript's spec, pins and rules do not make its build digest")
        if transcript.platform != target.platform:
            problems.append(f"platform {target.platform!r} is not {transcript.platform!r}")
        if transcript.contract_hash != contract.hash or target.contract_hash != contract.hash:
            problems.append("contract hash differs from the verifier's contract")
        total = len(contract.milestones)
        if record.milestones_total != total:
            problems.append(
                f"record says {record.milestones_total} milestones, contract has {total}"
            )
        if problems:
            pin = _check("target-pinned", False, "; ".join(problems))
        else:
            pin = _check(
                "target-pinned", True, f"{target.game_id} build {target.build_digest[:12]}"
            )
        return Admission(pin=pin, modes=transcript.modes, checks=(opened.check,))

    def reproduce(self, record: RunRecord, contract: Contract) -> Reproduction:
        """Recompute every step's evidence from the transcript and grade it."""
        transcript = self._transcript(record).transcript
        assert transcript is not None  # admitted only with a trusted transcript
        source = "the transcript"
        problems = _consistency(record, transcript)
        if problems:
            failure = "; ".join(problems)
            return Reproduction(
                None,
                failure=f"not recomputed: {failure}",
                checks=(_check("transcript-consistent", False, failure),),
                source=source,
            )
        reader = EvidenceReader(transcript.rules)
        tracker = MilestoneTracker(contract)
        over_at: int | None = None
        events: dict[str, None] = {}
        try:
            for turn, step in enumerate(transcript.steps):
                evidence = reader.read(step)
                tracker.observe(evidence, turn)
                events.update(dict.fromkeys(evidence.events))
                if over_at is None and reader.over(step):
                    over_at = turn
        except FormatError as exc:
            return Reproduction(
                None,
                failure=f"not recomputed: {exc}",
                checks=(_check("transcript-consistent", False, str(exc)),),
                source=source,
            )
        steps = len(transcript.steps) - 1
        result = ReplayResult(
            verified=tracker.verified, turns=steps, over_at=over_at, events=tuple(events)
        )
        assert record.recorder is not None
        return Reproduction(
            result,
            checks=(
                _check(
                    "transcript-consistent",
                    True,
                    f"{steps} steps match the record's inputs; evidence recomputed from the "
                    "transcript",
                ),
            ),
            trust=transcript_trust(record.recorder.key_id),
            source=source,
        )


def _consistency(record: RunRecord, transcript: Transcript) -> list[str]:
    problems = []
    if transcript.seed != record.seed:
        problems.append(
            f"the transcript's seed {transcript.seed} is not the record's {record.seed}"
        )
    for index, step in enumerate(transcript.steps):
        if step.turn != index:
            problems.append(f"transcript step {index} is numbered {step.turn}")
            break
    if transcript.steps[0].input is not None:
        problems.append("the transcript's launch step has an input")
    inputs = transcript.inputs
    if len(inputs) != len(record.inputs):
        problems.append(
            f"the transcript has {len(inputs)} inputs, the record {len(record.inputs)} decisions"
        )
    else:
        differing = next(
            (i for i, (a, b) in enumerate(zip(inputs, record.inputs, strict=True)) if a != b), None
        )
        if differing is not None:
            problems.append(f"input {differing + 1} differs between the transcript and the record")
    return problems


def transcript_verifier(record: RunRecord, inputs: VerificationInputs) -> ModeVerifier | str:
    """The transcript verifier over the caller's transcript and trusted keys."""
    return TranscriptVerifier(inputs.transcript, inputs.trusted_keys)
