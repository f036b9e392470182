"""A real 1x1 PNG for tests that need an image (built with zlib, no imaging library)."""

import struct
import zlib


def tiny_png() -> bytes:
    """The bytes of a valid 1x1 greyscale PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x7f"))
        + chunk(b"IEND", b"")
    )
