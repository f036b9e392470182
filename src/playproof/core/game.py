"""The game session protocol every substrate implements.

A game is a stateful session. ``reset(seed)`` powers it on in the state the
seed fixes: the same build, seed and inputs give the same evidence in any
process on any machine (the invariant replay verification rests on).
``step(word)`` applies one input; a word outside the vocabulary is a no-op
(it may let time pass, it never raises). ``observe()`` returns only what a
player may see; ``evidence()`` returns the privileged snapshot.
``over()`` is True once the game is over, False before, or None for games
without such a notion.

Optional capabilities, found with :func:`isinstance` on the extra protocols:
:class:`Checkpointing` (``checkpoint()``/``restore(blob)``) and
:class:`BatchReplaying` (``replay(...)`` of a whole input log in one call;
emulator adapters run it inside their worker so verification crosses the
process boundary once per log), :class:`Advancing` (step and read in one call,
one input or many), :class:`OutOfProcess` (the game's work happens in
another process, so the caller's thread is free while it waits) and
:class:`MemoryExposing` (an emulator whose raw memory a channel discovery
reads; privileged, like evidence, and never shown to a driver).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.observation import Observation
from playproof.core.tracker import PassedMilestone

__all__ = [
    "MAX_SEED",
    "Advancing",
    "BatchReplaying",
    "BuildIdentity",
    "Checkpointing",
    "Game",
    "GameDescriptor",
    "MemoryExposing",
    "OutOfProcess",
    "Platform",
    "ReplayResult",
    "Snapshot",
    "VerificationMode",
    "advance",
    "advance_many",
]

MAX_SEED = 2**53 - 1
"""Seeds are integers in ``0..MAX_SEED`` so that they survive any JSON parser."""


class VerificationMode(StrEnum):
    """How a run on a platform is verified."""

    REPLAY = "replay"
    """Anyone recomputes milestones from the seed and the input log."""
    TRUSTED_RECORDER = "trusted-recorder"
    """A recorder's signature is trusted for what replay cannot recompute."""
    PLATFORM_ATTESTED = "platform-attested"
    """A platform (e.g. a store's achievement API) issues receipts."""


class Platform(BaseModel):
    """The substrate family and the verification modes it supports (first = default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: Annotated[str, Field(min_length=1, max_length=64)]
    modes: Annotated[tuple[VerificationMode, ...], Field(min_length=1)]
    capabilities: tuple[str, ...] = ()

    @property
    def default_mode(self) -> VerificationMode:
        """The mode used when a run does not ask for one."""
        return self.modes[0]


class BuildIdentity(BaseModel):
    """A build id plus the SHA-256 of everything that defines the build."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(min_length=1, max_length=128)]
    digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class GameDescriptor(BaseModel):
    """What a game session is: id, declared vocabulary, build identity and platform."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(min_length=1, max_length=128)]
    vocabulary: Annotated[tuple[str, ...], Field(min_length=1)]
    build: BuildIdentity
    platform: Platform


@runtime_checkable
class Game(Protocol):
    """A stateful game session (see the module docstring for the contract)."""

    @property
    def descriptor(self) -> GameDescriptor:
        """Identity, vocabulary, build and platform of this session."""
        ...

    def reset(self, seed: int) -> None:
        """Power on / reset into the state ``seed`` fixes."""
        ...

    def step(self, word: str) -> None:
        """Apply one input; unknown words are no-ops."""
        ...

    def observe(self) -> Observation:
        """The player-visible observation of the current state."""
        ...

    def evidence(self) -> Evidence:
        """The privileged evidence snapshot of the current state."""
        ...

    def over(self) -> bool | None:
        """True when the game is over; None when the game has no such notion."""
        ...

    def close(self) -> None:
        """Release resources (processes, emulators). Idempotent."""
        ...


@runtime_checkable
class Checkpointing(Protocol):
    """A game that can save and restore its full state as bytes."""

    def checkpoint(self) -> bytes:
        """Serialize the full session state."""
        ...

    def restore(self, blob: bytes) -> None:
        """Restore a :meth:`checkpoint`; a corrupt blob raises CheckpointError."""
        ...


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state after one input: evidence, game-over flag, and the observation when asked."""

    evidence: Evidence
    over: bool | None
    observation: Observation | None


@runtime_checkable
class Advancing(Protocol):
    """A game that applies an input and reports the new state in one call.

    Worker-backed games implement it so a live decision costs one round trip
    instead of four. ``advance(word, observe=False)`` equals ``step(word)``
    followed by ``evidence()``, ``over()`` and (when ``observe``) ``observe()``;
    ``advance_many(words, observe=...)`` equals ``advance`` once per word, in
    order, in one call.
    """

    def advance(self, word: str, *, observe: bool) -> Snapshot:
        """Step once and return the resulting snapshot."""
        ...

    def advance_many(self, words: Sequence[str], *, observe: bool) -> tuple[Snapshot, ...]:
        """Step once per word and return every resulting snapshot, in order."""
        ...


@runtime_checkable
class MemoryExposing(Protocol):
    """An emulator session whose raw memory may be read, for blind channel discovery.

    Like evidence, memory is privileged: it never reaches a driver.
    """

    @property
    def rom_sha256(self) -> str:
        """SHA-256 of the ROM the session runs (binds a discovery to the exact ROM)."""
        ...

    def memory(self) -> dict[str, tuple[int, bytes]]:
        """Every readable memory area: name -> (base address, a copy of its bytes)."""
        ...


@runtime_checkable
class OutOfProcess(Protocol):
    """A game whose work runs in another process (``pid``).

    Its calls wait on I/O, so a caller may do its own work on another thread
    meanwhile (a campaign checks its ledger while the worker replays).
    """

    @property
    def pid(self) -> int:
        """The process doing the game's work."""
        ...


def advance(game: Game, word: str, *, observe: bool) -> Snapshot:
    """Step ``game`` once and read the snapshot, in one call when the game supports it."""
    if isinstance(game, Advancing):
        return game.advance(word, observe=observe)
    game.step(word)
    return Snapshot(game.evidence(), game.over(), game.observe() if observe else None)


def advance_many(game: Game, words: Sequence[str], *, observe: bool) -> tuple[Snapshot, ...]:
    """:func:`advance` once per word, in one call when the game supports it."""
    if isinstance(game, Advancing):
        return game.advance_many(words, observe=observe)
    return tuple(advance(game, word, observe=observe) for word in words)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What replaying an input log from a seed produced.

    ``verified`` is the graded list of milestones reproduced, with the turn of
    each; ``over_at`` is the first snapshot at which the game reported game
    over (None if never); ``trace`` is every evidence snapshot when asked for;
    ``events`` lists each distinct event of the log once, in first-seen order
    (what a tracker needs to carry on from the end of the log).
    """

    verified: tuple[PassedMilestone, ...]
    turns: int
    over_at: int | None
    trace: tuple[Evidence, ...] | None = None
    events: tuple[str, ...] = ()


@runtime_checkable
class BatchReplaying(Protocol):
    """A game that replays a whole input log in one call (inside its worker)."""

    def replay(
        self, seed: int, inputs: Sequence[str], contract: Contract, *, trace: bool = False
    ) -> ReplayResult:
        """Reset with ``seed``, apply every input, track ``contract`` at every snapshot.

        Afterwards the session is in the state after the last input, so a caller
        (e.g. a campaign resuming) can carry on playing from there.
        """
        ...
