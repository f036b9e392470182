"""Refuse games whose seed does not fix the trajectory: two worker processes must agree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from playproof.core.contract import Contract, parse_contract
from playproof.core.evidence import Evidence
from playproof.errors import TargetError

__all__ = ["PROCESSES", "assert_reproducible"]

PROCESSES = 2
"""Separately launched worker processes that must produce identical evidence."""


def _probe(game_id: str) -> Contract:
    # replay needs a contract; this one only asks for a trace and never matters.
    return parse_contract(
        {
            "game": game_id,
            "milestones": [
                {"id": "probe", "check": {"kind": "state", "key": "probe", "op": ">=", "value": 0}}
            ],
        }
    )


def _trace(
    factory: str,
    options: Mapping[str, Any],
    seed: int,
    inputs: Sequence[str],
    env: Mapping[str, str] | None,
) -> tuple[Evidence, ...]:
    from playproof.workers import WorkerGame  # local: workers are only needed for this check

    with WorkerGame(factory, options, env=env) as game:
        result = game.replay(seed, inputs, _probe(game.descriptor.id), trace=True)
    if result.trace is None:  # pragma: no cover - replay with trace=True always traces
        raise TargetError("the worker returned no evidence trace")
    return result.trace


def assert_reproducible(
    options: Mapping[str, Any],
    seed: int,
    inputs: Sequence[str],
    *,
    factory: str = "playproof.adapters.gym:make_game",
    env: Mapping[str, str] | None = None,
) -> None:
    """Replay ``seed`` + ``inputs`` in two fresh workers; TargetError unless every snapshot agrees.

    An environment whose ``reset(seed)`` does not fix its trajectory (unseeded
    randomness, hash randomization, wall-clock reads) must not get a replay
    contract; this is the check that refuses it. ``env`` is added to the
    workers' environment (e.g. ``PYTHONPATH`` for a ``module:Id`` env id).
    """
    first = _trace(factory, options, seed, inputs, env)
    for _ in range(PROCESSES - 1):
        other = _trace(factory, options, seed, inputs, env)
        for turn, (left, right) in enumerate(zip(first, other, strict=True)):
            if left != right:
                raise TargetError(
                    f"{options.get('env_id', factory)}: reset(seed={seed}) does not fix the "
                    f"trajectory; two worker processes disagree at snapshot {turn} "
                    "(refusing a replay contract)"
                )
