"""A cell or replay that hangs on the pool does not hang the matrix run or its report.

Each call runs on a daemon thread that the test waits for with a generous bound:
before the fix the error was raised but closing the pool then waited for the hung
task forever, so the thread never came back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from playproof.cli._matrix import build_agent
from playproof.errors import RunError
from playproof.matrix import CellEvent, collect, parse_spec, run_matrix
from playproof.sign import SigningKey

SPEC = """
targets = ["native/2048"]
seeds = [0, 1]
max_turns = 5

[[agents]]
name = "robin"
agent = "baseline:round-robin"
"""

BOUND_S = 90.0
"""How long a call may take here before it counts as hung (far above its timeout)."""


def _outcome(call: Callable[[], object]) -> BaseException | object:
    """What ``call`` returned or raised, run on a thread; fails the test if it hangs."""
    answer: list[BaseException | object] = []

    def target() -> None:
        try:
            answer.append(call())
        except BaseException as exc:  # KeyboardInterrupt included: it is the answer here
            answer.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), "the call hung: closing the pool waited for a hung task"
    return answer[0]


def test_a_cell_that_hangs_ends_the_run_with_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matrix_agents

    from playproof.matrix import _runner

    monkeypatch.setattr(_runner, "play_cell", matrix_agents.hang_on_seed_one)
    monkeypatch.setattr(_runner, "CELL_TIMEOUT_S", 2.0)
    events: list[CellEvent] = []
    spec, key = parse_spec(SPEC), SigningKey.generate()
    error = _outcome(
        lambda: run_matrix(
            spec, tmp_path, key, build_agent, executor="local", jobs=2, on_cell=events.append
        )
    )
    assert isinstance(error, RunError)
    assert "no cell finished within 2 s" in str(error)
    played = [e.cell.seed for e in events if e.status == "played"]
    assert 1 not in played
    # The cells finished are kept: a rerun without the hang resumes from them.
    monkeypatch.undo()
    again = run_matrix(spec, tmp_path, key, build_agent, executor="serial")
    assert (again.played, again.skipped) == (2 - len(played), len(played))


def test_an_interrupt_while_a_cell_hangs_reaches_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matrix_agents

    from playproof.matrix import _runner

    monkeypatch.setattr(_runner, "play_cell", matrix_agents.hang_on_seed_one)

    def interrupt(event: CellEvent) -> None:
        raise KeyboardInterrupt  # as Ctrl-C would, once the cell of seed 0 is in

    spec, key = parse_spec(SPEC), SigningKey.generate()
    error = _outcome(
        lambda: run_matrix(
            spec, tmp_path, key, build_agent, executor="local", jobs=2, on_cell=interrupt
        )
    )
    assert isinstance(error, KeyboardInterrupt)


def test_a_replay_that_hangs_ends_the_report_with_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matrix_agents

    from playproof.matrix import _collect

    key = SigningKey.generate()
    outcome = run_matrix(parse_spec(SPEC), tmp_path, key, build_agent, executor="serial")
    assert outcome.played == 2
    monkeypatch.setattr(_collect, "_replay", matrix_agents.hang_replay)
    monkeypatch.setattr(_collect, "REPLAY_TIMEOUT_S", 2.0)
    error = _outcome(
        lambda: collect(tmp_path, [key.verifying_key], executor="local", jobs=1, trust_stored=False)
    )
    assert isinstance(error, RunError)
    assert "took over 2 s" in str(error)
