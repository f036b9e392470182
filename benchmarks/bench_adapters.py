"""Adapter throughput: batch replay through the worker vs a bare library loop, and live overhead.

For each packaged target (ale/breakout, gym/cartpole, retro/airstriker) this
measures, in one run on this machine:

- ``bare``: inputs/s of a loop that calls the emulator library directly and
  does the same per-input work the adapter's evidence needs (step the frames,
  read the screen and RAM/info, hash what the evidence hashes);
- ``in-process``: inputs/s of ``replay`` on the adapter, no worker (the
  adapter's own batch replay when it has one: what the worker child runs);
- ``worker``: inputs/s of ``WorkerGame.replay`` (the log crosses the process
  boundary once), and its ratio to ``bare`` (target >= 0.85 for ALE and gym);
- ``full``: for gym, the same ratio with a contract that also reads the
  observation numbers and the observation hash (the gym adapter computes only
  the evidence a contract reads, so the packaged score-only contract does less
  per input than ``bare``; this column does the same work as ``bare``);
- ``live``: microseconds a ``WorkerGame.advance`` round trip adds over an
  in-process ``step`` + ``evidence`` (the per-decision IPC overhead).

Both sides of a ratio do the same setup work per episode. The ALE adapter
resets a seed it has seen by restoring the state its first ROM load left
(where ``SNAPSHOT_RESET_PROVEN`` lists the ROM) and reloads the ROM otherwise;
the bare ALE loop does the same: it loads the ROM once before any round and
restores that state per episode, or reloads per episode when the adapter does.

Rates are the best of ROUNDS rounds, with ``bare`` and the worker measured in
alternating rounds: on a shared machine other load only ever slows a round
down, so the best round is the least disturbed, and alternating keeps a burst
of load from landing on one side of a ratio only.

    .venv/bin/python benchmarks/bench_adapters.py [ale|gym|retro ...]
"""

from __future__ import annotations

import hashlib
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from playproof.core.contract import Contract, parse_contract
from playproof.core.replay import replay
from playproof.targets._registry import Target, _load_factory
from playproof.workers import WorkerGame

LIVE_DECISIONS = 300
ROUNDS = 5
ROUND_SECONDS = 0.25
"""Each round repeats a loop until at least this much wall time has passed."""


def _rates(*runs: Callable[[], int]) -> list[float]:
    """Best inputs/s of each ``run`` (it returns the inputs it applied) over alternating rounds."""
    for run in runs:
        run()  # warm up caches and lazy imports
    best = [0.0] * len(runs)
    for _ in range(ROUNDS):
        for index, run in enumerate(runs):
            done, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < ROUND_SECONDS:
                done += run()
            best[index] = max(best[index], done / elapsed)
    return best


def _ale_resets_by_snapshot(path: str) -> bool:
    """True when the ALE adapter resets a seen seed by restoring its post-load state."""
    import ale_py

    from playproof.adapters.ale._game import SNAPSHOT_RESET_PROVEN

    with open(path, "rb") as rom:
        rom_sha = hashlib.sha256(rom.read()).hexdigest()
    return rom_sha in SNAPSHOT_RESET_PROVEN.get(ale_py.__version__, ())


def _bare_ale(target: Target) -> Callable[[], int]:
    from ale_py import ALEInterface, LoggerMode, roms

    ALEInterface.setLoggerMode(LoggerMode.Error)
    options = target.spec.options
    ale = ALEInterface()
    path = str(roms.get_rom_path(options["rom"]))
    by_snapshot = _ale_resets_by_snapshot(path)
    ale.setInt("random_seed", 0)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.loadROM(path)
    start = ale.cloneState(include_rng=True)  # what the adapter keeps after its first load
    words = {action.name.lower(): action for action in ale.getMinimalActionSet()}
    actions = [words[w] for w in target.reference]
    rgb = np.empty((*ale.getScreenDims(), 3), dtype=np.uint8)
    ram = np.empty(128, dtype=np.uint8)
    channels = list(options.get("ram", {}).values())
    skip = options.get("frame_skip", 4)

    def run() -> int:
        if by_snapshot:  # the adapter's reset for a seed it has seen
            ale.restoreState(start)
        else:
            ale.setInt("random_seed", 0)
            ale.setFloat("repeat_action_probability", 0.0)
            ale.loadROM(path)
        score = 0
        for action in actions:
            for _ in range(skip):
                score += ale.act(action)
                if ale.game_over():
                    break
            ale.getScreenRGB(rgb)
            hashlib.sha256(rgb.data).hexdigest()
            ale.getRAM(ram)
            _ = [int(ram[i]) for i in channels], ale.lives(), ale.getEpisodeFrameNumber()
            hashlib.sha256(ale.cloneState().serialize()).hexdigest()
        return len(actions)

    return run


def _bare_gym(target: Target) -> Callable[[], int]:
    import gymnasium

    from playproof.adapters.gym._names import KNOWN_ACTIONS

    options = target.spec.options
    env = gymnasium.make(options["env_id"], disable_env_checker=True, **options.get("kwargs", {}))
    names = {name: index for index, name in enumerate(KNOWN_ACTIONS[type(env.unwrapped).__name__])}
    actions = [names[w] for w in target.reference]

    def run() -> int:
        env.reset(seed=0)
        score = 0
        for action in actions:
            obs, reward, terminated, truncated, _info = env.step(action)
            score += round(float(reward) * 1000)
            _ = [round(float(v) * 1000) for v in np.asarray(obs).ravel().tolist()]
            hashlib.sha256(np.ascontiguousarray(obs).data).hexdigest()
            if terminated or truncated:  # the adapter applies nothing after the end
                break
        return len(actions)

    return run


def _bare_retro(target: Target) -> tuple[Callable[[], int], Callable[[], None]]:
    import stable_retro

    from playproof.adapters.retro._pad import pad_words

    options = target.spec.options
    env: Any = stable_retro.make(game=options["game"], render_mode=None)
    words = pad_words(env.buttons, options.get("buttons"))
    masks = [words.get(w, words["noop"]) for w in target.reference]
    skip = options.get("frame_skip", 4)

    def run() -> int:
        env.reset(seed=0)
        em, data = env.em, env.data
        for mask in masks:
            for _ in range(skip):
                em.set_button_mask(mask, 0)
                em.step()
            data.update_ram()
            data.lookup_all()
            data.is_done()
            screen = em.get_screen()
            hashlib.sha256(screen.data).hexdigest()
            np.count_nonzero(screen[::8, ::8].any(axis=2))
        return len(masks)

    return run, env.close


def _live_overhead(target: Target, words: Sequence[str]) -> float:
    """Microseconds per decision that the worker round trip adds."""
    local = _load_factory(target.spec.factory)(**target.spec.options)
    local.reset(0)
    start = time.perf_counter()
    for word in words:
        local.step(word)
        local.evidence()
    in_process = (time.perf_counter() - start) / len(words)
    local.close()
    with WorkerGame(target.spec.factory, target.spec.options) as worker:
        worker.reset(0)
        start = time.perf_counter()
        for word in words:
            worker.advance(word, observe=False)
        remote = (time.perf_counter() - start) / len(words)
    return (remote - in_process) * 1e6


def _reads_everything(contract: Contract) -> Contract:
    """``contract`` plus checks on an observation number and the observation hash (gym)."""
    extra = [
        {"id": "probe-obs", "check": {"kind": "state", "key": "obs_0", "op": ">", "value": 10**9}},
        {"id": "probe-hash", "check": {"kind": "frame-hash", "hash": "0" * 64}},
    ]
    data = contract.to_json()
    return parse_contract({**data, "milestones": [*data["milestones"], *extra]})


def bench(family: str) -> dict[str, float]:
    """Measure one adapter family on its packaged target."""
    from playproof.targets import ale, gym, retro

    target = {"ale": ale.breakout, "gym": gym.cartpole, "retro": retro.airstriker}[family]()
    inputs, contract = target.reference, target.contract
    full_contract = _reads_everything(contract)
    close: Callable[[], None] = lambda: None  # noqa: E731
    if family == "ale":
        bare_run = _bare_ale(target)
    elif family == "gym":
        bare_run = _bare_gym(target)
    else:
        bare_run, close = _bare_retro(target)
    with WorkerGame(target.spec.factory, target.spec.options) as worker:
        runs = [bare_run, lambda: worker.replay(0, inputs, contract).turns]
        if family == "gym":
            runs.append(lambda: worker.replay(0, inputs, full_contract).turns)
        bare, worker_rate, *full = _rates(*runs)
    close()  # stable-retro: one emulator per process
    game = _load_factory(target.spec.factory)(**target.spec.options)
    (in_process,) = _rates(lambda: replay(game, 0, inputs, contract).turns)
    game.close()
    live = _live_overhead(target, inputs[:LIVE_DECISIONS])
    return {
        "bare": bare,
        "in_process": in_process,
        "worker": worker_rate,
        "ratio": worker_rate / bare,
        "full": full[0] / bare if full else float("nan"),
        "live_us": live,
    }


def main(argv: Sequence[str]) -> None:
    """Run the families named in ``argv`` (default: all) and print one line each."""
    warnings.simplefilter("ignore")
    families = list(argv) or ["ale", "gym", "retro"]
    print(
        f"{'adapter':8} {'bare/s':>10} {'in-proc/s':>10} {'worker/s':>10} "
        f"{'ratio':>6} {'full':>6} {'live us':>8}"
    )
    for family in families:
        r = bench(family)
        print(
            f"{family:8} {r['bare']:10.0f} {r['in_process']:10.0f} {r['worker']:10.0f} "
            f"{r['ratio']:6.2f} {r['full']:6.2f} {r['live_us']:8.0f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
