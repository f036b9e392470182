"""The runner: executors agree, repetitions reseed the agent, a failing cell fails alone."""

import json
import os
import subprocess
import sys
from pathlib import Path

from playproof.cli._matrix import build_agent
from playproof.core.record import RunRecord, parse_run_record
from playproof.matrix import CellEvent, parse_spec, record_path, run_matrix
from playproof.sign import SigningKey, parse_envelope

SUPPORT = Path(__file__).resolve().parents[1] / "support"

SPEC = """
targets = ["native/2048"]
seeds = [0, 1]
repetitions = 2
max_turns = 15

[[agents]]
name = "walk"
agent = "baseline:random-walk"
agent_seed = 5

[[agents]]
name = "robin"
agent = "baseline:round-robin"
"""


def _record(path: Path) -> RunRecord:
    return parse_run_record(
        json.loads(parse_envelope(path.read_bytes()).payload_bytes())["predicate"]
    )


def test_the_pool_and_this_process_play_the_same_episodes(tmp_path: Path) -> None:
    spec = parse_spec(SPEC)
    key = SigningKey.generate()
    events: list[CellEvent] = []
    serial = run_matrix(spec, tmp_path / "serial", key, build_agent, executor="serial",
                        on_cell=events.append)  # fmt: skip
    pool = run_matrix(spec, tmp_path / "pool", key, build_agent, executor="local", jobs=2)
    assert serial.played == pool.played == 8
    assert [e.done for e in events] == list(range(1, 9))
    assert {e.status for e in events} == {"played"}
    for cell in spec.cells():
        one = _record(record_path(tmp_path / "serial", cell))
        other = _record(record_path(tmp_path / "pool", cell))
        assert one.inputs == other.inputs
        assert one.claimed == other.claimed
        assert one.actor == other.actor
        assert one.provenance.settings is not None
        assert one.provenance.settings.options["matrix_agent"] == cell.agent


def test_repetitions_reseed_a_random_agent(tmp_path: Path) -> None:
    spec = parse_spec(SPEC)
    run_matrix(spec, tmp_path, SigningKey.generate(), build_agent, executor="serial")
    walk = [c for c in spec.cells() if c.agent == "walk" and c.seed == 0]
    actors = [_record(record_path(tmp_path, c)).actor.id for c in walk]
    assert actors == ["random-walk@5", "random-walk@6"]


def test_a_failing_cell_is_reported_and_the_others_are_recorded(tmp_path: Path) -> None:
    (tmp_path / "spec.toml").write_text(
        SPEC.replace(
            'agent = "baseline:random-walk"',
            'agent = "python:matrix_agents:fails_on_seed_one"\ncost_usd = 0.0',
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SUPPORT), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, "-c", "from playproof.cli import main; main()", "--json", "matrix",
         "run", "spec.toml", "--out", "runs", "--key-dir", "keys", "--executor", "serial"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    summary = json.loads(result.stdout)
    assert summary["played"] == 6
    assert sorted(f["cell"] for f in summary["failed"]) == [
        "walk__native.2048__s1__r0",
        "walk__native.2048__s1__r1",
    ]
    assert "cannot play seed 1" in summary["failed"][0]["error"]
    assert "2 cells failed; rerun to retry them" in result.stderr
    assert not (tmp_path / "runs" / "walk__native.2048__s1__r0.json").exists()


def test_a_record_of_another_build_is_played_again_on_resume(tmp_path: Path) -> None:
    """A rerun after the target's build changed replays the cells played on the old build
    (their records would only be rejected by the report), and skips the others."""
    from playproof.sign import sign_record

    spec = parse_spec(SPEC)
    key = SigningKey.generate()
    run_matrix(spec, tmp_path, key, build_agent, executor="serial")
    cell = spec.cells()[0]
    old = _record(record_path(tmp_path, cell))
    moved = old.model_copy(
        update={"target": old.target.model_copy(update={"build_digest": "0" * 64})}
    )
    record_path(tmp_path, cell).write_bytes(sign_record(moved, key).to_bytes())
    again = run_matrix(spec, tmp_path, key, build_agent, executor="serial")
    assert (again.played, again.skipped) == (1, 7)
    assert _record(record_path(tmp_path, cell)).target.build_digest == old.target.build_digest
