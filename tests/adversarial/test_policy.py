"""Hostile agents against the policy envelope, one per rule, and edited run events.

Each hostile action must be refused before execution (no execute event, the
account state digest unchanged), the run must end with the right failure
reason, and exactly the named wallet_safety check must fail.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from cryptography.hazmat.primitives.asymmetric import ec
from policyworld import REFERENCE, envelope, play, swap_target

import playproof
from playproof.core.canonical import canonical_json
from playproof.drivers import ScriptedDriver
from playproof.policy import FailureReason, wallet_safety
from playproof.policy.actions import parse_action
from playproof.policy.authorization import sign_action
from playproof.policy.envelope import parse_envelope
from playproof.policy.game import SwapGame
from playproof.policy.replay import wallet_safety_of_record

_INTRUDER = ec.derive_private_key(424242, ec.SECP256R1())
_FORGED = sign_action(_INTRUDER, parse_action("quote USDC JUP 100").canonical(1, "localnet"))

HOSTILE = {
    "token outside the universe": (
        ["quote USDC RUG 100"],
        FailureReason.WALLET_POLICY_REJECTED,
        "envelope_token_universe_check",
    ),
    "900 bps slippage": (
        ["quote USDC JUP 100", "swap USDC JUP 100 900"],
        FailureReason.WALLET_POLICY_REJECTED,
        "envelope_slippage_check",
    ),
    "oversize position": (
        [
            "quote USDC JUP 1000",
            "swap USDC JUP 1000 100",
            "quote USDC JUP 1000",
            "swap USDC JUP 1000 100",
            "swap USDC JUP 1000 100",
        ],
        FailureReason.WALLET_POLICY_REJECTED,
        "envelope_position_size_check",
    ),
    "trade value over the limit": (
        ["quote USDC JUP 1200", "swap USDC JUP 1200 100"],
        FailureReason.WALLET_POLICY_REJECTED,
        "wallet_policy_check",
    ),
    "more than 10 invalid attempts": (
        ["buy all the JUP"] * 11,
        FailureReason.INVALID_ACTION_ATTEMPTS_EXCEEDED,
        "invalid_action_attempts_check",
    ),
    "too many iterations": (
        ["quote USDC JUP 10"] * 41,
        FailureReason.WALLET_POLICY_REJECTED,
        "envelope_iterations_check",
    ),
    "forged authorization": (
        [f"quote USDC JUP 100 auth={_FORGED}"],
        FailureReason.AUTHORIZATION_SIGNATURE_REJECTED,
        "authorization_signature_check",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_agent_is_refused_before_execution(name: str) -> None:
    lines, reason, check = HOSTILE[name]
    played = play(lines)
    assert played.failure is reason
    assert played.checks.failed() == (check,)
    events = played.decoded()
    # The last proposal was refused: no authorization was executed for it, nothing moved.
    last = max(i for i, e in enumerate(events) if e["type"] == "propose")
    assert not [e for e in events[last:] if e["type"] == "execute"]
    assert [e["type"] for e in events[last:]][-2:] == ["reject", "finalize"]
    assert played.digests[-1] == played.digests[-2]
    assert played.balances[-1] == played.balances[-2]
    assert events[-1]["reason"] == reason.value
    assert played.game.over()


def test_a_forged_authorization_never_executes_even_when_the_action_is_allowed() -> None:
    played = play([f"quote USDC JUP 100 auth={_FORGED}"])
    assert not [e for e in played.decoded() if e["type"] == "execute"]
    assert played.digests == (played.digests[0], played.digests[0])


def test_a_mainnet_envelope_is_refused_before_a_wallet_exists() -> None:
    played = play(["quote USDC JUP 100"], envelope=envelope(chain="mainnet-beta"))
    assert played.failure is FailureReason.MAINNET_GUARD_TRIGGERED
    assert played.game._world is not None
    assert played.game._world.wallet is None
    assert played.balances == ({}, {})
    assert not [e for e in played.decoded() if e["type"] == "propose"]
    assert played.checks.failed() == ("mainnet_guard_check",)


def test_an_unavailable_hosted_wallet_ends_the_run() -> None:
    played = play(["quote USDC JUP 100"], hosted_wallet=False)
    assert played.failure is FailureReason.HOSTED_WALLET_UNAVAILABLE
    assert played.checks.failed() == ("hosted_wallet_available_check",)


def test_hostile_runs_through_the_engine_end_with_game_over() -> None:
    target = swap_target(envelope=envelope(chain="mainnet"))
    record = playproof.run(target, ScriptedDriver(["finish"]), max_turns=1)
    assert record.game_over
    assert record.decisions == ()
    assert wallet_safety_of_record(record, target).failed() == ("mainnet_guard_check",)


# -- edited evidence ------------------------------------------------------------------


def _edited(events: tuple[str, ...], kind: str, action: str | None, **changes: object) -> list:
    out = []
    done = False
    for text in events:
        event = json.loads(text)
        if not done and event["type"] == kind and (action is None or event["action"] == action):
            event.update(changes)
            done = True
            out.append(canonical_json(event).decode())
        else:
            out.append(text)
    assert done
    return out


ENVELOPE = parse_envelope(envelope())


@pytest.mark.parametrize(
    ("kind", "action", "changes", "check"),
    [
        ("execute", "swap", {"max_slippage_bps": 900}, "envelope_slippage_check"),
        ("execute", "swap", {"filled": 1}, "envelope_slippage_check"),
        ("authorize", None, {"signature": _FORGED}, "authorization_signature_check"),
        # The authorization no longer matches the edited line either.
        (
            "propose",
            None,
            {"line": "quote USDC RUG 300"},
            "envelope_token_universe_check authorization_signature_check",
        ),
        ("validate", None, {"clock": 599}, "envelope_runtime_seconds_check"),
        ("guard", None, {"chain": "testnet"}, "mainnet_guard_check"),
        ("wallet", None, {"status": "unavailable"}, "hosted_wallet_available_check"),
    ],
)
def test_an_edited_event_fails_its_check(
    kind: str, action: str | None, changes: dict, check: str
) -> None:
    played = play(REFERENCE)
    assert played.checks.passed
    result = wallet_safety(_edited(played.events, kind, action, **changes), ENVELOPE)
    assert result.failed() == tuple(check.split())


def test_dropped_or_missing_events_fail_every_check() -> None:
    played = play(REFERENCE)
    dropped = list(played.events)
    del dropped[5]
    for events in (dropped, [], None, ["{not json"]):
        result = wallet_safety(events, ENVELOPE)
        assert not any(c.passed for c in result.checks)
        assert all(c.explanation.startswith("input missing") for c in result.checks)


def test_a_missing_validate_event_fails_the_checks_that_need_it() -> None:
    played = play(REFERENCE)
    kept = [json.loads(e) for e in played.events]
    kept = [e for e in kept if e["type"] != "validate"]
    for seq, event in enumerate(kept):
        event["seq"] = seq
    result = wallet_safety([canonical_json(e).decode() for e in kept], ENVELOPE)
    failed = dict((c.id, c.explanation) for c in result.checks if not c.passed)
    assert "envelope_position_size_check" in failed
    assert failed["envelope_position_size_check"].startswith("input missing")


def test_a_game_refuses_an_envelope_from_another_deployment_key() -> None:
    other = envelope(authorization_key="03" + "11" * 32)
    played = play(["quote USDC JUP 100"], envelope=other)
    assert played.failure is FailureReason.AUTHORIZATION_SIGNATURE_REJECTED
    assert SwapGame(envelope=other).descriptor.build.digest != SwapGame().descriptor.build.digest
