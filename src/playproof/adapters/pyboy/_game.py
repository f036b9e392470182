"""The PyBoy game session: a Game Boy ROM headless, sound off, no real-time pacing.

One input holds a button for ``press_frames`` frames, releases it and lets
the rest of ``frames_per_input`` run, so no input is ever pending between
inputs (checkpoints capture everything). Unknown words let the same number
of frames pass with no button held.

Evidence: ``engine`` = the declared memory channels; ``frame_hash`` = SHA-256
of PyBoy's rendered screen buffer (160x144 RGBA, row-major, alpha 0xFF), which
equals the SHA-256 of the observation PNG's pixels decoded as RGBA after
undoing the scale; ``save_hash`` = SHA-256 of the PyBoy save state when the
``save_hash`` option is on (measured byte-stable across processes, but a
state save costs tens of milliseconds); ``events`` = completed serial lines
as ``serial:<line>``.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playproof.adapters.pyboy import _checkpoint, _screen
from playproof.adapters.pyboy._options import PyBoyOptions
from playproof.adapters.pyboy._roms import BUNDLED, read_rom
from playproof.adapters.pyboy._serial import SerialLog
from playproof.core.canonical import digest
from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.game import (
    MAX_SEED,
    BuildIdentity,
    GameDescriptor,
    Platform,
    ReplayResult,
    VerificationMode,
)
from playproof.core.observation import Observation
from playproof.core.replay import replay_in_session
from playproof.errors import CheckpointError, FormatError, TargetError

if TYPE_CHECKING:
    from pyboy import PyBoy

__all__ = ["ADAPTER_VERSION", "VOCABULARY", "PyBoyGame"]

MEMORY_AREAS = (("wram", 0xC000, 0xE000), ("hram", 0xFF80, 0xFFFF))
"""Game Boy work RAM and high RAM, as :meth:`PyBoyGame.memory` reads them."""

ADAPTER_VERSION = "playproof-pyboy/1"
"""Bumped whenever the adapter's behaviour changes evidence; part of the build digest."""
VOCABULARY = ("noop", "a", "b", "start", "select", "up", "down", "left", "right")
_BUTTONS = frozenset(VOCABULARY[1:])
_SEED_MODULUS = 0xFFFF
_LCDC, _SCY, _SCX = 0xFF40, 0xFF42, 0xFF43
_MAP_LOW, _MAP_HIGH, _MAP_BYTES = 0x9800, 0x9C00, 0x400


def _new_pyboy(rom: bytes) -> PyBoy:
    with warnings.catch_warnings():
        # pysdl2 announces where it found SDL; headless runs do not use it.
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        from pyboy import PyBoy

        # A file object (not a path) so PyBoy never loads .ram/.rtc files lying next to a ROM.
        emulator = PyBoy(io.BytesIO(rom), window="null", sound_emulated=False, log_level="ERROR")
    emulator.set_emulation_speed(0)  # 0 = as fast as possible, never wall-clock paced
    return emulator


def _pyboy_version() -> str:
    return metadata.version("pyboy")


class PyBoyGame:
    """A Game over one PyBoy emulator (see the module docstring for the contract)."""

    def __init__(self, options: PyBoyOptions) -> None:
        self.options = options
        path = BUNDLED[options.rom] if options.rom else Path(options.rom_path or "")
        self._rom = read_rom(path)
        self.rom_sha256 = hashlib.sha256(self._rom).hexdigest()
        if options.rom_sha256 and options.rom_sha256 != self.rom_sha256:
            raise TargetError(f"ROM {path} has SHA-256 {self.rom_sha256}, not {options.rom_sha256}")
        self._descriptor = self._describe()
        self._channels = [
            (name, ch.address, ch.size) for name, ch in sorted(options.channels.items())
        ]
        self._public = [(name, options.channels[name].address) for name in options.public]
        self._hash_frames = True
        self._hash_saves = options.save_hash
        self._closed = False
        self._pyboy = _new_pyboy(self._rom)
        try:
            self._boot()
            self._power_on = self._save_state()
        except BaseException:
            self._pyboy.stop(save=False)
            raise
        self._power_on_serial = self._serial.to_state()
        self.reset(0)

    # -- construction ------------------------------------------------------

    def _describe(self) -> GameDescriptor:
        options = self.options.model_dump(mode="json", exclude={"rom_path"})
        build = digest(
            {
                "adapter": ADAPTER_VERSION,
                "options": options,
                "pyboy": _pyboy_version(),
                "rom_sha256": self.rom_sha256,
            }
        )
        capabilities: tuple[str, ...] = ("checkpoint", "batch-replay", "frame-hash")
        if self.options.image_scale:
            capabilities += ("images",)
        return GameDescriptor(
            id=self.options.game_id,
            vocabulary=VOCABULARY,
            build=BuildIdentity(id=f"{self.options.game_id}@{self.rom_sha256[:12]}", digest=build),
            platform=Platform(
                family="pyboy", modes=(VerificationMode.REPLAY,), capabilities=capabilities
            ),
        )

    def _boot(self) -> None:
        self._serial = SerialLog()
        options, emulator = self.options, self._pyboy
        if options.ready_channel is None:
            if options.boot_frames:
                emulator.tick(options.boot_frames, True, False)
        else:
            address = options.channels[options.ready_channel].address
            for _ in range(options.boot_frames):
                if emulator.memory[address]:
                    break
                emulator.tick(1, True, False)
            if not emulator.memory[address]:
                raise TargetError(
                    f"ROM never set ready channel {options.ready_channel!r} "
                    f"within {options.boot_frames} frames"
                )
        self._serial.feed(emulator._serial())

    def _save_state(self) -> bytes:
        buffer = io.BytesIO()
        self._pyboy.save_state(buffer)
        return buffer.getvalue()

    # -- Game protocol -----------------------------------------------------

    @property
    def descriptor(self) -> GameDescriptor:
        """Identity, vocabulary, build and platform of this session."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """Return to the power-on snapshot and write the seed to ``seed_channel`` (if any)."""
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise FormatError(f"seed must be an integer in 0..{MAX_SEED}")
        emulator = self._pyboy
        emulator.load_state(io.BytesIO(self._power_on))
        emulator._serial()  # PyBoy's serial ring is not part of its state; start empty
        self._serial = SerialLog.from_state(dict(self._power_on_serial))
        if self.options.seed_channel:
            # Never 0: an LFSR seeded with 0 stays 0.
            value = seed % _SEED_MODULUS + 1
            address = self.options.channels[self.options.seed_channel].address
            emulator.memory[address] = value & 0xFF
            emulator.memory[address + 1] = value >> 8
        self.steps = 0

    def step(self, word: str) -> None:
        """Press ``word``'s button for ``press_frames`` frames, then release; else just wait."""
        emulator, options = self._pyboy, self.options
        if word in _BUTTONS:
            emulator.button_press(word)
            emulator.tick(options.press_frames, False, False)
            emulator.button_release(word)
            emulator.tick(options.frames_per_input - options.press_frames, True, False)
        else:
            emulator.tick(options.frames_per_input, True, False)
        chunk = emulator._serial()
        if chunk:
            self._serial.feed(chunk)
        self.steps += 1

    def _read(self, address: int, size: int) -> int:
        memory = self._pyboy.memory
        value = int(memory[address])
        return value | int(memory[address + 1]) << 8 if size == 2 else value

    def evidence(self) -> Evidence:
        """Channels, frame hash, optional save hash and the serial lines since the last call."""
        memory = self._pyboy.memory
        engine = {
            name: memory[address] if size == 1 else memory[address] | memory[address + 1] << 8
            for name, address, size in self._channels
        }
        frame_hash = None
        if self._hash_frames:
            frame_hash = hashlib.sha256(self._pyboy.screen.ndarray.data).hexdigest()
        save_hash = hashlib.sha256(self._save_state()).hexdigest() if self._hash_saves else None
        return Evidence(
            engine=engine,
            frame_hash=frame_hash,
            save_hash=save_hash,
            events=self._serial.take_events(),
        )

    def over(self) -> bool | None:
        """True while ``over_channel`` is non-zero; None without one."""
        name = self.options.over_channel
        if name is None:
            return None
        channel = self.options.channels[name]
        return self._read(channel.address, channel.size) != 0

    def observe(self) -> Observation:
        """The screen as a 20x18 text grid, the public numbers, and the PNG when asked for."""
        rgba = self._pyboy.screen.ndarray
        if self.options.text == "tiles":
            memory = self._pyboy.memory
            base = _MAP_HIGH if memory[_LCDC] & 0x08 else _MAP_LOW
            tile_map = memory[base : base + _MAP_BYTES]
            rows = _screen.tile_grid(tile_map, memory[_SCX], memory[_SCY], self.options.charset)
        else:
            rows = _screen.shade_grid(rgba)
        summary = " ".join(
            f"{name} {self._pyboy.memory[address]}" for name, address in self._public
        )
        text = "\n".join([*rows, summary] if summary else rows)
        images = (
            (_screen.screen_png(rgba, self.options.image_scale),)
            if self.options.image_scale
            else ()
        )
        return Observation(text=text, images=images)

    def close(self) -> None:
        """Stop the emulator (idempotent)."""
        if not self._closed:
            self._closed = True
            self._pyboy.stop(save=False)

    # -- optional capabilities --------------------------------------------

    def checkpoint(self) -> bytes:
        """The full session state (emulator, step count, serial log) bound to this build."""
        meta: dict[str, Any] = {"steps": self.steps, "serial": self._serial.to_state()}
        return _checkpoint.pack(self._descriptor.build.digest, meta, self._save_state())

    def restore(self, blob: bytes) -> None:
        """Restore a :meth:`checkpoint`; anything else raises CheckpointError."""
        meta, state = _checkpoint.unpack(blob, self._descriptor.build.digest)
        try:
            steps = meta["steps"]
            serial = SerialLog.from_state(meta["serial"])
            if not isinstance(steps, int):
                raise TypeError("steps is not an integer")
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint metadata is malformed: {exc}") from exc
        fallback = self._save_state()
        try:
            self._pyboy.load_state(io.BytesIO(state))
        except Exception as exc:
            self._pyboy.load_state(io.BytesIO(fallback))
            raise CheckpointError(f"PyBoy refused the saved state: {exc}") from exc
        self._pyboy._serial()
        self._serial, self.steps = serial, steps

    def replay(
        self, seed: int, inputs: Sequence[str], contract: Contract, *, trace: bool = False
    ) -> ReplayResult:
        """Replay a log in-process; hash frames/saves only if the trace or contract needs them."""
        kinds = {milestone.check.kind for milestone in contract.milestones}
        self._hash_frames = trace or "frame-hash" in kinds
        self._hash_saves = self.options.save_hash and (trace or "save-hash" in kinds)
        try:
            return replay_in_session(self, seed, inputs, contract, trace=trace)
        finally:
            self._hash_frames, self._hash_saves = True, self.options.save_hash

    def memory(self) -> dict[str, tuple[int, bytes]]:
        """Work RAM and high RAM (for channel discovery only; not the IE register at 0xFFFF)."""
        memory = self._pyboy.memory
        return {name: (low, bytes(memory[low:high])) for name, low, high in MEMORY_AREAS}

    def serial_output(self) -> str:
        """Every serial character received since reset (bounded by MAX_SERIAL_BYTES)."""
        return self._serial.text
