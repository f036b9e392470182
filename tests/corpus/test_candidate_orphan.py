"""A candidate that exits while a child it forked holds its output open fails that case at once.

No end of output comes (the child still holds the pipe), so the grader must notice the
candidate's own exit. A fresh bubblewrap sandbox never showed the problem (its PID
namespace ends with the candidate, child included); the warm jail (one sandbox for the
slot, so the child outlives the candidate there) and the rlimits fallback (no PID
namespace at all) did: each such case waited for its deadline. The rlimits layout is
checked at the channel, over an unjailed process: as root it runs the candidate as a jail
uid, which here could read the shipped answers (so the grader refuses to start).

A warm jail is used only when a slot starts more than one process (and, as root, with
bubblewrap); every layout here starts three. Every case has a 60-second deadline; the
test finishing well inside it is the proof, and the failed case says the candidate exited
(never that the deadline passed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from controllers import run_synthetic

from playproof.corpus import JailLimits, bubblewrap_usable
from playproof.corpus._jail import IsolationChoice
from playproof.corpus._protocol import CandidateChannel, CandidateGone
from playproof.corpus._runner import RunOutcome

CANDIDATES = Path(__file__).parent / "candidates"
needs_bwrap = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot run here")
needs_warm = pytest.mark.skipif(
    not bubblewrap_usable() or os.geteuid() != 0, reason="a warm jail needs root and bubblewrap"
)
GENEROUS = JailLimits(wall_seconds=60.0, cpu_seconds=60)
ROMS = {
    "first": b"FIRST" + bytes(300),
    "orphan": b"ORPHAN" + bytes(300),
    "second": b"SECOND" + bytes(300),
}
"""In manifest order (every budget is the same): the middle case's process leaves a child."""


def _run(tmp_path: Path, isolation: IsolationChoice, warm: bool, reuse: int) -> RunOutcome:
    return run_synthetic(
        tmp_path, ROMS, limits=GENEROUS, isolation=isolation, warm=warm, reuse=reuse
    )


def _check(run: RunOutcome, reasons: tuple[str, ...]) -> None:
    seen = {o.case_id: o for o in run.observations}
    assert seen["first"].outcome == "ok", seen["first"]
    assert seen["second"].outcome == "ok", seen["second"]
    orphan = seen["orphan"]
    assert orphan.outcome == "crash", orphan
    assert any(reason in orphan.detail for reason in reasons), orphan.detail
    assert "deadline" not in orphan.detail
    assert "(exit status 3)" in orphan.detail, orphan.detail  # its own status, not a kill


REUSE = pytest.mark.parametrize("reuse", [1, 2], ids=["fresh-process", "reused-process"])


@REUSE
@needs_warm
def test_warm_jail_fails_the_case_when_the_candidate_exits(tmp_path: Path, reuse: int) -> None:
    run = _run(tmp_path, "bubblewrap", True, reuse)
    assert run.sandbox == "per-slot"  # the warm jail really served these cases
    _check(run, ("the candidate exited before replying to LOAD",))


def test_the_channel_fails_at_once_when_a_process_without_a_sandbox_exits() -> None:
    """The rlimits fallback's layout (the candidate is the started process, no PID namespace).

    Run end to end only where a jail uid may reach the interpreter and not the shipped
    answers; here the channel is driven directly over an unjailed process instead.
    """
    process = subprocess.Popen(
        [sys.executable, str(CANDIDATES / "synthetic.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        channel = CandidateChannel(process.stdin, process.stdout, time.monotonic() + 60, process)
        channel.hello()
        assert channel.request(f"LOAD {len(ROMS['first'])}", ROMS["first"]) == ""
        with pytest.raises(CandidateGone) as gone:
            channel.request(f"LOAD {len(ROMS['orphan'])}", ROMS["orphan"])
        assert str(gone.value) == "the candidate exited before replying to LOAD"
        assert process.returncode == 3
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the child, still holding the pipes
        process.wait()
        process.stdin.close()
        process.stdout.close()


@needs_bwrap
def test_fresh_jail_fails_the_case_when_the_candidate_exits(tmp_path: Path) -> None:
    run = _run(tmp_path, "bubblewrap", False, 2)
    assert run.sandbox == "per-process"
    # Its PID namespace ends with the candidate: the child goes too and the output closes.
    _check(
        run,
        (
            "the candidate closed its output before replying to LOAD",
            "the candidate exited before replying to LOAD",
        ),
    )
