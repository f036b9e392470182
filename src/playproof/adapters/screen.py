"""Screen helpers shared by the emulator adapters: frame hash, text downsample, PNG images.

A *screen* is an RGB array of shape ``(height, width, 3)`` and dtype ``uint8``.
Its frame hash is the SHA-256 of its C-ordered bytes, so anyone holding the
pixels (for example the decoded PNG image, once the integer scale is undone
with :func:`unscale`) recomputes the same hash.

>>> import numpy as np
>>> screen = np.zeros((4, 6, 3), dtype=np.uint8)
>>> screen[1:3, 2:4] = 255
>>> print(shade_text(screen, cols=6, rows=4))
<BLANKLINE>
  @@
  @@
<BLANKLINE>
>>> image = png_image(screen, scale=3)
>>> pixels = unscale(decode_png(image.raw()), 3)
>>> (image.width, image.height), frame_hash(pixels) == frame_hash(screen)
((18, 12), True)
"""

from __future__ import annotations

import hashlib
import io
import re
import struct
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from playproof.core.observation import MAX_IMAGE_EDGE, Image
from playproof.errors import ObservationError

__all__ = [
    "MAX_IMAGE_SCALE",
    "SHADES",
    "TEXT_COLS",
    "TEXT_ROWS",
    "Screen",
    "decode_png",
    "frame_hash",
    "png_image",
    "shade_text",
    "unscale",
]

Screen = npt.NDArray[np.uint8]
"""An RGB screen, shape ``(height, width, 3)``."""

SHADES = " .:-=+*#%@"
"""Shade characters from dark to bright."""
TEXT_COLS = 40
TEXT_ROWS = 16
MAX_IMAGE_SCALE = 8
"""The largest integer upscale an adapter accepts (edges must also stay within the image bounds)."""
_PNG_COMPRESS_LEVEL = 1
"""Fast PNG compression: emulator screens are flat-coloured and compress well at any level."""
_MAX_DECODED_PIXELS = MAX_IMAGE_EDGE * MAX_IMAGE_EDGE
_PNG_HEADER = re.compile(rb"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR(.{8})", re.DOTALL)
"""The PNG signature and the start of its IHDR chunk: width and height, 4 bytes each."""


def frame_hash(screen: Screen) -> str:
    """SHA-256 hex of the screen's C-ordered RGB bytes."""
    return hashlib.sha256(np.ascontiguousarray(screen).data).hexdigest()


@cache
def _blocks(
    height: int, width: int, rows: int, cols: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.int64]]:
    """Row and column block starts and the pixel area of every block (fixed per screen size)."""
    row_edges = np.linspace(0, height, num=rows + 1).astype(np.intp)
    col_edges = np.linspace(0, width, num=cols + 1).astype(np.intp)
    areas = np.outer(np.diff(row_edges), np.diff(col_edges)).astype(np.int64)
    return row_edges[:-1], col_edges[:-1], areas


_SHADE_BYTES = np.frombuffer(SHADES.encode("ascii"), dtype=np.uint8)


def shade_text(screen: Screen, *, cols: int = TEXT_COLS, rows: int = TEXT_ROWS) -> str:
    """Downsample the screen to ``rows`` lines of ``cols`` shade characters (trailing blanks cut).

    The most common colour is the background; each character shades the share
    of non-background pixels in its block, and any block holding at least one
    such pixel shows, so a two-pixel ball stays visible.
    """
    height, width = screen.shape[:2]
    rows, cols = min(rows, height), min(cols, width)
    packed = screen[..., 0].astype(np.uint32) << 16
    packed |= screen[..., 1].astype(np.uint32) << 8
    packed |= screen[..., 2]
    values, counts = np.unique(packed, return_counts=True)
    foreground = (packed != values[counts.argmax()]).astype(np.int64)
    row_starts, col_starts, areas = _blocks(height, width, rows, cols)
    summed = np.add.reduceat(np.add.reduceat(foreground, row_starts, axis=0), col_starts, axis=1)
    steps = len(SHADES) - 1
    # ceil(share * steps): zero stays blank, any foreground pixel is at least the first shade.
    levels = (summed * steps + areas - 1) // areas
    text = _SHADE_BYTES[levels].tobytes().decode("ascii")
    return "\n".join(text[at : at + cols].rstrip() for at in range(0, rows * cols, cols))


def png_image(screen: Screen, *, scale: int, label: str | None = None) -> Image:
    """The screen upscaled by an integer ``scale`` (nearest neighbour) as a bounded PNG image."""
    if not 1 <= scale <= MAX_IMAGE_SCALE:
        raise ObservationError(f"image scale {scale} is outside 1..{MAX_IMAGE_SCALE}")
    height, width = screen.shape[:2]
    if max(height, width) * scale > MAX_IMAGE_EDGE:
        raise ObservationError(
            f"a {width}x{height} screen at scale {scale} is over the {MAX_IMAGE_EDGE} px edge bound"
        )
    pixels = np.ascontiguousarray(screen)
    if scale > 1:
        pixels = np.repeat(np.repeat(pixels, scale, axis=0), scale, axis=1)
    buffer = io.BytesIO()
    PILImage.fromarray(pixels, mode="RGB").save(
        buffer, format="PNG", compress_level=_PNG_COMPRESS_LEVEL
    )
    return Image.from_bytes(
        buffer.getvalue(),
        media_type="image/png",
        width=width * scale,
        height=height * scale,
        label=label,
    )


def decode_png(data: bytes) -> Screen:
    """Decode PNG bytes to an RGB screen (bounded to the image edge limit).

    The dimensions are read from the header and checked before the image
    library sees the file, so a decompression bomb is refused with
    ObservationError (never the library's own bomb error or warning), and so
    is a file whose chunks are broken.
    """
    header = _PNG_HEADER.match(data)
    if header is not None:
        width, height = struct.unpack(">II", header.group(1))
        if width * height > _MAX_DECODED_PIXELS:
            raise ObservationError(f"PNG of {width}x{height} px is over the bound")
    try:
        with PILImage.open(io.BytesIO(data), formats=["PNG"]) as image:
            if image.width * image.height > _MAX_DECODED_PIXELS:
                raise ObservationError(f"PNG of {image.width}x{image.height} px is over the bound")
            rgb: Any = image.convert("RGB")
            return np.asarray(rgb, dtype=np.uint8)
    except (OSError, ValueError, SyntaxError, PILImage.DecompressionBombError) as exc:
        # The image library reports a broken chunk as SyntaxError.
        raise ObservationError(f"not a decodable PNG: {exc}") from exc


def unscale(screen: Screen, scale: int) -> Screen:
    """Undo a nearest-neighbour integer upscale (take every ``scale``-th pixel)."""
    return np.ascontiguousarray(screen[::scale, ::scale])
