"""Sealed checkpoint blobs: emulator state wrapped with its build and a SHA-256 seal.

Emulator libraries may crash, rather than raise, when handed corrupt state
bytes, so every adapter checkpoint is sealed: a magic line, the SHA-256 over
everything after it, a JSON header naming the adapter and the build digest,
then the payload. :func:`unseal` checks all of it before any byte reaches the
emulator; anything wrong is a :class:`~playproof.errors.CheckpointError`.

>>> blob = seal(b"state", kind="toy", build="ab" * 32)
>>> unseal(blob, kind="toy", build="ab" * 32, limit=1024)
b'state'
>>> unseal(blob[:-1] + b"X", kind="toy", build="ab" * 32, limit=1024)
Traceback (most recent call last):
...
playproof.errors.CheckpointError: toy checkpoint is corrupt (its seal does not match)
"""

from __future__ import annotations

import hashlib
import struct

from playproof.core.canonical import canonical_json, parse_json
from playproof.errors import CheckpointError, FormatError

__all__ = ["MAX_HEADER_BYTES", "seal", "unseal"]

_MAGIC = b"playproof-checkpoint/v1\n"
_LENGTH = struct.Struct(">I")
MAX_HEADER_BYTES = 4096
"""The largest JSON header a sealed blob may carry."""


def seal(payload: bytes, *, kind: str, build: str) -> bytes:
    """Wrap ``payload`` for adapter ``kind`` and build digest ``build``."""
    header = canonical_json({"build": build, "kind": kind})
    body = _LENGTH.pack(len(header)) + header + payload
    return _MAGIC + hashlib.sha256(body).digest() + body


def unseal(blob: bytes, *, kind: str, build: str, limit: int) -> bytes:
    """The payload of a sealed blob made by ``kind`` for ``build``; CheckpointError otherwise."""
    if not isinstance(blob, bytes | bytearray):
        raise CheckpointError(f"{kind} checkpoint must be bytes, not {type(blob).__name__}")
    if len(blob) > limit:
        raise CheckpointError(
            f"{kind} checkpoint is {len(blob)} bytes, over the {limit}-byte limit"
        )
    blob = bytes(blob)
    start = len(_MAGIC) + 32
    if not blob.startswith(_MAGIC) or len(blob) < start + _LENGTH.size:
        raise CheckpointError(f"{kind} checkpoint is not a sealed playproof checkpoint")
    body = blob[start:]
    if hashlib.sha256(body).digest() != blob[len(_MAGIC) : start]:
        raise CheckpointError(f"{kind} checkpoint is corrupt (its seal does not match)")
    (size,) = _LENGTH.unpack(body[: _LENGTH.size])
    if size > MAX_HEADER_BYTES or _LENGTH.size + size > len(body):
        raise CheckpointError(f"{kind} checkpoint header is malformed")
    try:
        header = parse_json(
            body[_LENGTH.size : _LENGTH.size + size],
            limit=MAX_HEADER_BYTES,
            what="checkpoint header",
        )
    except FormatError as exc:
        raise CheckpointError(f"{kind} checkpoint header is malformed: {exc}") from exc
    if not isinstance(header, dict) or header.get("kind") != kind:
        raise CheckpointError(f"checkpoint was not made by the {kind} adapter")
    if header.get("build") != build:
        raise CheckpointError(f"{kind} checkpoint is from another build")
    return body[_LENGTH.size + size :]
