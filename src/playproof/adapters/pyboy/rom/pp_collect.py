"""pp-collect: a tiny Game Boy game written for playproof, assembled by :mod:`._asm`.

Rules. The title screen waits for START. The player (``@``) moves one tile
per button press inside a walled field; a coin (``$``) sits at a position
drawn from a 16-bit Galois LFSR. Walking onto the coin adds one to the score
(capped at 255), refills the timer and places a new coin. The timer counts
down one unit every 16 frames from 40; when it reaches 0 a life is lost and
the coin moves. With no lives left the game is over for good.

Determinism. The LFSR is seeded, when START is pressed, from the 16-bit seed
mailbox at :data:`WRAM` ``seed`` (0 means the fixed seed 0xACE1). The harness
writes the mailbox right after reset, so the seed fixes the coin sequence.

Everything the harness reads lives at fixed WRAM addresses (:data:`WRAM`).
Run ``python -m playproof.adapters.pyboy.rom.pp_collect`` to rewrite the
checked-in ROM; a test asserts the checked-in bytes equal a fresh build.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from playproof.adapters.pyboy.rom import _art
from playproof.adapters.pyboy.rom._asm import Assembler
from playproof.adapters.pyboy.rom._cart import HEADER_END, make_cartridge

__all__ = ["PUBLIC", "ROM_FILE", "TITLE", "WRAM", "build", "options"]

TITLE = "PP-COLLECT"
ROM_FILE = Path(__file__).with_name("pp_collect.gb")

WRAM: dict[str, int] = {
    "score": 0xC000,
    "lives": 0xC001,
    "time": 0xC002,
    "over": 0xC003,
    "state": 0xC004,  # 0 title, 1 playing, 2 game over
    "px": 0xC005,
    "py": 0xC006,
    "cx": 0xC007,
    "cy": 0xC008,
    "opx": 0xC009,  # where the player / coin were last drawn
    "opy": 0xC00A,
    "ocx": 0xC00B,
    "ocy": 0xC00C,
    "joy": 0xC00D,  # buttons held last frame: start select b a down up left right
    "pressed": 0xC00E,  # buttons newly pressed this frame
    "subticks": 0xC00F,  # frames since the timer last ticked
    "frames": 0xC010,  # 16-bit little-endian frame counter
    "rng": 0xC012,  # 16-bit LFSR state
    "seed": 0xC014,  # 16-bit seed mailbox written by the harness
    "ready": 0xC016,  # 1 once the title loop runs
    "moves": 0xC017,  # successful moves, 8-bit wrapping
}

_WIDE = frozenset({"frames", "rng", "seed"})
_INTERNAL = frozenset({"opx", "opy", "ocx", "ocy", "joy", "pressed"})
PUBLIC = ("score", "lives", "time")
"""What the game shows on screen; every other channel is evidence only."""
BOOT_FRAMES = 600
"""The title loop is reached after about 70 frames; this bounds a broken build."""

CONSTANTS = {
    "min_x": 1,
    "max_x": 18,
    "min_y": 2,
    "max_y": 15,
    "span_x": 18,
    "span_y": 14,
    "start_x": 9,
    "start_y": 8,
    "time_start": 40,
    "timer_period": 16,
    "t_blank": _art.T_BLANK,
    "t_player": _art.T_PLAYER,
    "t_coin": _art.T_COIN,
    "t_digit0": _art.T_DIGIT0,
    "map_score": 0x9806,  # row 0, column 6
    "map_time": 0x9810,  # row 0, column 16
    "map_lives": 0x9A26,  # row 17, column 6
    "map_over": 0x9905,  # row 8, column 5
}

SOURCE = """
start:
    di
    ld sp, $e000
.vblank:                    ; the LCD may only be switched off in VBlank
    ldh a, [$44]
    cp 144
    jr c, .vblank
    xor a
    ldh [$40], a
    ld hl, $c000
    ld b, 0
.clear:
    ld [hl+], a
    dec b
    jr nz, .clear
    ld hl, tiles
    ld de, $8000
    ld bc, tiles_len
    call copy
    ld hl, title_map
    call show_map
    ld a, $e4
    ldh [$47], a
    xor a
    ldh [$42], a
    ldh [$43], a
    ldh [$0f], a
    ld a, 1
    ldh [$ff], a            ; interrupts: VBlank only (it just wakes HALT)
    ld a, $91
    ldh [$40], a
    ei
    ld a, 1
    ld [ready], a
title:
    halt
    nop
    call tick_frames
    call read_joy
    ld a, [pressed]
    and $80
    jr z, title
    call new_game
play:
    halt
    nop
    call draw
    call tick_frames
    call read_joy
    ld a, [state]
    cp 1
    jr nz, play
    call update
    jr play

new_game:
    ld a, [seed]
    ld l, a
    ld a, [seed+1]
    ld h, a
    or l
    jr nz, .seeded
    ld hl, $ace1
.seeded:
    ld a, l
    ld [rng], a
    ld a, h
    ld [rng+1], a
    xor a
    ld [score], a
    ld [subticks], a
    ld [over], a
    ld [moves], a
    ld a, 3
    ld [lives], a
    ld a, time_start
    ld [time], a
    ld a, start_x
    ld [px], a
    ld [opx], a
    ld a, start_y
    ld [py], a
    ld [opy], a
    call place_coin
    ld a, [cx]
    ld [ocx], a
    ld a, [cy]
    ld [ocy], a
    ld a, 1
    ld [state], a
    halt                    ; wait for VBlank to switch the LCD off
    nop
    xor a
    ldh [$40], a
    ld hl, play_map
    call show_map
    call draw
    ld a, $91
    ldh [$40], a
    ret

update:
    ld a, [pressed]
    ld b, a
    bit 0, b
    jr z, .not_right
    ld a, [px]
    cp max_x
    jr nc, .collect
    inc a
    ld [px], a
    jr .moved
.not_right:
    bit 1, b
    jr z, .not_left
    ld a, [px]
    cp min_x+1
    jr c, .collect
    dec a
    ld [px], a
    jr .moved
.not_left:
    bit 2, b
    jr z, .not_up
    ld a, [py]
    cp min_y+1
    jr c, .collect
    dec a
    ld [py], a
    jr .moved
.not_up:
    bit 3, b
    jr z, .collect
    ld a, [py]
    cp max_y
    jr nc, .collect
    inc a
    ld [py], a
.moved:
    ld hl, moves
    inc [hl]
.collect:
    ld a, [px]
    ld b, a
    ld a, [cx]
    cp b
    jr nz, .timer
    ld a, [py]
    ld b, a
    ld a, [cy]
    cp b
    jr nz, .timer
    ld a, [score]
    inc a
    jr z, .capped           ; 255 stays 255
    ld [score], a
.capped:
    ld a, time_start
    ld [time], a
    xor a
    ld [subticks], a
    jp place_coin
.timer:
    ld hl, subticks
    inc [hl]
    ld a, [hl]
    cp timer_period
    ret c
    ld [hl], 0
    ld hl, time
    dec [hl]
    ret nz
    ld hl, lives
    dec [hl]
    jr z, .game_over
    ld a, time_start
    ld [time], a
    jp place_coin
.game_over:
    ld a, 2
    ld [state], a
    ld a, 1
    ld [over], a
    ret

place_coin:                 ; a fresh coin anywhere but under the player
    call rng_next
    ld a, l
.mod_x:
    cp span_x
    jr c, .x
    sub span_x
    jr .mod_x
.x:
    add a, min_x
    ld [cx], a
    ld a, h
.mod_y:
    cp span_y
    jr c, .y
    sub span_y
    jr .mod_y
.y:
    add a, min_y
    ld [cy], a
    ld b, a
    ld a, [py]
    cp b
    ret nz
    ld a, [cx]
    ld b, a
    ld a, [px]
    cp b
    ret nz
    jr place_coin

rng_next:                   ; 8 steps of a Galois LFSR (taps $b400); result in hl
    ld a, [rng]
    ld l, a
    ld a, [rng+1]
    ld h, a
    ld b, 8
.step:
    srl h
    rr l
    jr nc, .keep
    ld a, h
    xor $b4
    ld h, a
.keep:
    dec b
    jr nz, .step
    ld a, l
    ld [rng], a
    ld a, h
    ld [rng+1], a
    ret

draw:                       ; runs in VBlank: erase old positions, draw new ones and the HUD
    ld a, [ocx]
    ld b, a
    ld a, [ocy]
    ld c, a
    call map_addr
    ld [hl], t_blank
    ld a, [opx]
    ld b, a
    ld a, [opy]
    ld c, a
    call map_addr
    ld [hl], t_blank
    ld a, [cx]
    ld [ocx], a
    ld b, a
    ld a, [cy]
    ld [ocy], a
    ld c, a
    call map_addr
    ld [hl], t_coin
    ld a, [px]
    ld [opx], a
    ld b, a
    ld a, [py]
    ld [opy], a
    ld c, a
    call map_addr
    ld [hl], t_player
    ld a, [score]
    call digits
    ld hl, map_score
    ld [hl], d
    inc hl
    ld [hl], e
    inc hl
    ld [hl], a
    ld a, [time]
    call digits
    ld hl, map_time
    ld [hl], e
    inc hl
    ld [hl], a
    ld a, [lives]
    add a, t_digit0
    ld [map_lives], a
    ld a, [state]
    cp 2
    ret nz
    ld hl, over_text
    ld de, map_over
    ld bc, 9
    jp copy

map_addr:                   ; hl = $9800 + c * 32 + b
    ld l, c
    ld h, 0
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    ld a, l
    add a, b
    ld l, a
    ld a, h
    add a, $98
    ld h, a
    ret

digits:                     ; a -> tiles of its hundreds (d), tens (e) and ones (a)
    ld d, t_digit0
.hundreds:
    cp 100
    jr c, .tens_start
    sub 100
    inc d
    jr .hundreds
.tens_start:
    ld e, t_digit0
.tens:
    cp 10
    jr c, .ones
    sub 10
    inc e
    jr .tens
.ones:
    add a, t_digit0
    ret

tick_frames:
    ld hl, frames
    inc [hl]
    ret nz
    inc hl
    inc [hl]
    ret

read_joy:                   ; joy/pressed bits: start select b a down up left right
    ld a, $20
    ldh [$00], a
    ldh a, [$00]
    ldh a, [$00]
    cpl
    and $0f
    ld b, a
    ld a, $10
    ldh [$00], a
    ldh a, [$00]
    ldh a, [$00]
    cpl
    and $0f
    swap a
    or b
    ld b, a
    ld a, $30
    ldh [$00], a
    ld a, [joy]
    cpl
    and b
    ld [pressed], a
    ld a, b
    ld [joy], a
    ret

copy:                       ; bc bytes from hl to de
    ld a, [hl+]
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, copy
    ret

show_map:                   ; 20x18 tiles from hl into the top-left of the BG map
    ld de, $9800
    ld c, 18
.row:
    ld b, 20
.column:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, .column
    ld a, e
    add a, 12
    ld e, a
    ld a, d
    adc a, 0
    ld d, a
    dec c
    jr nz, .row
    ret
"""

_RETI = b"\xd9"
_VBLANK_VECTOR = 0x40


def build() -> bytes:
    """Assemble pp-collect into a 32 KiB ROM image (deterministic bytes)."""
    tiles = _art.tile_data()
    asm = Assembler(origin=HEADER_END)
    asm.define(WRAM)
    asm.define(CONSTANTS)
    asm.define({"tiles_len": len(tiles)})
    asm.source(SOURCE)
    for name, blob in (
        ("tiles", tiles),
        ("title_map", _art.title_map()),
        ("play_map", _art.play_map()),
        ("over_text", _art.encode_text("GAME OVER")),
    ):
        asm.label(name)
        asm.data(blob)
    return make_cartridge(TITLE, asm.link(), vectors={_VBLANK_VECTOR: _RETI})


def options() -> dict[str, Any]:
    """PyBoy adapter options for pp-collect (JSON): channels, public numbers, text charset."""
    channels = {
        name: {"address": address, "size": 2 if name in _WIDE else 1}
        for name, address in WRAM.items()
        if name not in _INTERNAL
    }
    return {
        "game_id": "pp-collect",
        "rom": "pp-collect",
        "channels": channels,
        "public": list(PUBLIC),
        "over_channel": "over",
        "seed_channel": "seed",
        "ready_channel": "ready",
        "boot_frames": BOOT_FRAMES,
        "text": "tiles",
        "charset": _art.CHARSET,
    }


def main() -> int:
    """Rewrite the checked-in ROM next to this module."""
    ROM_FILE.write_bytes(build())
    print(f"wrote {ROM_FILE.name} ({ROM_FILE.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
