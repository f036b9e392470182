"""Hostile PNG files against the screen decoder: every one is an ObservationError.

A screenshot or an image a game hands back is decoded with
:func:`playproof.adapters.screen.decode_png`; an image whose header claims
huge dimensions (a decompression bomb) or whose chunks are broken must be
refused with the decoder's typed error, never with an image library's own.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from playproof.adapters.screen import decode_png, png_image
from playproof.errors import ObservationError


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(width: int, height: int) -> bytes:
    """A PNG header claiming ``width`` x ``height`` RGB pixels, with next to no pixel data."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(b""))
        + _chunk(b"IEND", b"")
    )


def _short_idat() -> bytes:
    """A real 10x10 screen whose IDAT length is cut short: junk is then read as a chunk."""
    good = png_image(np.zeros((10, 10, 3), dtype=np.uint8), scale=1).raw()
    at = good.index(b"IDAT") - 4
    (length,) = struct.unpack(">I", good[at : at + 4])
    return good[:at] + struct.pack(">I", length - 10) + good[at + 4 :]


@pytest.mark.parametrize(
    "data",
    [
        _png(20_000, 20_000),  # over the image library's own bomb limit
        _png(10_000, 10_000),  # over its warning limit
        _png(2**31 - 1, 1),
        _short_idat(),
    ],
    ids=["bomb", "near-bomb", "one-row", "short-idat"],
)
def test_a_hostile_png_file_is_an_observation_error(tmp_path: Path, data: bytes) -> None:
    image = tmp_path / "screen.png"
    image.write_bytes(data)
    with pytest.raises(ObservationError, match="PNG"):
        decode_png(image.read_bytes())


def test_a_screen_within_the_bound_still_decodes() -> None:
    screen = np.arange(6 * 4 * 3, dtype=np.uint8).reshape(4, 6, 3)
    assert np.array_equal(decode_png(png_image(screen, scale=1).raw()), screen)
