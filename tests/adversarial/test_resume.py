"""Crash and resume: a campaign killed with SIGKILL at random points finishes like one run.

``playproof campaign`` plays ``native/2048`` in a real child process with a
ledger file and a signing key. The test kills it with SIGKILL a few times at
seeded random points (a random number of saved segments in, then a random
pause, so a kill lands in a segment, in a save or between them), reruns the
same command each time, and lets the last run finish. The signed record must
verify and equal one continuous run: same inputs, same chain head, same
verified milestones. The tests of ``test_ledger.py`` kill a save at one chosen
point and the campaign tests resume after clean pauses; this one kills
anywhere.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from campaigns import KEY

import playproof
from playproof.drivers import BaselineDriver
from playproof.engine import load_ledger

KILLS = 4
"""SIGKILLs sent before the campaign is let finish."""
SEED = 20261201
"""Seeds the kill points, so a failure can be replayed."""
TURNS = 400
SEGMENT_TURNS = 20
MAX_SEGMENTS_BEFORE_KILL = 4
"""A kill comes after 1 to this many segment lines of the child."""
MAX_PAUSE_S = 0.02
"""Then after a pause of up to this long (a segment of 20 turns takes about this)."""
WAIT_S = 120.0
"""How long the test waits for a child's next line or its exit (a loaded machine)."""
EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]


def _command(folder: Path) -> list[str]:
    return [
        *EXE,
        "campaign",
        "native/2048",
        "--agent",
        "baseline:random-walk",
        "--agent-seed",
        "7",
        "--seed",
        "3",
        "--max-turns",
        str(TURNS),
        "--no-stop-at-game-over",
        "--segment-turns",
        str(SEGMENT_TURNS),
        "--ledger",
        str(folder / "ledger.json"),
        "--key-dir",
        str(folder / "keys"),
        "--out",
        str(folder / "record.json"),
    ]


def _kill_after(process: subprocess.Popen[bytes], segments: int, pause: float) -> bool:
    """SIGKILL ``process`` once it reported ``segments`` saved segments and ``pause`` passed.

    False when the process finished first (nothing left to kill).
    """
    assert process.stderr is not None
    seen = 0
    pending = b""
    end = time.monotonic() + WAIT_S
    while seen < segments:
        ready, _, _ = select.select([process.stderr], [], [], max(end - time.monotonic(), 0))
        if not ready:
            raise AssertionError("the campaign printed nothing for too long")
        chunk = os.read(process.stderr.fileno(), 65536)
        if not chunk:
            return False
        pending += chunk
        *lines, pending = pending.split(b"\n")
        seen += sum(line.startswith(b"segment ") for line in lines)
    time.sleep(pause)
    process.send_signal(signal.SIGKILL)
    return True


def _continuous() -> playproof.RunRecord:
    return playproof.run(
        "native/2048",
        BaselineDriver("random-walk", seed=7),
        seed=3,
        max_turns=TURNS,
        stop_at_game_over=False,
    )


@pytest.mark.timeout(600)
def test_a_campaign_killed_at_random_points_finishes_like_one_run(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    KEY.save(keys / "signing.pem")
    KEY.verifying_key.save(keys / "signing.pub.pem")
    chance = random.Random(SEED)
    killed = 0
    for _ in range(KILLS):
        process = subprocess.Popen(
            _command(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            segments = chance.randint(1, MAX_SEGMENTS_BEFORE_KILL)
            killed += _kill_after(process, segments, chance.uniform(0, MAX_PAUSE_S))
        finally:
            process.kill()
            process.wait(timeout=WAIT_S)
            assert process.stderr is not None
            process.stderr.close()
        if not (tmp_path / "record.json").exists():
            # Every kill leaves a ledger that loads: the last save, whole.
            assert load_ledger(tmp_path / "ledger.json", KEY.verifying_key).decisions
    assert killed == KILLS, "a campaign finished before its kill; lower the kill points"
    finished = subprocess.run(_command(tmp_path), capture_output=True, timeout=WAIT_S, check=False)
    assert finished.returncode == 0, finished.stderr[-2000:]
    envelope = (tmp_path / "record.json").read_bytes()
    report = playproof.verify_signed(envelope, KEY.verifying_key)
    assert report.clean, report
    resumed = playproof.verify_envelope(envelope, KEY.verifying_key).record
    assert resumed is not None
    one = _continuous()
    assert resumed.inputs == one.inputs
    assert resumed.chain_head == one.chain_head
    assert resumed.claimed == one.claimed
    assert sorted(report.verified) == sorted(m.id for m in one.claimed)
    assert len(resumed.decisions) == TURNS
    ledger = json.loads((tmp_path / "ledger.json").read_bytes())
    assert ledger["chain_head"] == one.chain_head
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
