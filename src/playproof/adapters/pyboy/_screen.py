"""The Game Boy screen as the player sees it: a text grid and an optional PNG.

Both are built from the rendered screen or the background tile map only;
nothing here reads evidence channels.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from playproof.core.observation import Image

__all__ = [
    "GRID_COLUMNS",
    "GRID_ROWS",
    "SCREEN_HEIGHT",
    "SCREEN_WIDTH",
    "SHADES",
    "screen_png",
    "shade_grid",
    "tile_grid",
]

SCREEN_WIDTH, SCREEN_HEIGHT = 160, 144
GRID_COLUMNS, GRID_ROWS = 20, 18
"""One character per 8x8 tile cell."""
SHADES = " .:-=+*#%@"
"""Light to dark; a cell's character is its mean darkness."""
_MAP_SIDE = 32


def shade_grid(rgba: npt.NDArray[np.uint8]) -> list[str]:
    """20x18 characters, each the mean darkness of one 8x8 cell of the rendered screen."""
    luminance = rgba[:, :, :3].mean(axis=2)
    cells = luminance.reshape(GRID_ROWS, 8, GRID_COLUMNS, 8).mean(axis=(1, 3))
    levels = ((255.0 - cells) * len(SHADES) / 256.0).astype(np.int64).clip(0, len(SHADES) - 1)
    return ["".join(SHADES[level] for level in row) for row in levels.tolist()]


def tile_grid(tile_map: Sequence[int], scroll_x: int, scroll_y: int, charset: str) -> list[str]:
    """20x18 characters from the visible part of a 32x32 background map (ids via ``charset``).

    Only the background layer is read (no window, no sprites); fine scroll is
    rounded down to whole tiles. Ids outside ``charset`` print as ``?``.
    """
    first_column, first_row = scroll_x // 8, scroll_y // 8
    rows: list[str] = []
    for row in range(GRID_ROWS):
        base = ((first_row + row) % _MAP_SIDE) * _MAP_SIDE
        chars = []
        for column in range(GRID_COLUMNS):
            tile = tile_map[base + (first_column + column) % _MAP_SIDE]
            chars.append(charset[tile] if tile < len(charset) else "?")
        rows.append("".join(chars))
    return rows


def screen_png(rgba: npt.NDArray[np.uint8], scale: int) -> Image:
    """The screen as an RGB PNG, each pixel repeated ``scale`` times along both axes."""
    picture = PILImage.fromarray(np.ascontiguousarray(rgba[:, :, :3]), "RGB")
    if scale != 1:
        picture = picture.resize(
            (SCREEN_WIDTH * scale, SCREEN_HEIGHT * scale), PILImage.Resampling.NEAREST
        )
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return Image.from_bytes(
        buffer.getvalue(),
        media_type="image/png",
        width=SCREEN_WIDTH * scale,
        height=SCREEN_HEIGHT * scale,
        label="screen",
    )
