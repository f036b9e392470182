"""DSSE v1 envelopes: the pre-authentication encoding, signing and signature checks.

Written here rather than taken from securesystemslib: the protocol is a few
lines, and that library's signer abstraction is far heavier than one Ed25519 key.

>>> pae("http://example.com/HelloWorld", b"hello world")
b'DSSEv1 29 http://example.com/HelloWorld 11 hello world'
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from playproof.core.canonical import parse_json, parse_model, validate_strict
from playproof.errors import FormatError
from playproof.sign._keys import SigningKey, VerifyingKey

__all__ = [
    "MAX_ENVELOPE_BYTES",
    "MAX_SIGNATURES",
    "Envelope",
    "EnvelopeSignature",
    "b64decode",
    "b64encode",
    "pae",
    "parse_envelope",
    "sign_payload",
    "signing_key_id",
]

MAX_ENVELOPE_BYTES = 16 * 1024 * 1024
"""The largest envelope (JSON bytes) a verifier accepts; a long run is a few MiB."""

MAX_SIGNATURES = 16
"""More signatures than this is not a real envelope; the bound keeps checking cheap."""

MAX_PAYLOAD_TYPE_CHARS = 256
MAX_KEYID_CHARS = 256
# A base64 Ed25519 signature is 88 characters; leave room for other algorithms.
MAX_SIG_CHARS = 1024
MAX_PAYLOAD_CHARS = MAX_ENVELOPE_BYTES


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what a signature covers.

    ``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body``, lengths in bytes as
    ASCII decimal.
    """
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def b64encode(data: bytes) -> str:
    """Standard base64 with padding, as DSSE writers emit it."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Decode standard or URL-safe base64 (DSSE allows both), padding optional.

    Raises :class:`~playproof.errors.FormatError` on anything else.
    """
    if not text.isascii():
        raise FormatError("base64 text has non-ASCII characters")
    normal = text.replace("-", "+").replace("_", "/")
    normal += "=" * (-len(normal) % 4)
    try:
        return base64.b64decode(normal, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"invalid base64: {exc}") from exc


def _bounded_payload(text: str) -> str:
    # The bound is read when checked, not frozen into the model, so that it is
    # the module's one named constant everywhere it applies.
    if len(text) > MAX_PAYLOAD_CHARS:
        raise ValueError(f"the payload is over {MAX_PAYLOAD_CHARS} characters")
    return text


class EnvelopeSignature(BaseModel):
    """One DSSE signature: the signer's key id and the base64 signature."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    keyid: Annotated[str, Field(max_length=MAX_KEYID_CHARS)] = ""
    sig: Annotated[str, Field(min_length=1, max_length=MAX_SIG_CHARS)]


class Envelope(BaseModel):
    """A DSSE v1 envelope: base64 payload, its type, and one or more signatures."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    payload: Annotated[
        str,
        AfterValidator(_bounded_payload),
        WithJsonSchema({"maxLength": MAX_PAYLOAD_CHARS, "title": "Payload", "type": "string"}),
    ]
    payloadType: Annotated[str, Field(min_length=1, max_length=MAX_PAYLOAD_TYPE_CHARS)]  # noqa: N815
    signatures: Annotated[
        tuple[EnvelopeSignature, ...], Field(min_length=1, max_length=MAX_SIGNATURES)
    ]

    def payload_bytes(self) -> bytes:
        """The decoded payload; :class:`~playproof.errors.FormatError` if not base64."""
        return b64decode(self.payload)

    def to_json(self) -> dict[str, Any]:
        """The envelope as a JSON object."""
        return self.model_dump(mode="json")

    def to_bytes(self) -> bytes:
        """The envelope as compact UTF-8 JSON text."""
        return json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True).encode("utf-8")


def parse_envelope(data: bytes | str | Any) -> Envelope:
    """Read an envelope from JSON text or an already-parsed JSON object, strictly.

    Raises :class:`~playproof.errors.FormatError` with the reason; never
    anything else for any input.
    """
    if isinstance(data, Envelope):
        return data
    if isinstance(data, str) and len(data) > MAX_ENVELOPE_BYTES:
        # Checked before encoding so a huge string costs nothing.
        raise FormatError(f"envelope is over the {MAX_ENVELOPE_BYTES}-byte limit")
    if isinstance(data, bytes | bytearray | memoryview | str):
        raw = bytes(data) if not isinstance(data, str) else data
        value = parse_json(raw, limit=MAX_ENVELOPE_BYTES, what="envelope")
    else:
        raw, value = None, data
    if not isinstance(value, dict):
        raise FormatError(f"an envelope is a JSON object, not {type(value).__name__}")
    try:
        if raw is not None:  # the text itself, checked above for repeated keys and NaN
            del value  # the parsed copy of a long payload is not kept while the model is built
            return validate_strict(Envelope, raw, what="envelope")
        return parse_model(Envelope, value, limit=MAX_ENVELOPE_BYTES, what="envelope")
    except FormatError as exc:
        raise FormatError(f"not a DSSE envelope: {exc}") from exc


def sign_payload(payload_type: str, payload: bytes, keys: Sequence[SigningKey]) -> Envelope:
    """Sign ``payload`` under ``payload_type`` with every key in ``keys``."""
    if not keys:
        raise ValueError("at least one signing key is needed")
    message = pae(payload_type, payload)
    return Envelope(
        payload=b64encode(payload),
        payloadType=payload_type,
        signatures=tuple(
            EnvelopeSignature(keyid=key.key_id, sig=b64encode(key.sign(message))) for key in keys
        ),
    )


def signing_key_id(
    envelope: Envelope, trusted: Sequence[VerifyingKey], payload: bytes | None = None
) -> tuple[str | None, str]:
    """The id of a trusted key whose signature verifies, or None, and a reason either way.

    A signature counts only when its ``keyid`` names a trusted key and the
    Ed25519 signature over the PAE verifies with that key. ``payload`` is the
    decoded payload when the caller has it already (decoding a long record
    costs as much as checking it).
    """
    if not trusted:
        return None, "no trusted key given"
    by_id = {key.key_id: key for key in trusted}
    if payload is None:
        try:
            payload = envelope.payload_bytes()
        except FormatError as exc:
            return None, f"payload is not base64: {exc}"
    message = pae(envelope.payloadType, payload)
    problems: list[str] = []
    for index, signature in enumerate(envelope.signatures):
        key = by_id.get(signature.keyid)
        if key is None:
            problems.append(f"signature {index}: key id {signature.keyid[:16]!r} is not trusted")
            continue
        try:
            sig = b64decode(signature.sig)
        except FormatError as exc:
            problems.append(f"signature {index}: {exc}")
            continue
        if key.verify(sig, message):
            return key.key_id, f"signature {index} verifies with trusted key {key.key_id[:16]}"
        problems.append(
            f"signature {index}: does not verify with key {key.key_id[:16]}"
            + ("" if len(sig) == 64 else f" ({len(sig)} bytes, an Ed25519 signature is 64)")
        )
    return None, "; ".join(problems)
