"""Checkpoint blobs: a PyBoy save state plus adapter state, bound to one build.

Layout: ``MAGIC`` + SHA-256 of the body + body, where the body is zlib of
(build digest, 32 raw bytes) + (metadata length, u32 big-endian) + metadata
JSON + the PyBoy save state. Anything that does not check out is a
:class:`~playproof.errors.CheckpointError`.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from typing import Any

from playproof.errors import CheckpointError

__all__ = ["MAGIC", "MAX_CHECKPOINT_BYTES", "pack", "unpack"]

MAGIC = b"PPGB\x01"
MAX_CHECKPOINT_BYTES = 16 << 20
"""Decompressed size bound (a save state is ~150 KiB plus cartridge RAM)."""
_DIGEST_BYTES = 32
_LENGTH = struct.Struct(">I")


def pack(build_digest: str, meta: dict[str, Any], state: bytes) -> bytes:
    """A blob for ``state`` and ``meta`` (JSON-able) of the build ``build_digest``."""
    meta_json = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    frame = bytes.fromhex(build_digest) + _LENGTH.pack(len(meta_json)) + meta_json + state
    body = zlib.compress(frame, 1)
    return MAGIC + hashlib.sha256(body).digest() + body


def unpack(blob: bytes, build_digest: str) -> tuple[dict[str, Any], bytes]:
    """The metadata and save state of a blob made by :func:`pack` for ``build_digest``."""
    head = len(MAGIC) + _DIGEST_BYTES
    if len(blob) < head or not blob.startswith(MAGIC):
        raise CheckpointError("not a PyBoy checkpoint (bad magic or truncated)")
    body = blob[head:]
    if hashlib.sha256(body).digest() != blob[len(MAGIC) : head]:
        raise CheckpointError("checkpoint is corrupt (checksum mismatch)")
    decompressor = zlib.decompressobj()
    try:
        frame = decompressor.decompress(body, MAX_CHECKPOINT_BYTES + 1)
    except zlib.error as exc:
        raise CheckpointError(f"checkpoint body does not decompress: {exc}") from exc
    if len(frame) > MAX_CHECKPOINT_BYTES or decompressor.unconsumed_tail:
        raise CheckpointError(f"checkpoint is over {MAX_CHECKPOINT_BYTES} bytes decompressed")
    if frame[:_DIGEST_BYTES].hex() != build_digest:
        raise CheckpointError("checkpoint belongs to another build")
    offset = _DIGEST_BYTES + _LENGTH.size
    if len(frame) < offset:
        raise CheckpointError("checkpoint is truncated")
    (meta_length,) = _LENGTH.unpack_from(frame, _DIGEST_BYTES)
    try:
        meta = json.loads(frame[offset : offset + meta_length])
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise CheckpointError(f"checkpoint metadata is not JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise CheckpointError("checkpoint metadata is not an object")
    return meta, frame[offset + meta_length :]
