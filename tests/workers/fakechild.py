"""A misbehaving stand-in for ``playproof.workers.child`` (``python -m fakechild``).

It speaks the protocol correctly up to a point chosen by ``FAKECHILD_MODE``,
then breaks it the way a broken or foreign child would:

- ``garbage``: answers the first request with a well-framed body that is not JSON
- ``wrong-shape``: answers with JSON of the wrong shape
- ``oversized``: announces a frame larger than the cap, then waits
- ``truncated``: writes half a frame and exits with status 5
- ``noise``: writes raw text (no framing) instead of an answer
- ``short-batch``: answers a batch request with no snapshots at all
- ``silent``: never sends the readiness message
- ``garbage-ready``: sends garbage instead of the readiness message
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time

HEADER = struct.Struct(">IQ")
"""Body length, then the sequence number of the request."""


def _read_frame() -> bytes:
    size = HEADER.unpack(os.read(0, HEADER.size))[0]
    body = b""
    while len(body) < size:
        body += os.read(0, size - len(body))
    return body


def _write(data: bytes) -> None:
    os.write(1, data)


def _frame(body: bytes, sequence: int = 1) -> bytes:
    """A frame answering request ``sequence`` (0 is init, 1 the first request after it)."""
    return HEADER.pack(len(body), sequence) + body


def main() -> None:
    """Misbehave as ``FAKECHILD_MODE`` says."""
    from toygames import Walker

    mode = os.environ["FAKECHILD_MODE"]
    _read_frame()
    if mode == "silent":
        time.sleep(3600)
    if mode == "garbage-ready":
        _write(_frame(b"\xff\xfe not a readiness message", 0))
        time.sleep(3600)
    descriptor = Walker().descriptor.model_dump(mode="json")
    ready = {
        "status": "ready",
        "protocol": 1,
        "descriptor": descriptor,
        "capabilities": {"checkpoint": False},
    }
    _write(_frame(json.dumps(ready).encode(), 0))
    _read_frame()
    if mode == "garbage":
        _write(_frame(b"this is not json {"))
    elif mode == "wrong-shape":
        _write(_frame(json.dumps({"status": "ok", "result": {"weird": 1}}).encode()))
    elif mode == "oversized":
        _write(HEADER.pack(0xFFFFFFF0, 1))
    elif mode == "truncated":
        _write(HEADER.pack(100, 1) + b"0123456789")
        sys.exit(5)
    elif mode == "short-batch":
        _write(_frame(json.dumps({"status": "ok", "result": []}).encode()))
    elif mode == "noise":
        _write(b"Hello from a chatty native library\n")
    time.sleep(3600)


if __name__ == "__main__":
    main()
