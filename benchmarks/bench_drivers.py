"""Per-decision overhead: one-shot CLI driver versus persistent session driver.

Both drivers play the same 300-decision episode against a trivial agent
program (it answers the first declared input at once), so the wall time per
decision is the driver's overhead: spawning, the JSON request, the reply.
Targets (issue 4): the session at most 0.5 ms per decision and at least 20x
cheaper than one-shot spawning.

It also prices containment (every agent under an init of its own in a fresh PID
namespace, so that nothing it spawns outlives it): the one-shot episode is run
alternately contained and with the bare process-group start, and the medians
of the paired ratios are reported, of wall time and of CPU time (this process
and its children: the agent, and when contained the launcher and its init).
Wall time on a loaded machine also counts the waits of the extra processes
for a core, so the target is on CPU time: at most 1.2x.

    .venv/bin/python benchmarks/bench_drivers.py [--decisions 300] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from playproof import _containment
from playproof.core.agent import DecisionContext, Driver, HistoryEntry
from playproof.core.observation import Observation
from playproof.drivers.cli import CliDriver
from playproof.drivers.session import SessionDriver

VOCABULARY = ("up", "down", "left", "right")
ONE_SHOT_AGENT = (
    "import json, sys\n"
    "request = json.load(sys.stdin)\n"
    "print(json.dumps({'input': request['vocabulary'][0], 'cost_usd': 0.0}))\n"
)
SESSION_AGENT = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    request = json.loads(line)\n"
    "    sys.stdout.write(json.dumps({'input': request['vocabulary'][0], 'cost_usd': 0.0,"
    " 'turn': request['turn']}) + '\\n')\n"
    "    sys.stdout.flush()\n"
)
BOARD = "score 1024\n 2    4    8   16\n 32   64  128  256\n  .    .    2    4\n  .    .    .    2"
TARGET_SESSION_US = 500.0
TARGET_RATIO = 20.0
TARGET_CONTAINMENT_CPU_RATIO = 1.2
CONTAINMENT_PAIRS = 5


async def _episode(driver: Driver, decisions: int) -> float:
    """Seconds of wall time the episode's decisions took (the child's start-up included)."""
    observation = Observation(text=BOARD)
    history: list[HistoryEntry] = []
    started = time.perf_counter()
    try:
        for turn in range(1, decisions + 1):
            context = DecisionContext(
                turn=turn,
                max_turns=decisions,
                seed=1,
                spent_usd=0.0,
                remaining_usd=None,
                vocabulary=VOCABULARY,
            )
            action = await driver.act(observation, history, context)
            history.append(HistoryEntry(turn=turn, observation=BOARD, input=action.input))
        return time.perf_counter() - started
    finally:
        close = getattr(driver, "aclose", None)
        if close is not None:
            await close()


def measure(decisions: int, repeats: int = 3) -> dict[str, float]:
    """Microseconds per decision for each driver (median of ``repeats`` episodes), and ratio.

    Each session episode starts its own child, so the session figure includes the
    child's start-up spread over the episode; ``session_p50_us`` is the steady-state
    median answer latency the driver itself reports.
    """
    python = [sys.executable, "-I", "-S", "-c"]
    one_shot = CliDriver([*python, ONE_SHOT_AGENT], name="bench-one-shot")
    session = SessionDriver([*python, SESSION_AGENT], name="bench-session")
    asyncio.run(_episode(session, 5))  # warm the page cache for both programs alike
    one_shot_s = statistics.median(
        asyncio.run(_episode(one_shot, decisions)) for _ in range(max(1, repeats // 2))
    )
    session_s = statistics.median(asyncio.run(_episode(session, decisions)) for _ in range(repeats))
    one_shot_us = one_shot_s / decisions * 1e6
    session_us = session_s / decisions * 1e6
    return {
        "decisions": decisions,
        "one_shot_us_per_decision": one_shot_us,
        "session_us_per_decision": session_us,
        "session_p50_us": session.provenance()["latency_ms"]["p50"] * 1000,
        "ratio": one_shot_us / session_us,
    }


def measure_containment(decisions: int, pairs: int = CONTAINMENT_PAIRS) -> dict[str, Any]:
    """One-shot microseconds per decision contained and as a bare process group, paired.

    Episodes alternate between the two starts so that load drifts hit both
    alike; the ratio is the median of the per-pair ratios.
    """
    contained = _containment.containment()
    bare = _containment.Launcher("process-group", reason="the benchmark's baseline")
    python = [sys.executable, "-I", "-S", "-c"]
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    times: dict[str, list[float]] = {"contained": [], "bare": []}
    cpu: dict[str, list[float]] = {"contained": [], "bare": []}
    try:
        for _ in range(pairs):
            for name, launcher in (("bare", bare), ("contained", contained)):
                _containment._chosen[:] = [launcher]
                driver = CliDriver([*python, ONE_SHOT_AGENT], name=f"bench-{name}")
                before = _cpu_seconds()
                times[name].append(asyncio.run(_episode(driver, decisions)) / decisions * 1e6)
                cpu[name].append((_cpu_seconds() - before) / decisions * 1e6)
            ratios.append(times["contained"][-1] / times["bare"][-1])
            cpu_ratios.append(cpu["contained"][-1] / cpu["bare"][-1])
    finally:
        _containment._chosen[:] = [contained]
    return {
        "containment": contained.kind,
        "contained_us_per_decision": statistics.median(times["contained"]),
        "bare_us_per_decision": statistics.median(times["bare"]),
        "containment_ratio": statistics.median(ratios),
        "contained_cpu_us_per_decision": statistics.median(cpu["contained"]),
        "bare_cpu_us_per_decision": statistics.median(cpu["bare"]),
        "containment_cpu_ratio": statistics.median(cpu_ratios),
    }


def _cpu_seconds() -> float:
    """CPU time of this process and of its waited-for descendants so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result: dict[str, Any] = measure(args.decisions)
    result |= measure_containment(max(1, args.decisions // 3))
    if args.json:
        print(json.dumps(result))
        return 0
    session_ok = result["session_us_per_decision"] <= TARGET_SESSION_US
    ratio_ok = result["ratio"] >= TARGET_RATIO
    print(f"decisions per episode:      {args.decisions}")
    print(f"one-shot CLI per decision:  {result['one_shot_us_per_decision']:10.1f} us")
    print(
        f"session per decision:       {result['session_us_per_decision']:10.1f} us"
        f"   (target <= {TARGET_SESSION_US:.0f} us: {'met' if session_ok else 'MISSED'})"
    )
    print(f"session steady-state p50:   {result['session_p50_us']:10.1f} us")
    print(
        f"one-shot / session:         {result['ratio']:10.1f} x"
        f"   (target >= {TARGET_RATIO:.0f} x: {'met' if ratio_ok else 'MISSED'})"
    )
    containment_ok = result["containment_cpu_ratio"] <= TARGET_CONTAINMENT_CPU_RATIO
    print(f"containment here:           {result['containment']}")
    print(f"one-shot, bare group:       {result['bare_us_per_decision']:10.1f} us")
    print(f"one-shot, contained:        {result['contained_us_per_decision']:10.1f} us")
    print(f"contained / bare, wall:     {result['containment_ratio']:10.2f} x")
    print(f"one-shot CPU, bare group:   {result['bare_cpu_us_per_decision']:10.1f} us")
    print(f"one-shot CPU, contained:    {result['contained_cpu_us_per_decision']:10.1f} us")
    print(
        f"contained / bare, CPU:      {result['containment_cpu_ratio']:10.2f} x"
        f"   (target <= {TARGET_CONTAINMENT_CPU_RATIO:.1f} x: "
        f"{'met' if containment_ok else 'MISSED'})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
