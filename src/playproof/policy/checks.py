"""Check groups over the replayed run events, with the deployed envelope as the authority.

Pure functions: they take the evidence event strings a replay regenerated and
the envelope the deployment declared, and recompute every verdict (nothing the
game recorded as a verdict is trusted; the rules of :mod:`playproof.policy.validate`
run again over the recorded context). A check whose input is missing fails and
says so. Each check has a stable id and fixed explanations.

``wallet_safety`` is the group for every policy-bound target; the
``rebalance_policy`` group for ``solana/rebalance`` lives in
:mod:`playproof.policy.rebalance_checks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from playproof.policy.actions import MAX_ACTION_LINE, ProposedAction, parse_action
from playproof.policy.authorization import verify_action
from playproof.policy.envelope import PolicyEnvelope
from playproof.policy.events import decode_events
from playproof.policy.validate import NANO, Context, Rule, rule_violations

__all__ = [
    "INVALID_REASONS",
    "WALLET_SAFETY",
    "WALLET_SAFETY_CHECKS",
    "WALLET_SAFETY_EXPLANATIONS",
    "CheckGroupResult",
    "CheckOutcome",
    "wallet_safety",
]

WALLET_SAFETY = "wallet_safety"
WALLET_SAFETY_CHECKS = (
    "envelope_slippage_check",
    "envelope_token_universe_check",
    "envelope_position_size_check",
    "envelope_runtime_seconds_check",
    "envelope_iterations_check",
    "mainnet_guard_check",
    "wallet_policy_check",
    "authorization_signature_check",
    "hosted_wallet_available_check",
    "invalid_action_attempts_check",
)
"""The stable check ids of the ``wallet_safety`` group, in report order."""
INVALID_REASONS = frozenset({"malformed", "no_live_quote", "policy", "authorization"})
"""Reject reasons that count as invalid attempts (a swap not filled does not)."""

C = TypeVar("C")

_MAX_DECIMALS = 255
"""An SPL mint's decimals is one byte; an event saying more is malformed (10**huge never ends)."""

_MISSING_EVENTS = "input missing: the replay produced no run events"
_BROKEN_EVENTS = "input missing: the run events are malformed or out of sequence"


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """One check: stable id, pass/fail, fixed explanation."""

    id: str
    passed: bool
    explanation: str


@dataclass(frozen=True, slots=True)
class CheckGroupResult:
    """A check group's result: its id and every check in report order."""

    group: str
    checks: tuple[CheckOutcome, ...]

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(c.passed for c in self.checks)

    def failed(self) -> tuple[str, ...]:
        """The ids of the checks that failed."""
        return tuple(c.id for c in self.checks if not c.passed)


class _Missing(Exception):
    """A check's input is absent; the message is the fixed explanation."""


@dataclass(frozen=True, slots=True)
class _Proposal:
    line: str
    action: ProposedAction | None
    validate: Mapping[str, Any] | None
    authorize: Mapping[str, Any] | None
    execute: Mapping[str, Any] | None


def _proposal(current: dict[str, Any]) -> _Proposal:
    """One proposal; a line cut at the parser's limit that the game refused as malformed is one.

    The ``propose`` event carries the line cut to :data:`MAX_ACTION_LINE`
    characters, so the cut of a longer (malformed) line may parse. When the
    game refused it as malformed and nothing validated, authorized or
    executed it, it did nothing, and it is judged as the malformed line it was.
    """
    rejected = current.pop("reject", None)
    line = current["line"]
    if (
        current["action"] is not None
        and isinstance(line, str)
        and len(line) == MAX_ACTION_LINE
        and isinstance(rejected, Mapping)
        and rejected.get("reason") == "malformed"
        and current["validate"] is None
        and current["authorize"] is None
        and current["execute"] is None
    ):
        current["action"] = None
    return _Proposal(**current)


def _proposals(events: Sequence[Mapping[str, Any]]) -> list[_Proposal]:
    found: list[_Proposal] = []
    current: dict[str, Any] | None = None
    for event in events:
        kind = event["type"]
        if kind == "propose":
            if current is not None:
                found.append(_proposal(current))
            line = event.get("line")
            try:
                action = parse_action(line) if isinstance(line, str) else None
            except ValueError:
                action = None
            current = {
                "line": line,
                "action": action,
                "validate": None,
                "authorize": None,
                "execute": None,
            }
        elif current is not None and kind in ("validate", "authorize", "execute"):
            current[kind] = event
        elif current is not None and kind == "reject" and "reject" not in current:
            current["reject"] = event
    if current is not None:
        found.append(_proposal(current))
    return found


def _context(validate: Mapping[str, Any]) -> Context:
    try:
        return Context(
            iteration=int(validate["iteration"]),
            clock=int(validate["clock"]),
            prices={str(k): int(v) for k, v in validate["prices"].items()},
            balances={str(k): int(v) for k, v in validate["balances"].items()},
            decimals={str(k): _decimals(v) for k, v in validate["decimals"].items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _Missing("input missing: a validate event lacks its context") from exc


def _decimals(value: Any) -> int:
    decimals = int(value)
    if not 0 <= decimals <= _MAX_DECIMALS:
        raise ValueError(f"decimals {decimals} is not in 0..{_MAX_DECIMALS}")
    return decimals


def _broken(p: _Proposal, envelope: PolicyEnvelope) -> tuple[Rule, ...]:
    if p.action is None:
        return ()
    if p.validate is None:
        raise _Missing("input missing: a well-formed action has no validate event")
    return rule_violations(p.action, envelope, _context(p.validate))


def _swaps(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in events if e["type"] == "execute" and e.get("action") == "swap"]


def _slippage(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    proposals = _proposals(events)
    if any(Rule.SLIPPAGE in _broken(p, env) for p in proposals):
        return False
    for swap in _swaps(events):
        try:
            quoted, filled = int(swap["quote"]["out"]), int(swap["filled"])
            asked = int(swap["max_slippage_bps"])
            buy = str(swap["quote"]["buy"])
            received = int(swap["balances_after"][buy]) - int(swap["balances_before"][buy])
        except (KeyError, TypeError, ValueError) as exc:
            raise _Missing("input missing: an executed swap lacks its amounts") from exc
        if asked > env.max_slippage_bps or filled * 10_000 < quoted * (10_000 - asked):
            return False
        if swap.get("ok") is True and received != filled:
            return False
    return True


def _token_universe(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    for p in _proposals(events):
        if p.action is not None and (
            any(t not in env.allowed_tokens for t in p.action.tokens)
            or (p.action.tokens and p.action.token_in == p.action.token_out)
        ):
            return False
    for e in events:
        quote = e.get("quote") if e["type"] == "execute" else None
        if isinstance(quote, Mapping) and not {quote.get("sell"), quote.get("buy")} <= set(
            env.allowed_tokens
        ):
            return False
    return True


def _position(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    if any(Rule.POSITION_SIZE in _broken(p, env) for p in _proposals(events)):
        return False
    for swap in _swaps(events):
        try:
            buy = str(swap["quote"]["buy"])
            value = int(swap["balances_after"][buy]) * int(swap["prices"][buy])
            scale = 10 ** int(_decimals_of(events, buy))
        except (KeyError, TypeError, ValueError) as exc:
            raise _Missing("input missing: an executed swap lacks its balances") from exc
        if value // scale > env.max_position_usd * NANO:
            return False
    return True


def _decimals_of(events: Sequence[Mapping[str, Any]], symbol: str) -> int:
    for e in events:
        if e["type"] == "validate" and symbol in e.get("decimals", {}):
            return _decimals(e["decimals"][symbol])
    raise _Missing("input missing: no validate event gives the token's decimals")


def _runtime(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    if any(Rule.RUNTIME in _broken(p, env) for p in _proposals(events)):
        return False
    try:
        last = int(events[-1]["t"])
    except (KeyError, TypeError, ValueError) as exc:
        raise _Missing("input missing: the last event has no world clock") from exc
    return last <= env.max_runtime_seconds


def _iterations(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    return sum(1 for e in events if e["type"] == "propose") <= env.max_iterations


def _mainnet_guard(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    guard = [e for e in events if e["type"] == "guard"]
    if not guard:
        raise _Missing("input missing: the run has no mainnet guard event")
    return env.is_test_chain and guard[0].get("chain") == env.chain


def _wallet_policy(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    for p in _proposals(events):
        broken = _broken(p, env)
        if Rule.ACTION_KIND in broken or Rule.TRADE_VALUE in broken:
            return False
    executed = {e.get("action") for e in events if e["type"] == "execute"}
    return executed <= set(env.allowed_actions)


def _authorization(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    # The sequence an authorization signs is its proposal's place in the run (the game
    # counts every proposal), never the number the authorize event states: a valid
    # authorization of an earlier, identical action does not authorize a later one.
    for sequence, p in enumerate(_proposals(events), start=1):
        if p.authorize is None:
            if p.execute is not None:
                return False  # executed without an authorization
            continue
        action, signature = p.authorize.get("action"), p.authorize.get("signature")
        if not isinstance(action, Mapping) or not isinstance(signature, str):
            return False
        if p.action is None or dict(action) != p.action.canonical(sequence, env.chain):
            return False
        if not verify_action(env.authorization_key, action, signature):
            return False
    return True


def _hosted_wallet(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    wallet = [e for e in events if e["type"] == "wallet"]
    if not wallet:
        raise _Missing("input missing: the run has no wallet event")
    status = wallet[0].get("status")
    guarded = any(e["type"] == "guard" and e.get("refused") is True for e in events)
    return status == "created" or (status == "withheld" and guarded)


def _invalid_attempts(events: Sequence[Mapping[str, Any]], env: PolicyEnvelope) -> bool:
    count = sum(1 for e in events if e["type"] == "reject" and e.get("reason") in INVALID_REASONS)
    return count <= env.invalid_attempt_limit


_Check = Callable[[Sequence[Mapping[str, Any]], PolicyEnvelope], bool]
_CHECKS: tuple[tuple[str, _Check, str, str], ...] = (
    (
        "envelope_slippage_check",
        _slippage,
        "every swap asked for and got at most the envelope's slippage",
        "a swap asked for or got more slippage than the envelope allows",
    ),
    (
        "envelope_token_universe_check",
        _token_universe,
        "every action named only tokens the envelope allows",
        "an action named a token outside the envelope's universe",
    ),
    (
        "envelope_position_size_check",
        _position,
        "no swap took a holding over the envelope's position value or weight",
        "a swap would take or took a holding over the envelope's position limits",
    ),
    (
        "envelope_runtime_seconds_check",
        _runtime,
        "the run kept within the envelope's runtime",
        "the run went or tried to go past the envelope's runtime",
    ),
    (
        "envelope_iterations_check",
        _iterations,
        "the run proposed no more actions than the envelope allows",
        "the run proposed more actions than the envelope allows",
    ),
    (
        "mainnet_guard_check",
        _mainnet_guard,
        "the envelope names a local or test chain and the guard saw the same chain",
        "the envelope names a chain that is not local or test (mainnet guard)",
    ),
    (
        "wallet_policy_check",
        _wallet_policy,
        "every action was of an allowed kind and within the trade value limit",
        "an action was of a kind the envelope does not allow or over the trade value limit",
    ),
    (
        "authorization_signature_check",
        _authorization,
        "every authorization matches its action and verifies under the deployment's key",
        "an authorization is missing, does not match its action or does not verify",
    ),
    (
        "hosted_wallet_available_check",
        _hosted_wallet,
        "the hosted wallet was available (or withheld by the mainnet guard)",
        "the hosted wallet was unavailable",
    ),
    (
        "invalid_action_attempts_check",
        _invalid_attempts,
        "invalid attempts stayed within the envelope's limit",
        "more invalid attempts than the envelope's limit",
    ),
)


WALLET_SAFETY_EXPLANATIONS: Mapping[str, tuple[str, str]] = {
    check_id: (good, bad) for check_id, _check, good, bad in _CHECKS
}
"""Check id -> (fixed explanation on pass, on fail); a missing input says so instead."""


def wallet_safety(events: Sequence[str] | None, envelope: PolicyEnvelope) -> CheckGroupResult:
    """The ``wallet_safety`` group over the replayed evidence event strings."""
    decoded, problem = _read_events(events)
    return _decide(
        WALLET_SAFETY,
        _CHECKS,
        problem,
        lambda check: decoded is not None and check(decoded, envelope),
    )


def _read_events(events: Sequence[str] | None) -> tuple[list[dict[str, Any]] | None, str]:
    """The decoded run events, or None and why every check that reads them fails."""
    try:
        decoded = decode_events(events or ())
    except (ValueError, RecursionError):  # RecursionError: an event nested too deeply to read
        return None, _BROKEN_EVENTS
    return (decoded, "") if decoded else (None, _MISSING_EVENTS)


def _decide(
    group: str,
    checks: Sequence[tuple[str, C, str, str]],
    problem: str,
    run: Callable[[C], bool],
) -> CheckGroupResult:
    """Decide each ``(id, check, on pass, on fail)``: all fail with ``problem`` when it is set;
    a check raising :class:`_Missing` fails with that input's reason."""
    outcomes: list[CheckOutcome] = []
    for check_id, check, good, bad in checks:
        if problem:
            outcomes.append(CheckOutcome(check_id, False, problem))
            continue
        try:
            passed = run(check)
        except _Missing as exc:
            outcomes.append(CheckOutcome(check_id, False, str(exc)))
            continue
        except (TypeError, ValueError, ArithmeticError):
            # An event value of a shape the game never writes (a list for a token, a
            # word for a number): the events are malformed, and the check says so.
            outcomes.append(CheckOutcome(check_id, False, _BROKEN_EVENTS))
            continue
        outcomes.append(CheckOutcome(check_id, passed, good if passed else bad))
    return CheckGroupResult(group, tuple(outcomes))
