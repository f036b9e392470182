"""PyBoy adapter throughput: batch replay through a worker vs a bare PyBoy loop, in one run.

The bare loop does the same work per input as the adapter's evidence path:
press/tick/release/tick (8 frames, the last one rendered), SHA-256 of the
screen buffer and a read of every declared RAM channel. Ratios above 1 mean
the worker is faster than that loop (it skips hashing when the contract does
not need it). Also reports the live per-decision overhead of a worker round
trip. Run: ``.venv/bin/python benchmarks/bench_pyboy.py``.
"""

from __future__ import annotations

import hashlib
import io
import statistics
import time
import warnings
from collections.abc import Sequence

from playproof.adapters.pyboy import make_game
from playproof.adapters.pyboy.rom.pp_collect import options
from playproof.core.contract import Contract, parse_contract
from playproof.core.game import advance
from playproof.targets.pyboy import pp_collect
from playproof.workers import WorkerGame

REPEATS = 5
"""The reference is replayed this many times back to back per measured log."""
ROUNDS = 5
"""Each measurement is the best of this many rounds (noise only ever adds time)."""
LIVE_DECISIONS = 300
BUTTONS = frozenset({"a", "b", "start", "select", "up", "down", "left", "right"})


def bare_loop(inputs: Sequence[str]) -> float:
    """Seconds for a direct PyBoy loop with the adapter's per-input work."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pyboy import PyBoy

        opts = options()
        channels = [(c["address"], c["size"]) for c in opts["channels"].values()]
        game = make_game(**opts)  # only to boot and capture power-on identically
        state = io.BytesIO()
        game._pyboy.save_state(state)
        rom = game._rom
        game.close()
        emulator = PyBoy(io.BytesIO(rom), window="null", sound_emulated=False, log_level="ERROR")
    emulator.set_emulation_speed(0)
    memory = emulator.memory
    start = time.perf_counter()
    emulator.load_state(io.BytesIO(state.getvalue()))
    memory[0xC014], memory[0xC015] = 1, 0
    for word in inputs:
        if word in BUTTONS:
            emulator.button_press(word)
            emulator.tick(4, False, False)
            emulator.button_release(word)
            emulator.tick(4, True, False)
        else:
            emulator.tick(8, True, False)
        hashlib.sha256(emulator.screen.ndarray.data).hexdigest()
        _ = [memory[a] | (memory[a + 1] << 8 if s == 2 else 0) for a, s in channels]
    elapsed = time.perf_counter() - start
    emulator.stop(save=False)
    return elapsed


def timed_replay(worker: WorkerGame, inputs: Sequence[str], contract: Contract) -> float:
    start = time.perf_counter()
    worker.replay(0, inputs, contract)
    return time.perf_counter() - start


def main() -> None:
    """Measure and print throughput ratios and the live round-trip overhead."""
    target = pp_collect()
    inputs = list(target.reference) * REPEATS
    hashing = parse_contract(
        {
            "game": "pp-collect",
            "milestones": [{"id": "frame", "check": {"kind": "frame-hash", "hash": "0" * 64}}],
        }
    )
    worker = WorkerGame("playproof.adapters.pyboy:make_game", options())
    in_process = make_game(**options())
    try:
        # Interleaved rounds so machine load drifts over all three alike; keep each best.
        bare = hashed = contract_only = float("inf")
        for _ in range(ROUNDS):
            bare = min(bare, bare_loop(inputs))
            hashed = min(hashed, timed_replay(worker, inputs, hashing))
            contract_only = min(contract_only, timed_replay(worker, inputs, target.contract))
        live_worker: list[float] = []
        live_local: list[float] = []
        for game, sink in ((worker, live_worker), (in_process, live_local)):
            game.reset(0)
            for word in inputs[:LIVE_DECISIONS]:
                start = time.perf_counter()
                advance(game, word, observe=False)
                sink.append(time.perf_counter() - start)
    finally:
        worker.close()
        in_process.close()
    count = len(inputs)
    overhead = (statistics.median(live_worker) - statistics.median(live_local)) * 1e6
    print(f"inputs per log: {count} (8 frames each)")
    print(f"bare PyBoy loop (tick + screen hash + RAM): {count / bare:8.0f} inputs/s")
    print(
        f"worker batch replay, frame hash per input:  {count / hashed:8.0f} inputs/s  "
        f"ratio {bare / hashed:.2f}x"
    )
    print(
        f"worker batch replay, score contract only:   {count / contract_only:8.0f} inputs/s  "
        f"ratio {bare / contract_only:.2f}x"
    )
    print(
        f"live advance(): worker {statistics.median(live_worker) * 1e6:.0f} us, in-process "
        f"{statistics.median(live_local) * 1e6:.0f} us, IPC overhead {overhead:.0f} us/decision"
    )


if __name__ == "__main__":
    main()
