"""Cost and latency totals that would overflow: typed errors, nothing already saved lost.

Each cost or latency may be a finite number the models accept while their
sum is not; the engine, the ledger and the verifier agree that no run gets
such a total.
"""

import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from campaigns import CONTRACT, KEY, Walker, campaign, continuous, resign
from toygame import ToyGame

from playproof.core.agent import Action, DecisionContext, HistoryEntry
from playproof.core.observation import Observation
from playproof.engine import EpisodeConfig, load_ledger, play
from playproof.errors import CostError, LedgerError, RunError
from playproof.verify import attest

HUGE = 1e308
"""Finite, but two of them add up past the largest float."""


class Spender(Walker):
    """The walker, at a cost of HUGE from turn ``from_turn`` on (free before)."""

    def __init__(self, from_turn: int) -> None:
        super().__init__()
        self.from_turn = from_turn

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        action = await super().act(observation, history, context)
        return Action(action.input, HUGE if context.turn >= self.from_turn else 0.0)


def test_an_episode_whose_costs_would_overflow_ends_with_a_cost_error() -> None:
    config = EpisodeConfig(max_turns=30, history=3)
    with pytest.raises(CostError, match="add up past the largest finite amount at turn 5"):
        asyncio.run(play(ToyGame(), CONTRACT, Spender(4), config))


def test_a_campaign_whose_costs_would_overflow_keeps_the_turns_before(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    with pytest.raises(CostError, match="at turn 10"):
        campaign(Spender(9), path, segment_turns=7)
    ledger = load_ledger(path, KEY.verifying_key)  # consistent, signed, nothing lost
    assert len(ledger.decisions) == 9
    assert ledger.spent_usd == HUGE
    assert [s.status.value for s in ledger.segments] == ["complete", "interrupted"]


def test_latencies_that_would_overflow_end_the_run_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A clock that jumps 1e305 s per reading: every decision takes 1e308 ms.
    readings = iter(range(1, 10_000))
    monkeypatch.setattr(time, "perf_counter", lambda: next(readings) * 1e305)
    path = tmp_path / "ledger.json"
    with pytest.raises(RunError, match="latencies add up past the largest finite amount at turn 2"):
        campaign(Walker(), path, segment_turns=7)
    monkeypatch.undo()
    ledger = load_ledger(path, KEY.verifying_key)
    assert ledger.decisions.latencies_ms == (HUGE,)


def _ledger_with(path: Path, column: str, values: list[float]) -> None:
    """Rewrite the first decisions' ``column`` and re-sign (the campaign key can sign anything)."""

    def change(body: bytes) -> bytes:
        document = json.loads(body)
        document["decisions"][column][: len(values)] = values
        if column == "costs_usd":  # keep the segment spend honest, so only the total is at fault
            document["segments"][0]["spent_usd"] = HUGE
        return json.dumps(document, separators=(",", ":")).encode()

    resign(path, change)


def test_a_resume_refuses_a_ledger_whose_latencies_overflow(tmp_path: Path) -> None:
    # Before: the campaign resumed, played to the end and saved itself finished,
    # then could not build its record (an untyped validation error, every call).
    path = tmp_path / "ledger.json"
    campaign(Walker(), path, segment_turns=7, segments=1)
    _ledger_with(path, "latencies_ms", [HUGE, HUGE])
    with pytest.raises(LedgerError, match="latencies add up past the largest finite amount"):
        campaign(Walker(), path, segment_turns=7)
    with pytest.raises(LedgerError, match="latencies add up past"):
        load_ledger(path, KEY.verifying_key)
    assert not load_ledger(path, KEY.verifying_key, consistent=False).finished


def test_a_resume_names_costs_that_overflow(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    campaign(Walker(cost=0.0), path, segment_turns=7, segments=1)
    _ledger_with(path, "costs_usd", [HUGE / 2, HUGE, HUGE])
    with pytest.raises(LedgerError, match="costs add up past the largest finite amount"):
        campaign(Walker(cost=0.0), path, segment_turns=7)


@pytest.mark.parametrize("column", ["costs_usd", "latencies_ms"])
def test_the_verifier_names_totals_that_overflow(column: str) -> None:
    data = continuous(Walker()).to_json()
    data["decisions"][column][:2] = [HUGE, HUGE]
    report = attest(data, ToyGame(), CONTRACT)
    failed = {c.id: c.reason for c in report.failed()}
    assert "past the largest finite amount" in failed["accounting-consistent"]
    assert "inf" not in failed["accounting-consistent"]
