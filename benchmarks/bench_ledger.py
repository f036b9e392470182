"""What signing costs a campaign ledger: signed save against an unsigned save, in one run.

Builds a 10,000-decision ledger on ``native/2048`` (random walk, no stop at
game over), then measures in the same run:

- ``unsigned_save``: the save as it was before ledgers were signed (serialize,
  temporary file, fsync, rename, fsync of the folder);
- ``signed_save``: :func:`playproof.engine.save_ledger` (the same, plus one
  SHA-256 pass, one Ed25519 signature and the signature member);
- ``load``: :func:`playproof.engine.load_ledger` (signature check, parse,
  consistency checks);
- ``verify``: the signature check alone (digest and Ed25519 check);
- ``resume``: a full resume (load, check, replay on the live game, rebuild),
  the phase ``bench_campaign.py`` measures.

The saves run in pairs (order alternating) and the median of the per-pair
ratios is reported, in wall time (what a campaign waits, fsync included;
disk noise on a shared machine shows here) and in CPU time (what signing
adds to the work). The resume phases run interleaved, best round kept.
Budgets: signed / unsigned save at most 1.05x in wall time; the signature
check at most 5% of a resume.

    python benchmarks/bench_ledger.py [decisions]
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import best_interleaved
from playproof.drivers import BaselineDriver
from playproof.engine import EpisodeConfig, Ledger, load_ledger, run_campaign, save_ledger
from playproof.engine._ledger import ledger_body, signed_message
from playproof.sign import SigningKey
from playproof.targets import get_target

ROUNDS = 31
"""Paired rounds: each round saves unsigned and signed back to back (order alternating)."""
RESUME_ROUNDS = 7
"""Interleaved rounds of the load, check and resume phases; the best round of each counts."""


def _paired(
    baseline: Callable[[], object], contender: Callable[[], object], clock: Callable[[], float]
) -> tuple[float, float, float]:
    """Median baseline and contender seconds and the median of per-round ratios."""
    base, cont, ratios = [], [], []
    for round_ in range(ROUNDS):
        pair = [(0, baseline), (1, contender)]
        if round_ % 2:
            pair.reverse()
        took = [0.0, 0.0]
        for slot, fn in pair:
            gc.collect()
            start = clock()
            fn()
            took[slot] = clock() - start
        base.append(took[0])
        cont.append(took[1])
        ratios.append(took[1] / took[0])
    return statistics.median(base), statistics.median(cont), statistics.median(ratios)


def _unsigned_save(ledger: Ledger, path: Path) -> None:
    """The atomic save without a signature: the baseline signing is measured against."""
    temporary = path.with_name(f".{path.name}.baseline.tmp")
    with temporary.open("wb") as handle:
        handle.write(ledger_body(ledger))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def run(decisions: int = 10_000) -> dict[str, float]:
    """Measure and return seconds and the ratios."""
    target = get_target("native/2048")
    driver = BaselineDriver("random-walk", seed=1)
    config = EpisodeConfig(max_turns=decisions + 1, stop_at_game_over=False, history=32)
    key = SigningKey.generate()
    trusted = key.verifying_key
    scratch = tempfile.TemporaryDirectory(prefix="bench-ledger-")
    folder = Path(scratch.name)
    path = folder / "ledger.json"
    game = target.open(worker=False)
    try:

        def campaign(segments: int) -> None:
            asyncio.run(
                run_campaign(
                    game,
                    target.contract,
                    driver,
                    config,
                    segment_turns=decisions,
                    ledger=path,
                    ledger_key=key,
                    segments=segments,
                )
            )

        campaign(1)
        ledger = load_ledger(path, trusted)
        body = ledger_body(ledger)
        signature = key.sign(signed_message(body))
        unsigned_path = folder / "unsigned.json"
        signed_path = folder / "signed.json"

        def unsigned() -> None:
            _unsigned_save(ledger, unsigned_path)

        def signed() -> None:
            save_ledger(ledger, signed_path, key)

        times: dict[str, float] = {}
        for label, clock in (("wall", time.perf_counter), ("cpu", time.process_time)):
            base, cont, ratio = _paired(unsigned, signed, clock)
            times[f"unsigned_save_{label}_s"] = base
            times[f"signed_save_{label}_s"] = cont
            times[f"signed_vs_unsigned_{label}"] = ratio
        times |= best_interleaved(
            {
                "load_s": lambda: load_ledger(path, trusted),
                "verify_s": lambda: trusted.verify(signature, signed_message(body)),
                "resume_s": lambda: campaign(0),
            },
            RESUME_ROUNDS,
            time.perf_counter,
        )
        ledger_bytes = path.stat().st_size
    finally:
        game.close()
        scratch.cleanup()
    times["verify_share_of_resume"] = times["verify_s"] / times["resume_s"]
    times["decisions"] = float(len(ledger.decisions))
    times["ledger_bytes"] = float(ledger_bytes)
    return times


def main() -> None:
    """Print the measurements."""
    decisions = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    r = run(decisions)
    print(
        f"ledger signing on native/2048, {r['decisions']:.0f} decisions, "
        f"{r['ledger_bytes'] / 1e6:.2f} MB"
    )
    for label, what in (("wall", "wall time, fsync included"), ("cpu", "CPU time")):
        print(
            f"  save ({what}, medians of {ROUNDS} pairs): unsigned "
            f"{r[f'unsigned_save_{label}_s'] * 1e3:.2f} ms, signed "
            f"{r[f'signed_save_{label}_s'] * 1e3:.2f} ms, "
            f"signed / unsigned {r[f'signed_vs_unsigned_{label}']:.3f}x"
        )
    print(f"  load (authenticated) {r['load_s'] * 1e3:9.2f} ms   (best of {RESUME_ROUNDS})")
    print(f"  signature check      {r['verify_s'] * 1e3:9.2f} ms")
    print(f"  full resume          {r['resume_s'] * 1e3:9.2f} ms")
    print(f"  signature check / resume {r['verify_share_of_resume'] * 100:6.2f}%   (budget <= 5%)")
    print("  budget for a save: signed / unsigned <= 1.05x in wall time")


if __name__ == "__main__":
    main()
