"""A stable-retro session driving the emulator core directly (one emulator per process)."""

from __future__ import annotations

import hashlib
import struct
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import stable_retro
import stable_retro.data

from playproof._bounded import read_bounded
from playproof.adapters.options import check_seed, replay_platform
from playproof.adapters.retro._options import RetroOptions
from playproof.adapters.retro._pad import pad_words
from playproof.adapters.screen import frame_hash, png_image, shade_text
from playproof.adapters.sealed import seal, unseal
from playproof.core.canonical import digest
from playproof.core.evidence import Evidence
from playproof.core.game import (
    BuildIdentity,
    GameDescriptor,
)
from playproof.core.observation import Observation
from playproof.errors import CheckpointError, TargetError

__all__ = [
    "ADAPTER_VERSION",
    "LIT_GRID",
    "MAX_CHECKPOINT_BYTES",
    "MAX_ROM_BYTES",
    "MAX_VARIABLES",
    "PUBLIC_VARIABLES",
    "RetroGame",
]

ADAPTER_VERSION = "playproof.adapters.retro/1"
"""Bumped whenever a change here could change evidence for the same inputs."""
MAX_ROM_BYTES = 16 << 20
MAX_INTEGRATION_FILE_BYTES = 1 << 20
MAX_CHECKPOINT_BYTES = 8 << 20
"""Genesis save states are about 1 MiB."""
MAX_VARIABLES = 32
"""At most this many integration variables become evidence."""
PUBLIC_VARIABLES = ("score", "lives")
"""Integration variables a player sees on screen; only these reach the observation."""
LIT_GRID = 8
"""``frame.lit`` counts non-black screen samples on a grid of this pitch (cheap, exact)."""
_HEAD = struct.Struct(">q?")  # frame counter, game over


def _integration_digests(game: str) -> dict[str, str | None]:
    """SHA-256 of the ROM and of the integration files that define variables and game over."""
    try:
        rom = Path(stable_retro.data.get_romfile_path(game))
    except FileNotFoundError as exc:
        raise TargetError(f"stable-retro has no ROM for {game!r}: {exc}") from exc
    found: dict[str, str | None] = {
        "rom": hashlib.sha256(read_bounded(rom, MAX_ROM_BYTES, "ROM", TargetError)).hexdigest()
    }
    for name in ("data.json", "scenario.json"):
        path = stable_retro.data.get_file_path(game, name)
        found[name] = (
            hashlib.sha256(
                read_bounded(
                    Path(path), MAX_INTEGRATION_FILE_BYTES, "integration file", TargetError
                )
            ).hexdigest()
            if path
            else None
        )
    return found


class RetroGame:
    """A stable-retro session (see :mod:`playproof.adapters.retro` for the evidence it records)."""

    def __init__(self, options: RetroOptions) -> None:
        self._options = options
        files = _integration_digests(options.game)
        state: Any = options.state if options.state is not None else stable_retro.State.DEFAULT
        try:
            env: Any = stable_retro.make(game=options.game, state=state, render_mode=None)
        except (FileNotFoundError, ValueError) as exc:
            raise TargetError(f"cannot make stable-retro game {options.game}: {exc}") from exc
        except RuntimeError as exc:
            raise TargetError(
                f"cannot make stable-retro game {options.game}: {exc} (stable-retro allows one "
                "emulator per process; run it in a worker)"
            ) from exc
        self._env = env
        self._em: Any = env.em
        self._data: Any = env.data
        try:
            self._words = pad_words(env.buttons, options.buttons)
        except TargetError:
            env.close()
            raise
        self._noop = self._words["noop"]
        initial = env.initial_state or b""
        identity = {
            "adapter": ADAPTER_VERSION,
            "library": f"stable-retro {metadata.version('stable-retro')}",
            "game": options.game,
            "state": env.statename,
            "state_sha256": hashlib.sha256(initial).hexdigest(),
            **{f"{name}_sha256": value for name, value in files.items()},
            "frame_skip": options.frame_skip,
            "vocabulary": list(self._words),
        }
        self._descriptor = GameDescriptor(
            id=f"retro-{options.game.lower()}"[:128],
            vocabulary=tuple(self._words),
            build=BuildIdentity(
                id=f"stable-retro-{metadata.version('stable-retro')}/{options.game}"[:128],
                digest=digest(identity),
            ),
            platform=replay_platform("retro", images=bool(options.image_scale)),
        )
        self.reset(0)

    @property
    def descriptor(self) -> GameDescriptor:
        """Retro descriptor: vocabulary = pad buttons and ``+``-joined combinations."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """Load the integration's start state; the emulator has no randomness a seed could fix."""
        check_seed(seed)
        self._env.reset(seed=seed)
        self._frames = 0
        self._over = bool(self._data.is_done())
        self._cached: Evidence | None = None

    def step(self, word: str) -> None:
        """Hold the word's buttons for ``frame_skip`` frames; unknown words hold nothing."""
        if self._over:
            return
        mask = self._words.get(word, self._noop)
        em = self._em
        for _ in range(self._options.frame_skip):
            em.set_button_mask(mask, 0)
            em.step()
        self._frames += self._options.frame_skip
        self._data.update_ram()
        self._over = bool(self._data.is_done())
        self._cached = None

    def evidence(self) -> Evidence:
        """Integration variables, frame counter, frame hash and the lit-sample count."""
        if self._cached is not None:
            return self._cached
        screen = self._em.get_screen()
        variables = self._data.lookup_all()
        engine = {str(k): int(v) for k, v in sorted(variables.items())[:MAX_VARIABLES]}
        engine["frame"] = self._frames
        lit = int(np.count_nonzero(screen[::LIT_GRID, ::LIT_GRID].any(axis=2)))
        self._cached = Evidence(engine=engine, frame={"lit": lit}, frame_hash=frame_hash(screen))
        return self._cached

    def observe(self) -> Observation:
        """Shaded text of the screen plus score and lives; the PNG screen when images are on."""
        screen = self._em.get_screen()
        variables = self._data.lookup_all()
        parts = [f"{name} {int(variables[name])}" for name in PUBLIC_VARIABLES if name in variables]
        if self._over:
            parts.append("game over")
        text = f"{shade_text(screen)}\n{' | '.join(parts)}"
        scale = self._options.image_scale
        images = (png_image(screen, scale=scale, label="screen"),) if scale else ()
        return Observation(text=text, images=images)

    def over(self) -> bool:
        """True once the integration's scenario says the game is done."""
        return self._over

    def checkpoint(self) -> bytes:
        """The emulator save state and frame counter, sealed to this build.

        The save state restores exactly in any process, but its bytes are not
        stable across processes (they embed host addresses), so no save hash
        is published.
        """
        payload = _HEAD.pack(self._frames, self._over) + bytes(self._em.get_state())
        return seal(payload, kind="retro", build=self._descriptor.build.digest)

    def restore(self, blob: bytes) -> None:
        """Restore a :meth:`checkpoint` of this build; anything else raises CheckpointError."""
        payload = unseal(
            blob, kind="retro", build=self._descriptor.build.digest, limit=MAX_CHECKPOINT_BYTES
        )
        if len(payload) <= _HEAD.size:
            raise CheckpointError("retro checkpoint has no emulator state")
        frames, over = _HEAD.unpack(payload[: _HEAD.size])
        if not self._em.set_state(payload[_HEAD.size :]):
            raise CheckpointError("the emulator refused the checkpoint state")
        self._data.update_ram()
        self._frames, self._over = frames, over
        self._cached = None

    def close(self) -> None:
        """Close the environment and free the process's one emulator (idempotent)."""
        # Our own references would keep the emulator alive after env.close().
        self._em = self._data = None
        self._cached = None
        self._env.close()
