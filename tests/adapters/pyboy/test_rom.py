"""The in-repo SM83 assembler, the cartridge header and the checked-in pp-collect ROM."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.adapters.pyboy import corpus_rom
from playproof.adapters.pyboy.rom import _art
from playproof.adapters.pyboy.rom._asm import AsmError, Assembler
from playproof.adapters.pyboy.rom._cart import (
    LOGO,
    ROM_SIZE,
    global_checksum,
    header_checksum,
    make_cartridge,
)
from playproof.adapters.pyboy.rom.pp_collect import ROM_FILE, build


def assemble(source: str, origin: int = 0x150) -> str:
    asm = Assembler(origin)
    asm.source(source)
    return asm.link().hex()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("ld a, [hl+]", "2a"),
        ("ld [hl], 0", "3600"),
        ("ld [hl], d", "72"),
        ("ld b, c", "41"),
        ("ld hl, $9800", "210098"),
        ("ld [$c000], a", "ea00c0"),
        ("ld a, [$c001]", "fa01c0"),
        ("ldh [$40], a", "e040"),
        ("ldh a, [$44]", "f044"),
        ("inc [hl]", "34"),
        ("dec bc", "0b"),
        ("add hl, de", "19"),
        ("add a, 12", "c60c"),
        ("adc a, 0", "ce00"),
        ("sub 18", "d612"),
        ("cp b", "b8"),
        ("xor $b4", "eeb4"),
        ("and $0f", "e60f"),
        ("or c", "b1"),
        ("swap a", "cb37"),
        ("srl h", "cb3c"),
        ("rr l", "cb1d"),
        ("bit 3, b", "cb58"),
        ("push af", "f5"),
        ("pop bc", "c1"),
        ("ret nz", "c0"),
        ("reti", "d9"),
        ("halt", "76"),
        ("call $1234", "cd3412"),
        ("jp nz, $0150", "c25001"),
    ],
)
def test_encodings(source: str, expected: str) -> None:
    assert assemble(source) == expected


def test_relative_jumps_and_local_labels() -> None:
    code = assemble("a:\n.loop:\n dec b\n jr nz, .loop\nb:\n.loop:\n jr .loop\n jr c, a")
    assert code == "05" + "20fd" + "18fe" + "38f9"


@pytest.mark.parametrize(
    "source",
    [
        "ld [hl], [hl]",
        "jr far\n" + "nop\n" * 200 + "far:",
        "frobnicate a",
        "ld a, nowhere",
        "x:\nx:",
    ],
)
def test_bad_source_is_an_asm_error(source: str) -> None:
    with pytest.raises(AsmError):
        assemble(source)


def test_logo_matches_a_licensed_rom_header() -> None:
    blargg = corpus_rom("blargg", "cpu_instrs/individual/01-special.gb").read_bytes()
    assert blargg[0x104:0x134] == LOGO
    assert header_checksum(blargg) == blargg[0x14D]
    assert global_checksum(blargg) == int.from_bytes(blargg[0x14E:0x150], "big")


@given(st.binary(max_size=64), st.text(alphabet="ABCXYZ-", max_size=11))
def test_cartridge_checksums_hold(code: bytes, title: str) -> None:
    rom = make_cartridge(title, code)
    assert len(rom) == ROM_SIZE
    assert rom[0x14D] == header_checksum(rom)
    assert int.from_bytes(rom[0x14E:0x150], "big") == global_checksum(rom)
    assert rom[0x150 : 0x150 + len(code)] == code


def test_checked_in_rom_is_the_build_output() -> None:
    assert ROM_FILE.read_bytes() == build()
    assert build() == build()


def test_layouts_fit_the_screen() -> None:
    assert len(_art.tile_data()) == 16 * len(_art.CHARSET)
    assert len(_art.play_map()) == len(_art.title_map()) == 20 * 18
