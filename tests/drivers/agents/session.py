"""A persistent test agent speaking JSON lines, behaving as MODE says."""

import json
import subprocess
import sys
import time
from typing import Any


def answer(request: dict[str, Any], *, cost: float = 0.0001, echo: bool = True) -> None:
    vocabulary = request["vocabulary"]
    reply = {"input": vocabulary[request["turn"] % len(vocabulary)], "cost_usd": cost}
    if echo:
        reply["turn"] = request["turn"]
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def main() -> int:
    mode = sys.argv[1]
    arg = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if mode == "grandchild":
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    for answered, line in enumerate(sys.stdin):
        request = json.loads(line)
        if mode in ("echo", "grandchild", "ignore-eof"):
            answer(request)
        elif mode == "noturn":
            answer(request, echo=False)
        elif mode == "stray":
            sys.stdout.write('thinking...\n{"foo": 1}\n[1, 2]\n\n{"input": 5}\n')
            answer(request)
        elif mode == "die-after":
            if answered == arg:
                sys.stderr.write("fatal: out of memory\n")
                sys.stderr.flush()
                return 5
            answer(request)
        elif mode == "flood":
            sys.stdout.write("x" * (4 << 20))
            sys.stdout.flush()
        elif mode == "flood-lines":
            sys.stdout.write("noise\n" * 400_000)
            sys.stdout.flush()
        elif mode == "flood-stderr":
            sys.stderr.write("e" * (4 << 20))
            sys.stderr.flush()
            answer(request)
        elif mode == "slow-once":
            if request["turn"] == arg:
                time.sleep(0.6)  # past the test's decision timeout: answered late
                answer(request, cost=0.5)
            else:
                answer(request)
        elif mode == "late-after-first":
            if answered:
                time.sleep(arg / 1000)  # past the test's decision timeout: answered late
            answer(request, cost=0.5 if answered else 0.0001)
    if mode == "ignore-eof":
        time.sleep(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
