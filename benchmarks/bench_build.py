"""The controlled Rust build's overhead against a plain ``cargo build`` of the same crate.

Run: ``.venv/bin/python benchmarks/bench_build.py``. The crate is the Rust
starter workspace with the test suite's CHIP-8 interpreter as its ``main.rs``.
Each round builds it both ways from scratch (a fresh target folder), one right
after the other, alternating which goes first:

- plain: ``cargo build --release --offline`` on the host, no jail;
- controlled: what ``task run-tests`` does for a cargo task (toolchain
  fingerprint check, clean copy, ``cargo metadata`` and ``cargo build`` in the
  jail, the rules, the ELF symbol check, the copy out).

It prints every wall time, the median ratio of the pairs, and the toolchain
fingerprint alone (it hashes cargo, rustc, the linker, rustc's driver library
and ``std``). Needs cargo, rustc and bubblewrap.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playproof.corpus._jail import bubblewrap_usable
from playproof.corpus._runtime import runtime_view
from playproof.corpus._rust import (
    STARTER_PACKAGE,
    find_toolchain,
    fingerprint,
    record_fingerprint,
    run_cargo_build,
    rust_starter_build,
    write_rust_starter,
)

ROUNDS = 5
HONEST = (
    Path(__file__).resolve().parent.parent / "tests" / "corpus" / "crates" / "chip8" / "main.rs"
)


def main() -> int:
    if shutil.which("cargo") is None or not bubblewrap_usable():
        print("needs cargo, rustc and bubblewrap; skipped")
        return 0
    root = Path(tempfile.mkdtemp(prefix="bench-build-"))
    try:
        task, workspace = root / "task", root / "task" / "workspace"
        workspace.mkdir(parents=True)
        write_rust_starter(workspace)
        shutil.copyfile(HONEST, workspace / "src" / "main.rs")
        tools = find_toolchain()
        record_fingerprint(task, tools)
        view = runtime_view("native")
        build = rust_starter_build()

        def plain() -> float:
            target = Path(tempfile.mkdtemp(prefix="bench-target-", dir=root))
            started = time.perf_counter()
            subprocess.run(
                ["cargo", "build", "--release", "--offline", "--locked", "--quiet"],
                cwd=workspace,
                env={**os.environ, "CARGO_TARGET_DIR": str(target)},
                check=True,
            )
            took = time.perf_counter() - started
            shutil.rmtree(target)
            return took

        def controlled() -> float:
            started = time.perf_counter()
            built = run_cargo_build(
                task,
                workspace,
                build,
                [STARTER_PACKAGE],
                read_only=view.visible,
                hidden=view.hidden,
                secret=(),
                seconds=600,
                jobs=2,
            )
            took = time.perf_counter() - started
            assert built.program is not None, built.log
            return took

        plain()  # warm the page cache for both
        pairs: list[tuple[float, float]] = []
        for round_ in range(ROUNDS):
            if round_ % 2:
                c, p = controlled(), plain()
            else:
                p, c = plain(), controlled()
            pairs.append((p, c))
        started = time.perf_counter()
        fingerprint(tools)
        hashing = time.perf_counter() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("plain cargo build (s):  " + ", ".join(f"{p:.2f}" for p, _ in pairs))
    print("controlled build (s):   " + ", ".join(f"{c:.2f}" for _, c in pairs))
    ratios = [c / p for p, c in pairs]
    print("ratio per pair:         " + ", ".join(f"{r:.2f}" for r in ratios))
    print(f"median ratio: {statistics.median(ratios):.2f}")
    print(f"toolchain fingerprint alone: {hashing:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
