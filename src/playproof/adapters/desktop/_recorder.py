"""The trusted recorder: signs a transcript with its key and writes it beside the record.

The transcript's payload is the RFC 8785 form of the transcript; the recorder
signs it in a DSSE envelope under
:data:`~playproof.core.transcript.TRANSCRIPT_PAYLOAD_TYPE` with its Ed25519
key, writes the envelope, and hands the run record a
:class:`~playproof.core.record.RecorderPin`: the payload's SHA-256 and the
key's id. Signing again (a later record of the same run) rewrites the file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from playproof.core.canonical import sha256_hex
from playproof.core.record import RecorderPin
from playproof.core.transcript import (
    MAX_SEALED_TRANSCRIPT_BYTES,
    TRANSCRIPT_PAYLOAD_TYPE,
    Transcript,
)
from playproof.errors import RunError
from playproof.sign import SigningKey
from playproof.sign._dsse import sign_payload

__all__ = ["TranscriptSealer", "transcript_path_for"]


def transcript_path_for(record: Path) -> Path:
    """Where the transcript of the record ``record`` lives: ``NAME.transcript.json`` beside it."""
    name = record.name.removesuffix(".json")
    return record.with_name(f"{name}.transcript.json")


class TranscriptSealer:
    """Signs transcripts with the recorder's key and writes them to ``path``."""

    def __init__(self, key: SigningKey, path: Path) -> None:
        self.key = key
        self.path = path
        self.sealed: bytes | None = None
        """The envelope bytes last written."""

    def __call__(self, transcript: Transcript) -> RecorderPin:
        """Sign ``transcript``, write the envelope, and return the pin a record carries."""
        payload = transcript.payload()
        if len(payload) > MAX_SEALED_TRANSCRIPT_BYTES:
            # A recording game stops its run long before this (TRANSCRIPT_STOP_BYTES).
            raise RunError(
                f"the transcript is {len(payload)} bytes, over the {MAX_SEALED_TRANSCRIPT_BYTES} "
                "a verifier can check once signed; it was not signed"
            )
        envelope = sign_payload(TRANSCRIPT_PAYLOAD_TYPE, payload, [self.key]).to_bytes()
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".transcript-", dir=folder)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(envelope)
                os.replace(temp, self.path)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise RunError(
                f"cannot write the transcript {self.path}: {exc.strerror or exc}"
            ) from exc
        self.sealed = envelope
        return RecorderPin(transcript_sha256=sha256_hex(payload), key_id=self.key.key_id)
