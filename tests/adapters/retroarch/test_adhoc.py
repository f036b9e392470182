"""``retroarch:CORE:FILE``: any ROM on any installed core, from a boot state made by counted frames.

These start RetroArch themselves (Debian ``retroarch`` with ``libretro-gambatte``
and ``libretro-mgba``). The ROM is pp-collect, the project's Game Boy game,
with its title loop waiting for A instead of START: START is not an input of
the RetroArch adapter (on RetroArch's network gamepad it also toggles pause),
so from power-on the unchanged game could never leave its title.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import playproof
from playproof.adapters.retroarch import RetroArchGame
from playproof.core.contract import parse_contract
from playproof.targets import adhoc_target

if shutil.which("retroarch") is None and os.geteuid() != 0:
    pytest.skip(
        "RetroArch is not installed (as root, scripts/system-deps.sh installs it)",
        allow_module_level=True,
    )

ROM = Path(playproof.__file__).parent / "adapters" / "pyboy" / "rom" / "pp_collect.gb"
TITLE_WAITS_FOR_START = bytes.fromhex("fa0ec0e680")  # ld a, [pressed]; and $80 (START)
TITLE_WAITS_FOR_A = bytes.fromhex("fa0ec0e610")  # ld a, [pressed]; and $10 (A)
EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
INPUTS = ["a", *["right"] * 8, *["down"] * 6]
"""From power-on: A leaves the title; the player at (9, 8) walks to the coin at (17, 14)."""
GARBAGE = ["b"] * len(INPUTS)
CONTRACT: dict[str, Any] = {
    "schema": "playproof/contract/v1",
    "game": "pp-collect-a",
    "milestones": [
        {"id": "playing", "check": {"kind": "state", "key": "ram_c004", "op": "==", "value": 1}},
        {"id": "coin", "requires": ["playing"],
         "check": {"kind": "state", "key": "ram_c000", "op": ">=", "value": 1}},
    ],
}  # fmt: skip


def pp_collect_with_a(folder: Path) -> Path:
    rom = ROM.read_bytes()
    assert rom.count(TITLE_WAITS_FOR_START) == 1
    path = folder / "pp-collect-a.gb"
    path.write_bytes(rom.replace(TITLE_WAITS_FOR_START, TITLE_WAITS_FOR_A))
    return path


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("adhoc-retroarch")
    pp_collect_with_a(folder)
    (folder / "contract.json").write_text(json.dumps(CONTRACT))
    (folder / "inputs.txt").write_text("\n".join(INPUTS) + "\n")
    cli("run", "retroarch:gambatte:pp-collect-a.gb", "--contract", "contract.json",
        "--agent", "script:inputs.txt", "--out", "run.json", "--key-dir", "keys",
        cwd=folder)  # fmt: skip
    return folder


def verify(folder: Path) -> dict[str, Any]:
    out = cli("verify", "run.json", "--contract", "contract.json", "--key-dir", "keys",
              "--json", cwd=folder)  # fmt: skip
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_a_run_verifies_in_a_second_launched_emulator(played: Path) -> None:
    cached = sorted((played / ".playproof" / "retroarch-boot").iterdir())
    assert [p.suffix for p in cached] == [".sha256", ".state"]
    report = verify(played)  # a new RetroArch, from the cached boot state
    assert report["verdict"] == "clean"
    assert report["score"] == "2 of 2"


def test_a_verifier_without_the_cache_makes_the_same_boot_state(played: Path) -> None:
    shutil.rmtree(played / ".playproof" / "retroarch-boot")
    assert verify(played)["verdict"] == "clean"  # two more launches, same fingerprint


def test_a_tampered_cache_entry_is_not_used(played: Path) -> None:
    verify(played)  # makes sure the cache holds this ROM's boot state
    state = next((played / ".playproof" / "retroarch-boot").glob("*.state"))
    state.write_bytes(b"tampered")
    assert verify(played)["verdict"] == "clean"  # made anew, not loaded
    pinned = state.with_suffix(".sha256").read_text()
    assert hashlib.sha256(state.read_bytes()).hexdigest() == pinned  # and stored again


def test_garbage_of_the_same_length_earns_nothing(
    played: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = parse_contract(CONTRACT)
    spec = f"retroarch:gambatte:{played / 'pp-collect-a.gb'}"
    monkeypatch.chdir(played)  # its boot state is in this folder's cache
    game = adhoc_target(spec, contract).open(worker=False)
    try:
        assert isinstance(game, RetroArchGame)
        assert [m.id for m in game.replay(0, INPUTS, contract).verified] == ["playing", "coin"]
        assert game.replay(0, GARBAGE, contract).verified == ()
    finally:
        game.close()


def test_mgba_reads_what_it_supports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # mGBA answers for work RAM and for IO/HRAM, and makes byte-identical boot states.
    rom = pp_collect_with_a(tmp_path)
    monkeypatch.chdir(tmp_path)
    lcd_on = {"kind": "state", "key": "ram_ff40", "op": ">=", "value": 128}
    contract = parse_contract(
        {**CONTRACT, "milestones": [*CONTRACT["milestones"], {"id": "lcd-on", "check": lcd_on}]}
    )
    game = adhoc_target(f"retroarch:mgba:{rom}", contract).open(worker=False)
    try:
        result = game.replay(0, INPUTS, contract)  # type: ignore[attr-defined]
        assert {m.id for m in result.verified} == {"playing", "coin", "lcd-on"}
    finally:
        game.close()
