"""Fixtures for the PyBoy adapter tests: pp-collect sessions and worker spawning."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from playproof.adapters.pyboy import PyBoyGame, make_game
from playproof.adapters.pyboy.rom.pp_collect import options
from playproof.workers import WorkerGame

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

FACTORY = "playproof.adapters.pyboy:make_game"


@pytest.fixture(scope="module")
def game() -> Iterator[PyBoyGame]:
    """One in-process pp-collect session per test module (tests reset it themselves)."""
    session = make_game(**options())
    yield session
    session.close()


@pytest.fixture
def spawn() -> Iterator[Callable[..., WorkerGame]]:
    """Start pp-collect workers (options overridable); every one is closed at teardown."""
    started: list[WorkerGame] = []

    def start(**overrides: Any) -> WorkerGame:
        worker = WorkerGame(FACTORY, {**options(), **overrides})
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()
