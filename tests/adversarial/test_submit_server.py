"""`playproof submit` against a hostile service: a typed error, never a crash or a made-up verdict.

A real HTTP server on loopback answers the upload (and the status polls) with
what each case names: a run status without its status, a status that is not
one of the API's, failed checks that are not names, or an answer dripped a
byte at a time past the command's time bound (the body, or the status line and
headers before it), a run id that is markup or a path elsewhere, a status poll
answered for another run, a small gzip body that inflates past the answer cap
(refused while it is decoded, not after), failed checks holding lone surrogates
(printed as escapes), a failed replay (named, with no verdict) or a refusal
whose detail runs to 900 KB (quoted short). A --server URL httpx cannot parse
is a typed error too.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import playproof
from playproof.cli import _service
from playproof.cli._app import app
from playproof.drivers import ScriptedDriver
from playproof.errors import ServiceError
from playproof.sign import SigningKey
from playproof.targets import get_target

ANSWERS: dict[str, Any] = {
    "no status": {"id": "a" * 32},
    "odd status": {"id": "a" * 32, "status": 5},
    "odd checks": {"id": "a" * 32, "status": "rejected", "failed_checks": [{"x": 1}]},
    "verified later, oddly": {"id": "a" * 32, "status": "pending"},
    "markup id": {"id": "[/x]", "status": "pending"},
    "path id": {"id": "../../elsewhere?", "status": "pending"},
    "another run verified": {"id": "a" * 32, "status": "pending"},
}
LATER: dict[str, Any] = {
    "verified later, oddly": {"id": "a" * 32, "status": "verified", "proof_url": 7},
    "path id": {"id": "../../elsewhere?", "status": "verified"},
    "another run verified": {"id": "b" * 32, "status": "verified"},
}

BOMB = b'{"id": "' + b"a" * (64 << 20) + b'"}'
"""64 MiB of JSON that gzip shrinks to about 64 KiB (the answer cap is 1 MiB)."""
LATER["replay failed"] = {"id": "a" * 32, "status": "failed", "error_kind": "MemoryError"}
"""What the service answers when its replay raised: no verdict, an error kind."""

SURROGATE = {"id": "a" * 32, "status": "rejected", "failed_checks": ["\ud800", "x\udfffy"]}
"""Failed checks holding lone surrogates (valid JSON escapes no terminal can encode)."""
ANSWERS["surrogate checks"] = SURROGATE

GZIPPED = {
    "gzip bomb": BOMB,
    "gzip verified": json.dumps({"id": "a" * 32, "status": "verified", "proof_url": "/p"}).encode(),
}


class _Hostile(BaseHTTPRequestHandler):
    case = ""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.case == "drip headers":
            # Each byte well within the read timeout, the whole head far past the time bound;
            # then a genuine verdict, which must not be reported.
            self.wfile.write(b"HTTP/1.1 202 Accepted\r\nx-pad: ")
            for _ in range(160):
                self.wfile.write(b"a")
                self.wfile.flush()
                time.sleep(0.05)
            body = json.dumps({"id": "a" * 32, "status": "verified"}).encode()
            self.wfile.write(b"\r\ncontent-type: application/json\r\n")
            self.wfile.write(b"content-length: %d\r\n\r\n%s" % (len(body), body))
            return
        refused = self.case == "long refusal" and self.command == "POST"
        self.send_response(422 if refused else 202 if self.command == "POST" else 200)
        self.send_header("content-type", "application/json")
        if self.case == "drip":
            self.end_headers()
            for byte in b'{"id": "' + b"a" * 200:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.05)
            return
        if self.case in GZIPPED:
            body = gzip.compress(GZIPPED[self.case])
            self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        answer = ANSWERS[self.case]
        if self.command == "GET":
            answer = LATER.get(self.case, answer)
        body = json.dumps(answer).encode()
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self._answer()

    def do_GET(self) -> None:
        self._answer()

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def record(tmp_path: Path) -> Path:
    target = get_target("native/2048")
    played = playproof.run(target, ScriptedDriver(target.reference[:3]), max_turns=3)
    path = tmp_path / "record.json"
    path.write_bytes(playproof.sign_record(played, SigningKey.generate()).to_bytes())
    return path


@contextlib.contextmanager
def _serving(case: str) -> Iterator[str]:
    handler = type("Handler", (_Hostile,), {"case": case})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "case", [*(c for c in ANSWERS if c != "surrogate checks"), "drip", "drip headers"]
)
def test_a_hostile_service_answer_is_a_typed_error(
    case: str, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_service, "HTTP_TIMEOUT_S", 1.0)  # the drips would take 8 to 10 s
    monkeypatch.setenv("PP_TOKEN", "t")
    with _serving(case) as url:
        args = ["submit", str(record), "--server", url, "--token-env", "PP_TOKEN", "--wait", "5"]
        started = time.monotonic()
        done = CliRunner().invoke(app, args)
        took = time.monotonic() - started
    assert isinstance(done.exception, ServiceError), done.output  # exit 3 with the message
    named = "took over 1 s" if case.startswith("drip") else "did not answer with a run status"
    assert named in str(done.exception)
    assert "verified" not in done.output
    assert took < 4.0  # the time bound covers the whole answer, its head included


def _submit(case: str, record: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PP_TOKEN", "t")
    with _serving(case) as url:
        args = ["submit", str(record), "--server", url, "--token-env", "PP_TOKEN"]
        return CliRunner().invoke(app, args)


def test_a_gzip_bomb_is_refused_while_it_is_decoded(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _submit("gzip bomb", record, monkeypatch)
    assert isinstance(done.exception, ServiceError), done.output
    # Stopped by the bounded decoder, not after the HTTP library inflated a chunk.
    assert "over the 1048576-byte cap once gzip-decoded" in str(done.exception)


def test_a_gzip_answer_within_the_cap_is_read(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _submit("gzip verified", record, monkeypatch)
    assert done.exit_code == 0, done.output
    assert "verified" in done.output


def test_a_failed_check_no_terminal_can_show_is_printed_escaped(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _submit("surrogate checks", record, monkeypatch)
    assert isinstance(done.exception, SystemExit | None), done.exception  # no encoding crash
    assert done.exit_code == 1, done.output  # rejected, as the answer says
    assert "failed \\ud800" in done.output
    assert "failed x\\udfffy" in done.output


def test_a_failed_replay_is_named_as_such(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ANSWERS, "replay failed", {"id": "a" * 32, "status": "pending"})
    done = _submit("replay failed", record, monkeypatch)
    assert isinstance(done.exception, ServiceError), done.output  # exit 3: no verdict
    assert "could not replay run" in str(done.exception)
    assert "MemoryError" in str(done.exception)
    assert "verified" not in done.output


def test_a_long_refusal_is_quoted_short(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ANSWERS, "long refusal", {"detail": "no " * 300_000})
    done = _submit("long refusal", record, monkeypatch)
    assert isinstance(done.exception, ServiceError), done.output
    assert "refused the upload (422): no no" in str(done.exception)
    assert len(str(done.exception)) < 1000  # not the 900 KB the server sent


@pytest.mark.parametrize("server", ["http://[::1", "http://\x00host", "http://host:1x"])
def test_a_server_url_httpx_cannot_use_is_a_typed_error(
    server: str, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PP_TOKEN", "t")
    args = ["submit", str(record), "--server", server, "--token-env", "PP_TOKEN"]
    done = CliRunner().invoke(app, args)
    assert isinstance(done.exception, ServiceError), done.exception
    assert "is not a usable URL" in str(done.exception)
