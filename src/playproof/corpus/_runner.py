"""The producer: run a candidate on every case in a jail and collect raw observations.

The runner never decides pass or fail. It drives each case as its mode says,
records what the candidate reported (serial bytes, the status block in
cartridge RAM, registers, a screen hash) and how the case ended (``ok``,
``crash``, ``timeout``, ``protocol-error``). Cases run in parallel, one case
per pool slot at a time; by default every case gets a fresh process in a fresh
jail, started while the slot's previous case still runs. When processes serve
several cases, which cases share a process is fixed by the manifest (never by
timing), so a candidate that leaks state from case to case still gets the same
grade on every run.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import re
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.canonical import sha256_hex
from playproof.corpus._cgroup import MemoryCgroup, memory_cgroup_in_use
from playproof.corpus._jail import (
    Isolation,
    IsolationChoice,
    JailedProcess,
    JailLimits,
    JailSpec,
    Sandbox,
    check_reachable,
    launch,
    memory_limit_reason,
    reserve_lanes,
    resolve_isolation,
)
from playproof.corpus._manifest import Corpus, CorpusCase, Platform
from playproof.corpus._protocol import (
    CandidateChannel,
    CandidateGone,
    CandidateTimeout,
    ProtocolBreach,
)
from playproof.corpus._runtime import Runtime, runtime_command, runtime_view
from playproof.corpus._warm import WarmCase, WarmJail, warm_usable
from playproof.corpus._wire import (
    CHIP8_KEYS,
    CHIP8_SCREEN_BYTES,
    CYCLES_PER_FRAME,
    SCREEN_BYTES,
    screen_rgb,
)

__all__ = [
    "MAX_SERIAL_BYTES",
    "RESULT_BLOCK_BYTES",
    "CandidateSpec",
    "CaseObservation",
    "Outcome",
    "RunOutcome",
    "run_corpus",
    "shell_status",
]

MAX_SERIAL_BYTES = 65536
"""Serial output kept per case; more is a flood and fails the case."""
RESULT_BLOCK_BYTES = 256
"""Bytes read at a case's ``result_address`` (status, signature, text)."""
MAX_STDERR_TAIL = 2000
"""Characters of the candidate's stderr kept in an observation."""
QUIT_SECONDS = 2.0
GONE_SECONDS = 1.0
"""How long a candidate that closed its output may take to exit; past it, it was still
running when the grader stopped it, and the status it ends with is the grader's kill."""
LANES_PER_SLOT = 2
"""Jail identities (uids when root) per pool slot: one runs a case, one starts the next."""
BLARGG_SIGNATURE = b"\xde\xb0\x61"
BLARGG_RUNNING = 0x80

Outcome = Literal["ok", "crash", "timeout", "protocol-error"]


class CaseObservation(BaseModel):
    """What the candidate reported on one case; raw, never judged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    outcome: Outcome
    detail: Annotated[str, Field(max_length=600)] = ""
    frames: Annotated[int, Field(ge=0)] = 0
    serial: Annotated[str, Field(max_length=MAX_SERIAL_BYTES)] | None = None
    """Serial bytes, one character per byte (latin-1)."""
    memory: Annotated[str, Field(max_length=2 * RESULT_BLOCK_BYTES)] | None = None
    """Hex of the bytes at the case's result address, as last read."""
    registers: dict[str, int] | None = None
    at_breakpoint: bool | None = None
    """``until-breakpoint``: True when ``RUNBP`` answered ``BREAK``, False on ``LIMIT``."""
    screen_sha256: str | None = None
    """SHA-256 of the screen: on a DMG as R, G, B bytes per pixel, row-major
    (``_wire.screen_rgb``); on CHIP-8 the 2048 display bytes (0 or 1) as sent."""
    wall_seconds: float = 0.0
    stderr_tail: Annotated[str, Field(max_length=MAX_STDERR_TAIL)] = ""


@dataclass(frozen=True)
class CandidateSpec:
    """How to start a candidate and what it may see (read-only) besides the system."""

    command: tuple[str, ...]
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    """Corpus folders masked in the jail (see :attr:`JailSpec.hidden`)."""
    secret: tuple[Path, ...] = ()
    """Answers files masked in the jail (see :attr:`JailSpec.secret`)."""
    env: dict[str, str] = field(default_factory=dict)
    workdir: Path | None = None
    """Working directory inside the jail (default: the private /tmp)."""
    runtime: Runtime = "native"
    """What the jail shows besides ``read_only`` (``_runtime``): never the grader's
    interpreter or libraries unless ``grader`` (the reference candidate only)."""


def shell_status(returncode: int) -> int:
    """An exit status as a shell reports it: 128 + N for a process that signal N ended.

    A new sandbox's process reports a kill as ``Popen`` does (-N) and a warm
    jail's as its shell does (128 + N); a crash names the same number in both.
    """
    return 128 - returncode if returncode < 0 else returncode


@dataclass(frozen=True)
class RunOutcome:
    """Every case's observation (manifest order), the isolation used and its sandbox layout."""

    observations: list[CaseObservation]
    isolation: Isolation
    wall_seconds: float
    sandbox: Sandbox | None = None
    """None under rlimits (no sandbox at all)."""
    memory_cgroup: MemoryCgroup | None = None
    """Which control groups bounded each candidate process's total memory (``none``: none)."""


_REGISTER_DIGITS = {"SP": 4, "PC": 4} | dict.fromkeys(("A", "F", "B", "C", "D", "E", "H", "L"), 2)
"""The most hex digits each register's value may have (8-bit registers 2, SP and PC 4)."""
_HEX = re.compile(r"[0-9a-fA-F]+")


def _regs(text: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for part in text.split(" "):
        if not part:
            continue
        name, _, raw = part.partition("=")
        if name not in _REGISTER_DIGITS or name in values:
            raise ProtocolBreach(f"bad register field {part[:20]!r}")
        # Hex digits only: no sign, "0x", "_" or other space, which ``int(raw, 16)`` takes.
        if not (_HEX.fullmatch(raw) and len(raw) <= _REGISTER_DIGITS[name]):
            raise ProtocolBreach(f"bad register value {part[:20]!r}")
        values[name] = int(raw, 16)
    return values


def _result_ready(case: CorpusCase, serial: bytes, block: bytes | None) -> bool:
    text = serial.decode("latin-1")
    if any(marker in text for marker in case.stop_markers):
        return True
    return block is not None and block[1:4] == BLARGG_SIGNATURE and block[0] != BLARGG_RUNNING


@dataclass
class _Collected:
    frames: int = 0
    serial: bytearray = field(default_factory=bytearray)
    memory: bytes | None = None
    registers: dict[str, int] | None = None
    at_breakpoint: bool | None = None
    screen: str | None = None

    def add_serial(self, data: bytes) -> None:
        """Keep serial bytes up to :data:`MAX_SERIAL_BYTES`; past it the case fails."""
        room = MAX_SERIAL_BYTES - len(self.serial)
        self.serial.extend(data[: max(0, room)])
        if len(data) > room:
            raise ProtocolBreach(
                f"serial output over the {MAX_SERIAL_BYTES // 1024} KiB limit "
                f"({MAX_SERIAL_BYTES} bytes per case)"
            )


def _drive_chip8(channel: CandidateChannel, case: CorpusCase, rom: bytes, seen: _Collected) -> None:
    """``PLATFORM``, ``LOAD``, the pokes, frames split at each scripted key event, ``SCREEN``."""
    setup = case.chip8
    if setup is None:
        raise ProtocolBreach(f"case {case.id!r} has no CHIP-8 setup")  # the manifest refuses this
    channel.request(f"PLATFORM chip8 {setup.instructions_per_frame}")
    channel.request(f"LOAD {len(rom)}", rom)
    for poke in setup.poke:
        channel.request(f"POKE {poke.address} {poke.value}")
    for event in setup.keys:
        if event.frame > seen.frames:
            channel.request(f"FRAMES {event.frame - seen.frames}")
            seen.frames = event.frame
        channel.request(f"{'PRESS' if event.down else 'RELEASE'} {CHIP8_KEYS[event.key]}")
    if case.budget_frames > seen.frames:
        channel.request(f"FRAMES {case.budget_frames - seen.frames}")
        seen.frames = case.budget_frames
    screen = channel.data("SCREEN", CHIP8_SCREEN_BYTES)
    if len(screen) != CHIP8_SCREEN_BYTES:
        raise ProtocolBreach(f"SCREEN sent {len(screen)} bytes, expected {CHIP8_SCREEN_BYTES}")
    if screen.strip(b"\0\1"):
        raise ProtocolBreach("SCREEN: a CHIP-8 pixel byte is not 0 or 1")
    seen.screen = sha256_hex(screen)


def _drive(
    channel: CandidateChannel,
    case: CorpusCase,
    rom: bytes,
    seen: _Collected,
    platform: Platform = "dmg",
) -> None:
    if platform == "chip8":
        _drive_chip8(channel, case, rom, seen)
        return
    channel.request(f"LOAD {len(rom)}", rom)
    if case.mode == "until-breakpoint":
        reply = channel.request(f"RUNBP {case.budget_frames * CYCLES_PER_FRAME}")
        if reply not in ("BREAK", "LIMIT"):
            raise ProtocolBreach(f"RUNBP answered {reply[:40]!r}")
        seen.frames = case.budget_frames
        seen.at_breakpoint = reply == "BREAK"
        seen.registers = _regs(channel.request("REGS"))
        seen.add_serial(channel.data("SERIAL"))
        return
    if case.mode == "frames":
        channel.request(f"FRAMES {case.budget_frames}")
        seen.frames = case.budget_frames
        seen.add_serial(channel.data("SERIAL"))
        screen = channel.data("SCREEN", SCREEN_BYTES)
        if len(screen) != SCREEN_BYTES:
            raise ProtocolBreach(f"SCREEN sent {len(screen)} bytes, expected {SCREEN_BYTES}")
        try:
            seen.screen = sha256_hex(screen_rgb(screen))
        except ValueError as exc:
            raise ProtocolBreach(f"SCREEN: {exc}") from None
        return
    settling = False
    while seen.frames < case.budget_frames:
        step = min(case.poll_frames, case.budget_frames - seen.frames)
        channel.request(f"FRAMES {step}")
        seen.frames += step
        seen.add_serial(channel.data("SERIAL"))
        if case.result_address is not None:
            block = channel.data(f"MEM {case.result_address} {RESULT_BLOCK_BYTES}")
            if len(block) != RESULT_BLOCK_BYTES:
                raise ProtocolBreach(f"MEM sent {len(block)} bytes, expected {RESULT_BLOCK_BYTES}")
            seen.memory = block
        if settling:
            break  # one more poll after the result, so trailing text arrives
        settling = _result_ready(case, bytes(seen.serial), seen.memory)


def _stderr_tail(jailed: Jailed) -> str:
    try:
        with jailed.stderr_path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - MAX_STDERR_TAIL))
            return handle.read(MAX_STDERR_TAIL).decode("utf-8", errors="replace")[-MAX_STDERR_TAIL:]
    except OSError:
        return ""


Jailed = JailedProcess | WarmCase
"""A started candidate: in a jail of its own, or in its slot's warm jail."""


def _ended_within(jailed: Jailed, seconds: float) -> bool:
    """Whether the candidate's process exited by itself, waiting up to ``seconds``."""
    process = jailed.process
    if isinstance(process, subprocess.Popen):
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    return process.wait(seconds) is not None


@dataclass
class _Live:
    """A started candidate process and its channel once it said hello."""

    jailed: Jailed
    channel: CandidateChannel | None = None
    oom_kills: int = 0
    """Its group's OOM kills when its last case ended (a new one rises only in this case)."""


class _Slot:
    """One pool slot: runs cases one at a time, each in a jailed candidate process.

    A process serves one group of cases and retires after the group's last
    case (or at once when a case fails). When the current process retires and
    more cases wait, the slot starts the next process (a fresh jail under the
    slot's other uid) while the case runs, so the candidate's start-up
    overlaps real work instead of adding to it.
    """

    def __init__(
        self,
        candidate: CandidateSpec,
        spec: JailSpec,
        lanes: tuple[int, int],
        prestart: bool = True,
        warm: bool = False,
        cgroup: bool = False,
    ):
        self.candidate = candidate
        self.spec = spec
        self.lanes = lanes
        self.lane = 0
        self.prestart = prestart
        self.cgroup = cgroup
        self.current: _Live | None = None
        self.spare: Jailed | None = None
        self.warm = WarmJail(list(candidate.command), spec, cgroup=cgroup) if warm else None

    def _launch(self) -> Jailed:
        # Lanes alternate, so a spare never shares a uid with the process the
        # per-uid sweep is about to clean up.
        lane = self.lanes[self.lane]
        self.lane = 1 - self.lane
        if self.warm is not None:
            return self.warm.start(lane)
        return launch(list(self.candidate.command), self.spec, lane, cgroup=self.cgroup)

    def _prestart(self) -> None:
        try:
            self.spare = self._launch()
        except OSError:
            self.spare = None  # the next case launches itself and reports the error

    def run_case(
        self, corpus: Corpus, case: CorpusCase, last: bool, more_waiting: Callable[[], bool]
    ) -> CaseObservation:
        """Run one case in the slot's process; ``last`` retires the process afterwards."""
        started = time.monotonic()
        deadline = started + self.spec.limits.wall_seconds
        seen = _Collected()
        outcome: Outcome = "ok"
        detail = ""
        closed = False
        try:
            if self.current is None:
                jailed, self.spare = self.spare or self._launch(), None
                self.current = _Live(jailed)
            live = self.current
            if live.channel is None:
                assert live.jailed.process.stdin is not None
                assert live.jailed.process.stdout is not None
                stdin, stdout = live.jailed.process.stdin, live.jailed.process.stdout
                # Its own exit ends a wait too: a child it forked may hold its output open.
                live.channel = CandidateChannel(stdin, stdout, deadline, live.jailed.process)
                live.channel.hello()
            live.channel.deadline = deadline
            if last and self.prestart and self.spare is None and more_waiting():
                self._prestart()
            _drive(live.channel, case, corpus.roms[case.id], seen, corpus.manifest.platform)
        except CandidateTimeout as exc:
            outcome, detail = "timeout", str(exc)
        except CandidateGone as exc:
            outcome, detail, closed = "crash", str(exc), True
        except ProtocolBreach as exc:
            outcome, detail = "protocol-error", str(exc)
        except OSError as exc:
            outcome, detail = "crash", f"could not start or talk to the candidate: {exc}"
        if self.current is not None:
            # Past its group's memory limit the kernel killed one of the candidate's
            # processes (all of them under cgroup v2): whatever else happened, that is why.
            kills = self.current.jailed.oom_kills()
            if kills > self.current.oom_kills:
                outcome, detail, closed = (
                    "crash",
                    memory_limit_reason(self.spec.limits, kills, "the candidate's"),
                    False,
                )
                self.current.oom_kills = kills
        tail = ""
        if outcome != "ok" and self.current is not None:
            jailed = self.current.jailed
            self.current = None
            # Closing its output is not exiting: one that runs on is stopped by the grader,
            # and the status of that kill is not the candidate's own.
            running = closed and not _ended_within(jailed, GONE_SECONDS)
            jailed.stop()
            status = jailed.process.returncode
            if running:
                detail += " (it was still running: the grader stopped it)"
            elif outcome == "crash" and status is not None:
                detail += f" (exit status {shell_status(status)})"
            tail = _stderr_tail(jailed)
            jailed.discard()
        elif self.current is not None and last:
            self._retire()
        return CaseObservation(
            case_id=case.id,
            outcome=outcome,
            detail=detail[:600],
            frames=seen.frames,
            serial=bytes(seen.serial).decode("latin-1") if seen.serial else "",
            memory=seen.memory.hex() if seen.memory is not None else None,
            registers=seen.registers,
            at_breakpoint=seen.at_breakpoint,
            screen_sha256=seen.screen,
            wall_seconds=round(time.monotonic() - started, 4),
            stderr_tail=tail,
        )

    def _retire(self) -> None:
        live, self.current = self.current, None
        if live is None:
            return
        if live.channel is not None:
            live.channel.deadline = time.monotonic() + QUIT_SECONDS
            with contextlib.suppress(CandidateTimeout, CandidateGone, ProtocolBreach, OSError):
                live.channel.request("QUIT")
        live.jailed.stop()
        live.jailed.discard()

    def close(self) -> None:
        """End the current process and any unused spare."""
        self._retire()
        spare, self.spare = self.spare, None
        if spare is not None:
            spare.stop()
            spare.discard()
        if self.warm is not None:
            self.warm.close()


def run_corpus(
    corpus: Corpus,
    candidate: CandidateSpec,
    *,
    jobs: int = 2,
    cases_per_process: int = 1,
    limits: JailLimits | None = None,
    isolation: IsolationChoice = "auto",
    on_case: Callable[[CaseObservation], None] | None = None,
    prestart: bool = True,
    warm: bool = True,
) -> RunOutcome:
    """Run ``candidate`` on every case of ``corpus``; raw observations in manifest order.

    ``jobs`` cases run at once, longest budget first. With ``cases_per_process``
    above one, the cases (longest budget first) are cut into consecutive groups
    of that many and each group is served by one process (``LOAD`` resets the
    machine); a case that fails always ends the process it ran in, and the rest
    of its group continues in a fresh one. A slot
    starts its next process while the current case runs, so up to ``2 * jobs``
    candidate processes exist at once (each in its own jail); ``prestart=False``
    starts each process only when its first case is due (strictly one case
    after another per slot, the serial baseline of ``benchmarks/bench_corpus.py``).

    ``warm`` (where it can be: as root, with bubblewrap) keeps one sandbox per
    slot and starts each process in it with namespaces and a uid of its own
    (:mod:`playproof.corpus._warm`) when a slot starts more than one process;
    ``warm=False`` starts a new sandbox for every process.
    """
    chosen = resolve_isolation(isolation)
    view = runtime_view(candidate.runtime)
    candidate = dataclasses.replace(
        candidate, command=runtime_command(candidate.command, candidate.runtime)
    )
    spec = JailSpec(
        read_only=(*view.visible, *candidate.read_only),
        hidden=(*candidate.hidden, *view.hidden),
        secret=candidate.secret,
        limits=limits or JailLimits(),
        isolation=chosen,
        env=candidate.env,
        workdir=candidate.workdir,
    )
    cases = list(corpus.manifest.cases)
    # Longest budget first: a long case started last would leave the other slots idle.
    ordered = sorted(cases, key=lambda c: -c.budget_frames)
    size = max(1, cases_per_process)
    todo = collections.deque(ordered[at : at + size] for at in range(0, len(ordered), size))
    found: dict[str, CaseObservation] = {}
    lock = threading.Lock()

    def take() -> list[CorpusCase] | None:
        with lock:
            return todo.popleft() if todo else None

    def serve(slot: int, lanes: tuple[int, ...]) -> None:
        pair = (lanes[LANES_PER_SLOT * slot], lanes[LANES_PER_SLOT * slot + 1])
        runner = _Slot(candidate, spec, pair, prestart, warm=use_warm, cgroup=cgroup)
        try:
            while (group := take()) is not None:
                for position, case in enumerate(group, start=1):
                    last = position == len(group)
                    observation = runner.run_case(corpus, case, last, lambda: bool(todo))
                    with lock:
                        found[case.id] = observation
                        if on_case is not None:
                            on_case(observation)
        finally:
            runner.close()

    started = time.monotonic()
    workers = max(1, min(jobs, len(todo)))
    # A slot that starts one process only would pay for a sandbox and a shell for nothing.
    use_warm = warm and len(todo) > workers and warm_usable(spec)
    # Groups are made by root for a bubblewrap jail (its first process joins before exec).
    memory = memory_cgroup_in_use(chosen == "bubblewrap")
    cgroup = memory != "none"
    with (
        reserve_lanes(LANES_PER_SLOT * workers) as lanes,
        ThreadPoolExecutor(max_workers=workers) as pool,
    ):
        check_reachable(list(candidate.command), spec, lanes[0])
        for done in [pool.submit(serve, slot, lanes) for slot in range(workers)]:
            done.result()
    return RunOutcome(
        observations=[found[case.id] for case in cases],
        isolation=chosen,
        wall_seconds=time.monotonic() - started,
        sandbox=None if chosen == "rlimits" else "per-slot" if use_warm else "per-process",
        memory_cgroup=memory,
    )
