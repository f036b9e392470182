import asyncio
import math
from collections.abc import Sequence
from typing import Any

import pytest
from campaigns import CONTRACT
from toygame import ToyGame

from playproof.core.agent import Action, DecisionContext, HistoryEntry
from playproof.core.contract import Contract
from playproof.core.game import VerificationMode
from playproof.core.observation import Observation
from playproof.core.record import RunRecord, StopReason
from playproof.drivers import BaselineDriver, CallableDriver, ScriptedDriver
from playproof.engine import EpisodeConfig, _episode, play
from playproof.errors import CostError, DriverError, InputError, ModeError, RunError
from playproof.verify import attest


class Priced:
    """Always 'inc', at a fixed cost; records what it saw."""

    kind = "test"
    id = "priced"

    def __init__(self, cost: float | None) -> None:
        self.cost = cost
        self.contexts: list[DecisionContext] = []
        self.observations: list[str] = []
        self.closed = False

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        self.contexts.append(context)
        self.observations.append(observation.text)
        return Action("inc", self.cost)

    async def aclose(self) -> None:
        self.closed = True


def episode(
    driver: Any, game: ToyGame | None = None, contract: Contract = CONTRACT, **config: Any
) -> RunRecord:
    return asyncio.run(play(game or ToyGame(), contract, driver, EpisodeConfig(**config)))


def test_budget_zero_plays_no_turn() -> None:
    record = episode(Priced(0.01), budget_usd=0.0, max_turns=10)
    assert record.decisions == ()
    assert record.stop_reason is StopReason.BUDGET


def test_overshooting_cost_is_recorded_in_full_then_stops() -> None:
    record = episode(Priced(0.4), budget_usd=1.0, max_turns=10)
    assert [d.cost_usd for d in record.decisions] == [0.4, 0.4, 0.4]
    assert record.accounting.spent_usd == pytest.approx(1.2)
    assert record.stop_reason is StopReason.BUDGET
    assert attest(record, ToyGame(), CONTRACT).clean


def test_turn_limit() -> None:
    record = episode(Priced(0.0), max_turns=3)
    assert len(record.decisions) == 3
    assert record.stop_reason is StopReason.TURN_LIMIT
    assert [c.id for c in record.claimed] == ["c1", "c2", "c3"]


def test_game_over_armed_and_not_armed_agree_on_the_shared_prefix() -> None:
    armed = episode(Priced(0.0), game=ToyGame(over_at=2), max_turns=6, stop_at_game_over=True)
    free = episode(Priced(0.0), game=ToyGame(over_at=2), max_turns=6, stop_at_game_over=False)
    assert armed.stop_reason is StopReason.GAME_OVER
    assert len(armed.decisions) == 2
    assert free.stop_reason is StopReason.TURN_LIMIT
    assert len(free.decisions) == 6
    assert armed.claimed == free.claimed  # the game ignores input once over
    assert armed.game_over
    assert free.game_over
    for record in (armed, free):
        assert attest(record, ToyGame(over_at=2), CONTRACT).clean


def test_driver_sees_context_and_only_observation_text() -> None:
    driver = Priced(0.25)
    episode(driver, budget_usd=1.0, max_turns=10, seed=9)
    first, last = driver.contexts[0], driver.contexts[-1]
    assert (first.turn, first.seed, first.spent_usd, first.remaining_usd) == (1, 9, 0.0, 1.0)
    assert (last.turn, last.spent_usd, last.remaining_usd) == (4, 0.75, 0.25)
    assert first.vocabulary == ("inc", "dec", "wait")
    assert driver.observations[:2] == ["count 0", "count 1"]
    assert driver.closed


def test_history_is_text_and_bounded() -> None:
    seen: list[tuple[HistoryEntry, ...]] = []

    def agent(
        observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> tuple[str, float]:
        seen.append(tuple(history))
        return "inc", 0.0

    episode(CallableDriver(agent), max_turns=5, history=2)
    assert [len(h) for h in seen] == [0, 1, 2, 2, 2]
    assert seen[-1][-1] == HistoryEntry(turn=4, observation="count 3", input="inc")


class Bad:
    kind = "test"
    id = "bad"

    def __init__(self, answer: Any = None, error: Exception | None = None) -> None:
        self.answer, self.error = answer, error

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Any:
        if self.error:
            raise self.error
        return self.answer


@pytest.mark.parametrize(
    ("driver", "error", "message"),
    [
        (Bad(error=RuntimeError("model exploded")), DriverError, "model exploded"),
        (Bad(Action("", 0.0)), InputError, "empty"),
        (Bad(Action("   ", 0.0)), InputError, "empty"),
        (Bad(Action("x" * (64 * 1024 + 1), 0.0)), InputError, "65536"),
        (Bad(Action("inc", -0.01)), CostError, "-0.01"),
        (Bad(Action("inc", math.nan)), CostError, "nan"),
        (Bad(Action("inc", math.inf)), CostError, "inf"),
        (Bad("inc"), DriverError, "not an Action"),
    ],
)
def test_bad_driver_answers_are_typed_errors(
    driver: Bad, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        episode(driver, max_turns=3)


def test_unmeasured_cost_is_refused_under_a_budget_and_counted_without_one() -> None:
    with pytest.raises(CostError, match="could not measure"):
        episode(Priced(None), budget_usd=1.0, max_turns=3)
    record = episode(Priced(None), max_turns=3)
    assert record.accounting.unmeasured_decisions == 3
    assert record.accounting.spent_usd == 0.0


def test_mode_mismatch_is_refused_before_the_game_starts() -> None:
    game = ToyGame()
    driver = Priced(0.0)
    with pytest.raises(ModeError, match="trusted-recorder"):
        episode(driver, game=game, mode=VerificationMode.TRUSTED_RECORDER)
    assert driver.contexts == []


def test_cancellation_stops_with_an_honest_partial_record() -> None:
    cancel = asyncio.Event()

    def agent(
        observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> tuple[str, float]:
        if context.turn == 3:
            cancel.set()
        return "inc", 0.0

    record = asyncio.run(
        play(ToyGame(), CONTRACT, CallableDriver(agent), EpisodeConfig(max_turns=10), cancel=cancel)
    )
    assert record.stop_reason is StopReason.STOPPED
    assert len(record.decisions) == 3
    assert attest(record, ToyGame(), CONTRACT).clean


@pytest.mark.parametrize(
    "config", [{"budget_usd": -1.0}, {"budget_usd": math.nan}, {"max_turns": -1}]
)
def test_invalid_limits(config: dict[str, Any]) -> None:
    with pytest.raises(RunError):
        EpisodeConfig(**config)


def test_scripted_driver_runs_out_with_a_typed_error() -> None:
    with pytest.raises(InputError, match="script has 2 inputs"):
        episode(ScriptedDriver(["inc", "inc"]), max_turns=3)


def test_baselines_are_deterministic_in_the_seed() -> None:
    one = episode(BaselineDriver("random-walk", seed=4), max_turns=50)
    two = episode(BaselineDriver("random-walk", seed=4), max_turns=50)
    other = episode(BaselineDriver("random-walk", seed=5), max_turns=50)
    assert one.inputs == two.inputs != other.inputs
    assert episode(BaselineDriver("unknown"), max_turns=4).claimed == ()


def test_latencies_are_kept_to_a_tenth_of_a_microsecond() -> None:
    """Each latency has at most four decimals of a millisecond, and the total is their sum."""

    class Slow(Priced):
        async def act(self, *args: Any) -> Action:
            await asyncio.sleep(0.0003)
            return await super().act(*args)

    record = episode(Slow(0.0), max_turns=6)
    latencies = record.log.latencies_ms
    assert len(latencies) == 6
    assert all(ms > 0.2 for ms in latencies)
    assert all(round(ms, 4) == ms and len(repr(ms).partition(".")[2]) <= 4 for ms in latencies)
    assert record.accounting.total_latency_ms == sum(latencies)


class BadClose(Priced):
    """Plays like Priced, then fails (or hangs) when closed."""

    def __init__(self, hang: bool = False, fail_at: int | None = None) -> None:
        super().__init__(0.0)
        self.hang = hang
        self.fail_at = fail_at

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        if self.fail_at is not None and len(self.contexts) == self.fail_at:
            raise DriverError("the agent went away")
        return await super().act(observation, history, context)

    async def aclose(self) -> None:
        if self.hang:
            await asyncio.sleep(3600)
        raise OSError("cannot remove the scratch folder")


def test_a_driver_whose_close_fails_keeps_the_finished_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    record = episode(BadClose(), max_turns=3)
    assert len(record.decisions) == 3
    assert attest(record, ToyGame(), CONTRACT).clean
    assert "failed to close (OSError: cannot remove the scratch folder)" in caplog.text


def test_a_failing_close_does_not_replace_the_error_that_ended_the_run() -> None:
    with pytest.raises(DriverError, match="went away"):
        episode(BadClose(fail_at=1), max_turns=3)


def test_a_hanging_close_is_given_up_after_its_bound(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_episode, "DRIVER_CLOSE_S", 0.2)
    record = episode(BadClose(hang=True), max_turns=2)
    assert len(record.decisions) == 2
    assert "did not close within" in caplog.text
