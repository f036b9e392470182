"""A one-shot test agent: reads one JSON request on stdin, behaves as MODE says."""

import json
import subprocess
import sys
import time
from typing import Any


def pick(request: dict[str, Any]) -> str:
    vocabulary: list[str] = request["vocabulary"]
    return vocabulary[int(request["turn"]) % len(vocabulary)]


def sleeper() -> None:
    """Start a grandchild that would outlive us if nobody killed the process group."""
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> int:
    mode = sys.argv[1]
    if mode == "noread":
        print(json.dumps({"input": "up", "cost_usd": 0.0}))
        return 0
    raw = sys.stdin.read()
    request = json.loads(raw)
    if mode == "json":
        print(json.dumps({"input": pick(request), "cost_usd": 0.001, "note": "extra ok"}))
    elif mode == "json-null":
        print(json.dumps({"input": pick(request), "cost_usd": None}))
    elif mode == "json-nocost":
        print(json.dumps({"input": pick(request)}))
    elif mode == "word":
        print(f"  {pick(request)} because it keeps the corner  ")
    elif mode == "record":
        with open(sys.argv[2], "w", encoding="utf-8") as sink:
            sink.write(raw)
        print(json.dumps({"input": pick(request), "cost_usd": 0.0}))
    elif mode == "offvocab":
        print(json.dumps({"input": "jump", "cost_usd": 0.0}))
    elif mode == "multiline":
        print(json.dumps({"input": "up\ndown", "cost_usd": 0.0}))
    elif mode == "multiline-word":
        print("up\ndown")
    elif mode == "badjson":
        print("this is not json")
    elif mode == "negcost":
        print(json.dumps({"input": "up", "cost_usd": -1}))
    elif mode == "flood":
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
    elif mode == "flood-stderr":
        chunk = "e" * 65536
        while True:
            sys.stderr.write(chunk)
    elif mode == "hang":
        sleeper()
        time.sleep(60)
    elif mode == "exit":
        sys.stderr.write("something went wrong: the model is unavailable\n")
        return 3
    elif mode == "background":
        sleeper()
        print(json.dumps({"input": pick(request), "cost_usd": 0.0}))
    else:
        sys.stderr.write(f"unknown mode {mode}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
