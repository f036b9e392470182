"""Blargg variants: ``blargg-crc`` (one byte of an expected CRC changes, so the test must
print "Failed"; the CRCs are found without symbols, from the shell's check arguments and by
tracing a table walk) and Blargg's ``dmg-branch`` (kept on a clean failure only)."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from playproof.corpus._branch_hints import hinted_sites
from playproof.corpus._grader import STATUS_TEXT_AT, status_text
from playproof.corpus._manifest import CorpusCase
from playproof.corpus._patching import (
    HEADER,
    MAX_ATTEMPTS,
    NoVariant,
    Patches,
    flip,
    trial_frames,
)
from playproof.corpus._runner import BLARGG_RUNNING, BLARGG_SIGNATURE, RESULT_BLOCK_BYTES
from playproof.corpus._trials import TrialWorker, remembered
from playproof.corpus._variants_dmg import branch_sites, first_branch, qualifying_branches

CRC_CHECK = re.compile(rb"\x01..\x11..\xcd", re.S)
"""``LD BC,nn; LD DE,nn; CALL nn``: how Blargg's shell passes an expected CRC to its check."""
WORK_RAM = range(0xC000, 0xE000)
"""Where Blargg's tests run their code and walk their tables (a copy of ROM bank data)."""
CRC_BYTES = 4
MIN_TABLE_STEPS = 3
"""A table pointer is seen at least this many times before its table is trusted."""
MAX_POINTER_VALUES = 4096
"""Values kept per traced RAM word (a bound on the trace's memory)."""


@dataclass(frozen=True)
class Polling:
    """How the runner polls an ``until-result`` case."""

    budget: int
    every: int
    markers: tuple[str, ...]
    address: int | None

    @classmethod
    def of(cls, case: CorpusCase) -> Polling:
        return cls(
            case.budget_frames, case.poll_frames, tuple(case.stop_markers), case.result_address
        )


def _blargg_result(rom: bytes, case: Polling, trace: PointerTrace | None = None) -> str:
    """The reference's result on ``rom``, polled as the runner polls it (serial text, status
    and status text); with ``trace``, work RAM after every frame goes to it."""
    return blargg_run(rom, case, trace)[0]


def blargg_run(rom: bytes, case: Polling, trace: PointerTrace | None = None) -> tuple[str, int]:
    """:func:`_blargg_result` and the frames it took."""
    from playproof.corpus import reference_candidate

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        machine = reference_candidate.Machine(rom)
    try:
        memory = machine.pyboy.memory
        frames, settling, block = 0, False, b""
        while frames < case.budget:
            step = min(case.every, case.budget - frames)
            if trace is None:
                machine.run_frames(step, draw=False)
            else:
                for _ in range(step):
                    machine.run_frames(1, draw=False)
                    trace.add(bytes(memory[WORK_RAM.start : WORK_RAM.stop]))
            frames += step
            if case.address is not None:
                start = case.address
                block = bytes(memory[start : start + RESULT_BLOCK_BYTES])
            if settling:
                break
            text = machine.serial.decode("latin-1")
            settling = any(marker in text for marker in case.markers) or (
                block[1:4] == BLARGG_SIGNATURE and block[0] != BLARGG_RUNNING
            )
        status = f"{block[0]:#04x} {status_text(block)}" if block[1:4] == BLARGG_SIGNATURE else ""
        return f"{machine.serial.decode('latin-1')}\0{status}", frames
    finally:
        machine.pyboy.stop(save=False)


def _failed(result: str) -> bool:
    serial, _, status = result.partition("\0")
    return "Failed" in serial or (bool(status) and not status.startswith("0x00 "))


Site = tuple[tuple[int, ...], str]
"""The four bytes of an expected CRC, and text the reference must then print ("" for none)."""


class PointerTrace:
    """Work RAM after every frame, reduced as it comes: the values each RAM word took."""

    def __init__(self) -> None:
        self.history: dict[int, list[int]] = {}
        self.previous: object = None
        self.last = b""

    def add(self, snapshot: bytes) -> None:
        import numpy as np

        ram = np.frombuffer(snapshot, dtype=np.uint8).astype(np.int64)
        words = ram[:-1] | (ram[1:] << 8)
        if isinstance(self.previous, np.ndarray):
            for index in np.nonzero(words != self.previous)[0].tolist():
                values = self.history.setdefault(int(index), [])
                if len(values) < MAX_POINTER_VALUES:
                    values.append(int(words[index]))
        self.previous, self.last = words, snapshot

    def table_sites(self, rom: bytes) -> list[Site]:
        """Entries of an expected-CRC table: where a RAM word walking upwards in steps of
        four pointed, mapped back to the ROM through the copy of the table in work RAM."""
        sites: set[Site] = set()
        for values in self.history.values():
            steps = [b - a for a, b in itertools.pairwise(values)]
            if len(values) < MIN_TABLE_STEPS or any(s <= 0 or s % CRC_BYTES for s in steps):
                continue
            if values[0] not in WORK_RAM or values[-1] + CRC_BYTES > WORK_RAM.stop:
                continue
            # The table's bytes in RAM, found once in the ROM; the last value may be past it.
            span = self.last[values[0] - WORK_RAM.start : values[-1] - WORK_RAM.start]
            base = rom.find(span, HEADER.stop)
            if len(span) < CRC_BYTES or base < 0 or rom.find(span, base + 1) >= 0:
                continue
            for value in values[:-1]:
                at = base + value - values[0]
                sites.add((tuple(range(at, at + CRC_BYTES)), ""))
        return sorted(sites)


def check_sites(rom: bytes) -> list[Site]:
    """The immediates of each ``LD BC,nn; LD DE,nn; CALL nn``.

    Where it is the shell's CRC check, BC and DE hold the complement of the
    expected CRC, and a test whose check fails prints the CRC it computed: with
    one of these bytes changed, that is the original expected value, which the
    reference must then print (so a copy routine's arguments never qualify).
    The shell's routines run from work RAM, so other calls are not candidates.
    """
    sites: list[Site] = []
    for match in CRC_CHECK.finditer(rom, HEADER.stop):
        at = match.start()
        if int.from_bytes(rom[at + 7 : at + 9], "little") not in WORK_RAM:
            continue  # the shell's routines run from work RAM; this call is something else
        bc = int.from_bytes(rom[at + 1 : at + 3], "little") ^ 0xFFFF
        de = int.from_bytes(rom[at + 4 : at + 6], "little") ^ 0xFFFF
        sites.append(((at + 1, at + 2, at + 4, at + 5), f"{bc:04X}{de:04X}"))
    return sites


def crc_search(rom: bytes, case: Polling) -> tuple[str, list[Site]]:
    """The reference's result on the original ROM and its candidate CRC sites (none when the
    reference fails it), found by tracing work RAM as it runs (a try in the trial child)."""
    trace = PointerTrace()
    original = _blargg_result(rom, case, trace)
    if _failed(original):
        return original, []  # nothing to turn into a failure
    return original, sorted({*check_sites(rom), *trace.table_sites(rom)})


def _crc_sites(rom: bytes, case: Polling, trials: TrialWorker) -> tuple[str, list[Site]]:
    """:func:`crc_search` in the trial child, remembered per process ("" and no sites when
    the reference cannot run the ROM)."""
    reply = remembered(trials, "blargg-sites", rom, case, case.budget)
    if reply is None:
        return "", []
    original, sites = reply
    return str(original), [(tuple(map(int, offsets)), str(proof)) for offsets, proof in sites]


def blargg_crc(
    case: CorpusCase, rom: bytes, rng: random.Random, trials: TrialWorker
) -> tuple[bytes, Patches]:
    polling = Polling.of(case)
    original, sites = _crc_sites(rom, polling, trials)
    choices = list(sites)
    rng.shuffle(choices)
    for offsets, proof in choices[:MAX_ATTEMPTS]:  # each site once, in the seed's order
        altered, patch = flip(rom, rng.choice(offsets), rng)
        reply = trials.run("blargg", altered, polling, polling.budget)
        if reply is None:  # the patched ROM breaks the reference: try the next site
            continue
        result = str(reply[0])
        if result != original and _failed(result) and proof in result:
            return altered, patch
    raise NoVariant


def _clean_failure(result: str) -> bool:
    """A Blargg result that is a failure and nothing else: no "Passed", plain text, a status
    of 1..0x7F where the test keeps one (0x80 means still running), and "Failed" shown, or,
    for a test that reports only in its status block, a listing that fills the block (the
    "Failed" line after it is cut off at the block's end; the status says it failed)."""
    serial, _, status = result.partition("\0")
    shown = f"{serial}\n{status}"
    if "Passed" in shown:
        return False
    if not all(char == "\n" or " " <= char <= "~" for char in shown):
        return False  # a run gone astray prints bytes no honest emulator is tested on
    if status and not 0 < int(status[:4], 16) < BLARGG_RUNNING:
        return False
    # ``status`` is "0xNN " and the block's text, which fills it when no NUL ended it.
    cut_off = not serial and len(status) - len("0x00 ") == RESULT_BLOCK_BYTES - STATUS_TEXT_AT
    return "Failed" in shown or cut_off


def _blargg_original(rom: bytes, case: Polling, trials: TrialWorker) -> tuple[str, int]:
    """The reference's result on the original ROM ("" when it cannot run it) and the frames
    it took, from the trial child; remembered per process."""
    reply = remembered(trials, "blargg", rom, case, case.budget)
    return ("", 0) if reply is None else (str(reply[0]), int(reply[1]))


def _branch_trial(
    case: CorpusCase, rom: bytes, trials: TrialWorker
) -> tuple[tuple[str, object, int], Callable[[Any], bool]]:
    """The try of an inverted branch (kind, argument, frames) and the test it must pass."""
    polling = Polling.of(case)
    original, frames = _blargg_original(rom, polling, trials)
    if not original or _failed(original):
        raise NoVariant  # nothing to turn into a failure
    trial = dataclasses.replace(polling, budget=trial_frames(frames, polling.budget))

    def fails(reply: Any) -> bool:
        result, took = str(reply[0]), int(reply[1])
        return took < trial.budget and result != original and _clean_failure(result)

    return ("blargg", trial, trial.budget), fails


def blargg_branch(
    case: CorpusCase, rom: bytes, rng: random.Random, trials: TrialWorker
) -> tuple[bytes, Patches]:
    request, fails = _branch_trial(case, rom, trials)
    return first_branch(rom, branch_sites(rom), rng, trials, request, fails, hinted_sites(rom))


def blargg_branch_hints(case: CorpusCase, rom: bytes, trials: TrialWorker) -> list[int]:
    """Every inverted branch of ``rom`` that makes the reference fail cleanly."""
    request, fails = _branch_trial(case, rom, trials)
    return qualifying_branches(rom, branch_sites(rom), trials, request, fails)
