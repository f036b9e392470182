"""The child side on raw pipes: it enforces the cap, the protocol version and the handshake."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from playproof.workers._wire import HEADER, MAX_MESSAGE_BYTES, PROTOCOL_VERSION

EXIT_WAIT = 30.0
"""Seconds a raw child gets to exit after the test broke the protocol."""


def run_child(stdin: bytes, env: dict[str, str]) -> tuple[int, bytes, bytes]:
    completed = subprocess.run(
        [sys.executable, "-m", "playproof.workers.child"],
        input=stdin,
        capture_output=True,
        env={**os.environ, **env},
        timeout=EXIT_WAIT,
        check=False,
    )
    return completed.returncode, completed.stdout, completed.stderr


def frame(message: object, sequence: int = 0) -> bytes:
    body = json.dumps(message).encode()
    return HEADER.pack(len(body), sequence) + body


def numbered(data: bytes) -> list[tuple[int, dict[str, object]]]:
    out = []
    while data:
        size, sequence = HEADER.unpack_from(data)
        out.append((sequence, json.loads(data[HEADER.size : HEADER.size + size])))
        data = data[HEADER.size + size :]
    return out


def frames(data: bytes) -> list[dict[str, object]]:
    return [message for _, message in numbered(data)]


def init(**extra: object) -> dict[str, object]:
    return {"op": "init", "factory": "toygames:make_toy", "protocol": PROTOCOL_VERSION, **extra}


def test_a_full_session_on_raw_pipes(child_env: dict[str, str]) -> None:
    requests = [init(), {"op": "reset", "seed": 1}, {"op": "step", "word": "right"}, {"op": "quit"}]
    code, out, _ = run_child(b"".join(frame(r) for r in requests), child_env)
    answers = frames(out)
    assert code == 0
    assert answers[0]["status"] == "ready"
    assert answers[1:] == [{"status": "ok", "result": None}] * 3


def test_every_answer_carries_the_number_of_its_request(child_env: dict[str, str]) -> None:
    requests = [init(), {"op": "reset", "seed": 1}, {"op": "teleport"}, {"op": "over"}]
    sequences = [0, 7, 8, 2**40]
    stream = b"".join(frame(r, n) for r, n in zip(requests, sequences, strict=True))
    code, out, _ = run_child(stream, child_env)
    assert [n for n, _ in numbered(out)] == sequences
    assert code == 0


def test_an_oversized_request_header_ends_the_child(child_env: dict[str, str]) -> None:
    oversized = HEADER.pack(MAX_MESSAGE_BYTES + 1, 1)
    code, out, err = run_child(frame(init()) + oversized, child_env)
    assert frames(out)[0]["status"] == "ready"
    assert len(frames(out)) == 1
    assert b"over the cap" in err
    assert code == 2


@pytest.mark.parametrize(
    ("first", "match"),
    [
        (init(protocol=PROTOCOL_VERSION + 1), "protocol"),
        ({"op": "reset", "seed": 0}, "expected an init message"),
        ({"op": "init", "factory": "toygames:make_toy", "options": {"nonsense": 1}}, "TypeError"),
    ],
)
def test_a_bad_handshake_is_reported_then_the_child_exits(
    child_env: dict[str, str], first: dict[str, object], match: str
) -> None:
    code, out, _ = run_child(frame(first), child_env)
    (answer,) = frames(out)
    assert answer["status"] == "error"
    assert match in json.dumps(answer)
    assert code == 1


def test_a_malformed_request_is_answered_and_the_child_serves_on(child_env: dict[str, str]) -> None:
    requests = [init(), {"op": "teleport"}, {"op": "reset", "seed": -1}, {"op": "over"}]
    code, out, _ = run_child(b"".join(frame(r) for r in requests), child_env)
    answers = frames(out)
    assert [a["status"] for a in answers] == ["ready", "error", "error", "ok"]
    assert code == 0  # stdin EOF is a clean exit
