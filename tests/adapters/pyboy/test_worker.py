"""pp-collect and Blargg ROMs through separately launched worker processes."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

import pytest

from playproof.adapters.pyboy import PyBoyGame, corpus_rom
from playproof.core.contract import parse_contract
from playproof.errors import CheckpointError, WorkerCrashed
from playproof.targets.pyboy import pp_collect
from playproof.workers import WorkerGame

Spawn = Callable[..., WorkerGame]


def reaped(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def test_two_workers_give_identical_evidence(spawn: Spawn, game: PyBoyGame) -> None:
    target = pp_collect()
    seed, inputs, contract = target.spec.reference_seed, target.reference, target.contract
    first = spawn().replay(seed, inputs, contract, trace=True)
    second = spawn().replay(seed, inputs, contract, trace=True)
    assert first.trace is not None
    assert len(first.trace) == len(inputs) + 1
    assert first == second
    assert game.replay(seed, inputs, contract, trace=True) == first


def test_save_hash_is_stable_across_processes(spawn: Spawn) -> None:
    target = pp_collect()
    inputs = target.reference[:12]
    traces = [
        spawn(save_hash=True).replay(0, inputs, target.contract, trace=True).trace for _ in range(2)
    ]
    assert traces[0] == traces[1]
    assert traces[0] is not None
    hashes = [e.save_hash for e in traces[0]]
    assert None not in hashes
    assert len(set(hashes)) == len(hashes)


def test_live_play_and_checkpoint_through_a_worker(spawn: Spawn) -> None:
    worker = spawn(image_scale=2)
    worker.reset(1)
    snapshot = worker.advance("start", observe=True)
    assert snapshot.observation is not None
    assert snapshot.observation.images
    assert "SCORE 000" in snapshot.observation.text
    blob = worker.checkpoint()
    after = [worker.advance(w, observe=False).evidence for w in ("right", "down", "noop")]
    worker.restore(blob)
    assert [worker.advance(w, observe=False).evidence for w in ("right", "down", "noop")] == after
    with pytest.raises(CheckpointError):
        worker.restore(blob[:-1])
    assert worker.over() is False


def test_killing_the_worker_mid_replay_is_a_typed_error(spawn: Spawn) -> None:
    worker = spawn()
    pid = worker.pid
    long_log = ["right", "left"] * 50_000  # tens of seconds of emulation
    contract = pp_collect().contract
    killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(WorkerCrashed):
            worker.replay(0, long_log, contract)
    finally:
        killer.cancel()
    assert reaped(pid)


def test_blargg_serial_events_cross_the_worker() -> None:
    path = corpus_rom("blargg", "cpu_instrs/individual/06-ld r,r.gb")
    contract = parse_contract(
        {
            "game": "blargg-06",
            "milestones": [
                {"id": "named", "check": {"kind": "event", "event": "serial:06-ld r,r"}},
                {
                    "id": "passed",
                    "requires": ["named"],
                    "check": {"kind": "event", "event": "serial:Passed"},
                },
            ],
        }
    )
    worker = WorkerGame(
        "playproof.adapters.pyboy:make_game",
        {"rom_path": str(path), "frames_per_input": 60, "press_frames": 1, "game_id": "blargg"},
    )
    try:
        result = worker.replay(0, ["noop"] * 10, contract)
    finally:
        worker.close()
    assert [m.id for m in result.verified] == ["named", "passed"]
