"""Grading each shipped corpus in the jail against its reference emulator run directly.

Run: ``.venv/bin/python benchmarks/bench_corpora.py [corpus ...]`` (default:
``chip8 dmg-acid2 mooneye blargg``; an interpreter path without ``..``, as
for every grading). For each corpus, in the same run:

- direct: the reference candidate's own request handler (``Session``: PyBoy
  for the Game Boy corpora, the CHIP-8 interpreter for ``chip8``) driven in
  this process by the runner's own per-case conversation (``_drive``: the
  same requests, in the same order, with the same ROM bytes), so nothing but
  the process, the pipes and the jail is left out; one ``Session`` per case,
  as a fresh process would hold;
- jailed, one process for every case: the jail and the protocol alone;
- jailed, a fresh process (and jail) per case, strictly one after another:
  the baseline of the issue's target, with a new sandbox per process
  (``warm=False``) and with the slot's warm jail (``warm=True``, what a
  grading as root does: one sandbox, a fresh process with namespaces of its
  own per case). Its cost over direct splits into the
  candidate's own start (its interpreter and imports, measured by starting
  it unjailed until it answers ``HELLO``) and the jail's start and cleanup
  (a shell candidate jailed minus unjailed, as ``bench_corpus`` measures it).

The one-process runs alternate with direct runs (``PAIRS`` times) and each
is compared with the mean of the direct runs on either side. Target (issue:
more corpora): jail and protocol at most 20% per case with a fresh process
per case, the candidate's own start aside (it is the candidate's cost, not
the grader's; it is printed beside).
"""

from __future__ import annotations

import io
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench_corpus import SH_RESPONDER, _hello, candidate_start
from playproof.corpus import (
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate,
    reference_candidate_spec,
    run_corpus,
    shipped_paths,
)
from playproof.corpus._cgroup import memory_cgroup_in_use
from playproof.corpus._jail import JailLimits, JailSpec, reserve_lanes
from playproof.corpus._manifest import Corpus
from playproof.corpus._protocol import ProtocolBreach
from playproof.corpus._runner import _Collected, _drive
from playproof.corpus._warm import WarmJail, warm_usable
from playproof.corpus.chip8 import candidate as chip8_candidate

PAIRS = 5
STARTS = 20
DEFAULT_CORPORA = ("chip8", "dmg-acid2", "mooneye", "blargg")


class DirectChannel:
    """The runner's side of the protocol answered in this process by a candidate ``Session``."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def _ask(self, line: str, payload: bytes) -> str | bytes:
        self.session.stdin = io.BytesIO(payload)
        reply: bytes = self.session.handle(line.split())
        head, _, rest = reply.partition(b"\n")
        verb, _, text = head.decode("ascii").partition(" ")
        if verb == "OK":
            return text
        if verb == "DATA":
            return rest[: int(text)]
        raise ProtocolBreach(f"{line}: {head[:80]!r}")

    def request(self, line: str, payload: bytes = b"") -> str:
        """As ``CandidateChannel.request``."""
        reply = self._ask(line, payload)
        if not isinstance(reply, str):
            raise ProtocolBreach(f"{line}: DATA where OK was expected")
        return reply

    def data(self, line: str, limit: int = 1 << 20) -> bytes:
        """As ``CandidateChannel.data``."""
        reply = self._ask(line, b"")
        if not isinstance(reply, bytes) or len(reply) > limit:
            raise ProtocolBreach(f"{line}: not DATA of at most {limit} bytes")
        return reply


def direct(corpus: Corpus) -> float:
    """Seconds to run every case on the reference's own handler, in this process."""
    platform = corpus.manifest.platform
    module: Any = chip8_candidate if platform == "chip8" else reference_candidate
    started = time.perf_counter()
    for case in corpus.manifest.cases:
        session = module.Session(io.BytesIO())
        try:
            _drive(DirectChannel(session), case, corpus.roms[case.id], _Collected(), platform)
        finally:
            machine = getattr(session, "machine", None)
            if machine is not None and hasattr(machine, "pyboy"):
                machine.pyboy.stop(save=False)
    return time.perf_counter() - started


def warm_jail_start() -> float | None:
    """Seconds a warm jail adds to starting and cleaning up a shell candidate (median), or None.

    The same measure as the fresh jail's (jailed minus unjailed), through the
    slot's warm jail: its sandbox is started once, before the first pair.
    """
    spec = JailSpec(limits=JailLimits())
    if not warm_usable(spec):
        return None
    # With the control groups a grading as root uses, so their cost is counted too.
    jail = WarmJail(list(SH_RESPONDER), spec, cgroup=memory_cgroup_in_use(True) != "none")
    extra: list[float] = []
    try:
        with reserve_lanes(2) as lanes:
            for turn in range(STARTS + 1):
                plain = candidate_start(SH_RESPONDER, (), None)
                started = time.perf_counter()
                case = jail.start(lanes[turn % 2])
                _hello(case.process)  # type: ignore[arg-type]
                case.stop()
                case.discard()
                if turn:  # the first also starts the sandbox
                    extra.append(time.perf_counter() - started - plain)
    finally:
        jail.close()
    return statistics.median(extra)


def measure(name: str) -> None:
    """Measure one corpus and print its lines."""
    manifest_path, answers_path, roms_dir = shipped_paths(name)
    manifest = load_manifest(manifest_path)
    answers = load_answers(answers_path, manifest)
    corpus = load_corpus(manifest, roms_dir)
    spec = reference_candidate_spec(manifest.platform)
    count = manifest.denominator

    def one_process() -> float:
        outcome = run_corpus(corpus, spec, jobs=1, cases_per_process=count, prestart=False)
        return outcome.wall_seconds

    def fresh() -> float:
        outcome = run_corpus(corpus, spec, jobs=1, cases_per_process=1, prestart=False, warm=False)
        return outcome.wall_seconds

    def fresh_warm() -> float:
        outcome = run_corpus(corpus, spec, jobs=1, cases_per_process=1, prestart=False, warm=True)
        return outcome.wall_seconds

    passed = grade_candidate(corpus, answers, spec, jobs=1, cases_per_process=count).grade.passed
    direct(corpus)  # imports; not counted
    directs = [direct(corpus)]
    jailed: list[float] = []
    fresh_runs: list[float] = []
    warm_runs: list[float] = []
    for _ in range(PAIRS):
        jailed.append(one_process())
        fresh_runs.append(fresh())
        warm_runs.append(fresh_warm())
        directs.append(direct(corpus))
    start = statistics.median(
        candidate_start(spec.command, spec.read_only, None) for _ in range(STARTS)
    )
    extra: list[float] = []
    with reserve_lanes(1) as (lane,):
        for _ in range(STARTS):
            plain = candidate_start(SH_RESPONDER, (), None)
            extra.append(candidate_start(SH_RESPONDER, (), lane) - plain)
    jail_start = statistics.median(extra)
    warm_start = warm_jail_start()

    def over(runs: list[float], starts: int) -> list[float]:
        """Each run less ``starts`` candidate starts, over the mean of its direct neighbours."""
        return [
            (run - starts * start) / ((before + after) / 2) - 1
            for run, before, after in zip(runs, directs, directs[1:], strict=False)
        ]

    protocol = over(jailed, 1)
    grader = over(fresh_runs, count)
    warm = over(warm_runs, count)
    per_case = statistics.median(directs) / count

    def each(values: list[float]) -> str:
        return ", ".join(f"{v * 100:.0f}%" for v in values)

    print(f"{name}: {count} cases, reference passed {passed}")
    print(f"  direct, s:             {'  '.join(f'{d:6.3f}' for d in directs)}")
    print(f"  jailed, 1 process, s:  {'  '.join(f'{j:6.3f}' for j in jailed)}")
    print(f"  jailed, fresh each, s: {'  '.join(f'{f:6.3f}' for f in fresh_runs)}")
    print(f"  warm jail, fresh each: {'  '.join(f'{f:6.3f}' for f in warm_runs)}")
    warm_text = "" if warm_start is None else f", {warm_start * 1000:.1f} ms in a warm jail"
    print(
        f"  per case: direct {per_case * 1000:.1f} ms; the candidate's own start "
        f"{start * 1000:.0f} ms; the jail's start and cleanup {jail_start * 1000:.1f} ms"
        f"{warm_text}"
    )
    shared = statistics.median(protocol)
    estimate = f"new sandbox {(jail_start / per_case + shared) * 100:.0f}%"
    if warm_start is not None:
        estimate += f", warm jail {(warm_start / per_case + shared) * 100:.0f}%"
    print(
        f"  per case from the parts (the jail's start and cleanup over direct, plus the one-"
        f"process jail+protocol share): {estimate} (target <= 20%)"
    )
    print(
        f"  with the candidate's own start taken out: jail+protocol, one process for every "
        f"case {statistics.median(protocol) * 100:.0f}% over direct ({each(protocol)}); a fresh "
        f"process and jail per case {statistics.median(grader) * 100:.0f}% ({each(grader)}); "
        f"a fresh process per case in the slot's warm jail {statistics.median(warm) * 100:.0f}% "
        f"({each(warm)}) (target <= 20%)",
        flush=True,
    )


def main() -> None:
    """Measure every corpus named (default: all four)."""
    for name in sys.argv[1:] or DEFAULT_CORPORA:
        measure(name)


if __name__ == "__main__":
    if ".." in Path(sys.executable).parts:
        sys.exit("start this benchmark by an interpreter path without '..' (the jail needs it)")
    main()
