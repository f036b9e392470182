"""Hostile data handed to the policy readers: bounded like text, a typed error or a failed check.

The rebalance evidence, the deployed allocation and the deployed envelope may
come as data already parsed (a dict from a target's options, a request, a
stored artifact). Such data is held to what its text would be: plain JSON
(no NaN, no other objects, nested no deeper than can be written) of at most
the same byte limit, and whatever it holds, a reader answers with the
project's typed error or a failed check, never a raw exception.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from rebalanceworld import REBALANCE_REFERENCE, PlayedRebalance, play_rebalance

from playproof.core.canonical import canonical_json
from playproof.errors import FormatError
from playproof.policy.envelope import example_envelope
from playproof.policy.rebalance import Allocation
from playproof.policy.rebalance_checks import MAX_EVIDENCE_BYTES, rebalance_policy
from playproof.policy.replay import (
    MAX_DEPLOYED_ENVELOPE_BYTES,
    deployed_allocation,
    deployed_envelope,
)
from playproof.targets import Target, get_target

MALFORMED = "input missing: the rebalance evidence document is malformed"

HOSTILE_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats()  # NaN and the infinities too: parsed data may hold them
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(max_size=12), inner, max_size=5)
        | st.tuples(inner, inner)
    ),
    max_leaves=20,
)


@pytest.fixture(scope="module")
def played() -> PlayedRebalance:
    return play_rebalance(REBALANCE_REFERENCE)


def _evidence_outcome(played: PlayedRebalance, evidence: Any) -> str:
    result = rebalance_policy(played.events, played.game.envelope, evidence, played.game.allocation)
    (outcome,) = [c for c in result.checks if c.id == "rebalance_evidence_present_check"]
    return outcome.explanation


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = {"a": value}
    return value


def test_evidence_data_over_the_limit_is_refused_like_its_text(played: PlayedRebalance) -> None:
    """Before, the 8 MiB limit held only for text: the same document as a dict was read."""
    document = played.evidence.model_dump(mode="json", by_alias=True)
    pad = {f"T{i:09d}": 6 for i in range(MAX_EVIDENCE_BYTES // 14)}
    big = {**document, "decimals": {**document["decimals"], **pad}}
    assert len(canonical_json(big)) > MAX_EVIDENCE_BYTES
    assert _evidence_outcome(played, canonical_json(big)) == MALFORMED
    assert _evidence_outcome(played, big) == MALFORMED
    assert _evidence_outcome(played, document) != MALFORMED


@pytest.mark.parametrize(
    "change",
    [
        {"seed": float("nan")},
        {"extra": _deep(100_000)},
        {"decisions": _deep(100_000)},
        {"chain": object()},
    ],
    ids=["nan", "deep-extra", "deep-decisions", "not-json"],
)
def test_hostile_evidence_data_is_malformed(
    played: PlayedRebalance, change: dict[str, Any]
) -> None:
    document = played.evidence.model_dump(mode="json", by_alias=True)
    assert _evidence_outcome(played, {**document, **change}) == MALFORMED


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=HOSTILE_VALUES)
def test_any_evidence_or_allocation_data_gives_a_result(
    played: PlayedRebalance, value: Any
) -> None:
    for evidence, allocation in ((value, played.game.allocation), (played.evidence, value)):
        result = rebalance_policy(played.events, played.game.envelope, evidence, allocation)
        assert all(isinstance(c.explanation, str) for c in result.checks)
    document = played.evidence.model_dump(mode="json", by_alias=True)
    for field in ("seed", "allocation", "decisions", "decimals"):
        result = rebalance_policy(
            played.events, played.game.envelope, {**document, field: value}, value
        )
        assert len(result.checks) == 10


def _with(option: str, value: Any) -> Target:
    target = get_target("solana/rebalance")
    options = {**target.spec.options, option: value}
    return dataclasses.replace(target, spec=target.spec.model_copy(update={"options": options}))


@settings(max_examples=150, deadline=None)
@given(value=HOSTILE_VALUES)
def test_a_deployed_allocation_is_an_allocation_or_a_format_error(value: Any) -> None:
    """Before, a malformed allocation option raised pydantic's ValidationError."""
    try:
        allocation = deployed_allocation(_with("allocation", value))
    except FormatError:
        return
    assert value is None or isinstance(allocation, Allocation)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"weights_bps": {"USDC": "6000"}, "drift_bps": 250}, "allocation field weights_bps.USDC"),
        ({"weights_bps": {"USDC": 10_000}, "drift_bps": float("nan")}, "not finite"),
        ({"weights_bps": {"USDC": 10_000}, "drift_bps": _deep(100_000)}, "not plain JSON"),
        ([1, 2], "allocation field allocation"),
    ],
)
def test_a_malformed_allocation_option_is_a_format_error(value: Any, words: str) -> None:
    with pytest.raises(FormatError, match=words):
        deployed_allocation(_with("allocation", value))


def test_the_packaged_options_still_read() -> None:
    target = get_target("solana/rebalance")
    assert deployed_allocation(target) is not None
    assert deployed_envelope(target).chain == "localnet"


@settings(max_examples=150, deadline=None)
@given(value=HOSTILE_VALUES)
def test_a_deployed_envelope_is_an_envelope_or_a_format_error(value: Any) -> None:
    for data in (value, {**example_envelope(), "max_trade_usd": value}):
        with contextlib.suppress(FormatError):
            assert deployed_envelope(_with("envelope", data)).chain


def test_an_envelope_option_over_the_limit_is_refused_before_it_is_validated() -> None:
    """Before, any size was validated (a few million bad token names took a minute)."""
    envelope = {**example_envelope(), "allowed_tokens": ["x" * MAX_DEPLOYED_ENVELOPE_BYTES]}
    with pytest.raises(FormatError, match=f"over the {MAX_DEPLOYED_ENVELOPE_BYTES}-byte limit"):
        deployed_envelope(_with("envelope", envelope))
    deep = {**example_envelope(), "allowed_tokens": _deep(100_000)}
    with pytest.raises(FormatError):
        deployed_envelope(_with("envelope", deep))
    assert json.loads(canonical_json(example_envelope()))  # the shipped one is plain JSON
