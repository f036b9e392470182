"""A foreign worker child that breaks the frame protocol (``python -m hostile_child``).

It answers the ``init`` frame with a correct readiness message for 2048 and
``reset`` with a correct empty answer; then, asked for anything else (a replay,
a batch of inputs), it misbehaves as ``HOSTILE_CHILD_MODE`` says:

- ``flood``: well-formed frames, again and again, as fast as the pipe takes them;
- ``over-cap``: announces a frame far over the message cap, then waits;
- ``malformed``: a frame whose body is not JSON (nor UTF-8);
- ``mid-frame``: half a frame, then silence.
"""

from __future__ import annotations

import json
import os
import struct
import time

from playproof.adapters.native.game2048 import Game2048

HEADER = struct.Struct(">I")
WAIT_S = 3600.0


def _read_exactly(count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = os.read(0, count - len(data))
        if not chunk:
            raise SystemExit(0)  # the parent is gone
        data += chunk
    return data


def _receive() -> dict[str, object]:
    (size,) = HEADER.unpack(_read_exactly(HEADER.size))
    message = json.loads(_read_exactly(size))
    assert isinstance(message, dict)
    return message


def _send(body: bytes) -> None:
    os.write(1, HEADER.pack(len(body)) + body)


def main() -> None:
    mode = os.environ["HOSTILE_CHILD_MODE"]
    _receive()
    descriptor = Game2048().descriptor.model_dump(mode="json")
    ready = {"status": "ready", "protocol": 1, "descriptor": descriptor}
    _send(json.dumps({**ready, "capabilities": {"checkpoint": False}}).encode())
    while True:
        request = _receive()
        if request["op"] == "reset":
            _send(b'{"status": "ok", "result": null}')
            continue
        if mode == "flood":
            while True:
                _send(b'{"status": "ok", "result": null}')
        if mode == "over-cap":
            os.write(1, HEADER.pack(0xFFFFFFFF))
        elif mode == "malformed":
            _send(b'{"status": "ok", "result": \xff\xfe')
        elif mode == "mid-frame":
            os.write(1, HEADER.pack(4096) + b'{"status": "ok", "result": [')
        time.sleep(WAIT_S)


if __name__ == "__main__":
    main()
