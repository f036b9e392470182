"""Ad-hoc targets from a spec, their ROM pin, and what defines a game as provenance."""

import hashlib
import shutil
from pathlib import Path

import pytest

import playproof
from playproof.core.contract import parse_contract
from playproof.errors import ContractError, FormatError, TargetError
from playproof.targets import (
    adhoc_family,
    adhoc_target,
    get_target,
    read_contract,
    target_libraries,
    target_roms,
)

ROM = Path(playproof.__file__).parent / "adapters" / "pyboy" / "rom" / "pp_collect.gb"
CONTRACT = parse_contract(
    {
        "schema": "playproof/contract/v1",
        "game": "any",
        "milestones": [{"id": "m", "check": {"kind": "frame-hash", "hash": "0" * 64}}],
    }
)


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        ("ale:pong", "ale"),
        ("gym:CartPole-v1", "gym"),
        ("retro:Airstriker-Genesis-v0", "retro"),
        ("gb:roms/game.gb", "gb"),
        ("native/2048", None),
        ("gym:", None),
        ("nes:mario", None),
    ],
)
def test_adhoc_family(spec: str, family: str | None) -> None:
    assert adhoc_family(spec) == family


def test_an_adhoc_target_is_never_calibrated_and_says_so() -> None:
    target = adhoc_target("gym:CartPole-v1", CONTRACT)
    assert target.name == "gym:CartPole-v1"
    assert not target.calibrated
    assert target.label == "gym:CartPole-v1 (uncalibrated)"
    assert target.reference == ()
    assert get_target("gym/cartpole").calibrated
    # Calibrated means the contract went through calibration, even when it does not separate.
    assert get_target("native/2048").spec.separates is False
    assert get_target("native/2048").calibrated


def test_a_user_contract_makes_a_packaged_target_uncalibrated() -> None:
    target = playproof.resolve_target("native/2048", CONTRACT)
    assert target.name == "native/2048"
    assert target.user_contract
    assert not target.calibrated
    same = playproof.resolve_target("native/2048", get_target("native/2048").contract)
    assert same.calibrated


def test_an_adhoc_spec_needs_a_contract() -> None:
    with pytest.raises(TargetError, match="--contract"):
        playproof.resolve_target("gym:CartPole-v1")


def test_bad_specs_are_refused() -> None:
    with pytest.raises(TargetError, match="not an ad-hoc target"):
        adhoc_target("nes:mario", CONTRACT)
    with pytest.raises(TargetError, match="characters"):
        adhoc_target("gym:Cart Pole", CONTRACT)
    with pytest.raises(TargetError, match="256"):
        adhoc_target("gym:" + "x" * 300, CONTRACT)


def test_a_gb_rom_is_pinned_by_its_digest(tmp_path: Path) -> None:
    digest = hashlib.sha256(ROM.read_bytes()).hexdigest()
    copy = tmp_path / "same.gb"
    shutil.copyfile(ROM, copy)
    target = adhoc_target(f"gb:{copy}", CONTRACT, rom_sha256=digest)
    assert target.spec.options["game_id"] == f"gb-{digest[:12]}"
    changed = tmp_path / "changed.gb"
    blob = bytearray(ROM.read_bytes())
    blob[0x200] ^= 0xFF
    changed.write_bytes(bytes(blob))
    with pytest.raises(TargetError, match="the record pins"):
        adhoc_target(f"gb:{changed}", CONTRACT, rom_sha256=digest)
    with pytest.raises(TargetError, match="cannot read ROM"):
        adhoc_target(f"gb:{tmp_path / 'missing.gb'}", CONTRACT)


def test_a_retro_game_is_found_by_its_id_without_the_version() -> None:
    pytest.importorskip("stable_retro")
    target = adhoc_target("retro:Airstriker-Genesis", CONTRACT)
    assert target.spec.options["game"] == "Airstriker-Genesis-v0"
    assert target.name == "retro:Airstriker-Genesis"


def test_libraries_and_roms_of_each_family() -> None:
    assert target_libraries(get_target("native/2048")) == {}
    assert target_roms(get_target("native/2048")) is None
    assert set(target_libraries(get_target("gym/cartpole"))) == {"gymnasium", "numpy"}
    digest = hashlib.sha256(ROM.read_bytes()).hexdigest()
    assert target_roms(get_target("pyboy/pp-collect")) == {"pp_collect.gb": digest}
    assert target_roms(adhoc_target(f"gb:{ROM}", CONTRACT)) == {"pp_collect.gb": digest}
    assert "pyboy" in target_libraries(adhoc_target(f"gb:{ROM}", CONTRACT))


def test_ale_rom_digest_comes_from_the_bundled_rom() -> None:
    roms = pytest.importorskip("ale_py.roms")
    path = Path(roms.get_rom_path("breakout"))
    assert target_roms(get_target("ale/breakout")) == {
        "breakout": hashlib.sha256(path.read_bytes()).hexdigest()
    }


def test_read_contract_is_bounded_and_validated(tmp_path: Path) -> None:
    good = tmp_path / "c.json"
    good.write_text('{"schema": "playproof/contract/v1", "game": "g", "milestones": []}')
    with pytest.raises(ContractError):
        read_contract(good)
    with pytest.raises(FormatError):
        read_contract(tmp_path / "missing.json")
