"""The producer: run a candidate on every case in a jail and collect raw observations.

The runner never decides pass or fail. It drives each case as its mode says,
records what the candidate reported (serial bytes, the status block in
cartridge RAM, registers, a screen hash) and how the case ended (``ok``,
``crash``, ``timeout``, ``protocol-error``). Cases run in parallel, one jailed
candidate process per pool slot at a time; by default every case gets a fresh
process.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.canonical import sha256_hex
from playproof.corpus._jail import (
    Isolation,
    IsolationChoice,
    JailedProcess,
    JailLimits,
    JailSpec,
    launch,
    resolve_isolation,
)
from playproof.corpus._manifest import Corpus, CorpusCase
from playproof.corpus._protocol import (
    CandidateChannel,
    CandidateGone,
    CandidateTimeout,
    ProtocolBreach,
)
from playproof.corpus._wire import CYCLES_PER_FRAME, SCREEN_BYTES

__all__ = [
    "MAX_SERIAL_BYTES",
    "RESULT_BLOCK_BYTES",
    "CandidateSpec",
    "CaseObservation",
    "Outcome",
    "RunOutcome",
    "run_corpus",
]

MAX_SERIAL_BYTES = 65536
"""Serial output kept per case; more is a flood and fails the case."""
RESULT_BLOCK_BYTES = 256
"""Bytes read at a case's ``result_address`` (status, signature, text)."""
MAX_STDERR_TAIL = 2000
"""Characters of the candidate's stderr kept in an observation."""
QUIT_SECONDS = 2.0
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
    screen_sha256: str | None = None
    wall_seconds: float = 0.0
    stderr_tail: Annotated[str, Field(max_length=MAX_STDERR_TAIL)] = ""


@dataclass(frozen=True)
class CandidateSpec:
    """How to start a candidate and what it may see (read-only) besides the system."""

    command: tuple[str, ...]
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    workdir: Path | None = None
    """Working directory inside the jail (default: the private /tmp)."""


@dataclass(frozen=True)
class RunOutcome:
    """Every case's observation (manifest order) and the isolation used."""

    observations: list[CaseObservation]
    isolation: Isolation
    wall_seconds: float


def _regs(text: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for part in text.split():
        name, _, raw = part.partition("=")
        if name not in {"A", "F", "B", "C", "D", "E", "H", "L", "SP", "PC"} or name in values:
            raise ProtocolBreach(f"bad register field {part[:20]!r}")
        try:
            values[name] = int(raw, 16)
        except ValueError:
            raise ProtocolBreach(f"bad register value {part[:20]!r}") from None
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
    screen: str | None = None

    def add_serial(self, data: bytes) -> None:
        self.serial.extend(data)
        if len(self.serial) > MAX_SERIAL_BYTES:
            raise ProtocolBreach(f"more than {MAX_SERIAL_BYTES} serial bytes (flood)")


def _drive(channel: CandidateChannel, case: CorpusCase, rom: bytes, seen: _Collected) -> None:
    channel.request(f"LOAD {len(rom)}", rom)
    if case.mode == "until-breakpoint":
        reply = channel.request(f"RUNBP {case.budget_frames * CYCLES_PER_FRAME}")
        if reply not in ("BREAK", "LIMIT"):
            raise ProtocolBreach(f"RUNBP answered {reply[:40]!r}")
        seen.frames = case.budget_frames
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
        seen.screen = sha256_hex(screen)
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


def _stderr_tail(jailed: JailedProcess) -> str:
    try:
        with jailed.stderr_path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - MAX_STDERR_TAIL))
            return handle.read(MAX_STDERR_TAIL).decode("utf-8", errors="replace")[-MAX_STDERR_TAIL:]
    except OSError:
        return ""


class _Slot:
    """One pool slot: a jailed candidate process reused for up to ``per_process`` cases."""

    def __init__(self, candidate: CandidateSpec, spec: JailSpec, slot: int) -> None:
        self.candidate = candidate
        self.spec = spec
        self.slot = slot

    def run(self, corpus: Corpus, cases: Sequence[CorpusCase]) -> list[CaseObservation]:
        results: list[CaseObservation] = []
        jailed: JailedProcess | None = None
        channel: CandidateChannel | None = None
        for case in cases:
            started = time.monotonic()
            deadline = started + self.spec.limits.wall_seconds
            seen = _Collected()
            outcome: Outcome = "ok"
            detail = ""
            try:
                if jailed is None or channel is None:
                    jailed = launch(list(self.candidate.command), self.spec, self.slot)
                    assert jailed.process.stdin is not None
                    assert jailed.process.stdout is not None
                    channel = CandidateChannel(
                        jailed.process.stdin, jailed.process.stdout, deadline
                    )
                    channel.hello()
                channel.deadline = deadline
                _drive(channel, case, corpus.roms[case.id], seen)
            except CandidateTimeout as exc:
                outcome, detail = "timeout", str(exc)
            except CandidateGone as exc:
                outcome, detail = "crash", str(exc)
            except ProtocolBreach as exc:
                outcome, detail = "protocol-error", str(exc)
            except OSError as exc:
                outcome, detail = "crash", f"could not start or talk to the candidate: {exc}"
            tail = ""
            if outcome != "ok" and jailed is not None:
                jailed.stop()
                status = jailed.process.returncode
                if outcome == "crash" and status is not None:
                    detail += f" (exit status {status})"
                tail = _stderr_tail(jailed)
                jailed.discard()
                jailed, channel = None, None
            results.append(
                CaseObservation(
                    case_id=case.id,
                    outcome=outcome,
                    detail=detail[:600],
                    frames=seen.frames,
                    serial=bytes(seen.serial).decode("latin-1") if seen.serial else "",
                    memory=seen.memory.hex() if seen.memory is not None else None,
                    registers=seen.registers,
                    screen_sha256=seen.screen,
                    wall_seconds=round(time.monotonic() - started, 4),
                    stderr_tail=tail,
                )
            )
        if jailed is not None and channel is not None:
            channel.deadline = time.monotonic() + QUIT_SECONDS
            with contextlib.suppress(CandidateTimeout, CandidateGone, ProtocolBreach):
                channel.request("QUIT")
            jailed.stop()
            jailed.discard()
        return results


def run_corpus(
    corpus: Corpus,
    candidate: CandidateSpec,
    *,
    jobs: int = 2,
    cases_per_process: int = 1,
    limits: JailLimits | None = None,
    isolation: IsolationChoice = "auto",
    on_case: Callable[[CaseObservation], None] | None = None,
) -> RunOutcome:
    """Run ``candidate`` on every case of ``corpus``; raw observations in manifest order.

    ``jobs`` candidate processes run at once. With ``cases_per_process`` above
    one, a slot reuses its process for that many cases (``LOAD`` resets the
    machine); a case that fails always ends the process it ran in.
    """
    chosen = resolve_isolation(isolation)
    spec = JailSpec(
        read_only=candidate.read_only,
        hidden=candidate.hidden,
        limits=limits or JailLimits(),
        isolation=chosen,
        env=candidate.env,
        workdir=candidate.workdir,
    )
    cases = list(corpus.manifest.cases)
    size = max(1, cases_per_process)
    batches = [cases[i : i + size] for i in range(0, len(cases), size)]
    slots: queue.Queue[int] = queue.Queue()
    for number in range(max(1, jobs)):
        slots.put(number)
    lock = threading.Lock()

    def work(batch: list[CorpusCase]) -> list[CaseObservation]:
        slot = slots.get()
        try:
            found = _Slot(candidate, spec, slot).run(corpus, batch)
        finally:
            slots.put(slot)
        if on_case is not None:
            with lock:
                for observation in found:
                    on_case(observation)
        return found

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        found = [o for batch in pool.map(work, batches) for o in batch]
    return RunOutcome(observations=found, isolation=chosen, wall_seconds=time.monotonic() - started)
