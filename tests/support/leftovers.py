"""Agent processes in tests: find the ones a test started, and ask a driver for decisions."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from playproof.core.agent import Action, DecisionContext, Driver
from playproof.core.observation import Observation


def tagged_processes(variable: str, value: str) -> list[int]:
    """Live processes other than this one whose environment sets ``variable`` to ``value``.

    A test puts a fresh tag in every process it starts; whatever still carries
    the tag (children, grandchildren) was left running.
    """
    needle = f"{variable}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def ask_decisions(driver: Driver, turns: int, vocabulary: Sequence[str]) -> list[Action]:
    """Ask ``driver`` for ``turns`` decisions on a fixed board, then close it; its actions."""

    async def episode() -> list[Action]:
        actions = []
        try:
            for turn in range(1, turns + 1):
                context = DecisionContext(
                    turn=turn,
                    max_turns=turns,
                    seed=1,
                    spent_usd=0.0,
                    remaining_usd=None,
                    vocabulary=tuple(vocabulary),
                )
                actions.append(await driver.act(Observation(text="board"), (), context))
        finally:
            await driver.aclose()  # type: ignore[attr-defined]
        return actions

    return asyncio.run(episode())
