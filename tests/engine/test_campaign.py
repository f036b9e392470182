"""Campaigns: segments equal one episode; hooks, guidance, stops and interruption."""

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from campaigns import CONTRACT, KEY, Walker, campaign, continuous, resign, same_run
from toygame import ToyGame

from playproof.core.agent import Action, DecisionContext, HistoryEntry
from playproof.core.observation import Observation
from playproof.core.record import RunRecord, StopReason
from playproof.drivers import BaselineDriver
from playproof.engine import (
    Analysis,
    EpisodeConfig,
    SegmentReport,
    SegmentStatus,
    Steer,
    load_ledger,
    play,
    run_campaign,
)
from playproof.errors import HookError
from playproof.verify import attest


@pytest.mark.parametrize("segment_turns", [1, 7, 30, 100])
def test_segments_resumed_one_call_at_a_time_equal_one_episode(
    tmp_path: Path, segment_turns: int
) -> None:
    path = tmp_path / "ledger.json"
    calls = 0
    while True:
        result = campaign(Walker(), path, segment_turns=segment_turns, segments=1)
        calls += 1
        if result.status == "finished":
            break
    assert calls == -(-30 // segment_turns)
    assert result.record is not None
    same_run(result.record, continuous(Walker()))
    assert attest(result.record, ToyGame(), CONTRACT).clean
    ledger = load_ledger(path, KEY.verifying_key)
    assert [s.index for s in ledger.segments] == list(range(calls))
    assert ledger.finished
    # A finished ledger gives back the same record without playing.
    again = campaign(Walker(), path, segment_turns=segment_turns)
    assert again.record is not None
    assert again.record.to_json() == result.record.to_json()


SEGMENT_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from playproof.drivers import BaselineDriver
from playproof.engine import EpisodeConfig, run_campaign
from playproof.sign import SigningKey
from playproof.targets import get_target
target = get_target("native/2048")
config = EpisodeConfig(seed=5, budget_usd=None, max_turns=250, target_name=target.name)
result = asyncio.run(run_campaign(target.open(), target.contract,
    BaselineDriver("random-walk", seed=3), config, segment_turns=60,
    ledger=Path(sys.argv[1]), ledger_key=SigningKey.load(sys.argv[2]), segments=1))
print(json.dumps({"status": result.status,
    "record": result.record.to_json() if result.record else None}))
"""


def test_separate_processes_per_segment_equal_one_continuous_episode(tmp_path: Path) -> None:
    from playproof.targets import get_target

    target = get_target("native/2048")
    path = tmp_path / "ledger.json"
    key_file = KEY.save(tmp_path / "key.pem")
    outputs = []
    for _ in range(8):
        done = subprocess.run(
            [sys.executable, "-c", SEGMENT_SCRIPT, str(path), str(key_file)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        if outputs[-1]["status"] == "finished":
            break
    assert len(outputs) > 1
    assert [o["status"] for o in outputs[:-1]] == ["paused"] * (len(outputs) - 1)
    resumed = RunRecord.model_validate(outputs[-1]["record"])
    config = EpisodeConfig(seed=5, max_turns=250, target_name=target.name)
    one = asyncio.run(
        play(target.open(), target.contract, BaselineDriver("random-walk", seed=3), config)
    )
    same_run(resumed, one)
    import playproof

    assert playproof.verify_record(resumed).clean


def test_guidance_steering_outranks_analyst_and_blank_clears(tmp_path: Path) -> None:
    analyst_says = {
        0: Analysis(summary="slow", recommendation="steer", guidance="from-analyst"),
        1: Analysis(summary="meh", recommendation="steer", guidance="analyst-again"),
        2: Analysis(summary="ok", recommendation="stop"),
        3: Analysis(summary="ok", recommendation="continue"),
    }
    steering_says: dict[int, Any] = {1: "from-steering", 2: "   "}
    reports: list[SegmentReport] = []

    def analyst(report: SegmentReport) -> Analysis:
        reports.append(report)
        return analyst_says[report.segment]

    async def steering(report: SegmentReport) -> Any:
        return steering_says.get(report.segment)

    driver = Walker()
    result = campaign(
        driver, tmp_path / "l.json", analyst=analyst, steering=steering, guidance="initial"
    )
    seen = driver.guidance
    assert seen[1] == seen[7] == "initial"
    assert seen[8] == seen[14] == "from-analyst"
    assert seen[15] == seen[21] == "from-steering"  # steering over the analyst
    assert seen[22] is None  # blank steering cleared it and outranked the analyst's stop
    assert seen[29] is None
    assert result.record is not None
    # Guidance never enters the input log or the record.
    text = json.dumps(result.record.to_json())
    assert "from-" not in text
    assert "initial" not in text
    one = continuous(Walker())
    same_run(result.record, one)
    assert reports[0].new_milestones == tuple(c.id for c in one.claimed if c.turn <= 7)
    assert reports[0].new_milestones
    assert len(reports[0].latencies_ms) == 7
    assert [s.turn for s in reports[1].trajectory] == [12, 13, 14]


@pytest.mark.parametrize("who", ["analyst", "steering"])
def test_a_hook_can_stop_the_campaign(tmp_path: Path, who: str) -> None:
    def analyst(report: SegmentReport) -> dict[str, Any]:
        stop = who == "analyst" and report.segment == 1
        return {"summary": "x", "recommendation": "stop" if stop else "continue"}

    def steering(report: SegmentReport) -> Steer | None:
        return Steer(stop=True) if who == "steering" and report.segment == 1 else None

    result = campaign(Walker(), tmp_path / "l.json", analyst=analyst, steering=steering)
    assert result.record is not None
    assert result.record.stop_reason is StopReason.STOPPED
    assert len(result.record.decisions) == 14
    ledger = load_ledger(tmp_path / "l.json", KEY.verifying_key)
    assert ledger.segments[-1].stopped_by == who
    assert attest(result.record, ToyGame(), CONTRACT).clean


@pytest.mark.parametrize(
    "answer",
    [
        "continue",
        {"summary": "x", "recommendation": "maybe"},
        {"summary": "x", "recommendation": "steer"},
        {"summary": "x", "progress": 2.0},
        {"summary": "x" * 5000},
        {"summary": "x", "extra": 1},
    ],
)
def test_invalid_analyst_answers_are_typed_errors(tmp_path: Path, answer: Any) -> None:
    with pytest.raises(HookError, match="analyst"):
        campaign(Walker(), tmp_path / "l.json", analyst=lambda report: answer)
    # The segment played before the bad answer is saved.
    assert len(load_ledger(tmp_path / "l.json", KEY.verifying_key).decisions) == 7


def test_invalid_steering_answers_and_failing_hooks_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(HookError, match="steering"):
        campaign(Walker(), tmp_path / "a.json", steering=lambda report: 42)
    with pytest.raises(HookError, match="steering"):
        campaign(Walker(), tmp_path / "b.json", steering=lambda report: "g" * 5000)

    def broken(report: SegmentReport) -> None:
        raise ValueError("analyst is down")

    with pytest.raises(HookError, match="analyst is down"):
        campaign(Walker(), tmp_path / "c.json", analyst=broken)


def test_cancellation_mid_segment_saves_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    cancel = asyncio.Event()

    class Cancelling(Walker):
        async def act(
            self, observation: Observation, history: Sequence[HistoryEntry], ctx: DecisionContext
        ) -> Action:
            if ctx.turn == 10:
                cancel.set()
            return await super().act(observation, history, ctx)

    first = campaign(Cancelling(), path, cancel=cancel)
    assert first.status == "interrupted"
    assert first.record is None
    ledger = load_ledger(path, KEY.verifying_key)
    assert len(ledger.decisions) == 10
    assert ledger.segments[-1].status is SegmentStatus.INTERRUPTED
    assert (ledger.segments[-1].first_turn, ledger.segments[-1].last_turn) == (8, 10)
    rest = campaign(Walker(), path)
    assert rest.record is not None
    same_run(rest.record, continuous(Walker()))


def test_ctrl_c_mid_segment_saves_the_decisions_taken(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    with pytest.raises(KeyboardInterrupt):
        campaign(Walker(interrupt_at=12), path)
    ledger = load_ledger(path, KEY.verifying_key)
    assert len(ledger.decisions) == 11
    assert ledger.segments[-1].status is SegmentStatus.INTERRUPTED
    rest = campaign(Walker(), path)
    assert rest.record is not None
    same_run(rest.record, continuous(Walker()))


def test_budget_zero_plays_nothing_and_records_no_segment(tmp_path: Path) -> None:
    result = campaign(Walker(), tmp_path / "l.json", budget_usd=0.0)
    assert result.record is not None
    assert result.record.decisions == ()
    assert result.record.stop_reason is StopReason.BUDGET
    ledger = load_ledger(tmp_path / "l.json", KEY.verifying_key)
    assert ledger.segments == ()
    assert ledger.finished


def test_budget_stops_inside_a_segment_like_an_episode(tmp_path: Path) -> None:
    result = campaign(Walker(cost=0.1), tmp_path / "l.json", budget_usd=1.05)
    assert result.record is not None
    same_run(result.record, continuous(Walker(cost=0.1), budget_usd=1.05))
    assert result.record.stop_reason is StopReason.BUDGET


def test_in_memory_campaign_and_game_over() -> None:
    config = EpisodeConfig(max_turns=30, history=3)
    result = asyncio.run(
        run_campaign(
            ToyGame(over_at=3), CONTRACT, BaselineDriver("constant:inc"), config, segment_turns=2
        )
    )
    assert result.record is not None
    assert result.record.stop_reason is StopReason.GAME_OVER
    one = asyncio.run(play(ToyGame(over_at=3), CONTRACT, BaselineDriver("constant:inc"), config))
    same_run(result.record, one)
    assert [r.finished for r in result.reports][-1]


def test_resume_through_a_worker_batch_replay_equals_one_episode(tmp_path: Path) -> None:
    """A worker game resumes by one batch replay of the prefix plus live history steps."""
    from playproof.core.game import BatchReplaying
    from playproof.workers import WorkerGame

    support = str(Path(__file__).resolve().parents[1] / "support")
    path = tmp_path / "ledger.json"
    config = EpisodeConfig(max_turns=30, history=3)
    results = []
    for _ in range(5):  # 7-turn segments, each call in a fresh worker
        with WorkerGame("toygame:make_game", env={"PYTHONPATH": support}) as game:
            assert isinstance(game, BatchReplaying)
            result = asyncio.run(
                run_campaign(
                    game,
                    CONTRACT,
                    Walker(),
                    config,
                    segment_turns=7,
                    ledger=path,
                    ledger_key=KEY,
                    segments=1,
                )
            )
        results.append(result)
        if result.status == "finished":
            break
    final = results[-1]
    assert final.record is not None
    same_run(final.record, continuous(Walker()))


def test_a_tampered_ledger_is_refused_while_a_worker_replays(tmp_path: Path) -> None:
    """The content check runs alongside the worker's replay; its error wins and the worker lives."""
    from playproof.errors import LedgerError
    from playproof.workers import WorkerGame

    support = str(Path(__file__).resolve().parents[1] / "support")
    path = tmp_path / "ledger.json"
    config = EpisodeConfig(max_turns=30, history=3)
    campaign(Walker(), path, segments=2)

    def cost(body: bytes) -> bytes:  # signed again, so only the content check can catch it
        data = json.loads(body)
        data["decisions"]["costs_usd"][2] = 0.5
        return json.dumps(data).encode()

    resign(path, cost)
    with WorkerGame("toygame:make_game", env={"PYTHONPATH": support}) as game:
        with pytest.raises(LedgerError, match="a cost was edited"):
            asyncio.run(
                run_campaign(
                    game,
                    CONTRACT,
                    Walker(),
                    config,
                    segment_turns=7,
                    ledger=path,
                    ledger_key=KEY,
                    segments=1,
                )
            )
        game.reset(0)  # the worker is still usable
        assert game.evidence() is not None


def test_resume_refuses_a_loop_that_already_played_and_misaligned_columns() -> None:
    from playproof.engine._loop import DecisionLoop
    from playproof.errors import RunError

    loop = DecisionLoop(ToyGame(), CONTRACT, Walker(), EpisodeConfig(max_turns=5))
    with pytest.raises(RunError, match="2 inputs, 1 costs"):
        loop.resume(["inc", "inc"], [0.0], [1.0, 1.0])
    loop.resume(["inc"], [0.0], [1.0])
    with pytest.raises(RunError, match="has not played yet"):
        loop.resume(["inc"], [0.0], [1.0])


class _RemoteToy(ToyGame):
    """A toy game that says it runs in another process, and fails after ``fail_after`` steps."""

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.fail_after = fail_after
        self.steps = 0

    @property
    def pid(self) -> int:
        return 1

    def step(self, word: str) -> None:
        self.steps += 1
        if self.fail_after is not None and self.steps > self.fail_after:
            raise RuntimeError("the worker went away")
        super().step(word)


def _resume_remote(game: _RemoteToy, alongside: Any) -> Any:
    from playproof.engine._loop import DecisionLoop

    loop = DecisionLoop(game, CONTRACT, Walker(), EpisodeConfig(max_turns=50, history=2))
    words = ["inc"] * 20
    loop.resume(words, [0.0] * 20, [1.0] * 20, alongside=alongside)
    return loop


def test_the_check_beside_a_remote_replay_runs_on_another_thread_and_its_error_wins() -> None:
    import threading

    from playproof.errors import LedgerError

    seen: list[str] = []

    def check() -> None:
        seen.append(threading.current_thread().name)

    loop = _resume_remote(_RemoteToy(), check)
    assert loop.turn == 20
    assert seen
    assert seen[0] != threading.current_thread().name

    def refuse() -> None:
        raise LedgerError("ledger.json", ["a cost was edited"])

    # The replay fails too: the ledger's problem explains it, so it is the one reported.
    with pytest.raises(LedgerError, match="a cost was edited") as caught:
        _resume_remote(_RemoteToy(fail_after=5), refuse)
    assert isinstance(caught.value.__cause__, RuntimeError)
    with pytest.raises(RuntimeError, match="went away"):
        _resume_remote(_RemoteToy(fail_after=5), check)


def test_a_resume_from_a_ledger_read_by_the_caller_equals_one_from_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.json"
    campaign(Walker(), path, segments=2)
    saved = load_ledger(path, KEY.verifying_key, consistent=False)
    copy = tmp_path / "copy.json"
    copy.write_bytes(path.read_bytes())
    from_saved = campaign(Walker(), path, saved=saved)
    from_file = campaign(Walker(), copy)
    assert from_saved.record is not None
    assert from_file.record is not None
    same_run(from_saved.record, from_file.record)
    same_run(from_saved.record, continuous(Walker()))
    # The columns kept from the adopted ledger and extended by play are what was saved.
    again = load_ledger(path, KEY.verifying_key)
    assert again.decisions == from_saved.ledger.decisions
    assert again.decisions.inputs[: len(saved.decisions)] == saved.decisions.inputs


def test_a_saved_ledger_needs_its_file() -> None:
    from playproof.errors import RunError

    saved_elsewhere = campaign(Walker(), None, segments=1).ledger
    with pytest.raises(RunError, match="pass that file as ledger"):
        campaign(Walker(), None, segments=1, saved=saved_elsewhere, ledger_key=KEY)


def test_a_second_campaign_on_a_ledger_in_use_is_refused(tmp_path: Path) -> None:
    """Two campaigns saving one ledger would overwrite each other's segments."""
    from playproof.errors import LedgerError

    path = tmp_path / "ledger.json"
    campaign(Walker(), path, segments=1)
    config = EpisodeConfig(max_turns=30, history=3)
    started, go = asyncio.Event(), asyncio.Event()

    class Held(Walker):
        """Waits in its second segment (after a save) until the second campaign was turned away."""

        async def act(
            self,
            observation: Observation,
            history: Sequence[HistoryEntry],
            context: DecisionContext,
        ) -> Action:
            if context.turn == 16:
                started.set()
                await go.wait()
            return await super().act(observation, history, context)

    def start(driver: Walker) -> Any:
        return run_campaign(
            ToyGame(), CONTRACT, driver, config, segment_turns=7, ledger=path, ledger_key=KEY
        )

    async def both() -> Any:
        first = asyncio.create_task(start(Held()))
        await started.wait()
        try:
            with pytest.raises(LedgerError, match="another campaign"):
                await start(Walker())
        finally:
            go.set()
        return await first

    assert asyncio.run(both()).status == "finished"
    assert load_ledger(path, KEY.verifying_key).finished
    # Once the first campaign is done the ledger is free again.
    assert campaign(Walker(), path).status == "finished"


def test_a_ledger_read_before_another_campaign_saved_it_is_refused(tmp_path: Path) -> None:
    """The command line reads the ledger before the campaign takes its lock: a save by
    another campaign in between must not be overwritten from the older copy."""
    from playproof.errors import LedgerError

    path = tmp_path / "ledger.json"
    campaign(Walker(), path, segments=1)
    stale = load_ledger(path, KEY.verifying_key, consistent=False)
    campaign(Walker(), path, segments=1)  # another campaign saves meanwhile
    newer = path.read_bytes()
    with pytest.raises(LedgerError, match="changed since it was read"):
        campaign(Walker(), path, saved=stale)
    assert path.read_bytes() == newer
    # Read again, it resumes.
    fresh = load_ledger(path, KEY.verifying_key, consistent=False)
    assert campaign(Walker(), path, saved=fresh).status == "finished"


def test_a_ledger_name_too_long_to_save_is_refused_before_any_turn(tmp_path: Path) -> None:
    """Saving writes ``.<name>.<token>.tmp``: a name that fits but leaves no room for
    that would fail the first save, after a segment was paid for."""
    from playproof.errors import LedgerError

    played: list[int] = []

    class Counting(Walker):
        async def act(
            self,
            observation: Observation,
            history: Sequence[HistoryEntry],
            context: DecisionContext,
        ) -> Action:
            played.append(context.turn)
            return await super().act(observation, history, context)

    path = tmp_path / ("l" * 240)
    with pytest.raises(LedgerError, match="name is too long to save it"):
        campaign(Counting(), path, segments=1)
    assert played == []
    assert list(tmp_path.iterdir()) == []
