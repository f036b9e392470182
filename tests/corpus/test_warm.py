"""The warm jail: one sandbox per slot, and still nothing shared between cases."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from playproof.corpus import JailLimits, load_corpus, run_corpus
from playproof.corpus._jail import JAIL_UID_BASE, JailSpec
from playproof.corpus._runner import LANES_PER_SLOT
from playproof.corpus._warm import warm_usable

from .conftest import no_jail_processes_left

QUICK = JailLimits(wall_seconds=4.0, cpu_seconds=20)
needs_warm = pytest.mark.skipif(
    not warm_usable(JailSpec()), reason="the warm jail needs root and bubblewrap"
)


def _fields(tail: str) -> dict[str, str]:
    line = next(text for text in tail.splitlines() if text.startswith("uid="))
    return dict(part.split("=", 1) for part in line.split(" "))


def _probe(subset: Any, cheat: Any, *, warm: bool) -> list[dict[str, str]]:
    corpus = load_corpus(subset.manifest, subset.roms)
    outcome = run_corpus(
        corpus, cheat("warm_probe"), jobs=1, limits=QUICK, warm=warm, prestart=True
    )
    assert [o.outcome for o in outcome.observations] == ["crash"] * len(subset.manifest.cases)
    assert all("exit status 3" in o.detail for o in outcome.observations)
    return [_fields(o.stderr_tail) for o in outcome.observations]


@needs_warm
def test_warm_cases_share_nothing(subset: Any, cheat: Any) -> None:
    seen = _probe(subset, cheat, warm=True)
    assert len(seen) == 4
    # Each case: its own empty home and a uid of the slot's two, alternating.
    assert len({s["home"] for s in seen}) == 4
    assert all(s["home-held"] == "[]" for s in seen)
    assert {int(s["uid"]) for s in seen} <= {JAIL_UID_BASE + n for n in range(LANES_PER_SLOT)}
    assert len({s["uid"] for s in seen}) == 2
    # Nothing outside the home can be written, and the control folder stays closed.
    assert {s["tmp-write"] for s in seen} == {"PermissionError"}
    assert {s["shm-write"] for s in seen} == {"PermissionError"}
    assert {s["control"] for s in seen} == {"PermissionError"}
    # The sleeper each case left in a session of its own was killed with it.
    no_jail_processes_left()


@needs_warm
def test_without_warm_each_case_has_a_fresh_sandbox(subset: Any, cheat: Any) -> None:
    seen = _probe(subset, cheat, warm=False)
    assert all(s["home"] == "/tmp" for s in seen)
    assert {s["tmp-write"] for s in seen} == {"ok"}
    no_jail_processes_left()


NAMESPACES = (
    "/bin/sh",
    "-c",
    'read -r line; echo "OK playproof-corpus/1 $(readlink /proc/self/ns/net) '
    '$(readlink /proc/self/ns/ipc)"; read -r line',
)


@needs_warm
def test_two_live_cases_in_one_warm_jail_have_their_own_namespaces() -> None:
    """The running case and the spare started beside it cannot meet over a socket or IPC."""
    from playproof.corpus._jail import reserve_lanes
    from playproof.corpus._warm import WarmJail

    jail = WarmJail(list(NAMESPACES), JailSpec(limits=QUICK))
    try:
        with reserve_lanes(2) as lanes:
            cases = [jail.start(lane) for lane in lanes]
            replies = []
            for case in cases:
                assert case.process.stdin is not None
                case.process.stdin.write(b"HELLO 1\n")
                replies.append(case.process.stdout.readline().split()[2:])
            for case in cases:
                case.stop()
                case.discard()
    finally:
        jail.close()
    (net_a, ipc_a), (net_b, ipc_b) = replies
    assert net_a.startswith(b"net:[")
    assert ipc_a.startswith(b"ipc:[")
    assert net_a != net_b
    assert ipc_a != ipc_b


@needs_warm
def test_a_warm_jail_whose_sandbox_died_starts_a_new_one() -> None:
    import signal

    from playproof.corpus._jail import reserve_lanes
    from playproof.corpus._warm import WarmJail

    responder = ["/bin/sh", "-c", 'read -r line; echo "OK playproof-corpus/1 sh"; read -r line']
    jail = WarmJail(responder, JailSpec(limits=QUICK))
    try:
        with reserve_lanes(1) as (lane,):
            for _ in range(2):
                case = jail.start(lane)
                assert case.process.stdin is not None
                case.process.stdin.write(b"HELLO 1\n")
                assert case.process.stdout.read(8) == b"OK playp"
                case.stop()
                assert case.process.returncode is not None
                case.discard()
                assert jail._sandbox is not None
                os.killpg(jail._sandbox.pid, signal.SIGKILL)
                jail._sandbox.wait()
    finally:
        jail.close()
    assert not os.path.exists(jail.control)


@needs_warm
def test_a_jail_that_cannot_start_fails_at_once_and_leaves_nothing(tmp_path: Any) -> None:
    """A working directory the sandbox lacks: OSError at once, and no file of the case."""
    from playproof.corpus._jail import reserve_lanes
    from playproof.corpus._warm import OPEN_SECONDS, WarmJail

    jail = WarmJail(["/bin/true"], JailSpec(limits=QUICK, workdir=tmp_path / "missing"))
    try:
        with reserve_lanes(1) as (lane,):
            started = time.monotonic()
            with pytest.raises(OSError, match="the warm jail did not start"):
                jail.start(lane)
            assert time.monotonic() - started < OPEN_SECONDS / 2
            assert jail._sandbox is None  # the next case gets a new sandbox
            assert os.listdir(jail.control) == []
    finally:
        jail.close()


@needs_warm
def test_a_case_that_fails_to_start_gets_the_next_one_a_new_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playproof.corpus import _warm
    from playproof.corpus._jail import reserve_lanes

    def refuse(*_args: Any) -> int:
        raise OSError("the warm jail did not start the candidate")

    jail = _warm.WarmJail(list(NAMESPACES), JailSpec(limits=QUICK))
    try:
        with reserve_lanes(1) as (lane,):
            with monkeypatch.context() as patched:
                patched.setattr(_warm, "_open_writer", refuse)
                with pytest.raises(OSError, match="did not start the candidate"):
                    jail.start(lane)
            assert jail._sandbox is None
            assert os.listdir(jail.control) == []
            case = jail.start(lane)  # a new sandbox, and the case runs
            assert case.process.stdin is not None
            case.process.stdin.write(b"HELLO 1\n")
            assert case.process.stdout.readline().startswith(b"OK playproof-corpus/1")
            case.stop()
            case.discard()
    finally:
        jail.close()


# Says hello, then kills itself with SIGKILL at the first request.
SELF_KILLED = (
    "/bin/sh",
    "-c",
    'read -r line; echo "OK playproof-corpus/1 sh"; read -r line; kill -KILL $$',
)


@needs_warm
@pytest.mark.parametrize("warm", [True, False])
def test_a_killed_crash_names_the_same_status_in_either_jail(subset: Any, warm: bool) -> None:
    """A crash by a signal reads as a shell reports it (128 + N) in either jail."""
    from playproof.corpus import CandidateSpec

    corpus = load_corpus(subset.manifest, subset.roms)
    candidate = CandidateSpec(command=SELF_KILLED)
    outcome = run_corpus(corpus, candidate, jobs=1, limits=QUICK, warm=warm)
    assert outcome.sandbox == ("per-slot" if warm else "per-process")
    assert [o.outcome for o in outcome.observations] == ["crash"] * len(subset.manifest.cases)
    assert all(o.detail.endswith("(exit status 137)") for o in outcome.observations)
    no_jail_processes_left()


def test_shell_status_maps_a_signal_as_a_shell_does() -> None:
    from playproof.corpus._runner import shell_status

    assert [shell_status(code) for code in (-9, -11, 0, 3, 137)] == [137, 139, 0, 3, 137]


@needs_warm
@pytest.mark.parametrize(("fresh", "layout"), [(False, "per-slot"), (True, "per-process")])
def test_the_grade_records_its_sandbox_layout(subset: Any, fresh: bool, layout: str) -> None:
    from playproof.corpus import CandidateSpec, grade_candidate

    corpus = load_corpus(subset.manifest, subset.roms)

    run = grade_candidate(
        corpus,
        subset.answers,
        CandidateSpec(command=SELF_KILLED),
        jobs=1,
        limits=QUICK,
        warm=not fresh,
    )
    assert run.record.isolation == "bubblewrap"
    assert run.record.sandbox == layout


@pytest.mark.parametrize("warm", [True, False])
def test_a_home_nested_thousands_deep_is_cleaned_up_and_the_grading_ends(
    subset: Any, cheat: Any, warm: bool
) -> None:
    """Removing such a home recursed past Python's limit: now every case fails, nothing is left."""
    before = set(os.listdir("/tmp"))
    corpus = load_corpus(subset.manifest, subset.roms)
    outcome = run_corpus(corpus, cheat("deep_home"), jobs=1, limits=QUICK, warm=warm)
    assert {o.outcome for o in outcome.observations} <= {"crash", "protocol-error"}
    left = {name for name in set(os.listdir("/tmp")) - before if name.startswith("playproof-")}
    assert left == set()
    no_jail_processes_left()
