"""An Atari 2600 session driving ``ale_py.ALEInterface`` directly."""

from __future__ import annotations

import contextlib
import hashlib
import io
import struct
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ale_py
import numpy as np
from ale_py import ALEInterface, ALEState, LoggerMode, roms

from playproof._bounded import read_bounded
from playproof.adapters.ale._options import RAM_SIZE, AleOptions
from playproof.adapters.options import check_seed, replay_platform
from playproof.adapters.screen import frame_hash, png_image, shade_text
from playproof.adapters.sealed import seal, unseal
from playproof.core.canonical import digest, sha256_hex
from playproof.core.evidence import Evidence
from playproof.core.game import (
    BuildIdentity,
    GameDescriptor,
)
from playproof.core.observation import Observation
from playproof.errors import CheckpointError, TargetError

__all__ = [
    "ADAPTER_VERSION",
    "MAX_CACHED_STARTS",
    "MAX_CHECKPOINT_BYTES",
    "MAX_ROM_BYTES",
    "SNAPSHOT_RESET_PROVEN",
    "AleGame",
]

ADAPTER_VERSION = "playproof.adapters.ale/1"
"""Bumped whenever a change here could change evidence for the same inputs."""
MAX_ROM_BYTES = 1 << 20
"""Atari 2600 ROMs are at most a few tens of KiB; anything bigger is not a ROM."""
MAX_CHECKPOINT_BYTES = 1 << 20
_SEED_SPACE = 1 << 31
"""ALE takes a signed 32-bit seed; playproof seeds are folded into it."""
_HEAD = struct.Struct(">q?")  # score, game over
RAM_BASE = 0x80
"""The Atari 2600 maps its 128 bytes of RAM at 0x80-0xFF."""
MAX_CACHED_STARTS = 16
"""Post-load snapshots one session keeps (one per seed; the least recently used goes first)."""
SNAPSHOT_RESET_PROVEN: Mapping[str, frozenset[str]] = {
    "0.12.1": frozenset(
        {
            # breakout (ale/breakout)
            "376323f051c3c373c887fd83abead39d87d844ff283d435f4addbfc1710c6fd5",
        }
    ),
}
"""ale-py version -> SHA-256 of the ROMs whose reset restores a post-load snapshot.

ALE's saved state leaves out the screen buffers and a few emulator internals
(TIA drawing pointers, the data bus), so a restored session is only known to
equal a reload where tests compared whole evidence traces, screens included,
across seeds and episode orders (``tests/adapters/ale/test_snapshot_reset.py``).
Every other ROM or ale-py version reloads the ROM on each reset.
"""


@dataclass(frozen=True)
class _Start:
    """What a reload with one seed leaves behind: the emulator state and the screen."""

    state: ALEState
    screen: np.ndarray[Any, np.dtype[np.uint8]]


def _rom_file(name: str) -> Path:
    if name not in roms.get_all_rom_ids():
        raise TargetError(f"ale-py bundles no ROM called {name!r}")
    # get_rom_path may print (ALE_ROMS_DIR) or warn; neither may reach a worker's stdout.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = roms.get_rom_path(name)
    if path is None:
        raise TargetError(f"the ale-py ROM {name!r} is missing or fails its checksum")
    return Path(path)


def _read_rom(path: Path) -> bytes:
    return read_bounded(path, MAX_ROM_BYTES, "ROM", TargetError)


class AleGame:
    """An ALE session: one ROM, harness frame skip, named RAM channels as evidence.

    Evidence ``engine``: ``score`` (cumulative reward), ``lives``, ``frame``
    (emulator frames since reset, evidence only) and every named RAM channel;
    ``frame_hash`` over the RGB screen; ``save_hash`` over the serialized
    emulator state (measured byte-stable across processes). After game over,
    inputs are no-ops. Unknown words act as ``noop`` (time passes).

    ``reset_by_snapshot``: ``None`` (default) restores a post-load snapshot per
    seed where :data:`SNAPSHOT_RESET_PROVEN` lists the ROM, else reloads;
    ``False`` always reloads; ``True`` always restores (to prove a new ROM).
    Either way the evidence and observations equal those of a fresh load.
    """

    def __init__(self, options: AleOptions, *, reset_by_snapshot: bool | None = None) -> None:
        self._options = options
        self._rom_path = _rom_file(options.rom)
        rom_sha = sha256_hex(_read_rom(self._rom_path))
        self._rom_sha256 = rom_sha
        if reset_by_snapshot is None:
            reset_by_snapshot = rom_sha in SNAPSHOT_RESET_PROVEN.get(ale_py.__version__, ())
        self._by_snapshot = reset_by_snapshot
        self._starts: dict[int, _Start] = {}
        self._start_screen: np.ndarray[Any, np.dtype[np.uint8]] | None = None
        ALEInterface.setLoggerMode(LoggerMode.Error)
        self._ale = ALEInterface()
        self._load(0)
        actions = list(self._ale.getMinimalActionSet())
        self._words = {action.name.lower(): action for action in actions}
        self._noop = ale_py.Action.NOOP
        height, width = self._ale.getScreenDims()
        self._rgb = np.empty((height, width, 3), dtype=np.uint8)
        self._ram = np.empty(RAM_SIZE, dtype=np.uint8)
        self._channels = tuple(sorted(options.ram.items()))
        self._score = 0
        self._over = False
        self._cached: Evidence | None = None
        self._seen: Observation | None = None  # kept, like the evidence, until the console changes
        identity = {
            "adapter": ADAPTER_VERSION,
            "library": f"ale-py {ale_py.__version__}",
            "rom": options.rom,
            "rom_sha256": rom_sha,
            "frame_skip": options.frame_skip,
            "ram": dict(self._channels),
            "mode": options.mode,
            "difficulty": options.difficulty,
            "repeat_action_probability": 0,
        }
        self._descriptor = GameDescriptor(
            id=f"ale-{options.rom}",
            vocabulary=tuple(self._words),
            build=BuildIdentity(
                id=f"ale-py-{ale_py.__version__}/{options.rom}", digest=digest(identity)
            ),
            platform=replay_platform("ale", images=bool(options.image_scale)),
        )

    def _load(self, seed: int) -> None:
        ale = self._ale
        ale.setInt("random_seed", seed % _SEED_SPACE)
        ale.setFloat("repeat_action_probability", 0.0)
        ale.setInt("frame_skip", 1)
        ale.loadROM(str(self._rom_path))
        options = self._options
        if options.mode is not None or options.difficulty is not None:
            if options.mode is not None:
                if options.mode not in ale.getAvailableModes():
                    raise TargetError(f"ROM {options.rom} has no mode {options.mode}")
                ale.setMode(options.mode)
            if options.difficulty is not None:
                if options.difficulty not in ale.getAvailableDifficulties():
                    raise TargetError(f"ROM {options.rom} has no difficulty {options.difficulty}")
                ale.setDifficulty(options.difficulty)
            ale.reset_game()
        self._start_screen = None
        if self._by_snapshot:
            self._remember(seed)

    def _remember(self, seed: int) -> None:
        """Keep the state a reload with ``seed`` just left, with its screen."""
        starts = self._starts
        if len(starts) >= MAX_CACHED_STARTS:
            del starts[next(iter(starts))]
        screen = self._ale.getScreenRGB()
        screen.setflags(write=False)
        # include_rng: the state then also holds ALE's own RNG, seeded by the load.
        starts[seed % _SEED_SPACE] = _Start(self._ale.cloneState(include_rng=True), screen)

    @property
    def descriptor(self) -> GameDescriptor:
        """ALE descriptor: vocabulary = the ROM's minimal action set, lower-cased."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """Put the console where a ROM load with ALE's random seed fixed by ``seed`` leaves it.

        The first reset with a seed loads the ROM; later ones restore the state
        that load left (when snapshots are on), and show the screen it left
        until the next frame is emulated, since ALE's state holds no screen.
        """
        check_seed(seed)
        start = self._starts.pop(seed % _SEED_SPACE, None)
        if start is None:
            self._load(seed)
        else:
            self._starts[seed % _SEED_SPACE] = start  # most recently used last
            self._ale.restoreState(start.state)
            self._start_screen = start.screen
        self._score = 0
        self._over = self._ale.game_over()
        self._cached = self._seen = None

    def step(self, word: str) -> None:
        """Repeat the word's action for ``frame_skip`` frames (stops at game over)."""
        if self._over:
            return
        ale = self._ale
        action = self._words.get(word, self._noop)
        self._start_screen = None  # the first act below draws a new frame
        act, game_over = ale.act, ale.game_over
        reward = 0
        for _ in range(self._options.frame_skip):
            reward += act(action)
            if game_over():
                self._over = True
                break
        self._score += reward
        self._cached = self._seen = None

    def evidence(self) -> Evidence:
        """Score, lives, frame counter, RAM channels, frame hash and save hash."""
        if self._cached is not None:
            return self._cached
        ale = self._ale
        screen = self._start_screen
        if screen is None:
            ale.getScreenRGB(self._rgb)
            screen = self._rgb
        engine = {"score": self._score, "lives": ale.lives(), "frame": ale.getEpisodeFrameNumber()}
        if self._channels:
            ale.getRAM(self._ram)
            ram = self._ram
            for name, index in self._channels:
                engine[name] = int(ram[index])
        self._cached = Evidence(
            engine=engine,
            frame_hash=frame_hash(screen),
            save_hash=hashlib.sha256(ale.cloneState().serialize()).hexdigest(),
        )
        return self._cached

    def observe(self) -> Observation:
        """Shaded text of the screen plus score and lives; the PNG screen when images are on."""
        if self._seen is not None:  # after game over inputs change nothing
            return self._seen
        screen = self._start_screen
        if screen is None:
            screen = self._ale.getScreenRGB()
        summary = f"score {self._score} | lives {self._ale.lives()}"
        if self._over:
            summary += " | game over"
        text = f"{shade_text(screen)}\n{summary}"
        scale = self._options.image_scale
        images = (png_image(screen, scale=scale, label="screen"),) if scale else ()
        self._seen = Observation(text=text, images=images)
        return self._seen

    def over(self) -> bool:
        """True once ALE reports game over."""
        return self._over

    @property
    def rom_sha256(self) -> str:
        """SHA-256 of the ROM file ale-py loads."""
        return self._rom_sha256

    def memory(self) -> dict[str, tuple[int, bytes]]:
        """The console's 128 bytes of RAM, mapped at 0x80 (for channel discovery only)."""
        return {"ram": (RAM_BASE, bytes(self._ale.getRAM()))}

    def checkpoint(self) -> bytes:
        """The emulator state (with its RNG) and the score, sealed to this build."""
        state = self._ale.cloneState(include_rng=True).serialize()
        payload = _HEAD.pack(self._score, self._over) + state
        return seal(payload, kind="ale", build=self._descriptor.build.digest)

    def restore(self, blob: bytes) -> None:
        """Restore a :meth:`checkpoint` of this build; anything else raises CheckpointError."""
        payload = unseal(
            blob, kind="ale", build=self._descriptor.build.digest, limit=MAX_CHECKPOINT_BYTES
        )
        if len(payload) <= _HEAD.size:
            raise CheckpointError("ale checkpoint has no emulator state")
        score, over = _HEAD.unpack(payload[: _HEAD.size])
        try:
            state: Any = ALEState(payload[_HEAD.size :])
            self._ale.restoreState(state)
        except Exception as exc:  # the binding raises untyped SystemErrors on bad state
            raise CheckpointError(f"ALE refused the checkpoint state: {exc}") from exc
        # The screen is left alone, as ALE leaves its screen buffer on restore.
        self._score, self._over = score, over
        self._cached = self._seen = None

    def close(self) -> None:
        """Drop the emulator and the cached snapshots (idempotent)."""
        self._cached = self._seen = None
        self._starts.clear()
