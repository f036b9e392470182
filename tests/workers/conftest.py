"""Worker test fixtures: the toy games' folder on the path here and in the children."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from playproof.workers import WorkerGame

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    # The toy games must be importable here (in-process reference) and in the children.
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def child_env() -> dict[str, str]:
    """Environment additions that let a spawned child import the toy games."""
    existing = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(HERE), existing) if p)}


@pytest.fixture
def spawn(child_env: dict[str, str]) -> Iterator[Callable[..., WorkerGame]]:
    """Start workers on the toy folder's path; every one is closed at teardown."""
    started: list[WorkerGame] = []

    def start(
        factory: str = "toygames:make_toy",
        options: dict[str, Any] | None = None,
        *,
        cls: type[WorkerGame] = WorkerGame,
        **kwargs: Any,
    ) -> WorkerGame:
        env = {**child_env, **kwargs.pop("env", {})}
        worker = cls(factory, options, env=env, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()
