"""Blargg's cpu_instrs individual ROMs boot under the adapter and their serial text is readable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import playproof
from playproof.adapters.pyboy import checked_rom, corpus_rom, make_game
from playproof.errors import TargetError

ROMS = (
    "01-special",
    "02-interrupts",
    "03-op sp,hl",
    "04-op r,imm",
    "05-op rp",
    "06-ld r,r",
    "07-jr,jp,call,ret,rst",
    "08-misc instrs",
    "09-op r,r",
    "10-bit ops",
    "11-op a,(hl)",
)
FRAMES_PER_INPUT = 60
MAX_INPUTS = 30
"""1800 frames; the slowest ROM (11) finishes in about 660."""


@pytest.mark.parametrize("name", ROMS)
def test_cpu_instrs_rom_prints_its_name_and_passes(name: str) -> None:
    path = corpus_rom("blargg", f"cpu_instrs/individual/{name}.gb")
    game = make_game(rom_path=str(path), frames_per_input=FRAMES_PER_INPUT, press_frames=1)
    events: list[str] = []
    try:
        game.reset(0)
        for _ in range(MAX_INPUTS):
            game.step("noop")
            events += game.evidence().events
            if "serial:Passed" in events or any(e.startswith("serial:Failed") for e in events):
                break
        text = game.serial_output()
    finally:
        game.close()
    assert events == [f"serial:{name}", "serial:Passed"]
    assert text == f"{name}\n\n\nPassed\n"


def test_the_rom_path_does_not_enter_the_build_digest(tmp_path: Path) -> None:
    original = corpus_rom("blargg", "cpu_instrs/individual/01-special.gb")
    copy = tmp_path / "renamed.gb"
    shutil.copyfile(original, copy)
    digests = []
    for path in (original, copy):
        game = make_game(rom_path=str(path))
        digests.append(game.descriptor.build.digest)
        game.close()
    assert digests[0] == digests[1]


def test_corpus_files_are_checked_against_sha256sums(tmp_path: Path) -> None:
    real = corpus_rom("blargg", "halt_bug.gb")
    data = bytearray(real.read_bytes())
    data[-1] ^= 0xFF
    (tmp_path / "halt_bug.gb").write_bytes(bytes(data))
    shutil.copyfile(real.parent / "SHA256SUMS", tmp_path / "SHA256SUMS")
    with pytest.raises(TargetError, match="SHA256SUMS says"):
        checked_rom(tmp_path, "halt_bug.gb")
    with pytest.raises(TargetError, match="not listed"):
        checked_rom(tmp_path, "missing.gb")
    with pytest.raises(TargetError, match="not listed"):
        corpus_rom("blargg", "../manifest.json")


def test_a_checksum_file_that_is_not_text_is_a_target_error(tmp_path: Path) -> None:
    (tmp_path / "SHA256SUMS").write_bytes(b"\xff\xfe" + b"0" * 64 + b"  halt_bug.gb\n")
    with pytest.raises(TargetError, match="not UTF-8"):
        checked_rom(tmp_path, "halt_bug.gb")


def test_corpus_roms_resolve_inside_the_installed_package() -> None:
    package = Path(playproof.__file__).resolve().parent
    for corpus, relative in (
        ("blargg", "cpu_instrs/individual/01-special.gb"),
        ("mooneye", "acceptance/di_timing-GS.gb"),
        ("dmg-acid2", "dmg-acid2.gb"),
    ):
        path = corpus_rom(corpus, relative).resolve()
        assert path.is_relative_to(package / "corpus" / "data" / corpus)


def test_an_unknown_corpus_is_a_target_error_naming_the_shipped_ones() -> None:
    with pytest.raises(TargetError, match="shipped: blargg, chip8, dmg-acid2, mooneye"):
        corpus_rom("nowhere", "halt_bug.gb")


def test_missing_rom_file_is_a_target_error(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="cannot read ROM"):
        make_game(rom_path=str(tmp_path / "absent.gb"))
