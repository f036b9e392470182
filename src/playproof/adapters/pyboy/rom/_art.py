"""Tiles and screen layouts of pp-collect, drawn as text and converted to 2bpp.

Tile order is fixed: blank, wall, player, coin, digits 0-9, then the letters
of :data:`LETTERS`. :data:`CHARSET` maps each tile index to the character the
text observation shows for it.
"""

from __future__ import annotations

__all__ = [
    "CHARSET",
    "GRID_H",
    "GRID_W",
    "LETTERS",
    "T_BLANK",
    "T_COIN",
    "T_DIGIT0",
    "T_PLAYER",
    "T_WALL",
    "encode_text",
    "play_map",
    "tile_data",
    "title_map",
]

GRID_W, GRID_H = 20, 18
T_BLANK, T_WALL, T_PLAYER, T_COIN, T_DIGIT0 = 0, 1, 2, 3, 4
LETTERS = "ACEGILMOPRSTV-"
CHARSET = " #@$0123456789" + LETTERS
"""Character per tile index (what the text observation prints)."""

_SPECIAL = (
    # blank
    ["00000000"] * 8,
    # wall: dark frame, mid-grey fill
    [
        "33333333",
        "32222223",
        "32222223",
        "32222223",
        "32222223",
        "32222223",
        "32222223",
        "33333333",
    ],
    # player
    [
        "00333300",
        "03333330",
        "33033033",
        "33333333",
        "33333333",
        "30333303",
        "03000030",
        "00333300",
    ],
    # coin
    [
        "00033000",
        "00322300",
        "03211230",
        "32111123",
        "32111123",
        "03211230",
        "00322300",
        "00033000",
    ],
)

_GLYPHS: dict[str, tuple[str, ...]] = {
    "0": (" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "),
    "1": ("  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "),
    "2": (" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"),
    "3": ("#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "),
    "4": ("   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "),
    "5": ("#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "),
    "6": ("  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "),
    "7": ("#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "),
    "8": (" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "),
    "9": (" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "),
    "A": (" ### ", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"),
    "C": (" ### ", "#   #", "#    ", "#    ", "#    ", "#   #", " ### "),
    "E": ("#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#####"),
    "G": (" ### ", "#   #", "#    ", "# ###", "#   #", "#   #", " ####"),
    "I": (" ### ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "),
    "L": ("#    ", "#    ", "#    ", "#    ", "#    ", "#    ", "#####"),
    "M": ("#   #", "## ##", "# # #", "# # #", "#   #", "#   #", "#   #"),
    "O": (" ### ", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "),
    "P": ("#### ", "#   #", "#   #", "#### ", "#    ", "#    ", "#    "),
    "R": ("#### ", "#   #", "#   #", "#### ", "# #  ", "#  # ", "#   #"),
    "S": (" ####", "#    ", "#    ", " ### ", "    #", "    #", "#### "),
    "T": ("#####", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  "),
    "V": ("#   #", "#   #", "#   #", "#   #", "#   #", " # # ", "  #  "),
    "-": ("     ", "     ", "     ", "#####", "     ", "     ", "     "),
}


def _glyph_rows(char: str) -> list[str]:
    # A 5x7 glyph sits one pixel in from the left, with an empty bottom row.
    rows = ["0" + row.replace("#", "3").replace(" ", "0") + "00" for row in _GLYPHS[char]]
    return [*rows, "00000000"]


def _encode(rows: list[str]) -> bytes:
    """2bpp: per row, the low bit-plane byte then the high one, leftmost pixel in bit 7."""
    out = bytearray()
    for row in rows:
        low = high = 0
        for pixel in row:
            color = int(pixel)
            low = low << 1 | (color & 1)
            high = high << 1 | (color >> 1)
        out += bytes((low, high))
    return bytes(out)


def tile_data() -> bytes:
    """Every tile, in tile-index order."""
    tiles = [_encode(rows) for rows in _SPECIAL]
    tiles += [_encode(_glyph_rows(char)) for char in "0123456789" + LETTERS]
    return b"".join(tiles)


def encode_text(text: str) -> bytes:
    """Tile indices for ``text`` (characters of :data:`CHARSET`)."""
    return bytes(CHARSET.index(char) for char in text)


def _layout(rows: list[str]) -> bytes:
    if len(rows) != GRID_H or any(len(row) != GRID_W for row in rows):
        raise ValueError("a screen layout is 18 rows of 20 characters")
    return b"".join(encode_text(row) for row in rows)


def title_map() -> bytes:
    """The title screen (20x18 tile indices)."""
    rows = [" " * GRID_W] * GRID_H
    rows = [*rows]
    rows[0] = rows[17] = "#" * GRID_W
    for index in range(1, 17):
        rows[index] = "#" + " " * 18 + "#"
    rows[5] = "#    PP-COLLECT    #"
    rows[8] = "#   @ COLLECT $    #"
    rows[12] = "#   PRESS START    #"
    return _layout(rows)


def play_map() -> bytes:
    """The empty play field with its labels (digits are drawn by the game)."""
    rows = ["SCORE 000  TIME 00  ", "#" * GRID_W]
    rows += ["#" + " " * 18 + "#"] * 14
    rows += ["#" * GRID_W, "LIVES 0             "]
    return _layout(rows)
