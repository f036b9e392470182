"""A hostile agent for the one-shot and the session drivers (``python hostile_agent.py MODE``).

Every mode first reads what the driver sends (one JSON request for a one-shot
agent; request lines for a session), then misbehaves:

- ``lines``: a flood of short lines, none of them an answer;
- ``silent``: never answers and never exits;
- ``late``: answers correctly, but only after ``HOSTILE_LATE_S`` seconds;
- ``close``: closes its stdout and stderr, then keeps running;
- ``utf8``: answers with bytes that are not UTF-8;
- ``nul``: answers with a NUL inside the input word;
- ``nul-json``: answers with a JSON string holding an escaped NUL;
- ``close-after-one`` (session): answers once, then closes its stdout and keeps running;
- ``exit-after-one`` (session): answers once, then exits with status 0.
"""

from __future__ import annotations

import json
import os
import sys
import time

LINE = b"noise noise noise\n"


def answer(request: dict[str, object], mode: str) -> bytes:
    vocabulary = request["vocabulary"]
    assert isinstance(vocabulary, list)
    turn = request.get("turn")
    if mode == "utf8":
        return b'{"input": "up\xff\xfe", "cost_usd": 0.0}\n'
    if mode == "nul":
        return b'{"input": "up\x00", "cost_usd": 0.0}\n'
    if mode == "nul-json":
        return json.dumps({"input": "up\u0000", "cost_usd": 0.0, "turn": turn}).encode() + b"\n"
    return json.dumps({"input": vocabulary[0], "cost_usd": 0.0, "turn": turn}).encode() + b"\n"


def misbehave(request: dict[str, object], mode: str) -> None:
    out = sys.stdout.buffer
    if mode == "lines":
        while True:
            out.write(LINE * 4096)
    elif mode == "silent":
        time.sleep(3600)
    elif mode == "late":
        time.sleep(float(os.environ.get("HOSTILE_LATE_S", "5")))
        out.write(answer(request, mode))
    elif mode == "close":
        out.flush()
        os.close(1)
        os.close(2)
        time.sleep(3600)
    else:
        out.write(answer(request, mode))
    out.flush()


def main() -> None:
    mode, kind = sys.argv[1], sys.argv[2]
    if kind == "oneshot":
        misbehave(json.loads(sys.stdin.buffer.read()), mode)
        return
    for line in sys.stdin.buffer:
        if mode in ("close-after-one", "exit-after-one"):
            sys.stdout.buffer.write(answer(json.loads(line), mode))
            sys.stdout.buffer.flush()
            if mode == "exit-after-one":
                return
            os.close(1)
            time.sleep(3600)
        misbehave(json.loads(line), mode)


if __name__ == "__main__":
    main()
