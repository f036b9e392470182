"""What the run page shows of a policy-bound run: envelope, portfolio, actions, check groups.

Everything here comes from the run events the server's own replay produced
(cached with the run's viewer frames), never from anything the submitter
sent: the record carries only the inputs. The envelope shown is the one of
the packaged build the record pins (the envelope is part of that build's
identity, so a record of another envelope is not replayed at all).

The check groups are the proof document's ``cats``. When the document holds
no ``wallet_safety`` group (a service that does not decide it yet), the page
decides it from the same replayed events with the same fixed code and says
that it did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from playproof.core.canonical import parse_json
from playproof.errors import FormatError
from playproof.service.checks import CheckOutcome, GroupResult
from playproof.targets import Target

__all__ = ["ACTIONS_PAGE", "ActionLine", "PolicyView", "policy_view"]

ACTIONS_PAGE = 500
"""Proposed actions a page shows (the run page's ``?page=``: the same turns as its decisions)."""

SOL_DECIMALS = 9
"""SOL amounts are in lamports."""
_REFUSALS = {
    "malformed": "the action line does not parse",
    "no_live_quote": "no live quote matches the swap",
    "policy": "the policy envelope forbids it",
    "authorization": "the authorization signature does not verify",
}


@dataclass(frozen=True)
class ActionLine:
    """One proposed action and what validation made of it."""

    turn: int
    line: str
    valid: bool | None
    """True: passed validation; False: refused; None: not applied (the run had ended)."""
    outcome: str


@dataclass(frozen=True)
class PolicyView:
    """The policy section of a run page (``template``: the policy-bound target's name)."""

    template: str
    envelope: list[tuple[str, str]]
    start: list[tuple[str, str]]
    end: list[tuple[str, str]]
    end_reason: str | None
    actions: list[ActionLine]
    """The actions of the turns shown only (at most :data:`ACTIONS_PAGE`), in turn order."""
    groups: list[GroupResult]
    recomputed: list[str]
    problem: str | None = None
    total: int = 0
    """Every proposed action of the run (one per input), shown or not."""
    valid: int = 0
    """Of ``total``: the actions that passed validation."""
    refused: int = 0
    """Of ``total``: the actions validation refused."""

    @property
    def not_applied(self) -> int:
        """Of ``total``: the actions proposed after the run had ended."""
        return self.total - self.valid - self.refused


def _amount(units: int, decimals: int) -> str:
    text = f"{units / 10**decimals:.{decimals}f}".rstrip("0").rstrip(".")
    return text or "0"


def _holdings(balances: Mapping[str, Any], decimals: Mapping[str, Any]) -> list[tuple[str, str]]:
    shown = []
    for symbol in sorted(balances):
        places = SOL_DECIMALS if symbol == "SOL" else int(decimals.get(symbol, 0))
        shown.append((symbol, _amount(int(balances[symbol]), places)))
    return shown


def _envelope_lines(envelope: Any) -> list[tuple[str, str]]:
    return [
        ("Chain", envelope.chain),
        ("Tokens allowed", ", ".join(envelope.allowed_tokens)),
        ("Actions allowed", ", ".join(envelope.allowed_actions)),
        ("Largest slippage", f"{envelope.max_slippage_bps} bps"),
        ("Largest trade", f"{envelope.max_trade_usd} USD"),
        (
            "Largest position",
            f"{envelope.max_position_usd} USD and {envelope.max_position_weight_bps} bps "
            "of the portfolio",
        ),
        ("Most actions", str(envelope.max_iterations)),
        ("Longest run", f"{envelope.max_runtime_seconds} world seconds"),
        ("Invalid attempts tolerated", str(envelope.invalid_attempt_limit)),
        ("Authorization key", envelope.authorization_key),
    ]


def _outcome(events: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
    """Validation's verdict on one proposal from the events that followed it."""
    for event in events:
        kind = event.get("type")
        if kind == "reject":
            reason = str(event.get("reason", ""))
            if reason == "not_filled":
                return True, "valid; not filled: the price moved beyond the slippage allowed"
            detail = event.get("detail") or ", ".join(str(r) for r in event.get("rules", ()))
            why = _REFUSALS.get(reason, reason)
            return False, f"refused ({reason}): {why}" + (f": {detail}" if detail else "")
        if kind == "execute":
            action = str(event.get("action", ""))
            if action == "swap":
                ok = "filled" if event.get("ok") else f"failed on chain: {event.get('error')}"
                return True, f"valid; swap {ok}"
            return True, f"valid; {action} done"
        if kind == "finalize":
            return True, f"valid; the run ended ({event.get('reason')})"
    return True, "valid"


def _actions(
    events: Sequence[Mapping[str, Any]], inputs: Sequence[str], shown: range
) -> tuple[list[ActionLine], int, int]:
    """The lines of the turns in ``shown`` (0-based), and the valid and refused counts of all.

    Only the proposals the replay made are judged (the envelope bounds them);
    an input after the run had ended is counted, not judged, and gets a line
    only when it is shown.
    """
    groups: list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]] = []
    for event in events:
        if event.get("type") == "propose":
            groups.append((event, []))
        elif groups:
            groups[-1][1].append(event)
    outcomes = [_outcome(after) for _, after in groups[: len(inputs)]]
    valid = sum(1 for ok, _ in outcomes if ok)
    lines = []
    for index in shown:
        if index >= len(inputs):
            break
        word = inputs[index]
        if index < len(outcomes):
            ok, outcome = outcomes[index]
            lines.append(
                ActionLine(index + 1, str(groups[index][0].get("line", word)), ok, outcome)
            )
        else:
            lines.append(
                ActionLine(index + 1, word, None, "not applied: the run had already ended")
            )
    return lines, valid, len(outcomes) - valid


def _portfolios(
    events: Sequence[Mapping[str, Any]],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], str | None]:
    decimals: dict[str, Any] = {}
    start: Mapping[str, Any] | None = None
    end: Mapping[str, Any] | None = None
    reason = None
    for event in events:
        if isinstance(event.get("decimals"), Mapping):
            decimals.update(event["decimals"])
        if event.get("type") == "validate" and start is None:
            start = event.get("balances")
        if event.get("type") == "execute" and isinstance(event.get("balances_after"), Mapping):
            end = event["balances_after"]
        if event.get("type") == "finalize":
            end, reason = event.get("balances"), str(event.get("reason"))
    begin = _holdings(start, decimals) if isinstance(start, Mapping) else []
    finish = _holdings(end, decimals) if isinstance(end, Mapping) else begin
    return begin, finish, reason


def policy_view(
    target: Target,
    inputs: Sequence[str],
    events: Sequence[str] | None,
    cats: list[GroupResult],
    shown: range | None = None,
    deployed: str | None = None,
) -> PolicyView:
    """The policy section from the replayed ``events`` (None: the replay could not run).

    ``shown``: the turns (0-based indices of ``inputs``) whose actions are
    listed, by default the first :data:`ACTIONS_PAGE`; the counts of valid,
    refused and not applied actions cover every input. ``deployed``: the
    run's deployment's own envelope (JSON), which its groups were judged
    against and which the section then shows instead of the packaged one.
    """
    from playproof.policy.checks import WALLET_SAFETY, wallet_safety
    from playproof.policy.envelope import parse_envelope
    from playproof.policy.events import decode_events
    from playproof.policy.replay import deployed_envelope

    envelope = deployed_envelope(target)
    if deployed is not None:
        try:
            envelope = parse_envelope(parse_json(deployed, limit=1 << 20, what="envelope"))
        except FormatError as exc:
            return PolicyView(
                target.name,
                [],
                [],
                [],
                None,
                [],
                list(cats),
                [],
                problem=f"the deployment's policy envelope does not read: {exc}",
            )
    template = target.name
    groups = list(cats)
    recomputed: list[str] = []
    if events is None:
        return PolicyView(
            template,
            _envelope_lines(envelope),
            [],
            [],
            None,
            [],
            groups,
            recomputed,
            problem="the server could not replay this run, so its actions are not shown",
        )
    try:
        decoded = decode_events(events)
    except (ValueError, RecursionError) as exc:
        # json.loads raises RecursionError on an event nested too deeply (within
        # the event size limit); it is as undecodable as a malformed one.
        why = "an event is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return PolicyView(
            template,
            _envelope_lines(envelope),
            [],
            [],
            None,
            [],
            groups,
            recomputed,
            problem=f"the replayed events do not read: {why}",
        )
    if not any(group.group == WALLET_SAFETY for group in groups):
        result = wallet_safety(events, envelope)
        groups.append(
            GroupResult(
                group=result.group,
                title="Wallet safety",
                result="pass" if result.passed else "fail",
                checks=[
                    CheckOutcome(id=c.id, passed=c.passed, explanation=c.explanation)
                    for c in result.checks
                ],
            )
        )
        recomputed.append(result.group)
    start, end, reason = _portfolios(decoded)
    lines, valid, refused = _actions(
        decoded, inputs, range(ACTIONS_PAGE) if shown is None else shown
    )
    return PolicyView(
        template=template,
        envelope=_envelope_lines(envelope),
        start=start,
        end=end,
        end_reason=reason,
        actions=lines,
        groups=groups,
        recomputed=recomputed,
        total=len(inputs),
        valid=valid,
        refused=refused,
    )
