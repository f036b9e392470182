"""The policy section of a run page, built from a replay's events and the proof's groups."""

from __future__ import annotations

import pytest

pytest.importorskip("jinja2", reason="the web pages need the server extra")
pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from playproof.policy.checks import WALLET_SAFETY, WALLET_SAFETY_CHECKS
from playproof.policy.replay import replay_events
from playproof.service.checks import CheckOutcome, GroupResult
from playproof.service.web.policy import policy_view
from playproof.targets import get_target

LINES = (
    "quote USDC JUP 300",
    "swap USDC JUP 300 100",
    "swap USDC JUP 999 100",
    "buy moon",
    "finish",
    "wait",
)


@pytest.fixture(scope="module")
def events() -> tuple[str, ...]:
    game = get_target("solana/swap").open()
    try:
        return replay_events(game, 0, LINES)
    finally:
        game.close()


def _group(name: str) -> GroupResult:
    return GroupResult(
        group=name,
        title=name,
        result="pass",
        checks=[CheckOutcome(id="x", passed=True, explanation="fine")],
    )


def test_each_action_shows_its_validation(events: tuple[str, ...]) -> None:
    view = policy_view(get_target("solana/swap"), LINES, events, [])
    verdicts = [(a.turn, a.valid) for a in view.actions]
    assert verdicts == [(1, True), (2, True), (3, False), (4, False), (5, True), (6, None)]
    assert "no_live_quote" in view.actions[2].outcome
    assert "malformed" in view.actions[3].outcome
    assert "already ended" in view.actions[5].outcome
    assert view.end_reason == "finished"
    assert dict(view.end)["JUP"] != dict(view.start)["JUP"]
    assert ("Chain", "localnet") in view.envelope


def test_wallet_safety_is_decided_here_only_when_the_document_lacks_it(
    events: tuple[str, ...],
) -> None:
    target = get_target("solana/swap")
    bare = policy_view(target, LINES, events, [_group("replay_integrity")])
    assert [g.group for g in bare.groups] == ["replay_integrity", WALLET_SAFETY]
    assert bare.recomputed == [WALLET_SAFETY]
    assert [c.id for c in bare.groups[1].checks] == list(WALLET_SAFETY_CHECKS)
    held = policy_view(target, LINES, events, [_group("replay_integrity"), _group(WALLET_SAFETY)])
    assert [g.group for g in held.groups] == ["replay_integrity", WALLET_SAFETY]
    assert held.recomputed == []
    assert held.groups[1].checks[0].id == "x"  # the document's group, as it is


def test_without_a_replay_the_section_says_so() -> None:
    view = policy_view(get_target("solana/swap"), LINES, None, [])
    assert view.actions == []
    assert view.problem is not None
    broken = policy_view(get_target("solana/swap"), LINES, ('{"seq": 5, "type": "start"}',), [])
    assert broken.problem is not None
    assert "do not read" in broken.problem


def test_events_nested_too_deeply_are_shown_as_not_read() -> None:
    """json raises RecursionError on such an event, not ValueError: the page must not fail."""
    depth = 8_000  # within the event size limit, far beyond the parser's recursion limit
    nested = '{"seq": 0, "type": "start", "x": ' + "[" * depth + "]" * depth + "}"
    view = policy_view(get_target("solana/swap"), LINES, (nested,), [])
    assert view.actions == []
    assert view.problem is not None
    assert "do not read" in view.problem
    assert "nested too deeply" in view.problem
