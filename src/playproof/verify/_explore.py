"""Frontier exploration: a deterministic beam search over checkpoints that finds a reference.

From the reset state, every beam node is expanded by every vocabulary word
(restore, step, read evidence, checkpoint). Children are ranked novelty first
(how many ``(map, key, value)`` evidence features no earlier node showed),
then by milestones passed, then by their input script, so the same game,
seed and settings always find the same script. States already seen (by save
or frame hash) are dropped. The script found is verified by a fresh replay.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.game import Checkpointing, Game
from playproof.core.replay import replay
from playproof.core.tracker import MilestoneTracker
from playproof.errors import NotSupportedError, TargetError

__all__ = ["EXPLORATION_SCHEMA", "ExplorationReport", "explore"]

EXPLORATION_SCHEMA = "playproof/exploration/v1"
MAX_BEAM = 1024
MAX_DEPTH = 100_000

_Feature = tuple[str, str, int]


class ExplorationReport(BaseModel):
    """What a frontier exploration found: the script and what its replay verifies."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["playproof/exploration/v1"] = Field("playproof/exploration/v1", alias="schema")
    game: str
    build_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    contract_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    goal: str
    seed: int
    beam: int
    max_depth: int
    found: bool
    inputs: tuple[str, ...]
    verified: tuple[str, ...]
    """Milestones a fresh replay of ``inputs`` verifies."""
    expansions: int
    """Children generated (each one restore + step + evidence + checkpoint)."""


@dataclass(slots=True)
class _Node:
    inputs: tuple[str, ...]
    blob: bytes
    tracker: MilestoneTracker


def _features(evidence: Evidence) -> set[_Feature]:
    found: set[_Feature] = set()
    for name, mapping in (
        ("engine", evidence.engine),
        ("save", evidence.save),
        ("frame", evidence.frame),
    ):
        found.update((name, key, value) for key, value in mapping.items())
    return found


def _state_key(evidence: Evidence, blob: bytes) -> str:
    return evidence.save_hash or hashlib.sha256(blob).hexdigest()


def explore(
    factory: Callable[[], Game],
    contract: Contract,
    goal: str,
    *,
    seed: int = 0,
    beam: int = 8,
    max_depth: int = 1000,
) -> ExplorationReport:
    """Search for an input script from ``seed`` whose replay verifies milestone ``goal``."""
    if goal not in contract.ids:
        raise TargetError(f"goal {goal!r} is not a milestone of the contract")
    if not 1 <= beam <= MAX_BEAM or not 1 <= max_depth <= MAX_DEPTH:
        raise TargetError(f"beam must be 1..{MAX_BEAM} and max_depth 1..{MAX_DEPTH}")
    game = factory()
    try:
        if not isinstance(game, Checkpointing):
            raise NotSupportedError(
                f"game {game.descriptor.id!r} cannot checkpoint; exploration needs it"
            )
        descriptor = game.descriptor
        found, expansions = _search(game, contract, goal, seed, beam, max_depth)
        verified = tuple(p.id for p in replay(game, seed, found or (), contract).verified)
    finally:
        game.close()
    return ExplorationReport(
        game=descriptor.id,
        build_digest=descriptor.build.digest,
        contract_hash=contract.hash,
        goal=goal,
        seed=seed,
        beam=beam,
        max_depth=max_depth,
        found=found is not None and goal in verified,
        inputs=found or (),
        verified=verified,
        expansions=expansions,
    )


def _search(
    game: Game, contract: Contract, goal: str, seed: int, beam: int, max_depth: int
) -> tuple[tuple[str, ...] | None, int]:
    assert isinstance(game, Checkpointing)
    game.reset(seed)
    evidence = game.evidence()
    tracker = MilestoneTracker(contract)
    tracker.observe(evidence, 0)
    if goal in tracker.passed:
        return (), 0
    blob = game.checkpoint()
    seen_states = {_state_key(evidence, blob)}
    seen_features = _features(evidence)
    frontier = [_Node((), blob, tracker)]
    vocabulary = game.descriptor.vocabulary
    expansions = 0
    for depth in range(1, max_depth + 1):
        ranked: list[tuple[int, int, tuple[str, ...], _Node, set[_Feature]]] = []
        for node in frontier:
            for word in vocabulary:
                game.restore(node.blob)
                game.step(word)
                expansions += 1
                evidence = game.evidence()
                child_blob = game.checkpoint()
                key = _state_key(evidence, child_blob)
                if key in seen_states:
                    continue
                seen_states.add(key)
                child_tracker = copy.deepcopy(node.tracker)
                child_tracker.observe(evidence, depth)
                child = _Node((*node.inputs, word), child_blob, child_tracker)
                if goal in child_tracker.passed:
                    return child.inputs, expansions
                features = _features(evidence)
                novel = len(features - seen_features)
                ranked.append((-novel, -len(child_tracker.passed), child.inputs, child, features))
        if not ranked:
            break
        ranked.sort(key=lambda entry: (entry[0], entry[1], entry[2]))
        frontier = [entry[3] for entry in ranked[:beam]]
        for entry in ranked[:beam]:
            seen_features |= entry[4]
    return None, expansions
