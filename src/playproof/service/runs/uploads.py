"""What an upload carries besides the signed record, by verification mode.

A replay record is uploaded as its bare DSSE envelope (``application/json``).
A ``trusted-recorder`` record is uploaded as a run upload
(``playproof/run-upload/v1``, media type
``application/vnd.playproof.run-upload+json``): the envelope, the
recorder-signed transcript the record pins, and, for a target the service
does not package, the contract to verify against. The transcript and the
contract are stored as content-addressed artifacts of the run, in the same
transaction as the run, and handed to the server's verification. A
``platform-attested`` record pins its providers' responses itself and is
uploaded bare.

Recorder keys are the owner's registered keys: the service trusts a
transcript as far as it trusts the owner's signature on the record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from playproof.core.contract import Contract, parse_contract
from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord
from playproof.errors import ContractError, FormatError
from playproof.service.artifacts.models import Artifact, RunArtifact
from playproof.service.artifacts.roles import MAX_ARTIFACT_BYTES, ArtifactBytes, Role
from playproof.service.problems import Problem
from playproof.sign import RUN_UPLOAD_MEDIA_TYPE, Envelope, RunUpload, parse_envelope

__all__ = [
    "MAX_TRANSCRIPT_UPLOAD_BYTES",
    "RECORDER_TRANSCRIPT",
    "SIDE_NAMES",
    "VERIFIER_CONTRACT",
    "Unpacked",
    "is_run_upload",
    "read_contract_artifact",
    "side_artifacts",
    "unpack",
    "uploaded_sides",
]

RECORDER_TRANSCRIPT = Role("recorder-transcript", "application/vnd.playproof.transcript+json")
"""A trusted-recorder run's transcript: the recorder-signed DSSE envelope, as uploaded."""
VERIFIER_CONTRACT = Role("verifier-contract", "application/vnd.playproof.contract+json")
"""The contract a trusted-recorder run of an unpackaged target is verified against."""

MAX_TRANSCRIPT_UPLOAD_BYTES = MAX_ARTIFACT_BYTES
"""The largest transcript envelope an upload may carry (it is stored as one artifact)."""


@dataclass(frozen=True)
class Unpacked:
    """An upload's envelope and what came with it."""

    envelope: Envelope
    transcript: bytes | None = None
    contract: Contract | None = None


def is_run_upload(content_type: str | None) -> bool:
    """Whether a request's media type says the body is a run upload (not a bare envelope)."""
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == RUN_UPLOAD_MEDIA_TYPE


def unpack(body: bytes, *, bundled: bool) -> Unpacked:
    """The envelope (and transcript, contract) of a body; a 422 problem naming what is wrong."""
    if not bundled:
        try:
            return Unpacked(parse_envelope(body))
        except FormatError as exc:
            raise Problem(422, "envelope-well-formed", f"envelope-well-formed: {exc}") from exc
    try:
        upload = RunUpload.parse(body)
    except FormatError as exc:
        raise Problem(422, "upload-well-formed", f"upload-well-formed: {exc}") from exc
    transcript = upload.transcript.to_bytes() if upload.transcript is not None else None
    if transcript is not None and len(transcript) > MAX_TRANSCRIPT_UPLOAD_BYTES:
        raise Problem(
            413,
            "too-large",
            f"the transcript is over the {MAX_TRANSCRIPT_UPLOAD_BYTES}-byte limit",
        )
    return Unpacked(upload.envelope, transcript, upload.contract)


def side_artifacts(unpacked: Unpacked, record: RunRecord, packaged: bool) -> list[ArtifactBytes]:
    """The artifacts a record's mode needs from its upload; a 422 problem when one is amiss.

    A trusted-recorder record needs its transcript, and a contract unless its
    target is packaged (the packaged target's contract is the service's own).
    A replay or platform-attested record takes neither: what it is verified
    from is the record (and the service's copy of the game).
    """
    mode = record.target.verification_mode
    if mode is not VerificationMode.TRUSTED_RECORDER:
        if unpacked.transcript is not None or unpacked.contract is not None:
            raise Problem(
                422,
                "upload-unexpected-part",
                f"a {mode.value} record is verified without a transcript or contract: "
                "upload the bare envelope",
            )
        return []
    if unpacked.transcript is None:
        raise Problem(
            422,
            "transcript-required",
            "a trusted-recorder record is verified from its signed transcript: upload it as a "
            f"run upload ({RUN_UPLOAD_MEDIA_TYPE}) with the transcript beside the envelope",
        )
    found = [
        ArtifactBytes(RECORDER_TRANSCRIPT.name, RECORDER_TRANSCRIPT.media_type, unpacked.transcript)
    ]
    if unpacked.contract is not None:
        text = json.dumps(
            unpacked.contract.model_dump(mode="json", by_alias=True), sort_keys=True
        ).encode("utf-8")
        found.append(ArtifactBytes(VERIFIER_CONTRACT.name, VERIFIER_CONTRACT.media_type, text))
    elif not packaged:
        raise Problem(
            422,
            "contract-required",
            "a trusted-recorder record of a target the service does not package is verified "
            "against a contract: add it to the run upload",
        )
    return found


SIDE_NAMES = {RECORDER_TRANSCRIPT.name: "transcript", VERIFIER_CONTRACT.name: "contract"}
"""The keyword each side artifact's role is handed to the replay under."""


def uploaded_sides(session: Session, run_id: str) -> dict[str, bytes]:
    """What the run's upload brought for its verification, by keyword: transcript, contract.

    Empty for a run uploaded as a bare envelope. Only the two roles are read,
    so a replay record costs one small query.
    """
    rows = session.execute(
        select(RunArtifact.role, Artifact.digest, Artifact.content)
        .join(Artifact, Artifact.digest == RunArtifact.digest)
        .where(
            RunArtifact.run_id == run_id,
            RunArtifact.role.in_((RECORDER_TRANSCRIPT.name, VERIFIER_CONTRACT.name)),
        )
    ).all()
    found: dict[str, bytes] = {}
    for role, digest, content in rows:
        data = bytes(content)
        if hashlib.sha256(data).hexdigest() != digest:
            continue  # a changed artifact is left out: verification then says what is missing
        found[SIDE_NAMES[role]] = data
    return found


def read_contract_artifact(content: bytes | None) -> Contract | None:
    """The stored contract artifact as a contract (None when absent or no longer readable)."""
    if content is None:
        return None
    try:
        return parse_contract(json.loads(content))
    except (ContractError, ValueError):
        return None
