"""A candidate that closes its output or exits without replying fails that case at once.

A warm jail is used only when a slot starts more than one process (and, as root, with
bubblewrap); the "warm-jail" cases below meet both when run as root.

Every case here has a 60-second deadline; the test finishing well inside it is the proof,
and each failed case says the candidate closed its output (never that the deadline passed).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from controllers import run_synthetic

from playproof.corpus import JailLimits, bubblewrap_usable
from playproof.corpus._runner import RunOutcome

CANDIDATES = Path(__file__).parent / "candidates"
needs_bwrap = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot run here")
GENEROUS = JailLimits(wall_seconds=60.0, cpu_seconds=60)
ROMS = {
    "first": b"FIRST" + bytes(300),
    "close": b"CLOSE" + bytes(300),
    "second": b"SECOND" + bytes(300),
    "exit": b"EXIT" + bytes(300),
}
"""In manifest order (every budget is the same): with two cases per process, each
process passes one case and then goes quiet on the next."""


def _run(tmp_path: Path, warm: bool, reuse: int) -> RunOutcome:
    return run_synthetic(tmp_path, ROMS, limits=GENEROUS, warm=warm, reuse=reuse)


@pytest.mark.parametrize("reuse", [1, 2], ids=["fresh-process", "reused-process"])
@pytest.mark.parametrize("warm", [False, True], ids=["fresh-jails", "warm-jail"])
@needs_bwrap
def test_a_candidate_that_goes_quiet_fails_at_once_with_the_reason(
    tmp_path: Path, warm: bool, reuse: int
) -> None:
    run = _run(tmp_path, warm, reuse)
    if warm and os.geteuid() == 0:
        assert run.sandbox == "per-slot"  # the warm jail really served these cases
    else:
        assert run.sandbox == "per-process"
    seen = {o.case_id: o for o in run.observations}
    assert seen["first"].outcome == "ok", seen["first"]
    assert seen["second"].outcome == "ok", seen["second"]
    close, gone = seen["close"], seen["exit"]
    for quiet in (close, gone):
        assert quiet.outcome == "crash", quiet
        assert "closed its output before replying to LOAD" in quiet.detail, quiet.detail
        assert "deadline" not in quiet.detail
    # Closed but still running: the grader stopped it. Exited: its own status.
    assert "still running" in close.detail, close.detail
    assert "(exit status 3)" in gone.detail, gone.detail
