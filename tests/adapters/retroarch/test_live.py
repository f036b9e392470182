"""RetroArch driven live: replay by a second launched emulator, garbage rejected, clean exit.

These start RetroArch themselves (Debian ``retroarch`` + ``libretro-gambatte``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from playproof.adapters.retroarch import RetroArchGame, make_game
from playproof.errors import TargetError
from playproof.targets._registry import Target, load_target_dir
from playproof.targets.packaged import DATA

if shutil.which("retroarch") is None and os.geteuid() != 0:
    pytest.skip(
        "RetroArch is not installed (as root, scripts/system-deps.sh installs it)",
        allow_module_level=True,
    )

FIRST_COIN = 14
"""The reference collects its first coin at this input."""
REPRODUCED = ("score", "lives", "px", "py", "cx", "cy", "rng", "moves", "over", "state")
"""Channels measured equal between two launches (frames, subticks, time drift by a frame)."""


@pytest.fixture(scope="module")
def target() -> Target:
    return load_target_dir(DATA / "retroarch" / "pp-collect")


@pytest.fixture(scope="module")
def first(target: Target) -> Iterator[RetroArchGame]:
    game = target.open(worker=False)
    assert isinstance(game, RetroArchGame)
    yield game
    game.close()


def test_replay_verifies_in_a_second_launched_emulator(
    target: Target, first: RetroArchGame
) -> None:
    inputs = target.reference[:FIRST_COIN]
    played = first.replay(0, inputs, target.contract, trace=True)
    assert [m.id for m in played.verified] == ["score-1"]
    second = target.open(worker=False)  # a separate RetroArch process
    try:
        replayed = second.replay(0, inputs, target.contract, trace=True)  # type: ignore[attr-defined]
        assert [m.id for m in replayed.verified] == ["score-1"]
        assert played.trace is not None
        assert replayed.trace is not None
        for mine, theirs in zip(played.trace, replayed.trace, strict=True):
            assert {k: mine.engine[k] for k in REPRODUCED} == {
                k: theirs.engine[k] for k in REPRODUCED
            }
        garbage = ("a",) * FIRST_COIN
        assert second.replay(0, garbage, target.contract).verified == ()  # type: ignore[attr-defined]
    finally:
        second.close()


def test_start_is_not_an_input(first: RetroArchGame) -> None:
    # Holding START on the network gamepad runs the paused emulator freely.
    assert "start" not in first.descriptor.vocabulary
    first.reset(0)
    before = first.evidence().engine
    first.step("start")  # an unknown word: time passes, nothing is pressed
    assert first.evidence().engine["state"] == before["state"]


def test_unmapped_memory_is_a_typed_error(first: RetroArchGame) -> None:
    client = first._require_client()
    with pytest.raises(TargetError, match="no memory at 0xff80"):
        client.read_memory(0xFF80, 1)


def test_screenshot_with_null_video(first: RetroArchGame) -> None:
    assert first.screenshot().startswith(b"\x89PNG\r\n\x1a\n")


def test_close_ends_retroarch(target: Target) -> None:
    game = make_game(**target.spec.options)
    pid = game.pid
    game.close()
    game.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(TargetError, match="closed"):
        game.evidence()
