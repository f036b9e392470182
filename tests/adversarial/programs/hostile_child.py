"""A foreign worker child that breaks the frame protocol (``python -m hostile_child``).

It answers the ``init`` frame with a correct readiness message for 2048 and
``reset`` with a correct empty answer, each numbered like its request; then,
asked for anything else (a replay, a batch of inputs), it misbehaves as
``HOSTILE_CHILD_MODE`` says:

- ``flood``: well-formed frames, again and again, as fast as the pipe takes them;
- ``over-cap``: announces a frame far over the message cap, then waits;
- ``malformed``: a frame whose body is not JSON (nor UTF-8);
- ``mid-frame``: half a frame, then silence.

Two modes lie about which request a well-formed answer belongs to; they turn
on the second ``reset`` (or any other request after the first):

- ``replay``: sends the very frame that answered the first ``reset`` again;
- ``skip``: sends a correct empty answer numbered one past the request.
"""

from __future__ import annotations

import json
import os
import struct
import time

from playproof.adapters.native.game2048 import Game2048

HEADER = struct.Struct(">IQ")
"""Body length, then the sequence number of the request."""
OK_NONE = b'{"status": "ok", "result": null}'
WAIT_S = 3600.0


def _read_exactly(count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = os.read(0, count - len(data))
        if not chunk:
            raise SystemExit(0)  # the parent is gone
        data += chunk
    return data


def _receive() -> tuple[int, dict[str, object]]:
    size, sequence = HEADER.unpack(_read_exactly(HEADER.size))
    message = json.loads(_read_exactly(size))
    assert isinstance(message, dict)
    return sequence, message


def _frame(sequence: int, body: bytes) -> bytes:
    return HEADER.pack(len(body), sequence) + body


def _send(sequence: int, body: bytes) -> None:
    os.write(1, _frame(sequence, body))


def main() -> None:
    mode = os.environ["HOSTILE_CHILD_MODE"]
    sequence, _ = _receive()
    descriptor = Game2048().descriptor.model_dump(mode="json")
    ready = {"status": "ready", "protocol": 1, "descriptor": descriptor}
    _send(sequence, json.dumps({**ready, "capabilities": {"checkpoint": False}}).encode())
    first_reset: bytes | None = None
    while True:
        sequence, request = _receive()
        if mode in ("replay", "skip") and first_reset is not None:
            if mode == "replay":
                os.write(1, first_reset)
            else:
                _send(sequence + 1, OK_NONE)
            time.sleep(WAIT_S)
        if request["op"] == "reset":
            first_reset = _frame(sequence, OK_NONE)
            os.write(1, first_reset)
            continue
        if mode == "flood":
            while True:
                _send(sequence, OK_NONE)
        if mode == "over-cap":
            os.write(1, HEADER.pack(0xFFFFFFFF, sequence))
        elif mode == "malformed":
            _send(sequence, b'{"status": "ok", "result": \xff\xfe')
        elif mode == "mid-frame":
            os.write(1, HEADER.pack(4096, sequence) + b'{"status": "ok", "result": [')
        time.sleep(WAIT_S)


if __name__ == "__main__":
    main()
