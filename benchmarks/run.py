"""Run every benchmark in this folder, one after another, and print what each measured.

Each ``bench_*.py`` measures its own baseline in the same run and reports
ratios; absolute times on shared machines are noise. Pass names to run a
subset: ``python benchmarks/run.py engine worker``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT_SECONDS = 1800
"""The longest one benchmark may run before it is stopped."""
STOP_GRACE_SECONDS = 60
"""How long a stopped benchmark may take to clean up before it is killed."""


def main(names: list[str]) -> int:
    """Run the selected benchmarks; return a non-zero status if any failed."""
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in names]
    failed = 0
    for script in scripts:
        print(f"=== {script.stem} ===", flush=True)
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, str(script)])
        try:
            returncode = process.wait(timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            # SIGTERM first: the benchmark's clean-up (a database server it started, its
            # temporary folders) runs; SIGKILL only if it does not end.
            process.terminate()
            try:
                process.wait(timeout=STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            print(f"{script.stem}: stopped after {TIMEOUT_SECONDS} s")
            failed += 1
            continue
        if returncode != 0:
            print(f"{script.stem}: exited with {returncode}")
            failed += 1
        print(f"({time.perf_counter() - start:.1f} s)\n", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
