"""Forged checkpoint blobs: a self-consistent blob whose JSON is nested too deeply.

A checkpoint's checksum is no secret: anyone can make a blob that passes it.
Its JSON must still be refused with CheckpointError, never a RecursionError
from the parser.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

import pytest

from playproof.adapters.pyboy import make_game
from playproof.adapters.pyboy._checkpoint import MAGIC
from playproof.adapters.pyboy.rom.pp_collect import options
from playproof.errors import CheckpointError

DEEP = b"[" * 2000 + b"]" * 2000


def test_a_pyboy_checkpoint_with_metadata_nested_too_deeply_is_a_checkpoint_error() -> None:
    game = make_game(**options())
    try:
        frame = bytes.fromhex(game.descriptor.build.digest) + struct.pack(">I", len(DEEP)) + DEEP
        body = zlib.compress(frame)
        with pytest.raises(CheckpointError, match="metadata"):
            game.restore(MAGIC + hashlib.sha256(body).digest() + body)
    finally:
        game.close()
