"""Fixtures for the signing tests: a real run record with a real chain, and real keys."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from playproof.core.canonical import sha256_hex
from playproof.core.chain import Decision, chain_head, genesis_hash
from playproof.core.game import VerificationMode
from playproof.core.record import (
    Accounting,
    Actor,
    ClaimedMilestone,
    Limits,
    Provenance,
    RunRecord,
    StopReason,
    TargetPin,
)
from playproof.sign import SigningKey

BUILD = sha256_hex(b"toy build 1")
CONTRACT = sha256_hex(b"toy contract 1")


def build_record(
    inputs: Sequence[str] = ("up", "up", "left", "fire"),
    *,
    seed: int = 7,
    game_id: str = "toy",
    build_digest: str = BUILD,
    claimed: Sequence[tuple[str, int]] = (("reach-door", 3),),
    **overrides: Any,
) -> RunRecord:
    """A consistent record: chain head and accounting computed from the decisions."""
    decisions = tuple(
        Decision(turn=i, input=text, cost_usd=0.002, latency_ms=1.5)
        for i, text in enumerate(inputs, start=1)
    )
    genesis = genesis_hash(game_id, build_digest, CONTRACT, seed=seed)
    fields: dict[str, Any] = {
        "target": TargetPin(
            game_id=game_id,
            build_digest=build_digest,
            contract_hash=CONTRACT,
            platform="native",
            verification_mode=VerificationMode.REPLAY,
        ),
        "actor": Actor(kind="scripted", id="test-script"),
        "seed": seed,
        "limits": Limits(budget_usd=1.0, max_turns=100, stop_at_game_over=True),
        "decisions": decisions,
        "chain_head": chain_head(genesis, decisions),
        "claimed": tuple(ClaimedMilestone(id=m, turn=t) for m, t in claimed),
        "milestones_total": 3,
        "accounting": Accounting(
            spent_usd=sum(d.cost_usd or 0.0 for d in decisions),
            unmeasured_decisions=0,
            total_latency_ms=sum(d.latency_ms for d in decisions),
        ),
        "stop_reason": StopReason.TURN_LIMIT,
        "game_over": False,
        "provenance": Provenance(playproof="0.1.0", python="3.11.9", libraries={"x": "1"}),
        "started_at": "2025-01-01T00:00:00Z",
        "finished_at": "2025-01-01T00:00:05Z",
    }
    fields.update(overrides)
    return RunRecord(**fields)


@pytest.fixture
def record() -> RunRecord:
    """A valid record."""
    return build_record()


@pytest.fixture
def make_record() -> Callable[..., RunRecord]:
    """The record factory, for tests that need variants."""
    return build_record


@pytest.fixture(scope="session")
def key() -> SigningKey:
    """The trusted signing key."""
    return SigningKey.generate()


@pytest.fixture(scope="session")
def other_key() -> SigningKey:
    """A key nobody trusts."""
    return SigningKey.generate()
