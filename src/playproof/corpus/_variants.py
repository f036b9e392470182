"""Per-grading ROM variants whose correct result only running them reveals.

A public pass convention (print "Passed", the Fibonacci registers, a known
picture) can be replied without emulating anything. So each grading, from a
secret seed, also sends the candidate altered copies of some cases' ROMs:

- ``chip8-sprite``: one byte of sprite data a CHIP-8 test draws (found by
  tracing the reference interpreter: bytes ``Dxyn`` reads and the program never
  executes) gets some bits flipped, so the final screen is another picture;
- ``dmg-tile``: one byte of tile data a Game Boy ``frames`` case shows (a
  16-byte tile found verbatim in the ROM after it was copied to VRAM) gets some
  bits flipped, so the frame is another picture;
- ``mooneye-signal``: the six immediates Mooneye's exit routine loads into
  B, C, D, E, H, L on success (``LD B,3``, ``LD C,5`` ... ``LD L,34``) become
  other numbers, so a passing run ends with registers nobody published;
- ``mooneye-check``: a value the test checks a register against (an
  ``LD A,n`` stored into ``hram.regs_assert``, located with the corpus's
  ``.sym`` file) changes, and the success signal too, so the test must now
  fail (B..L all 0x42 on the reference);
- ``blargg-crc``: one byte of a CRC a Blargg test expects changes, so the test
  must now print "Failed" (with what it computed, or which instructions
  failed). The expected CRCs are found without symbols: the arguments of the
  shell's CRC check (``LD BC,nn; LD DE,nn; CALL nn``) and the entries of an
  expected-CRC table, located by tracing the reference (a RAM word that walks
  the table, in steps of four bytes, as the tests run). A patch is kept only
  when the reference, run in the grader's process, now reports "Failed";
- ``dmg-branch``: a conditional jump, call or return right after an
  instruction that sets the flags (a compare, a logical or arithmetic
  operation, a ``BIT``) is inverted (``Z`` and ``NZ``, ``C`` and ``NC`` swap),
  so the test takes its other path. Kept only when the reference then fails
  cleanly: a Blargg test prints "Failed" in plain text (no "Passed", status
  1..0x7F where it keeps one); a Mooneye test (its success signal changed too)
  ends with 0x42 in all six registers. This is the kind for tests that compare
  with constants inside their code, where there is no CRC or ``regs_assert``.

The expected answer of every variant is what the platform's reference
candidate reports on it, run by the grader in its own jail; nothing about a
variant comes from a published result. A case passes only when its original
and all its variants match. Patches never touch the cartridge header
(0x100-0x14F); PyBoy does not check the header or global checksums, so they
are left as they are. The seed never leaves the grader; the grade record
carries each variant's ROM digest and the SHA-256 of the seed.

Kinds come in tiers: the kinds whose right answer is a failure (``blargg-crc``,
``mooneye-check``, ``dmg-branch``) and, on Mooneye, the one whose right answer
is a new success signal (``mooneye-signal``). Variant 0 of a case is of the
first tier, variant 1 of the second, so two variants per case (the default on
Mooneye) stop both a candidate that reads the signal out of the ROM and one
that answers "failed" for every ROM it does not know.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import itertools
import random
import re
import secrets
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof._bounded import read_bounded
from playproof.core.canonical import sha256_hex
from playproof.core.report import CheckResult
from playproof.corpus._grader import CaseResult, Grade, grade, grade_case, status_text
from playproof.corpus._jail import IsolationChoice, JailLimits
from playproof.corpus._manifest import (
    Answer,
    Corpus,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    FramebufferAnswer,
    MemoryAnswer,
    RegistersAnswer,
    SerialAnswer,
    corpus_file,
)
from playproof.corpus._runner import (
    BLARGG_RUNNING,
    BLARGG_SIGNATURE,
    RESULT_BLOCK_BYTES,
    CandidateSpec,
    CaseObservation,
    RunOutcome,
    run_corpus,
)
from playproof.corpus._trials import TrialWorker
from playproof.errors import FormatError

__all__ = [
    "MAX_VARIANTS_PER_CASE",
    "SEED_BYTES",
    "Variant",
    "VariantKind",
    "VariantPin",
    "VariantPlan",
    "VariantRun",
    "combine",
    "default_variants",
    "load_symbols",
    "make_variants",
    "new_seed",
    "parse_seed",
    "run_with_variants",
    "variant_answer",
    "verify_variants",
]

SEED_BYTES = 32
"""A variant seed is this many random bytes (from :mod:`secrets` unless one is given)."""
MAX_VARIANTS_PER_CASE = 4
"""Variants one case may get in one grading."""
MAX_SYMBOL_BYTES = 1024 * 1024
"""A ``.sym`` file read to place a Mooneye patch is at most this long."""
MAX_ATTEMPTS = 8
"""Patches tried per variant before a case is left without one (the picture never changed)."""
HEADER = range(0x100, 0x150)
"""The cartridge header: never patched."""
VARIANT_MARK = "~variant-"
"""Joins a case id and a variant number in the grader's own bookkeeping (never sent)."""

VariantKind = Literal[
    "chip8-sprite", "dmg-tile", "mooneye-signal", "mooneye-check", "blargg-crc", "dmg-branch"
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Patches = tuple[tuple[int, int], ...]
"""(file offset, new byte) pairs."""

MOONEYE_SIGNAL = bytes.fromhex("06030e0516081e0d26152e22")
"""``LD B,3; LD C,5; LD D,8; LD E,13; LD H,21; LD L,34``: Mooneye's success exit."""
MOONEYE_FAIL = 0x42
REGS_ASSERT = re.compile(r"^[0-9a-f]{2}:ff([0-9a-f]{2}) hram\.regs_assert\.reg_[a-z]$", re.M)
LD_A_N, LDH_N_A = 0x3E, 0xE0
CRC_CHECK = re.compile(rb"\x01..\x11..\xcd", re.S)
"""``LD BC,nn; LD DE,nn; CALL nn``: how Blargg's shell passes an expected CRC to its check."""
WORK_RAM = range(0xC000, 0xE000)
"""Where Blargg's tests run their code and walk their tables (a copy of ROM bank data)."""
CRC_BYTES = 4
MIN_TABLE_STEPS = 3
"""A table pointer is seen at least this many times before its table is trusted."""
SITE_CACHE_ROMS = 64
"""ROMs whose CRC sites a grading process remembers (the search runs the reference)."""
MAX_POINTER_VALUES = 4096
"""Values kept per traced RAM word (a bound on the trace's memory)."""
CONDITIONAL = frozenset({0x20, 0x28, 0x30, 0x38, 0xC0, 0xC2, 0xC4, 0xC8, 0xCA, 0xCC})
CONDITIONAL |= frozenset({0xD0, 0xD2, 0xD4, 0xD8, 0xDA, 0xDC})
"""``JR cc``, ``RET cc``, ``JP cc`` and ``CALL cc``: the conditional control transfers."""
CONDITION_BIT = 0x08
"""XORed into a conditional opcode, swaps NZ and Z, or NC and C (``JR NZ`` 0x20, ``JR Z`` 0x28)."""
FLAGS_ONE_BYTE = frozenset(range(0xA0, 0xC0))
"""``AND``, ``XOR``, ``OR`` and ``CP`` with a register: set the flags a branch then reads."""
FLAGS_IMMEDIATE = frozenset({0xC6, 0xCE, 0xD6, 0xDE, 0xE6, 0xEE, 0xF6, 0xFE})
"""``ADD``, ``ADC``, ``SUB``, ``SBC``, ``AND``, ``XOR``, ``OR`` and ``CP`` with an immediate."""
PREFIX_CB = 0xCB
"""``BIT``, rotations and shifts (two bytes): set Z or C."""
TRIAL_SLACK_FRAMES = 30
"""Frames a patched ROM's try may run past twice the original's (see ``_trial_frames``)."""
MAX_BRANCH_ATTEMPTS = 24
"""Branches tried per ``dmg-branch`` variant: about one in ten candidates makes a test fail
cleanly, and a try costs one reference run (0.1 s for most Blargg tests, 0.05 s Mooneye)."""


class VariantPin(BaseModel):
    """One variant in a grade record: which case, which kind, its ROM's digest, the verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: Annotated[str, Field(min_length=1, max_length=200)]
    kind: VariantKind
    sha256: Sha256
    passed: bool


@dataclass(frozen=True)
class Variant:
    """An altered copy of one case's ROM; its answer comes from the reference later."""

    case_id: str
    number: int
    kind: VariantKind
    rom: bytes
    patches: Patches
    """(file offset, new byte) pairs; none inside a Game Boy ROM's cartridge header."""

    @property
    def variant_id(self) -> str:
        """The id the grader runs it under (never shown to the candidate)."""
        return f"{self.case_id}{VARIANT_MARK}{self.number}"

    @property
    def sha256(self) -> str:
        """SHA-256 of the altered ROM."""
        return sha256_hex(self.rom)


def new_seed() -> bytes:
    """A fresh secret seed."""
    return secrets.token_bytes(SEED_BYTES)


@dataclass(frozen=True)
class VariantPlan:
    """How a grading varies its corpus: the secret seed, variants per case, symbol files."""

    seed: bytes = field(default_factory=new_seed)
    per_case: int = 1
    symbols: dict[str, str] = field(default_factory=dict)
    """Case id to the text of the ROM's ``.sym`` file (Mooneye), where there is one."""

    def __post_init__(self) -> None:
        if len(self.seed) < 16:
            raise FormatError("a variant seed needs at least 16 bytes (32 hex digits)")
        if not 0 <= self.per_case <= MAX_VARIANTS_PER_CASE:
            raise FormatError(f"variants per case must be 0..{MAX_VARIANTS_PER_CASE}")

    @property
    def seed_sha256(self) -> str:
        """The commitment a grade record carries (the seed itself never leaves the grader)."""
        return hashlib.sha256(self.seed).hexdigest()


def parse_seed(text: str) -> bytes:
    """A seed given as hex (``--variant-seed``), for reproducible gradings and tests."""
    try:
        seed = bytes.fromhex(text.strip())
    except ValueError:
        raise FormatError("--variant-seed must be hex digits (e.g. 64 of them)") from None
    if len(seed) < 16:
        raise FormatError("--variant-seed needs at least 32 hex digits")
    return seed


def load_symbols(root: Path, manifest: CorpusManifest) -> dict[str, str]:
    """The ``.sym`` file beside each case's ROM under ``root``, where one exists (bounded)."""
    found: dict[str, str] = {}
    for case in manifest.cases:
        path = corpus_file(root, str(Path(case.file).with_suffix(".sym")))
        if path.is_file():
            data = read_bounded(path, MAX_SYMBOL_BYTES, "symbol file")
            found[case.id] = data.decode("latin-1")
    return found


def _rng(seed: bytes, case_id: str, number: int) -> random.Random:
    key = hmac.new(seed, f"{case_id}\0{number}".encode(), hashlib.sha256).digest()
    return random.Random(int.from_bytes(key, "big"))


def _flip(rom: bytes, offset: int, rng: random.Random) -> tuple[bytes, Patches]:
    mask = rng.randrange(1, 256)
    value = rom[offset] ^ mask
    return rom[:offset] + bytes([value]) + rom[offset + 1 :], ((offset, value),)


# -- CHIP-8: sprite bytes the reference draws ------------------------------------------------


def _chip8_screen(rom: bytes, case: CorpusCase, trace: set[int] | None = None) -> bytes:
    """The reference interpreter's final screen on ``rom``, driven as the runner drives it.

    With ``trace``, the program-area offsets of bytes drawn as sprites since the
    last screen clear, and never executed, are added to it.
    """
    from playproof.corpus.chip8.machine import PROGRAM_START, Chip8

    setup = case.chip8
    if setup is None:
        raise FormatError(f"case {case.id!r} has no CHIP-8 setup")
    drawn: set[int] = set()
    executed: set[int] = set()

    class Traced(Chip8):
        def step(self) -> bool:
            if trace is not None:
                executed.update((self.pc, self.pc + 1))
                if self.memory[self.pc] == 0x00 and self.memory[(self.pc + 1) & 0xFFF] == 0xE0:
                    drawn.clear()  # 00E0 clears the screen: only later sprites stay visible
            return super().step()

        def draw(self, x: int, y: int, rows: int) -> None:
            if trace is not None:
                drawn.update((self.i + row) & 0xFFF for row in range(rows))
            super().draw(x, y, rows)

    machine = Traced(rom)
    for poke in setup.poke:
        machine.memory[poke.address] = poke.value
    done = 0
    for event in setup.keys:
        machine.run_frames(event.frame - done, setup.instructions_per_frame)
        done = event.frame
        (machine.press if event.down else machine.release)(event.key)
    machine.run_frames(case.budget_frames - done, setup.instructions_per_frame)
    if trace is not None:
        for address in drawn - executed:
            offset = address - PROGRAM_START
            if 0 <= offset < len(rom) and machine.memory[address] == rom[offset]:
                trace.add(offset)
    return bytes(machine.display)


def _chip8_sprite(case: CorpusCase, rom: bytes, rng: random.Random) -> tuple[bytes, Patches]:
    sprites: set[int] = set()
    original = _chip8_screen(rom, case, sprites)
    choices = sorted(sprites)
    for _ in range(MAX_ATTEMPTS if choices else 0):
        altered, patch = _flip(rom, rng.choice(choices), rng)
        if _chip8_screen(altered, case) != original:
            return altered, patch
    raise _NoVariant


# -- Game Boy: tile data a frames case shows -------------------------------------------------


def _dmg_frame(rom: bytes, frames: int) -> tuple[bytes, bytes]:
    """(screen shades, VRAM tile data) of the reference after ``frames`` drawn frames."""
    from playproof.corpus import reference_candidate

    with warnings.catch_warnings():
        # pysdl2 announces where it found SDL; the null window never uses it.
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        machine = reference_candidate.Machine(rom)
    try:
        machine.run_frames(frames)
        tiles = bytes(machine.pyboy.memory[0x8000:0x9800])
        return machine.screen(), tiles
    finally:
        machine.pyboy.stop(save=False)


def _dmg_tile(case: CorpusCase, rom: bytes, rng: random.Random) -> tuple[bytes, Patches]:
    screen, vram = _dmg_frame(rom, case.budget_frames)
    starts: set[int] = set()
    for at in range(0, len(vram), 16):
        tile = vram[at : at + 16]
        if len(set(tile)) > 1 and (found := rom.find(tile, HEADER.stop)) >= 0:
            starts.add(found)
    choices = sorted(starts)
    for _ in range(MAX_ATTEMPTS if choices else 0):
        altered, patch = _flip(rom, rng.choice(choices) + rng.randrange(16), rng)
        if _dmg_frame(altered, case.budget_frames)[0] != screen:
            return altered, patch
    raise _NoVariant


# -- Mooneye: the success signal, or a checked value ------------------------------------------


def _mooneye_signal(rom: bytes, rng: random.Random) -> tuple[bytes, Patches]:
    at = rom.find(MOONEYE_SIGNAL, HEADER.stop)
    if at < 0 or rom.find(MOONEYE_SIGNAL, at + 1) >= 0:
        raise _NoVariant
    out = bytearray(rom)
    while True:
        values = [rng.randrange(256) for _ in range(6)]
        if values != list(MOONEYE_SIGNAL[1::2]) and values != [MOONEYE_FAIL] * 6:
            break
    patches = tuple((at + 2 * index + 1, value) for index, value in enumerate(values))
    for offset, value in patches:
        out[offset] = value
    return bytes(out), patches


def _assert_sites(rom: bytes, symbols: str) -> list[int]:
    """Offsets of ``n`` in ``LD A,n; LDH (regs_assert.*),A``: the values a test expects."""
    targets = {int(low, 16) for low in REGS_ASSERT.findall(symbols)}
    return [
        at + 1
        for at in range(HEADER.stop, len(rom) - 3)
        if rom[at] == LD_A_N and rom[at + 2] == LDH_N_A and rom[at + 3] in targets
    ]


def _mooneye_check(rom: bytes, symbols: str | None, rng: random.Random) -> tuple[bytes, Patches]:
    sites = _assert_sites(rom, symbols) if symbols else []
    if not sites:
        raise _NoVariant
    # The success signal changes too, so neither the Fibonacci numbers nor the
    # immediates a reader finds in the ROM are the answer: only the fail signal is.
    signalled, signal = _mooneye_signal(rom, rng)
    checked, check = _flip(signalled, rng.choice(sites), rng)
    return checked, (*signal, *check)


# -- Blargg: an expected CRC ------------------------------------------------------------------


@dataclass(frozen=True)
class _Polling:
    """How the runner polls an ``until-result`` case."""

    budget: int
    every: int
    markers: tuple[str, ...]
    address: int | None

    @classmethod
    def of(cls, case: CorpusCase) -> _Polling:
        return cls(
            case.budget_frames, case.poll_frames, tuple(case.stop_markers), case.result_address
        )


def _blargg_result(rom: bytes, case: _Polling, trace: _PointerTrace | None = None) -> str:
    """The reference's result on ``rom``, polled as the runner polls it (serial text, status
    and status text); with ``trace``, work RAM after every frame goes to it."""
    return _blargg_run(rom, case, trace)[0]


def _blargg_run(rom: bytes, case: _Polling, trace: _PointerTrace | None = None) -> tuple[str, int]:
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


class _PointerTrace:
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


def _check_sites(rom: bytes) -> list[Site]:
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


@functools.lru_cache(maxsize=SITE_CACHE_ROMS)
def _crc_sites(rom: bytes, case: _Polling) -> tuple[str, tuple[Site, ...]]:
    """The reference's result on the original ROM and its candidate CRC sites (none when the
    reference fails it). Kept per process: the search depends only on these arguments."""
    trace = _PointerTrace()
    try:
        original = _blargg_result(rom, case, trace)
    except Exception:  # PyBoy refuses or breaks on this ROM: the reference has no result
        return "", ()
    if _failed(original):
        return original, ()  # nothing to turn into a failure
    return original, tuple(sorted({*_check_sites(rom), *trace.table_sites(rom)}))


def _blargg_crc(case: CorpusCase, rom: bytes, rng: random.Random) -> tuple[bytes, Patches]:
    polling = _Polling.of(case)
    original, sites = _crc_sites(rom, polling)
    choices = list(sites)
    rng.shuffle(choices)
    for offsets, proof in choices[:MAX_ATTEMPTS]:  # each site once, in the seed's order
        altered, patch = _flip(rom, rng.choice(offsets), rng)
        try:
            result = _blargg_result(altered, polling)
        except Exception:  # the patched ROM breaks the reference: try the next site
            continue
        if result != original and _failed(result) and proof in result:
            return altered, patch
    raise _NoVariant


# -- Game Boy: a branch the test decides with --------------------------------------------------


def _branch_sites(rom: bytes) -> list[int]:
    """Offsets of conditional jumps, calls and returns right after a flag-setting instruction
    (outside the header). Found without symbols; most are never run, which trying tells."""
    return [
        at
        for at in range(HEADER.stop + 2, len(rom))
        if rom[at] in CONDITIONAL
        and (
            rom[at - 1] in FLAGS_ONE_BYTE
            or rom[at - 2] in FLAGS_IMMEDIATE
            or rom[at - 2] == PREFIX_CB
        )
    ]


def _inverted(rom: bytes, at: int) -> tuple[bytes, Patches]:
    value = rom[at] ^ CONDITION_BIT
    return rom[:at] + bytes([value]) + rom[at + 1 :], ((at, value),)


def _clean_failure(result: str) -> bool:
    """A Blargg result that is a failure and nothing else: "Failed" in plain text, no
    "Passed", and a status of 1..0x7F where the test keeps one (0x80 means still running)."""
    serial, _, status = result.partition("\0")
    shown = f"{serial}\n{status}"
    if "Passed" in shown or "Failed" not in shown:
        return False
    if not all(char == "\n" or " " <= char <= "~" for char in shown):
        return False  # a run gone astray prints bytes no honest emulator is tested on
    return not status or 0 < int(status[:4], 16) < BLARGG_RUNNING


@functools.lru_cache(maxsize=SITE_CACHE_ROMS)
def _blargg_original(rom: bytes, case: _Polling) -> tuple[str, int]:
    """The reference's result on the original ROM ("" when it cannot run it) and the frames
    it took; per process."""
    try:
        return _blargg_run(rom, case)
    except Exception:  # PyBoy refuses or breaks on this ROM: the reference has no result
        return "", 0


def _trial_frames(frames: int, budget: int) -> int:
    """Frames a try of a patched ROM may run: a test that fails a check reports about when
    the original reported, so a try that runs on much longer is given up (kept variants
    finish within this, so their answers are the same under the full budget)."""
    return min(budget, 2 * frames + TRIAL_SLACK_FRAMES)


def _first_branch(
    rom: bytes,
    sites: list[int],
    rng: random.Random,
    trials: TrialWorker,
    request: tuple[str, object, int],
    accept: Callable[[Any], bool],
) -> tuple[bytes, Patches]:
    """The first of ``sites``, in the seed's order, whose inverted branch the reference's
    reply (a try in ``trials``: kind, argument, frames) makes ``accept`` true."""
    kind, argument, frames = request
    rng.shuffle(sites)
    for at in sites[:MAX_BRANCH_ATTEMPTS]:
        altered, patch = _inverted(rom, at)
        reply = trials.run(kind, altered, argument, frames)
        # None: the patched ROM broke or hung the reference; try the next branch.
        if reply is not None and accept(reply):
            return altered, patch
    raise _NoVariant


def _blargg_branch(
    case: CorpusCase, rom: bytes, rng: random.Random, trials: TrialWorker
) -> tuple[bytes, Patches]:
    polling = _Polling.of(case)
    original, frames = _blargg_original(rom, polling)
    if not original or _failed(original):
        raise _NoVariant  # nothing to turn into a failure
    trial = dataclasses.replace(polling, budget=_trial_frames(frames, polling.budget))

    def fails(reply: Any) -> bool:
        result, took = str(reply[0]), int(reply[1])
        return took < trial.budget and result != original and _clean_failure(result)

    return _first_branch(
        rom, _branch_sites(rom), rng, trials, ("blargg", trial, trial.budget), fails
    )


def _mooneye_registers(rom: bytes, frames: int) -> tuple[tuple[int, ...] | None, int]:
    """B, C, D, E, H, L at the reference's ``LD B,B`` breakpoint (None: none within
    ``frames``), checked after every frame as the reference candidate answers ``RUNBP``;
    and the frames run."""
    from playproof.corpus import reference_candidate

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        machine = reference_candidate.Machine(rom)
    try:
        for done in range(1, frames + 1):
            machine.run_frames(1, draw=False)
            if machine.at_breakpoint():
                regs = machine.pyboy.register_file
                hl = int(regs.HL) & 0xFFFF
                found = (int(regs.B), int(regs.C), int(regs.D), int(regs.E), hl >> 8, hl & 0xFF)
                return found, done
        return None, frames
    finally:
        machine.pyboy.stop(save=False)


@functools.lru_cache(maxsize=SITE_CACHE_ROMS)
def _mooneye_original(rom: bytes, frames: int) -> int:
    """Frames the reference takes to its breakpoint on the original (``frames``: none)."""
    try:
        return _mooneye_registers(rom, frames)[1]
    except Exception:  # PyBoy refuses or breaks on this ROM
        return frames


def _mooneye_branch(
    case: CorpusCase, rom: bytes, rng: random.Random, trials: TrialWorker
) -> tuple[bytes, Patches]:
    # As with a changed check, the success signal changes too: only the fail signal is right.
    signalled, signal = _mooneye_signal(rom, rng)
    moved = {offset for offset, _ in signal}
    budget = _trial_frames(_mooneye_original(rom, case.budget_frames), case.budget_frames)
    sites = [at for at in _branch_sites(rom) if at not in moved]
    altered, patch = _first_branch(
        signalled,
        sites,
        rng,
        trials,
        ("mooneye", budget, budget),
        lambda reply: bool(reply[0] == [MOONEYE_FAIL] * 6),
    )
    return altered, (*signal, *patch)


class _NoVariant(Exception):
    """No patch of this kind fits this ROM."""


def _kinds(platform: str, case: CorpusCase, symbols: str | None) -> list[list[VariantKind]]:
    """The kinds that fit a case, in tiers: first those whose right answer is a failure (or,
    where there is no such kind, another picture), then Mooneye's moved success signal."""
    if platform == "chip8":
        return [["chip8-sprite"]]
    if case.mode == "frames":
        return [["dmg-tile"]]
    if case.mode == "until-breakpoint":
        failing: list[VariantKind] = ["mooneye-check", "dmg-branch"] if symbols else ["dmg-branch"]
        return [failing, ["mooneye-signal"]]
    if case.mode == "until-result":
        return [["blargg-crc", "dmg-branch"]]
    return []


def default_variants(manifest: CorpusManifest) -> int:
    """Variants per case when none are asked for: 2 where a case has two tiers of kinds
    (Mooneye: one must fail, one moves the success signal), else 1."""
    tiers = (len(_kinds(manifest.platform, case, "")) for case in manifest.cases)
    return 2 if any(count > 1 for count in tiers) else 1


def _one(
    kind: VariantKind,
    case: CorpusCase,
    rom: bytes,
    symbols: str | None,
    rng: random.Random,
    trials: TrialWorker,
) -> tuple[bytes, Patches]:
    if kind == "chip8-sprite":
        return _chip8_sprite(case, rom, rng)
    if kind == "dmg-tile":
        return _dmg_tile(case, rom, rng)
    if kind == "mooneye-signal":
        return _mooneye_signal(rom, rng)
    if kind == "blargg-crc":
        return _blargg_crc(case, rom, rng)
    if kind == "dmg-branch":
        if case.mode == "until-breakpoint":
            return _mooneye_branch(case, rom, rng, trials)
        return _blargg_branch(case, rom, rng, trials)
    return _mooneye_check(rom, symbols, rng)


def make_variants(corpus: Corpus, plan: VariantPlan) -> list[Variant]:
    """The variants of ``corpus`` this plan's seed picks, in manifest order.

    Each case gets ``plan.per_case`` variants where a kind applies. The seed
    shuffles the kinds within each tier of :func:`_kinds` and deals them out
    tier by tier: variant *n* tries the *n*-th kind dealt first, then the rest
    of its tier, then the others (so ``per_case=2`` gives a Mooneye case one
    variant that must fail and one whose success signal moved). The same seed
    gives the same variants (the search runs the reference deterministically).
    A case no kind fits gets none.
    """
    with TrialWorker() as trials:
        return _make(corpus, plan, trials)


def _make(corpus: Corpus, plan: VariantPlan, trials: TrialWorker) -> list[Variant]:
    made: list[Variant] = []
    platform = corpus.manifest.platform
    for case in corpus.manifest.cases:
        symbols = plan.symbols.get(case.id)
        tiers = [list(tier) for tier in _kinds(platform, case, symbols)]
        shuffler = _rng(plan.seed, case.id, -1)
        for tier in tiers:
            shuffler.shuffle(tier)
        dealt = [k for group in itertools.zip_longest(*tiers) for k in group if k is not None]
        rom = corpus.roms[case.id]
        for number in range(plan.per_case if dealt else 0):
            rng = _rng(plan.seed, case.id, number)
            first = dealt[number % len(dealt)]
            tier = next(t for t in tiers if first in t)
            tries = [first, *(k for k in tier if k != first), *(k for k in dealt if k not in tier)]
            for kind in tries:
                try:
                    altered, patch = _one(kind, case, rom, symbols, rng, trials)
                except _NoVariant:
                    continue
                # Only a Game Boy ROM has a cartridge header; a CHIP-8 sprite may lie there.
                if platform == "dmg" and any(offset in HEADER for offset, _ in patch):
                    raise AssertionError("a variant patched the cartridge header")
                made.append(Variant(case.id, number, kind, altered, patch))
                break
    return made


def variant_corpus(corpus: Corpus, variants: Sequence[Variant]) -> Corpus:
    """The variants as a corpus of their own (ids and digests of the altered ROMs)."""
    cases = tuple(
        corpus.manifest.case(v.case_id).model_copy(update={"id": v.variant_id, "sha256": v.sha256})
        for v in variants
    )
    manifest = corpus.manifest.model_copy(
        update={"cases": cases, "denominator": len(cases), "excluded": ()}
    )
    return Corpus(manifest=manifest, roms={v.variant_id: v.rom for v in variants})


def merged_corpus(corpus: Corpus, variants: Sequence[Variant], seed: bytes) -> Corpus:
    """Originals and variants in one corpus, in an order the seed shuffles (the runner then
    sorts by budget, stably), so a variant's position says nothing."""
    if any(VARIANT_MARK in case.id for case in corpus.manifest.cases):
        raise FormatError(f"a case id holds {VARIANT_MARK!r}, which marks variants")
    extra = variant_corpus(corpus, variants)
    cases = [*corpus.manifest.cases, *extra.manifest.cases]
    random.Random(hmac.new(seed, b"order", hashlib.sha256).digest()).shuffle(cases)
    manifest = corpus.manifest.model_copy(update={"cases": tuple(cases), "denominator": len(cases)})
    return Corpus(manifest=manifest, roms={**corpus.roms, **extra.roms})


def variant_answer(original: Answer, seen: CaseObservation) -> Answer | None:
    """The answer of a variant: what the reference reported on it, in the case's criterion.

    None when the reference's run gives no usable answer (it crashed, reached no
    breakpoint, printed no result); such a variant is not graded.
    """
    if seen.outcome != "ok":
        return None
    if isinstance(original, RegistersAnswer):
        if not seen.at_breakpoint or seen.registers is None:
            return None
        return RegistersAnswer(registers={n: seen.registers.get(n, 0) for n in original.registers})
    if isinstance(original, FramebufferAnswer):
        return FramebufferAnswer(sha256=seen.screen_sha256) if seen.screen_sha256 else None
    if isinstance(original, MemoryAnswer):
        if seen.memory is None:
            return None
        block = bytes.fromhex(seen.memory)
        if block[1:4] != BLARGG_SIGNATURE:
            return None
        return MemoryAnswer(status=block[0], text=status_text(block))
    transcript = seen.serial or ""
    for marker in (original.pass_marker, "Failed"):
        if marker in transcript:
            return SerialAnswer(transcript=transcript, pass_marker=marker)
    return None


@dataclass(frozen=True)
class VariantOutcome:
    """The grade over originals and variants, and each graded variant's pin."""

    grade: Grade
    pins: tuple[VariantPin, ...]


def combine(
    base: Grade,
    variants: Sequence[Variant],
    answers: dict[str, Answer | None],
    observations: dict[str, CaseObservation],
) -> VariantOutcome:
    """A case passes only when it and every graded variant of it match.

    ``answers`` maps variant ids to the reference's answer (None: not graded).
    """
    pins: list[VariantPin] = []
    failed: dict[str, str] = {}
    for variant in variants:
        answer = answers.get(variant.variant_id)
        if answer is None:
            continue
        result = grade_case(answer, observations.get(variant.variant_id), variant.variant_id)
        pins.append(
            VariantPin(
                case_id=variant.case_id,
                kind=variant.kind,
                sha256=variant.sha256,
                passed=result.passed,
            )
        )
        if not result.passed:
            failed.setdefault(
                variant.case_id, f"a {variant.kind} variant of this ROM differs: {result.reason}"
            )
    results = [
        CaseResult(case_id=r.case_id, passed=False, reason=failed[r.case_id][:200])
        if r.passed and r.case_id in failed
        else r
        for r in base.results
    ]
    grade = Grade(
        results=results, passed=sum(r.passed for r in results), denominator=base.denominator
    )
    return VariantOutcome(grade=grade, pins=tuple(pins))


@dataclass(frozen=True)
class VariantRun:
    """The candidate's run over originals and variants, graded: what a record needs."""

    outcome: RunOutcome
    """The candidate's run; its observations are the original cases' only."""
    grade: Grade
    pins: tuple[VariantPin, ...]
    reference_seconds: float
    """Wall time of the reference's run on the variants (alongside the candidate's)."""


def run_with_variants(
    corpus: Corpus,
    answers: CorpusAnswers,
    candidate: CandidateSpec,
    plan: VariantPlan,
    *,
    jobs: int,
    cases_per_process: int,
    limits: JailLimits,
    isolation: IsolationChoice,
    on_case: Callable[[CaseObservation], None] | None,
    runner: Callable[..., RunOutcome] = run_corpus,
) -> VariantRun:
    """Run ``candidate`` on the cases and this plan's variants, the reference on the variants
    (in its own jail, at the same time), and grade: a case passes only with all its variants.

    ``runner`` runs a corpus as ``run_corpus`` does (``_dispatch.run_corpus_on`` bound
    to an executor spreads the cases over a cluster).
    """
    from playproof.corpus._reference import reference_candidate_spec

    made = make_variants(corpus, plan)
    merged = merged_corpus(corpus, made, plan.seed)
    reference = dataclasses.replace(
        reference_candidate_spec(corpus.manifest.platform),
        hidden=candidate.hidden,
        secret=candidate.secret,
    )

    def originals_only(seen: CaseObservation) -> None:
        if on_case is not None and VARIANT_MARK not in seen.case_id:
            on_case(seen)

    if not made:  # no kind fits these cases: nothing for the reference to run
        outcome = runner(
            corpus,
            candidate,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=limits,
            isolation=isolation,
            on_case=on_case,
        )
        base = grade(corpus.manifest, answers, outcome.observations)
        return VariantRun(outcome=outcome, grade=base, pins=(), reference_seconds=0.0)
    with ThreadPoolExecutor(max_workers=1) as pool:
        expected = pool.submit(
            runner,
            variant_corpus(corpus, made),
            reference,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=limits,
            isolation=isolation,
        )
        outcome = runner(
            merged,
            candidate,
            jobs=jobs,
            cases_per_process=cases_per_process,
            limits=limits,
            isolation=isolation,
            on_case=originals_only,
        )
        truth = expected.result()
    seen_variants = {o.case_id: o for o in outcome.observations if VARIANT_MARK in o.case_id}
    originals = [o for o in outcome.observations if VARIANT_MARK not in o.case_id]
    by_id = {o.case_id: o for o in originals}
    originals = [by_id[c.id] for c in corpus.manifest.cases]
    variant_answers = {
        o.case_id: variant_answer(answers.answers[o.case_id.split(VARIANT_MARK)[0]], o)
        for o in truth.observations
    }
    base = grade(corpus.manifest, answers, originals)
    combined = combine(base, made, variant_answers, seen_variants)
    return VariantRun(
        outcome=dataclasses.replace(outcome, observations=originals),
        grade=combined.grade,
        pins=combined.pins,
        reference_seconds=truth.wall_seconds,
    )


def verify_variants(
    pins: Sequence[VariantPin], seed_sha256: str | None, corpus: Corpus, plan: VariantPlan
) -> CheckResult:
    """``variants-reproduced``: the revealed seed commits as recorded and makes the same variants.

    An auditor given the seed after the grading regenerates the variants from
    the corpus and compares kinds and ROM digests with the record's pins.
    """
    check = "variants-reproduced"
    if seed_sha256 != plan.seed_sha256:
        return CheckResult(
            id=check, passed=False, reason="the seed given is not the one the record commits to"
        )
    made = [(v.case_id, v.kind, v.sha256) for v in make_variants(corpus, plan)]
    graded = [(p.case_id, p.kind, p.sha256) for p in pins]
    missing = [entry for entry in graded if entry not in made]
    if missing:
        return CheckResult(
            id=check,
            passed=False,
            reason=f"{len(missing)} recorded variants are not what the seed makes "
            f"(first: {missing[0][0][:80]!r})",
        )
    return CheckResult(
        id=check,
        passed=True,
        reason=f"{len(graded)} variants regenerated from the seed, digests equal "
        f"({len(made) - len(graded)} not graded: the reference gave no answer)",
    )
