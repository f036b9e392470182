"""A seeded 2048, written for playproof: the first target and the reference game session.

Rules: a 4x4 board; ``up``/``down``/``left``/``right`` slide every tile, equal
neighbours merge once per move and the merged value is added to the score; a
move that changes the board spawns one tile (2, or 4 one time in ten) on an
empty cell chosen by a SplitMix64 generator seeded by ``reset(seed)``. A move
that changes nothing and any unknown word are no-ops. The game is over when
no move changes the board.

Evidence on all four tiers: ``engine`` (score, moves, max_tile, empty_cells,
and ``steps``, a privileged count of every input applied that the player never
sees), ``save`` (normalized save data) plus ``save_hash`` (SHA-256 of the
serialized state), ``frame`` (numbers read off the rendered board) plus
``frame_hash`` (SHA-256 of the rendered board text), and ``events``
(``tile-N`` the first time a tile of value N appears, N >= 8).

>>> game = Game2048()
>>> game.reset(7)
>>> game.step("left"); game.evidence().engine["moves"] in (0, 1)
True
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

from playproof.core.canonical import digest, sha256_hex
from playproof.core.evidence import Evidence
from playproof.core.game import BuildIdentity, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import Observation
from playproof.errors import CheckpointError

__all__ = ["DIRECTIONS", "Game2048", "make_game"]

SIZE = 4
DIRECTIONS = ("up", "down", "left", "right")
RULES_VERSION = "2048/v1"
_MASK = (1 << 64) - 1
_CHECKPOINT_MAGIC = "playproof-2048-checkpoint/v1"
_MAX_CHECKPOINT_BYTES = 4096
# Serialized state: 16 tiles, generator state, score, moves, steps, seen-tiles bitmask.
_STATE = struct.Struct("<16IQQQQQ")

# Index lines for each direction: every line lists board indices from the edge
# tiles slide toward, so one merge routine serves all four moves.
_LINES: dict[str, tuple[tuple[int, ...], ...]] = {
    "left": tuple(tuple(r * SIZE + c for c in range(SIZE)) for r in range(SIZE)),
    "right": tuple(tuple(r * SIZE + c for c in reversed(range(SIZE))) for r in range(SIZE)),
    "up": tuple(tuple(r * SIZE + c for r in range(SIZE)) for c in range(SIZE)),
    "down": tuple(tuple(r * SIZE + c for r in reversed(range(SIZE))) for c in range(SIZE)),
}


_CELL = {0: "    .", **{1 << k: f"{1 << k:>5}" for k in range(1, 18)}}


def _source_digest() -> str:
    return sha256_hex(Path(__file__).read_bytes())


_DESCRIPTOR = GameDescriptor(
    id="2048",
    vocabulary=DIRECTIONS,
    build=BuildIdentity(
        id=RULES_VERSION,
        digest=digest(
            {"game": "2048", "rules": RULES_VERSION, "size": SIZE, "source": _source_digest()}
        ),
    ),
    platform=Platform(
        family="native", modes=(VerificationMode.REPLAY,), capabilities=("checkpoint",)
    ),
)


def _merge_line(values: list[int]) -> tuple[list[int], int, list[int]]:
    """Slide one line toward index 0; return the new line, points scored, merged values."""
    tiles = [v for v in values if v]
    out: list[int] = []
    merged: list[int] = []
    points = 0
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            value = tiles[i] * 2
            out.append(value)
            merged.append(value)
            points += value
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    out.extend([0] * (len(values) - len(out)))
    return out, points, merged


class Game2048:
    """A seeded 2048 session (see the module docstring)."""

    def __init__(self) -> None:
        self._board = [0] * (SIZE * SIZE)
        self._state = 0
        self._score = 0
        self._moves = 0
        self._steps = 0
        self._seen = 0
        self._events: tuple[str, ...] = ()
        self._over = False
        self._frame_key: tuple[int, ...] = ()
        self._frame_text = ""

    @property
    def descriptor(self) -> GameDescriptor:
        """The 2048 descriptor (vocabulary: up, down, left, right)."""
        return _DESCRIPTOR

    def _next(self) -> int:
        # SplitMix64: tiny, fully specified, identical on every platform.
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def _spawn(self) -> None:
        empty = [i for i, v in enumerate(self._board) if not v]
        if not empty:
            return
        cell = empty[self._next() % len(empty)]
        self._board[cell] = 4 if self._next() % 10 == 0 else 2

    def reset(self, seed: int) -> None:
        """Start a new game whose every spawn is fixed by ``seed``."""
        self._board = [0] * (SIZE * SIZE)
        self._state = seed & _MASK
        self._score = self._moves = self._steps = 0
        self._seen = 0
        self._spawn()
        self._spawn()
        self._events = ()
        self._over = not self._can_move()

    def _slide(self, direction: str) -> tuple[bool, int, list[int]]:
        board = self._board
        changed = False
        points = 0
        merged: list[int] = []
        for line in _LINES[direction]:
            values = [board[i] for i in line]
            new, gained, line_merged = _merge_line(values)
            if new != values:
                changed = True
                for i, v in zip(line, new, strict=True):
                    board[i] = v
            points += gained
            merged.extend(line_merged)
        return changed, points, merged

    def _can_move(self) -> bool:
        board = self._board
        if 0 in board:
            return True
        for r in range(SIZE):
            for c in range(SIZE):
                v = board[r * SIZE + c]
                if c + 1 < SIZE and board[r * SIZE + c + 1] == v:
                    return True
                if r + 1 < SIZE and board[(r + 1) * SIZE + c] == v:
                    return True
        return False

    def step(self, word: str) -> None:
        """Apply one move; unknown words and moves that change nothing are no-ops."""
        self._steps += 1
        self._events = ()
        if word not in _LINES or self._over:
            return
        changed, points, merged = self._slide(word)
        if not changed:
            return
        self._score += points
        self._moves += 1
        events = []
        for value in sorted(set(merged)):
            bit = value.bit_length()
            if value >= 8 and not self._seen >> bit & 1:
                self._seen |= 1 << bit
                events.append(f"tile-{value}")
        self._events = tuple(events)
        self._spawn()
        self._over = not self._can_move()

    def _frame(self) -> str:
        key = tuple(self._board)
        if key != self._frame_key:
            self._frame_key, self._frame_text = key, self._render()
        return self._frame_text

    def _render(self) -> str:
        rows = []
        for r in range(SIZE):
            cells = self._board[r * SIZE : (r + 1) * SIZE]
            rows.append(" ".join(_CELL.get(v, f"{v:>5}") for v in cells))
        return "\n".join(rows)

    def observe(self) -> Observation:
        """The board as text plus the score; nothing a player cannot see."""
        status = "game over" if self._over else "moves: up down left right"
        return Observation(text=f"{self._frame()}\nscore {self._score} | {status}")

    def _serialize(self) -> bytes:
        return _STATE.pack(
            *self._board, self._state, self._score, self._moves, self._steps, self._seen
        )

    def evidence(self) -> Evidence:
        """The privileged snapshot on all four tiers."""
        board = self._board
        top = max(board)
        shown = sum(1 for v in board if v)
        return Evidence(
            engine={
                "score": self._score,
                "moves": self._moves,
                "max_tile": top,
                "empty_cells": SIZE * SIZE - shown,
                "steps": self._steps,
            },
            save={"score": self._score, "max_tile": top, "moves": self._moves},
            save_hash=hashlib.sha256(self._serialize()).hexdigest(),
            frame={"tiles_shown": shown, "largest_shown": top},
            frame_hash=hashlib.sha256(self._frame().encode("ascii")).hexdigest(),
            events=self._events,
        )

    def over(self) -> bool:
        """True when no move changes the board."""
        return self._over

    def checkpoint(self) -> bytes:
        """The full state as a small self-checking JSON blob."""
        body = self._serialize().hex()
        return json.dumps(
            {"magic": _CHECKPOINT_MAGIC, "state": body, "sha256": sha256_hex(body.encode())}
        ).encode("ascii")

    def restore(self, blob: bytes) -> None:
        """Restore a :meth:`checkpoint`; anything else raises CheckpointError."""
        try:
            if len(blob) > _MAX_CHECKPOINT_BYTES:
                raise ValueError("blob too large")
            wrapper: Any = json.loads(blob)
            if wrapper["magic"] != _CHECKPOINT_MAGIC:
                raise ValueError("not a 2048 checkpoint")
            body: str = wrapper["state"]
            if sha256_hex(body.encode()) != wrapper["sha256"]:
                raise ValueError("checksum mismatch")
            fields = _STATE.unpack(bytes.fromhex(body))
            board, (state, score, moves, steps, seen) = fields[:16], fields[16:]
            if any(v and (v < 2 or v & (v - 1)) for v in board):
                raise ValueError("a tile is not a power of two")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError, struct.error) as exc:
            raise CheckpointError(f"not a valid 2048 checkpoint: {exc}") from exc
        self._board, self._state, self._score = list(board), state, score
        self._moves, self._steps, self._seen = moves, steps, seen
        self._events = ()
        self._over = not self._can_move()

    def close(self) -> None:
        """Nothing to release."""


def make_game() -> Game2048:
    """Factory used by the registry and the worker child."""
    return Game2048()
