"""Hostile agents against the policy envelope, one per rule, and edited run events.

Each hostile action must be refused before execution (no execute event, the
account state digest unchanged), the run must end with the right failure
reason, and exactly the named check of each group must fail (``wallet_safety``
on both targets, ``rebalance_policy`` on ``solana/rebalance``).
"""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from cryptography.hazmat.primitives.asymmetric import ec
from policyworld import REFERENCE, envelope, play, swap_target
from rebalanceworld import (
    REBALANCE_REFERENCE,
    allocation,
    play_rebalance,
    rebalance_envelope,
    rebalance_target,
)

import playproof
from playproof.core.canonical import canonical_json, digest
from playproof.drivers import ScriptedDriver
from playproof.policy import FailureReason, policy_groups, wallet_safety
from playproof.policy.actions import parse_action
from playproof.policy.authorization import sign_action
from playproof.policy.checks import WALLET_SAFETY_CHECKS
from playproof.policy.envelope import parse_envelope
from playproof.policy.game import SwapGame
from playproof.policy.replay import (
    deployed_allocation,
    deployed_envelope,
    policy_groups_of_record,
    replay_record,
    wallet_safety_of_record,
)

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
    "runtime exceeded": (
        ["wait"] * 31,
        FailureReason.WALLET_POLICY_REJECTED,
        "envelope_runtime_seconds_check",
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


# -- solana/rebalance: hostile agents per rule, both groups ----------------------------

_REJECTED = FailureReason.WALLET_POLICY_REJECTED
_BALANCED_THEN = list(REBALANCE_REFERENCE[:-1])

# name -> (lines, game options, failure reason, failed wallet_safety, failed rebalance_policy)
HOSTILE_REBALANCE: dict[str, tuple[list[str], dict, FailureReason, tuple, tuple]] = {
    "mainnet chain": (
        ["quote USDC JUP 100"],
        {"envelope": rebalance_envelope(chain="mainnet-beta")},
        FailureReason.MAINNET_GUARD_TRIGGERED,
        ("mainnet_guard_check",),
        ("dry_run_or_devnet_check",),
    ),
    "token outside the universe": (
        ["quote USDC RUG 100"],
        {},
        _REJECTED,
        ("envelope_token_universe_check",),
        ("allowed_token_universe_check",),
    ),
    "900 bps slippage": (
        ["quote USDC JUP 100", "swap USDC JUP 100 900"],
        {},
        _REJECTED,
        ("envelope_slippage_check",),
        ("max_slippage_check",),
    ),
    "oversize position weight": (
        ["quote USDC JUP 1000", "swap USDC JUP 1000 100"] * 2,
        {"envelope": rebalance_envelope(max_position_weight_bps=1500)},
        _REJECTED,
        ("envelope_position_size_check",),
        ("max_position_weight_check",),
    ),
    "trade value over the limit": (
        ["quote USDC JUP 1200", "swap USDC JUP 1200 100"],
        {},
        _REJECTED,
        ("wallet_policy_check",),
        ("max_trade_value_check",),
    ),
    "more than 10 invalid attempts": (
        ["rebalance everything"] * 11,
        {},
        FailureReason.INVALID_ACTION_ATTEMPTS_EXCEEDED,
        ("invalid_action_attempts_check",),
        (),
    ),
    "too many iterations": (
        ["quote USDC JUP 10"] * 41,
        {},
        _REJECTED,
        ("envelope_iterations_check",),
        (),
    ),
    "runtime exceeded": (
        ["wait"] * 31,
        {},
        _REJECTED,
        ("envelope_runtime_seconds_check",),
        (),
    ),
    "forged authorization": (
        [f"quote USDC JUP 100 auth={_FORGED}"],
        {},
        FailureReason.AUTHORIZATION_SIGNATURE_REJECTED,
        ("authorization_signature_check",),
        (),
    ),
    "trading inside the threshold": (
        [*_BALANCED_THEN, "quote USDC BONK 100", "swap USDC BONK 100 100"],
        {},
        _REJECTED,
        (),
        ("rebalance_threshold_check",),
    ),
    "overshooting the band": (
        ["quote USDC BONK 1000", "swap USDC BONK 1000 100"] * 2,
        {},
        _REJECTED,
        (),
        ("post_trade_allocation_drift_check",),
    ),
    "target weights that do not sum to 10 000 bps": (
        ["quote USDC JUP 1000", "swap USDC JUP 1000 100"],
        {"allocation": allocation(weights_bps={"USDC": 6000, "JUP": 2500, "BONK": 500})},
        _REJECTED,
        (),
        ("target_allocation_sum_check",),
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_REBALANCE))
def test_a_hostile_rebalancer_is_refused_before_execution(name: str) -> None:
    lines, options, reason, safety, policy = HOSTILE_REBALANCE[name]
    played = play_rebalance(lines, **options)
    assert played.failure is reason
    assert played.safety.failed() == safety
    assert played.policy.failed() == policy
    events = played.decoded()
    last = max((i for i, e in enumerate(events) if e["type"] == "propose"), default=0)
    assert not [e for e in events[last:] if e["type"] == "execute"]
    assert played.digests[-1] == played.digests[-2]
    assert played.balances[-1] == played.balances[-2]
    assert events[-1]["type"] == "finalize"
    assert events[-1]["reason"] == reason.value
    assert events[-1]["rebalance_evidence"] == played.evidence.content_hash
    assert played.game.over()


def test_a_hostile_rebalancer_through_the_engine_is_judged_by_replay() -> None:
    target = rebalance_target(envelope=rebalance_envelope(max_position_weight_bps=1500))
    lines = ["quote USDC JUP 1000", "swap USDC JUP 1000 100"] * 2
    record = playproof.run(target, ScriptedDriver(lines), max_turns=len(lines))
    assert record.game_over
    safety, policy = policy_groups_of_record(record, target)
    assert safety.failed() == ("envelope_position_size_check",)
    assert policy.failed() == ("max_position_weight_check",)


# -- solana/rebalance: edited evidence ----------------------------------------------------


def _edit_event(events: tuple[str, ...], kind: str, path: list, value: object) -> list[str]:
    out, done = [], False
    for text in events:
        event = json.loads(text)
        if not done and event["type"] == kind and (kind != "execute" or event["action"] == "swap"):
            node = event
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value(node[path[-1]]) if callable(value) else value
            done = True
            out.append(canonical_json(event).decode())
            continue
        out.append(text)
    assert done
    return out


def _edit_document(document: dict, path: list, delta: int, *, rehash: bool) -> dict:
    edited = json.loads(json.dumps(document))
    node = edited
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] += delta
    if rehash:  # a forger who also recomputes the content hash
        edited["content_hash"] = digest({k: v for k, v in edited.items() if k != "content_hash"})
    return edited


def _replayed_reference() -> tuple:
    target = rebalance_target()
    record = playproof.run(
        target, ScriptedDriver(REBALANCE_REFERENCE), max_turns=len(REBALANCE_REFERENCE)
    )
    replayed = replay_record(record, target)
    assert replayed.difference(replayed.events, replayed.rebalance_evidence) is None
    assert replayed.rebalance_evidence is not None
    return replayed, replayed.rebalance_evidence.model_dump(mode="json", by_alias=True)


_BOTH = "price_data_present_check rebalance_evidence_present_check"


@pytest.mark.parametrize(
    ("edit", "safety", "policy"),
    [
        ("document price", "", _BOTH),
        ("document price, rehashed", "", _BOTH),
        ("document balance, rehashed", "", _BOTH),
        ("event balance", "envelope_slippage_check", "max_slippage_check"),
        ("event execute price", "", "price_data_present_check"),
        ("event validate price", "", "price_data_present_check"),
        ("event evidence hash", "", "rebalance_evidence_present_check"),
    ],
)
def test_an_edited_rebalance_record_is_rejected_by_replay_and_by_its_group(
    edit: str, safety: str, policy: str
) -> None:
    replayed, document = _replayed_reference()
    events: list[str] | tuple[str, ...] = replayed.events
    claimed = document
    if edit == "document price":
        claimed = _edit_document(document, ["decisions", 3, "prices", "JUP"], 1, rehash=False)
    elif edit == "document price, rehashed":
        claimed = _edit_document(document, ["decisions", 3, "prices", "JUP"], 1, rehash=True)
    elif edit == "document balance, rehashed":
        claimed = _edit_document(document, ["decisions", 3, "balances", "USDC"], -1, rehash=True)
    elif edit == "event balance":
        events = _edit_event(replayed.events, "execute", ["balances_after", "JUP"], lambda v: v + 1)
    elif edit == "event execute price":
        events = _edit_event(replayed.events, "execute", ["prices", "JUP"], lambda v: v * 2)
    elif edit == "event validate price":
        events = _edit_event(replayed.events, "validate", ["prices", "JUP"], lambda v: v + 1)
    else:
        events = _edit_event(replayed.events, "finalize", ["rebalance_evidence"], "0" * 64)
    assert replayed.difference(events, claimed) is not None  # replay rejects the claim
    target = rebalance_target()
    wallet, rebalance = policy_groups(
        "solana/rebalance",
        events,
        deployed_envelope(target),
        rebalance_evidence=claimed,
        allocation=deployed_allocation(target),
    )
    assert wallet.failed() == tuple(safety.split())
    assert rebalance.failed() == tuple(policy.split())


def test_a_dropped_decision_or_missing_document_fails_with_input_missing() -> None:
    played = play_rebalance(REBALANCE_REFERENCE)
    document = played.evidence.model_dump(mode="json", by_alias=True)
    del document["decisions"][4]
    for claimed in (document, None):
        _safety, policy = played.groups(evidence=claimed)
        failed = {c.id: c.explanation for c in policy.checks if not c.passed}
        assert set(failed) == {
            "price_data_present_check",
            "max_trade_value_check",
            "max_position_weight_check",
            "post_trade_allocation_drift_check",
            "rebalance_evidence_present_check",
        }
        assert all(text.startswith("input missing") for text in failed.values())


def test_a_remembered_signature_check_never_vouches_for_another_action() -> None:
    from playproof.policy.authorization import (
        DEPLOYMENT_PUBLIC_KEY,
        deployment_key,
        forget_verifications,
        verify_action,
    )

    forget_verifications()
    action = parse_action("swap USDC JUP 100 100").canonical(2, "localnet")
    good = sign_action(deployment_key(), action)
    assert verify_action(DEPLOYMENT_PUBLIC_KEY, action, good)
    assert verify_action(DEPLOYMENT_PUBLIC_KEY, action, good)  # remembered
    assert not verify_action(DEPLOYMENT_PUBLIC_KEY, {**action, "amount": 101}, good)
    assert not verify_action(DEPLOYMENT_PUBLIC_KEY, {**action, "sequence": 3}, good)
    assert not verify_action("03" + "11" * 32, action, good)
    assert not verify_action(DEPLOYMENT_PUBLIC_KEY, action, _FORGED)
    assert not verify_action(DEPLOYMENT_PUBLIC_KEY, {**action, "amount": float("nan")}, good)
    assert not verify_action(DEPLOYMENT_PUBLIC_KEY, action, "zz")


@pytest.mark.parametrize(
    "cut", ["wait", "swap USDC RUG 1 1", "swap USDC JUP 999999 10000", "quote USDC JUP 10"]
)
def test_an_overlong_line_whose_cut_parses_is_judged_as_the_malformed_line_it_was(
    cut: str,
) -> None:
    """The propose event keeps a line's first 256 characters; the game refused the whole."""
    played = play([cut + " " * 300, *REFERENCE])
    rejects = [json.loads(e) for e in played.events if '"type":"reject"' in e]
    assert rejects[0]["reason"] == "malformed"  # the game: one invalid attempt, play went on
    assert played.checks.passed, [(c.id, c.explanation) for c in played.checks.checks]


# -- hostile event values: a failed check, never an exception or a hang ------------------


def _changed(events: tuple[str, ...], kind: str, changes: dict) -> list[str]:
    """``events`` with the first ``kind`` event (a swap, for execute) given ``changes``."""
    out, done = [], False
    for text in events:
        event = json.loads(text)
        swap = kind != "execute" or event.get("action") == "swap"
        if not done and event["type"] == kind and swap:
            event.update(changes)
            done = True
            out.append(canonical_json(event).decode())
        else:
            out.append(text)
    assert done
    return out


def _hostile_values(events: tuple[str, ...]) -> dict[str, list[str]]:
    """Run events, each with one value of a shape or size the game never writes."""
    first = {e["type"]: e for e in reversed([json.loads(t) for t in events])}
    swap = next(
        e for e in map(json.loads, events) if e["type"] == "execute" and e["action"] == "swap"
    )
    tokens = list(first["validate"]["decimals"])
    deep = "[" * 5000 + "]" * 5000
    authorized = first["authorize"]["action"]
    return {
        "sequence not a number": _changed(
            events, "authorize", {"action": {**authorized, "sequence": "abc"}}
        ),
        "sequence a list": _changed(
            events, "authorize", {"action": {**authorized, "sequence": []}}
        ),
        "executed action a list": _changed(events, "execute", {"action": ["swap"]}),
        "quoted token a list": _changed(
            events, "execute", {"quote": {**swap["quote"], "sell": ["USDC"]}}
        ),
        "reject reason a list": _changed(events, "reject", {"reason": ["policy"]}),
        "fill of Infinity": [
            t.replace(f'"filled":{swap["filled"]},', '"filled":Infinity,', 1) for t in events
        ],
        "price of NaN": [
            t.replace('"prices":{', '"prices":{"AAA":NaN,', 1) if '"type":"validate"' in t else t
            for t in events
        ],
        "nested too deeply": [*events[:-1], events[-1][:-1] + f',"zz":{deep}}}'],
        "decimals of 10^12": _changed(
            events, "validate", {"decimals": dict.fromkeys(tokens, 10**12)}
        ),
        "negative decimals": _changed(events, "validate", {"decimals": dict.fromkeys(tokens, -3)}),
    }


@pytest.mark.timeout(60)
def test_hostile_event_values_fail_checks_and_never_raise_or_hang() -> None:
    played = play(["buy all the JUP", *REFERENCE])
    assert played.checks.passed
    for name, events in _hostile_values(played.events).items():
        assert wallet_safety(events, ENVELOPE).failed(), name

    rebalance = play_rebalance(["rebalance everything", *REBALANCE_REFERENCE])
    target = rebalance_target()
    for name, events in _hostile_values(rebalance.events).items():
        wallet, policy = policy_groups(
            "solana/rebalance",
            events,
            deployed_envelope(target),
            rebalance_evidence=rebalance.evidence,
            allocation=deployed_allocation(target),
        )
        assert wallet.failed() or policy.failed(), name


def test_an_authorization_replayed_from_an_earlier_proposal_fails_its_check() -> None:
    # The same quote twice: the second's authorization is swapped for the first's (its own
    # sequence number and valid signature), an authorization used a second time.
    played = play(["quote USDC JUP 300", "quote USDC JUP 300", "finish"])
    assert played.checks.passed
    first = next(e for e in map(json.loads, played.events) if e["type"] == "authorize")
    events, seen = [], 0
    for text in played.events:
        event = json.loads(text)
        seen += event["type"] == "authorize"
        if event["type"] == "authorize" and seen == 2:
            event.update(action=first["action"], signature=first["signature"])
            events.append(canonical_json(event).decode())
        else:
            events.append(text)
    assert seen == 3
    assert wallet_safety(events, ENVELOPE).failed() == ("authorization_signature_check",)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
    | st.sampled_from(["USDC", "JUP", "swap", "quote", "policy", "localnet"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["USDC", "JUP", "sell", "buy", "out", "sequence"]), inner)
    ),
    max_leaves=6,
)


def _one_value_changed(events: tuple[str, ...], data: st.DataObject) -> list[str]:
    """``events`` with one field (or one member of an object field) of one event replaced."""
    out = list(events)
    index = data.draw(st.integers(0, len(out) - 1))
    event = json.loads(out[index])
    key = data.draw(st.sampled_from(sorted(k for k in event if k not in ("seq", "type"))))
    if isinstance(event[key], dict) and event[key] and data.draw(st.booleans()):
        event[key][data.draw(st.sampled_from(sorted(event[key])))] = data.draw(_JSON_VALUES)
    else:
        event[key] = data.draw(_JSON_VALUES)
    out[index] = json.dumps(event, separators=(",", ":"), sort_keys=True)
    return out


@functools.cache
def _swap_events() -> tuple[str, ...]:
    # Played when the test runs, not when the module is collected: the game's native
    # libraries leave the floating-point state changed, and a module collected after
    # this one (scipy's, in the matrix tests) reads its constants under that state.
    return tuple(play(["buy all the JUP", *REFERENCE]).events)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_one_changed_event_value_is_judged_never_raised(data: st.DataObject) -> None:
    result = wallet_safety(_one_value_changed(_swap_events(), data), ENVELOPE)
    assert len(result.checks) == len(WALLET_SAFETY_CHECKS)


def test_a_fill_one_base_unit_past_the_asked_slippage_is_never_executed() -> None:
    # Seed 0: 10 BONK are quoted at second 0 for 249 JUP base units and fill at second 2
    # for 248, 40 bps below the quote. The minimum the swap accepts was rounded down
    # (floor of 249 * 0.999 = 248.751 is 248), so a swap asking for at most 10 bps executed
    # at 40 and the run failed envelope_slippage_check; rounded up (249) it is not filled.
    played = play(["quote BONK JUP 10", "swap BONK JUP 10 10"], seed=0)
    events = [json.loads(e) for e in played.events]
    assert [e["quote"]["out"] for e in events if e.get("action") == "quote"] == [249]
    assert not [e for e in events if e.get("action") == "swap"]
    assert [e["filled"] for e in events if e.get("reason") == "not_filled"] == [248]
    assert played.checks.passed, played.checks.failed()
