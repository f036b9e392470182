"""One configurable toy game for tests: a counter with a declared vocabulary.

``inc`` adds one, ``dec`` subtracts one, ``wait`` does nothing but let a tick
pass; unknown words are no-ops that still tick. The game is over when the
count reaches ``over_at`` (if given). Evidence: engine ``count`` and ``ticks``,
save ``count``, frame ``shown`` (= count), hashes of the count, and an event
``reached-N`` the first time the count reaches N.
"""

from __future__ import annotations

import hashlib

from playproof.core.evidence import Evidence
from playproof.core.game import BuildIdentity, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import Observation
from playproof.errors import CheckpointError

VOCABULARY = ("inc", "dec", "wait")


def count_hash(count: int) -> str:
    """The save/frame hash the toy game reports for ``count``."""
    return hashlib.sha256(f"count={count}".encode()).hexdigest()


class ToyGame:
    """The counter game (see the module docstring)."""

    def __init__(
        self,
        *,
        over_at: int | None = None,
        modes: tuple[VerificationMode, ...] = (VerificationMode.REPLAY,),
        start: int = 0,
    ) -> None:
        self.over_at = over_at
        self.start = start
        self._descriptor = GameDescriptor(
            id="toy",
            vocabulary=VOCABULARY,
            build=BuildIdentity(id="toy/v1", digest=hashlib.sha256(b"toy/v1").hexdigest()),
            platform=Platform(family="test", modes=modes),
        )
        self.count = start
        self.ticks = 0
        self.best = start
        self._events: tuple[str, ...] = ()
        self.closed = False

    @property
    def descriptor(self) -> GameDescriptor:
        return self._descriptor

    def reset(self, seed: int) -> None:
        self.count = self.start
        self.best = self.start
        self.ticks = 0
        self._events = ()

    def step(self, word: str) -> None:
        self.ticks += 1
        self._events = ()
        if self.over():
            return
        if word == "inc":
            self.count += 1
        elif word == "dec":
            self.count -= 1
        if self.count > self.best:
            self.best = self.count
            self._events = (f"reached-{self.count}",)

    def observe(self) -> Observation:
        return Observation(text=f"count {self.count}")

    def evidence(self) -> Evidence:
        return Evidence(
            engine={"count": self.count, "ticks": self.ticks},
            save={"count": self.count},
            frame={"shown": self.count},
            save_hash=count_hash(self.count),
            frame_hash=count_hash(self.count),
            events=self._events,
        )

    def over(self) -> bool | None:
        if self.over_at is None:
            return None
        return self.count >= self.over_at

    def checkpoint(self) -> bytes:
        return f"{self.count},{self.ticks},{self.best}".encode()

    def restore(self, blob: bytes) -> None:
        try:
            self.count, self.ticks, self.best = (int(x) for x in blob.decode().split(","))
        except ValueError as exc:
            raise CheckpointError(f"bad toy checkpoint: {exc}") from exc

    def close(self) -> None:
        self.closed = True


def make_game(**options: object) -> ToyGame:
    """Factory for workers and registries."""
    return ToyGame(**options)  # type: ignore[arg-type]
