"""A run upload: a signed record with what a non-replay verifier needs beside it.

A replay record is uploaded as its bare DSSE envelope. A ``trusted-recorder``
record cannot be verified from its envelope alone: the verifier needs the
recorder-signed transcript the record pins, and for an ad-hoc target the
verifier's copy of the contract. A run upload (``playproof/run-upload/v1``)
carries the three together; the service stores the transcript and the
contract beside the run and verifies the record with them.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.canonical import parse_model
from playproof.core.contract import Contract
from playproof.sign._dsse import MAX_ENVELOPE_BYTES, Envelope

__all__ = ["MAX_RUN_UPLOAD_BYTES", "RUN_UPLOAD_MEDIA_TYPE", "RUN_UPLOAD_SCHEMA", "RunUpload"]

RUN_UPLOAD_SCHEMA: Final = "playproof/run-upload/v1"
RUN_UPLOAD_MEDIA_TYPE: Final = "application/vnd.playproof.run-upload+json"
"""The media type a run upload is sent as (a bare envelope is ``application/json``)."""
MAX_RUN_UPLOAD_BYTES = 2 * MAX_ENVELOPE_BYTES
"""The largest run upload read (a record envelope and a transcript envelope)."""


class RunUpload(BaseModel):
    """A signed record, with its signed transcript and the verifier's contract when needed."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["playproof/run-upload/v1"] = Field(RUN_UPLOAD_SCHEMA, alias="schema")
    envelope: Envelope
    """The signed run record (a DSSE envelope, as ``playproof run`` writes it)."""
    transcript: Envelope | None = None
    """A trusted-recorder record's transcript envelope (``NAME.transcript.json``)."""
    contract: Contract | None = None
    """The contract to verify against, for a record of an ad-hoc target."""

    def to_json(self) -> dict[str, Any]:
        """The upload as a JSON object (absent parts left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def parse(cls, data: bytes | str | Any) -> RunUpload:
        """Read an upload strictly (bounded); :class:`~playproof.errors.FormatError` says why."""
        return parse_model(cls, data, limit=MAX_RUN_UPLOAD_BYTES, what="run upload")
