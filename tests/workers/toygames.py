"""Small deterministic toy games for the worker tests (imported by the spawned children too).

``Walker`` walks a line collecting seeded coins. With ``misbehave=True`` it also
accepts words that make it crash, hang, print to stdout, raise, or spawn a
grandchild, so the worker's failure handling can be exercised.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
import zlib
from typing import Any

from playproof.core.evidence import Evidence
from playproof.core.game import BuildIdentity, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import MAX_TEXT_CHARS, Image, Observation
from playproof.errors import CheckpointError

WORDS = ("left", "right", "jump", "noop")
MISBEHAVIOUR = ("crash", "hang", "shout", "raise", "badobs", "spawn", "huge")


def tiny_png(width: int, height: int) -> bytes:
    """A valid grey PNG of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class Walker:
    """A walker on 21 cells collecting seeded coins; over after ``length`` inputs."""

    def __init__(self, length: int = 50, image: bool = False, misbehave: bool = False) -> None:
        self._length = length
        self._image = image
        self._misbehave = misbehave
        vocabulary = WORDS + (MISBEHAVIOUR if misbehave else ())
        self._descriptor = GameDescriptor(
            id="toy-walker",
            vocabulary=vocabulary,
            build=BuildIdentity(id="toy/1", digest=hashlib.sha256(b"toy/1").hexdigest()),
            platform=Platform(family="toy", modes=(VerificationMode.REPLAY,)),
        )
        self._rng = random.Random(0)
        self._x = self._score = self._steps = 0
        self._coins: set[int] = set()
        self._events: list[str] = []
        self._bad_observation = False
        self._grandchild: subprocess.Popen[bytes] | None = None

    @property
    def descriptor(self) -> GameDescriptor:
        """Identity of the toy."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """Place coins from the seed."""
        self._rng = random.Random(seed)
        self._x = self._score = self._steps = 0
        self._coins = set(self._rng.sample(range(-10, 11), 6)) - {0}
        self._events = []

    def step(self, word: str) -> None:
        """Move; collect a coin when landing on one."""
        self._steps += 1
        if word == "left":
            self._x = max(-10, self._x - 1)
        elif word == "right":
            self._x = min(10, self._x + 1)
        elif word == "jump":
            self._x = max(-10, min(10, self._x + self._rng.randint(-3, 3)))
        elif self._misbehave:
            self._misbehaviour(word)
        if self._x in self._coins:
            self._coins.discard(self._x)
            self._score += 1
            self._events.append(f"coin-{self._x}")

    def _misbehaviour(self, word: str) -> None:
        if word == "crash":
            sys.stderr.write("toy: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        elif word == "hang":
            time.sleep(3600)
        elif word == "shout":
            print("toy: shouting on stdout")
            sys.stdout.flush()
            os.write(1, b"\x00\x00\x00\x05native noise on fd 1\n")
        elif word == "raise":
            raise ValueError("toy refuses this word")
        elif word == "badobs":
            self._bad_observation = True
        elif word == "spawn":
            self._grandchild = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(3600)"]
            )
        elif word == "huge":
            self._events.append("x" * (65 << 20))

    def _render(self) -> str:
        cells = ["@" if i == self._x else "o" if i in self._coins else "." for i in range(-10, 11)]
        return "".join(cells) + f" score {self._score}"

    def observe(self) -> Observation:
        """The line as text, optionally with a tiny image."""
        if self._bad_observation:
            return Observation(text="x" * (MAX_TEXT_CHARS + 1))
        images: tuple[Image, ...] = ()
        if self._image:
            images = (Image.from_bytes(tiny_png(3, 2), media_type="image/png", width=3, height=2),)
        return Observation(text=self._render(), images=images)

    def evidence(self) -> Evidence:
        """Position, score, steps, coins left, a frame hash and the new events."""
        events, self._events = tuple(self._events), []
        engine = {"x": self._x, "score": self._score, "steps": self._steps}
        if self._grandchild is not None:
            engine["grandchild"] = self._grandchild.pid
        return Evidence(
            engine=engine,
            save={"coins_left": len(self._coins)},
            frame_hash=hashlib.sha256(self._render().encode()).hexdigest(),
            events=events,
        )

    def over(self) -> bool:
        """Over after ``length`` inputs."""
        return self._steps >= self._length

    def close(self) -> None:
        """Nothing to release."""


class CheckpointingWalker(Walker):
    """The walker plus checkpoint/restore."""

    def checkpoint(self) -> bytes:
        """The full state as JSON."""
        state: dict[str, Any] = {
            "x": self._x,
            "score": self._score,
            "steps": self._steps,
            "coins": sorted(self._coins),
            "events": self._events,
            "rng": repr(self._rng.getstate()),
        }
        return json.dumps(state).encode()

    def restore(self, blob: bytes) -> None:
        """Restore a checkpoint; anything else is a CheckpointError."""
        try:
            state = json.loads(blob)
            x, score, steps = int(state["x"]), int(state["score"]), int(state["steps"])
            coins, events = set(state["coins"]), list(state["events"])
            rng = random.Random()
            rng.setstate(_literal_state(state["rng"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"not a toy checkpoint: {exc}") from exc
        self._x, self._score, self._steps = x, score, steps
        self._coins, self._events, self._rng = coins, events, rng


def _literal_state(text: str) -> Any:
    import ast

    return ast.literal_eval(text)


def make_toy(**options: Any) -> CheckpointingWalker:
    """Factory for the worker: a checkpointing walker."""
    return CheckpointingWalker(**options)


def make_plain(**options: Any) -> Walker:
    """Factory for the worker: a walker without checkpoints."""
    return Walker(**options)


def make_slow(delay: float = 3600.0) -> Walker:
    """A factory that never finishes in time."""
    time.sleep(delay)
    return Walker()


def make_failing() -> Walker:
    """A factory that raises."""
    raise RuntimeError("the toy factory exploded")


def make_not_a_game() -> object:
    """A factory that returns something that is not a Game."""
    return 42
