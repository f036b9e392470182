"""The command line's side of trusted-recorder runs: the recorder's key and the transcript file.

A ``run --mode trusted-recorder`` writes the signed transcript beside the
record (``NAME.transcript.json``), signed with ``--recorder-key`` or else the
key folder's signing key, loaded (or created) only when the run ends. ``verify``
reads the transcript named by ``--transcript``, else the one beside the record;
``service submit`` sends it with the record as a run upload.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from playproof._bounded import read_bounded
from playproof.adapters.desktop import TranscriptSealer, transcript_path_for
from playproof.cli._files import ensure_signing_key
from playproof.core.contract import Contract
from playproof.core.record import RecorderPin
from playproof.core.transcript import MAX_TRANSCRIPT_BYTES, Transcript
from playproof.errors import FormatError
from playproof.sign import RUN_UPLOAD_MEDIA_TYPE, RunUpload, SigningKey, parse_envelope

__all__ = [
    "MAX_TRANSCRIPT_FILE_BYTES",
    "Recorder",
    "read_transcript",
    "recorder_for",
    "upload_body",
]

Recorder = Callable[[Transcript], RecorderPin]
"""Signs a run's transcript and names it for the record."""

MAX_TRANSCRIPT_FILE_BYTES = 2 * MAX_TRANSCRIPT_BYTES
"""The largest transcript envelope file read (its payload is base64, a third larger)."""


def recorder_for(
    record: Path, key_dir: Path, recorder_key: Path | None, *, announce: Callable[[str], None]
) -> Recorder:
    """A recorder that signs the run's transcript and writes it beside ``record``.

    The key is read when the run ends: ``recorder_key`` (a private key PEM),
    else the signing key in ``key_dir`` (created then if missing, and announced).
    """
    if recorder_key is not None:
        SigningKey.load(recorder_key)  # refused now, before the one live pass, if unusable
    path = transcript_path_for(record)

    def seal(transcript: Transcript) -> RecorderPin:
        if recorder_key is not None:
            key = SigningKey.load(recorder_key)
        else:
            key, created = ensure_signing_key(key_dir)
            if created:
                announce(f"created a signing key in {key_dir} (key id {key.key_id[:16]}...)")
        pin = TranscriptSealer(key, path)(transcript)
        announce(f"signed transcript written to {path} (recorder key {key.key_id[:16]}...)")
        return pin

    return seal


def read_transcript(record: Path, given: Path | None) -> bytes | None:
    """The transcript envelope for ``record``: ``given``, else the one beside it, else None."""
    path = given if given is not None else transcript_path_for(record)
    if given is None and not path.exists():
        return None
    return read_bounded(path, MAX_TRANSCRIPT_FILE_BYTES, "transcript file")


def upload_body(
    envelope: bytes, transcript: bytes | None, contract: Contract | None
) -> tuple[bytes, str]:
    """The body and media type that upload a signed record to the service.

    Without a transcript or contract, the envelope as it is (``application/json``);
    with them, a run upload (``playproof/run-upload/v1``) carrying all three.
    """
    if transcript is None and contract is None:
        return envelope, "application/json"
    try:
        upload = RunUpload(
            envelope=parse_envelope(envelope),
            transcript=parse_envelope(transcript) if transcript is not None else None,
            contract=contract,
        )
    except FormatError as exc:
        raise FormatError(f"cannot build the upload: {exc}") from exc
    text = json.dumps(upload.to_json(), separators=(",", ":"))
    return text.encode("utf-8"), RUN_UPLOAD_MEDIA_TYPE
