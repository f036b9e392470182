"""Live decision overhead of the desktop adapter, against the bare program's round trip.

``python benchmarks/bench_desktop.py [n_inputs]`` prints, per input:

- the bare round trip: a small text program started with pipes, one line
  written and its output read up to the prompt (the baseline);
- the same program driven by the desktop adapter (``DesktopGame.step``: the
  allowlist, the send, waiting for the prompt on the drained output, the
  transcript step, the evidence read by the spec's rules);
- the same with three collected files (a JSON save, a binary save and an
  append-only event log) read after every input.

Each is given as microseconds per input and as a ratio to the baseline. Rounds
are interleaved (bare, adapter, adapter with files, bare ...) and the best
round of each is kept: the machine is shared, the minimum is the least
disturbed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playproof.adapters.desktop import make_game

ROUNDS = 5
INPUTS = 300

PROGRAM = """
import json, sys
count = 0
files = len(sys.argv) > 1
sys.stdout.write("> ")
sys.stdout.flush()
for line in sys.stdin:
    count += 1
    if files:
        with open("save.json", "w") as out:
            json.dump({"count": count}, out)
        with open("state.bin", "wb") as out:
            out.write(count.to_bytes(4, "little"))
        with open("events.log", "a") as log:
            log.write("step\\n")
    sys.stdout.write(f"count: {count}\\n> ")
    sys.stdout.flush()
"""

SPEC = """
id = "bench"
vocabulary = ["go"]

[launch]
command = [{python}, "bench_program.py"{args}]

[observe]
prompt = "> "

[rules]
state = [{{ key = "count", pattern = "count: (\\\\d+)" }}]
{collect}
"""

COLLECT = """
[[collect]]
name = "save"
path = "save.json"
kind = "json"

[[collect]]
name = "state"
path = "state.bin"
kind = "binary"

[[collect]]
name = "events"
path = "events.log"
kind = "events"
"""


def _bare(folder: Path, inputs: int, *, files: bool = False) -> float:
    """Seconds per round trip of the program alone (write a line, read to the prompt)."""
    process = subprocess.Popen(
        [sys.executable, "bench_program.py", *(["files"] if files else [])],
        cwd=folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    fd = process.stdout.fileno()

    def until_prompt() -> None:
        seen = b""
        while not seen.endswith(b"> "):
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("the benchmark program ended")
            seen += chunk

    try:
        until_prompt()
        start = time.perf_counter()
        for _ in range(inputs):
            process.stdin.write(b"go\n")
            until_prompt()
        return (time.perf_counter() - start) / inputs
    finally:
        process.kill()
        process.wait()


def _adapter(spec: Path, inputs: int) -> float:
    """Seconds per ``step`` of the desktop adapter on the same program."""
    game = make_game(str(spec))
    try:
        game.reset(0)
        start = time.perf_counter()
        for _ in range(inputs):
            game.step("go")
        elapsed = (time.perf_counter() - start) / inputs
        assert game.evidence().engine["count"] == inputs
        return elapsed
    finally:
        game.close()


def _setup(folder: Path, *, files: bool) -> Path:
    folder.mkdir()
    (folder / "bench_program.py").write_text(PROGRAM)
    spec = folder / "spec.toml"
    spec.write_text(
        SPEC.format(
            python=json.dumps(sys.executable),
            args=', "files"' if files else "",
            collect=COLLECT if files else "",
        )
    )
    return spec


def main() -> None:
    inputs = int(sys.argv[1]) if len(sys.argv) > 1 else INPUTS
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        plain = _setup(root / "plain", files=False)
        with_files = _setup(root / "files", files=True)
        names = ("bare", "adapter", "bare+files", "adapter+files")
        best = dict.fromkeys(names, float("inf"))

        def clean() -> None:
            for name in ("save.json", "state.bin", "events.log"):
                (with_files.parent / name).unlink(missing_ok=True)

        for index in range(ROUNDS):
            best["bare"] = min(best["bare"], _bare(plain.parent, inputs))
            best["adapter"] = min(best["adapter"], _adapter(plain, inputs))
            clean()
            best["bare+files"] = min(
                best["bare+files"], _bare(with_files.parent, inputs, files=True)
            )
            clean()
            best["adapter+files"] = min(best["adapter+files"], _adapter(with_files, inputs))
            print(f"round {index + 1}/{ROUNDS} done", flush=True)
    print(f"{inputs} inputs per round, best of {ROUNDS} interleaved rounds")
    for name, baseline in (("adapter", "bare"), ("adapter+files", "bare+files")):
        base, seconds = best[baseline], best[name]
        print(
            f"{baseline:>14}: {base * 1e6:9.1f} us/input (baseline)\n"
            f"{name:>14}: {seconds * 1e6:9.1f} us/input  {seconds / base:5.2f}x "
            f"(+{(seconds - base) * 1e6:.1f} us per input)"
        )


if __name__ == "__main__":
    main()
