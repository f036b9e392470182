"""The cross-emulator proof: one ROM, one contract, PyBoy and RetroArch agree.

A script found on RetroArch (the reference of ``retroarch/pp-collect``)
verifies clean on PyBoy, channel by channel; a garbage script of the same
length earns nothing on either.
"""

from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("pyboy", reason="the cross-emulator proof needs PyBoy (playproof[pyboy])")
if shutil.which("retroarch") is None and os.geteuid() != 0:
    pytest.skip(
        "RetroArch is not installed (as root, scripts/system-deps.sh installs it)",
        allow_module_level=True,
    )

from playproof.errors import TargetError
from playproof.exec._cross import CROSS_PAIRS, cross_replay
from playproof.targets.pyboy import pp_collect as pyboy_target
from playproof.targets.retroarch import pp_collect as retroarch_target

SCORE_CHANNELS = ("score", "lives", "px", "py", "cx", "cy", "rng", "moves", "over", "state")
"""Game-logic channels; frames, subticks and time count frames, which the two
emulators slice differently around a coin (the screen is switched off to redraw)."""
FIRST_COIN = 11


def test_a_script_found_on_retroarch_verifies_on_pyboy() -> None:
    pyboy, retroarch = pyboy_target(), retroarch_target()
    inputs = ("start", *retroarch.reference[:FIRST_COIN])
    first, second = pyboy.open(worker=False), retroarch.open(worker=False)
    try:
        pairing = CROSS_PAIRS[("pyboy/pp-collect", "retroarch")]
        report = cross_replay(first, second, 0, inputs, retroarch.contract, pairing)
        assert report.verified == report.other_verified == ("score-1",)
        agreement = {c.channel: c for c in report.channels}
        for name in SCORE_CHANNELS:
            assert agreement[name].agrees, agreement[name]
        assert (
            agreement["score"].compared == FIRST_COIN + 1
        )  # the snapshot after start, then one an input

        garbage = ("start",) + ("b",) * FIRST_COIN
        rejected = cross_replay(first, second, 0, garbage, retroarch.contract, pairing)
        assert rejected.verified == rejected.other_verified == ()
        with pytest.raises(TargetError, match="does not open with it"):
            cross_replay(first, second, 0, inputs[1:], retroarch.contract, pairing)
    finally:
        first.close()
        second.close()
